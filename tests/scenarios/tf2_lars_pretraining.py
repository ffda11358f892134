"""A TF 2.x custom-loop pre-training program, written as SimCLR's TF 2 code was.

absl flags, ``model_dir``, the TPU bring-up (``TPUClusterResolver``,
``experimental_connect_to_cluster``, ``initialize_tpu_system``,
``tf.distribute.experimental.TPUStrategy``), a small ResNet with batch norm over
the global batch (``tf.keras.layers.experimental.SyncBatchNormalization``), a
LARS optimizer written as TF 2.0-2.3 code wrote one (a subclass of the public
``tf.keras.optimizers.Optimizer``, then OptimizerV2: ``_set_hyper``,
``_create_slots``, ``_resource_apply_dense``, ``_serve_hyperparameters``), a
projection head whose hidden ``Dense`` is made with a placeholder size (-1)
replaced in ``build``, and ``strategy.run`` of the train step inside a
``tf.function`` loop over ``tf.range(steps_per_loop)``. Checkpoints go to
``model_dir`` as ``tf.train.CheckpointManager`` writes them.

Prints ``KEY: number`` lines: the trained weights' sums, the batch-norm moving
statistics, and ``lars_probe_*``: two LARS steps applied to a known variable
with known gradients (the test checks them against NumPy).
"""
import os

from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v2 as tf

