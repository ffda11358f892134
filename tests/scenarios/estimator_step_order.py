"""The smallest TPUEstimator program whose numbers depended on op order (issue 36).

Written as BERT's run_classifier/optimization.py (TF 1.14/1.15) trained:
absl flags, ``model_dir``, ``use_tpu``, ``iterations_per_loop``, a learning
rate computed from ``global_step`` (a linear warmup), ``CrossShardOptimizer``
whose ``apply_gradients`` is NOT given the global step, and the global step
incremented by hand beside the train op,
``tf.group(train_op, [global_step.assign(global_step + 1)])``: nothing orders
the learning rate's read of ``global_step`` against that increment. A TPU ran
the step as one XLA program, in one fixed order, so every run gave the same
weights; the learning rate of step k is ``learning_rate * (k + 1)``.

A linear model, squared error, plain SGD, so the test computes the exact
weights in numpy. Prints ``KEY: number`` lines: each weight, and the global step.
"""
import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", False, "Run on the TPU.")
flags.DEFINE_string("tpu", "", "TPU name.")
flags.DEFINE_string("model_dir", None, "Where the checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("train_steps", 6, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 3, "Steps per TPU loop.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")
flags.DEFINE_float("learning_rate", 0.05, "Learning rate per warmup step.")

DIM = 4


def examples():
    """The training set: 64 rows of x and y = x . [1, -2, 3, -4] + noise."""
    rng = np.random.RandomState(11)
    x = rng.randn(64, DIM).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 3.0, -4.0], np.float32)
         + 0.1 * rng.randn(64).astype(np.float32))
    return x, y


def input_fn(params):
    x, y = examples()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    del params
    w = tf.get_variable("w", [DIM], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.tensordot(features, w, 1) - labels))
    global_step = tf.train.get_or_create_global_step()
    steps = tf.cast(global_step, tf.float32)
    learning_rate = FLAGS.learning_rate * (steps + 1.0)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    if FLAGS.use_tpu:
        optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.apply_gradients(optimizer.compute_gradients(loss))
    train_op = tf.group(train_op, [global_step.assign(global_step + 1)])
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    config = tf.estimator.tpu.RunConfig(
        cluster=resolver if FLAGS.use_tpu else None, model_dir=FLAGS.model_dir,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop, num_shards=FLAGS.num_cores))
    estimator = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.train_batch_size)
    estimator.train(input_fn, max_steps=FLAGS.train_steps)
    for index, value in enumerate(estimator.get_variable_value("w")):
        print("w%d: %.9g" % (index, value))
    print("global_step: %d" % estimator.get_variable_value("global_step"))


if __name__ == "__main__":
    app.run(main)
