"""A TF 1.x TPUEstimator program built with TF-Slim, as the TPU reference models were.

Written as the tensorflow/tpu MobileNet and AmoebaNet trainers were: absl flags,
``model_dir``, ``TPUClusterResolver(FLAGS.tpu)`` in a ``RunConfig``, ``slim =
tf.contrib.slim``, a network arg scope returned from inside nested
``slim.arg_scope`` blocks and re-entered with ``arg_scope(sc)`` (imported from
``tensorflow.contrib.framework.python.ops``), ``slim.conv2d`` with
``normalizer_fn=slim.batch_norm``, ``separable_conv2d``, pooling, dropout,
``fully_connected``, ``tf.contrib.layers.l2_regularizer`` and
``variance_scaling_initializer``, the batch norm's moving averages through
``UPDATE_OPS``, and a ``@tf.contrib.framework.add_arg_scope`` function of the
program's own.

Slim's batch norm normalizes each core's batch. So that the program on N cores
computes what it computes on one device, each global batch is one block of
``--per_core_batch`` examples repeated once per core: every core sees the block,
as the one device (``--nouse_tpu``, global batch = one block) does. Run it with
``tpu-compat run --tf1``; prints ``KEY: number`` lines (the trained variables by
their era names, and the evaluation loss).
"""
from absl import app
from absl import flags
import tensorflow as tf
from tensorflow.contrib.framework.python.ops import arg_scope

slim = tf.contrib.slim

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", True, "Use the TPU (else the CPU, one device).")
flags.DEFINE_string("tpu", "", "The TPU's name.")
flags.DEFINE_string("model_dir", None, "Where checkpoints go.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")
flags.DEFINE_integer("per_core_batch", 4, "Examples each core (or the one device) sees.")
flags.DEFINE_integer("train_steps", 3, "Training steps.")
flags.DEFINE_float("learning_rate", 0.05, "SGD learning rate.")
flags.mark_flag_as_required("model_dir")

SIZE, CHANNELS, CLASSES = 8, 3, 5


def input_fn(params):
  copies = params["batch_size"] // FLAGS.per_core_batch

  def block(step):
    seed = tf.stack([step, tf.constant(7, tf.int64)])
    images = tf.random.stateless_normal([FLAGS.per_core_batch, SIZE, SIZE, CHANNELS], seed)
    labels = tf.random.stateless_uniform([FLAGS.per_core_batch], seed + 1, maxval=CLASSES,
                                         dtype=tf.int32)
    return tf.tile(images, [copies, 1, 1, 1]), tf.tile(labels, [copies])

  return tf.data.Dataset.range(1000).map(block)


@tf.contrib.framework.add_arg_scope
def scaled(inputs, factor=1.0):
  return inputs * factor


def network_arg_scope(is_training, weight_decay=1e-4):
  batch_norm_params = {"is_training": is_training, "decay": 0.9, "epsilon": 1e-3,
                       "scale": True}
  with slim.arg_scope([slim.conv2d, slim.separable_conv2d],
                      weights_initializer=tf.contrib.layers.variance_scaling_initializer(seed=1),
                      normalizer_fn=slim.batch_norm, activation_fn=tf.nn.relu6):
    with slim.arg_scope([slim.batch_norm], **batch_norm_params):
      with slim.arg_scope([slim.conv2d],
                          weights_regularizer=tf.contrib.layers.l2_regularizer(weight_decay)):
        with slim.arg_scope([slim.dropout], is_training=is_training):
          with slim.arg_scope([scaled], factor=0.5) as sc:
            return sc


def network(images):
  with tf.variable_scope("Net"):
    net = slim.conv2d(images, 8, [3, 3], stride=2, scope="Conv2d_0")
    net = slim.separable_conv2d(net, None, [3, 3], depth_multiplier=1, scope="Conv2d_1_depthwise")
    net = slim.conv2d(net, 16, [1, 1], scope="Conv2d_1_pointwise")
    net = slim.separable_conv2d(net, 16, [3, 3], scope="Conv2d_2")
    net = slim.max_pool2d(net, [2, 2], padding="SAME")
    net = slim.avg_pool2d(net, [2, 2], stride=1, padding="VALID")
    net = scaled(net)
    net = slim.dropout(net, keep_prob=1.0)
    net = slim.flatten(net)
    return slim.fully_connected(net, CLASSES, activation_fn=None, scope="Logits",
                                weights_initializer=tf.contrib.layers.xavier_initializer(seed=2))


def model_fn(features, labels, mode, params):
  del params
  training = mode == tf.estimator.ModeKeys.TRAIN
  with arg_scope(network_arg_scope(training)):
    logits = network(features)
  loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
  loss += tf.add_n(tf.losses.get_regularization_losses())
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss)
  optimizer = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
  if FLAGS.use_tpu:
    optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
  with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
  return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(unused_argv):
  cores = FLAGS.num_cores if FLAGS.use_tpu else 1
  resolver = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
  config = tf.contrib.tpu.RunConfig(
      cluster=resolver, model_dir=FLAGS.model_dir, save_checkpoints_steps=1000,
      tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=1, num_shards=cores))
  estimator = tf.contrib.tpu.TPUEstimator(
      model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.per_core_batch * cores,
      eval_batch_size=FLAGS.per_core_batch * cores)
  estimator.train(input_fn, max_steps=FLAGS.train_steps)
  for name in sorted(estimator.get_variable_names()):
    if name.startswith("Net/"):
      value = estimator.get_variable_value(name)
      print("%s: %.9g" % (name, float(abs(value).sum())))
  print("eval_loss: %.9g" % estimator.evaluate(input_fn, steps=1)["loss"])


if __name__ == "__main__":
  app.run(main)