FLAGS = flags.FLAGS
flags.DEFINE_string("tpu", "", "The TPU's name.")
flags.DEFINE_string("model_dir", None, "Where checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("train_steps", 4, "Training steps.")
flags.DEFINE_integer("steps_per_loop", 2, "Steps per host call.")
flags.DEFINE_float("learning_rate", 0.3, "LARS learning rate.")
flags.DEFINE_float("momentum", 0.9, "LARS momentum.")
flags.DEFINE_float("weight_decay", 1e-2, "Weight decay (not on batch norm or biases).")
flags.DEFINE_bool("global_bn", True, "Batch norm over the global batch.")
flags.mark_flag_as_required("model_dir")

EETA = 0.001
IMAGE, CLASSES = 8, 4


class LARSOptimizer(tf.keras.optimizers.Optimizer):
  """Layer-wise Adaptive Rate Scaling, with momentum and decoupled weight decay."""

  def __init__(self, learning_rate, momentum=0.9, weight_decay=0.0,
               exclude_from_weight_decay=None, eeta=EETA, name="LARSOptimizer"):
    super(LARSOptimizer, self).__init__(name)
    self._set_hyper("learning_rate", learning_rate)
    self.momentum = momentum
    self.weight_decay = weight_decay
    self.eeta = eeta
    self.exclude_from_weight_decay = exclude_from_weight_decay or []

  def _create_slots(self, var_list):
    for var in var_list:
      self.add_slot(var, "Momentum")

  def _use_weight_decay(self, name):
    if not self.weight_decay:
      return False
    return not any(part in name for part in self.exclude_from_weight_decay)

  def _resource_apply_dense(self, grad, param, apply_state=None):
    device, dtype = param.device, param.dtype.base_dtype
    coefficients = ((apply_state or {}).get((device, dtype))
                    or self._fallback_apply_state(device, dtype))
    learning_rate = coefficients["lr_t"]
    velocity = self.get_slot(param, "Momentum")
    if self._use_weight_decay(param.name):
      grad += self.weight_decay * param
    param_norm = tf.norm(param, ord=2)
    grad_norm = tf.norm(grad, ord=2)
    trust_ratio = tf.where(
        tf.greater(param_norm, 0),
        tf.where(tf.greater(grad_norm, 0), self.eeta * param_norm / grad_norm, 1.0),
        1.0)
    next_velocity = self.momentum * velocity + learning_rate * trust_ratio * grad
    return tf.group(param.assign_sub(next_velocity), velocity.assign(next_velocity))

  def get_config(self):
    config = super(LARSOptimizer, self).get_config()
    config.update({"learning_rate": self._serialize_hyperparameter("learning_rate"),
                   "momentum": self.momentum, "weight_decay": self.weight_decay,
                   "eeta": self.eeta})
    return config


_seeds = iter(range(100, 200))


def initializer():
  """A seeded He initializer, so every run starts from the same weights."""
  return tf.keras.initializers.VarianceScaling(2.0, seed=next(_seeds))


def batch_norm():
  if FLAGS.global_bn:
    return tf.keras.layers.experimental.SyncBatchNormalization(momentum=0.9)
  return tf.keras.layers.BatchNormalization(momentum=0.9)


class ResidualBlock(tf.keras.layers.Layer):

  def __init__(self, filters, **kwargs):
    super(ResidualBlock, self).__init__(**kwargs)
    self.conv1 = tf.keras.layers.Conv2D(filters, 3, padding="same", use_bias=False,
                                        kernel_initializer=initializer())
    self.bn1 = batch_norm()
    self.conv2 = tf.keras.layers.Conv2D(filters, 3, padding="same", use_bias=False,
                                        kernel_initializer=initializer())
    self.bn2 = batch_norm()

  def call(self, inputs, training=None):
    net = tf.nn.relu(self.bn1(self.conv1(inputs), training=training))
    net = self.bn2(self.conv2(net), training=training)
    return tf.nn.relu(net + inputs)


class ProjectionHead(tf.keras.layers.Layer):
  """A hidden layer as wide as its input: its size is known only in build."""

  def __init__(self, **kwargs):
    super(ProjectionHead, self).__init__(**kwargs)
    self.hidden = tf.keras.layers.Dense(-1, activation="relu",
                                        kernel_initializer=initializer())
    self.out = tf.keras.layers.Dense(CLASSES, kernel_initializer=initializer())

  def build(self, input_shape):
    self.hidden.units = int(input_shape[-1])
    super(ProjectionHead, self).build(input_shape)

  def call(self, inputs):
    return self.out(self.hidden(inputs))


class TinyResNet(tf.keras.Model):

  def __init__(self, **kwargs):
    super(TinyResNet, self).__init__(**kwargs)
    self.stem = tf.keras.layers.Conv2D(4, 3, padding="same", use_bias=False,
                                        kernel_initializer=initializer())
    self.stem_bn = batch_norm()
    self.block = ResidualBlock(4)
    self.pool = tf.keras.layers.GlobalAveragePooling2D()
    self.head = ProjectionHead()

  def call(self, inputs, training=None):
    net = tf.nn.relu(self.stem_bn(self.stem(inputs), training=training))
    return self.head(self.pool(self.block(net, training=training)))


def build_dataset(batch_size):
  rng = np.random.RandomState(7)
  images = rng.randn(64, IMAGE, IMAGE, 3).astype(np.float32)
  labels = np.eye(CLASSES, dtype=np.float32)[rng.randint(0, CLASSES, 64)]
  dataset = tf.data.Dataset.from_tensor_slices((images, labels))
  return dataset.repeat().batch(batch_size, drop_remainder=True)


def lars_probe():
  """Two LARS steps on a known variable with known gradients."""
  param = tf.Variable([[0.5, -1.0], [2.0, 0.25]], name="probe/kernel")
  optimizer = LARSOptimizer(0.5, momentum=0.9, weight_decay=0.1, eeta=0.01)
  for grad in ([[0.1, 0.2], [-0.3, 0.4]], [[-0.2, 0.05], [0.1, 0.3]]):
    optimizer.apply_gradients([(tf.constant(grad), param)])
  for index, value in enumerate(param.numpy().ravel()):
    print("lars_probe_%d: %.9g" % (index, value))


def main(unused_argv):
  tf.random.set_seed(1)
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
  tf.config.experimental_connect_to_cluster(resolver)
  tf.tpu.experimental.initialize_tpu_system(resolver)
  strategy = tf.distribute.experimental.TPUStrategy(resolver)
  print("num_replicas: %d" % strategy.num_replicas_in_sync)

  with strategy.scope():
    model = TinyResNet()
    optimizer = LARSOptimizer(FLAGS.learning_rate, momentum=FLAGS.momentum,
                              weight_decay=FLAGS.weight_decay,
                              exclude_from_weight_decay=["batch_normalization", "bias"])
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(checkpoint, FLAGS.model_dir, max_to_keep=2)

  dataset = strategy.experimental_distribute_dataset(build_dataset(FLAGS.train_batch_size))
  iterator = iter(dataset)

  def single_step(images, labels):
    with tf.GradientTape() as tape:
      logits = model(images, training=True)
      loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels, logits))
      loss = loss / FLAGS.train_batch_size
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

  @tf.function
  def train_multiple_steps(iterator):
    for _ in tf.range(FLAGS.steps_per_loop):
      images, labels = next(iterator)
      strategy.run(single_step, (images, labels))

  step = 0
  while step < FLAGS.train_steps:
    train_multiple_steps(iterator)
    step += FLAGS.steps_per_loop
    manager.save(checkpoint_number=step)
  print("checkpoints: %d" % len(manager.checkpoints))
  print("optimizer_iterations: %d" % optimizer.iterations.numpy())
  for variable in model.variables:
    name = variable.name.replace(":0", "")
    print("%s: %.9g" % (name, float(tf.reduce_sum(tf.abs(variable)))))
  lars_probe()


if __name__ == "__main__":
  app.run(main)
