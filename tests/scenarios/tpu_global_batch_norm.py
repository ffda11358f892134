"""A TF 1.x TPUEstimator program with the era's TPU "global batch norm".

Written as SimCLR's and the tensorflow/tpu trainers' TF 1.15 code was: absl
flags, ``model_dir``, ``TPUClusterResolver(FLAGS.tpu)`` in a ``RunConfig``, and a
``tf.layers.BatchNormalization`` subclass (``fused=False``) that overrides
``_moments(self, inputs, reduction_axes, keep_dims)`` to combine the per-core
moments with ``tf.tpu.cross_replica_sum`` (``--global_bn``). The global batch's
mean is the average of the equal-sized shards' means; its variance is the
average of the shards' variances plus the average squared distance of each
shard's mean from it. So on N cores the layer is batch norm over the global
batch, and the program's numbers equal the same program with ``use_tpu=False``
on one device. Run it with ``tpu-compat run --tf1``; prints ``KEY: number`` lines.

It also prints how many ``UPDATE_OPS`` the most crowded ``model_fn`` call saw:
the layer's two moving-average updates on a TPU, where the model_fn was built
once, and on one device.
"""
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
from tensorflow.python.tpu import tpu_function

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", True, "Use the TPU (else the CPU, one device).")
flags.DEFINE_string("tpu", "", "The TPU's name.")
flags.DEFINE_string("model_dir", None, "Where checkpoints go.")
flags.DEFINE_bool("global_bn", True, "Batch norm over the global batch (all cores).")
flags.DEFINE_integer("train_batch_size", 64, "Global batch size.")
flags.DEFINE_integer("train_steps", 4, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 2, "Steps per host call.")
flags.DEFINE_float("learning_rate", 0.1, "SGD learning rate.")
flags.mark_flag_as_required("model_dir")

HEIGHT, WIDTH, CHANNELS = 3, 3, 2
update_ops_seen = []


class BatchNormalization(tf.layers.BatchNormalization):
  """Batch norm whose moments are taken over every core's batch on a TPU."""

  def __init__(self, fused=False, **kwargs):
    if fused in (True, None):
      raise ValueError("The cross-replica batch norm cannot be fused.")
    super(BatchNormalization, self).__init__(fused=fused, **kwargs)

  def _average_over_cores(self, tensor, num_shards):
    return tf.tpu.cross_replica_sum(tensor) / tf.cast(num_shards, tensor.dtype)

  def _moments(self, inputs, reduction_axes, keep_dims):
    shard_mean, shard_variance = super(BatchNormalization, self)._moments(
        inputs, reduction_axes, keep_dims=keep_dims)
    num_shards = tpu_function.get_tpu_context().number_of_shards
    if not FLAGS.global_bn or not num_shards or num_shards == 1:
      return shard_mean, shard_variance
    mean = self._average_over_cores(shard_mean, num_shards)
    variance = (self._average_over_cores(shard_variance, num_shards) +
                self._average_over_cores(tf.square(shard_mean - mean), num_shards))
    return mean, variance


def input_fn(params):
  rng = np.random.RandomState(3)
  images = (rng.randn(256, HEIGHT, WIDTH, CHANNELS) * [2.0, 0.5] + [1.0, -3.0])
  labels = images.reshape(256, -1).dot(rng.randn(HEIGHT * WIDTH * CHANNELS, 1))
  dataset = tf.data.Dataset.from_tensor_slices(
      (images.astype(np.float32), labels.astype(np.float32)))
  return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
  training = mode == tf.estimator.ModeKeys.TRAIN
  bn = BatchNormalization(axis=-1, momentum=0.9, epsilon=1e-3, name="bn")
  net = bn(features, training=training)
  net = tf.layers.flatten(net)
  prediction = tf.layers.dense(net, 1, kernel_initializer=tf.zeros_initializer(),
                               name="dense")
  loss = tf.losses.mean_squared_error(labels, prediction)
  optimizer = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
  if FLAGS.use_tpu:
    optimizer = tf.tpu.CrossShardOptimizer(optimizer)
  update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
  update_ops_seen.append(len(update_ops))
  with tf.control_dependencies(update_ops):
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
  return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(unused_argv):
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
  config = tf.estimator.tpu.RunConfig(
      cluster=resolver, model_dir=FLAGS.model_dir, save_checkpoints_steps=1000,
      tpu_config=tf.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop))
  estimator = tf.estimator.tpu.TPUEstimator(
      model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.train_batch_size)
  estimator.train(input_fn, max_steps=FLAGS.train_steps)
  for name in ("bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance",
               "dense/kernel", "dense/bias"):
    for index, value in enumerate(estimator.get_variable_value(name).ravel()):
      print("%s_%d: %.9g" % (name, index, value))
  print("update_ops_seen_max: %d" % max(update_ops_seen))


if __name__ == "__main__":
  app.run(main)
