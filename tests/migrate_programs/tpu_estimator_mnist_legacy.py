"""An MNIST-style TPUEstimator classifier as TF 1.14/1.15 wrote it (mnist_tpu.py's
shape: absl flags, a Colab-style TPU bring-up, model_dir, use_tpu,
iterations_per_loop, CrossShardOptimizer, params['batch_size'], eval_metrics).
Issue 36's whole-program test upgrades it to TF 2 (`--estimator-to-tf2`), runs
the result strict and compares its losses, weights and metrics with this run.
The images are synthetic (a seeded RandomState), so no download is needed."""

import os

import numpy as np
import tensorflow.compat.v1 as tf
from absl import app, flags, logging

flags.DEFINE_string("tpu", None, "The Cloud TPU to use for training (name or grpc:// address).")
flags.DEFINE_string("model_dir", None, "Estimator model_dir")
flags.DEFINE_integer("batch_size", 32, "Mini-batch size for training (the global batch).")
flags.DEFINE_integer("train_steps", 10, "Total number of training steps.")
flags.DEFINE_integer("eval_steps", 2, "Total number of evaluation steps.")
flags.DEFINE_float("learning_rate", 0.1, "Learning rate.")
flags.DEFINE_string("optimizer", "momentum", "sgd or momentum")
flags.DEFINE_bool("use_tpu", True, "Use TPUs rather than plain CPUs")
flags.DEFINE_integer("iterations", 4, "Number of iterations per TPU training loop.")
flags.DEFINE_integer("num_shards", 8, "Number of shards (TPU chips).")
FLAGS = flags.FLAGS

IMAGE, CLASSES = 8, 10


def metric_fn(labels, logits):
  accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=1))
  return {"accuracy": accuracy, "mean_logit": tf.metrics.mean(logits)}


def model_fn(features, labels, mode, params):
  """A two-layer classifier of IMAGE x IMAGE images."""
  del params
  image = tf.reshape(features / 255., [-1, IMAGE * IMAGE])
  y = tf.layers.Dense(32, activation="relu", name="hidden",
                      kernel_initializer=tf.glorot_uniform_initializer(seed=1))(image)
  logits = tf.layers.dense(y, CLASSES, name="logits",
                           kernel_initializer=tf.glorot_uniform_initializer(seed=2))

  loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

  if mode == tf.estimator.ModeKeys.TRAIN:
    learning_rate = tf.train.exponential_decay(
        FLAGS.learning_rate, tf.train.get_global_step(), decay_steps=4, decay_rate=0.5)
    if FLAGS.optimizer == "momentum":
      optimizer = tf.train.MomentumOptimizer(learning_rate, momentum=0.9)
    else:
      optimizer = tf.train.GradientDescentOptimizer(learning_rate=learning_rate)
    if FLAGS.use_tpu:
      optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss, train_op=optimizer.minimize(loss, tf.train.get_global_step()))

  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))


def dataset(count, seed):
  rng = np.random.RandomState(seed)
  images = rng.randint(0, 256, size=(count, IMAGE, IMAGE, 1)).astype(np.float32)
  labels = (images.reshape(count, -1)[:, :CLASSES].argmax(axis=1)).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices((images, labels))


def train_input_fn(params):
  """train_input_fn defines the input pipeline used for training."""
  batch_size = params["batch_size"]
  return dataset(512, 0).repeat().batch(batch_size, drop_remainder=True)


def eval_input_fn(params):
  batch_size = params["batch_size"]
  return dataset(256, 1).batch(batch_size, drop_remainder=True)


def main(argv):
  del argv  # Unused.
  logging.set_verbosity(logging.INFO)

  # The Colab bring-up of the day: the TPU's address from the environment.
  tpu_address = FLAGS.tpu or os.environ.get("COLAB_TPU_ADDR", "")
  if tpu_address and not tpu_address.startswith("grpc://"):
    tpu_address = "grpc://" + tpu_address
  tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu_address)

  run_config = tf.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.model_dir,
      save_checkpoints_steps=FLAGS.iterations,
      log_step_count_steps=FLAGS.iterations,
      session_config=tf.ConfigProto(allow_soft_placement=True),
      tpu_config=tf.estimator.tpu.TPUConfig(FLAGS.iterations, FLAGS.num_shards),
  )

  estimator = tf.estimator.tpu.TPUEstimator(
      model_fn=model_fn,
      use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.batch_size,
      eval_batch_size=FLAGS.batch_size,
      params={"data_dir": ""},
      config=run_config)
  estimator.train(input_fn=train_input_fn, max_steps=FLAGS.train_steps)
  results = estimator.evaluate(input_fn=eval_input_fn, steps=FLAGS.eval_steps)
  for key in sorted(results):
    print("eval_%s: %.7g" % (key, results[key]))
  for name in estimator.get_variable_names():
    if name.startswith(("hidden", "logits")) and "Momentum" not in name:
      print("%s_sum: %.7g" % (name, np.sum(estimator.get_variable_value(name))))
  print("global_step: %d" % estimator.get_variable_value("global_step"))


if __name__ == "__main__":
  app.run(main)
