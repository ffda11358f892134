"""A TF 1.x training program with three things a TPU computes differently.

Written as TF 1.13-1.15 programs were: absl flags, a graph-level seed
(``tf.set_random_seed``), variables created in the replica step,
``experimental_run_v2`` over a dataset iterator, a Session. Its step draws
seeded noise (a TPU ignores the seed), widens to float64 (no TPU hardware) and
divides integers by a count from the data (a TPU gives a value where the CPU
raises). Run with ``tpu-compat run --tf1`` (fidelity ``tpu``, run's default):
each warns once at its ``# LINE`` below, and ``--warnings=error`` stops the
program at the first (with ``--nolegacy_warnings``, or the legacy APIs it
uses stop it earlier). Prints ``LOSS: number`` per step.
"""

import warnings

from absl import app, flags
import numpy as np
import tensorflow as tf  # tf.compat.v1 under --tf1

import tpu_compat

FLAGS = flags.FLAGS
flags.DEFINE_string("tpu", "", "the TPU's name or address (emulated: empty)")
flags.DEFINE_integer("steps", 2, "training steps")
flags.DEFINE_integer("batch_size", 8, "global batch size")
flags.DEFINE_bool("legacy_warnings", True, "show the legacy-API warnings (off: only "
                  "the TPU-semantics lint is left for --warnings=error to stop at)")


def input_fn():
    rng = np.random.RandomState(3)
    features = rng.randn(64, 4).astype(np.float32)
    labels = (np.arange(64) % 3).astype(np.int32)
    # Seeded noise in the input pipeline runs on the host: no warning.
    return tf.data.Dataset.from_tensor_slices((features, labels)).map(
        lambda x, y: (x + tf.random.uniform([4], maxval=0.01), y)).repeat().batch(
            FLAGS.batch_size, drop_remainder=True)


def main(argv):
    del argv
    if not FLAGS.legacy_warnings:
        warnings.filterwarnings("ignore", category=tpu_compat.TPUCompatDeprecationWarning)
    tf.set_random_seed(1)  # every random op of the graph is seeded
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)

    def step(features, labels):
        weights = tf.get_variable("w", [4, 3], initializer=tf.glorot_uniform_initializer())
        noisy = features + tf.random.normal(tf.shape(features), stddev=0.01)  # LINE random
        logits = tf.matmul(noisy, weights)
        wide = tf.cast(logits, tf.float64)  # LINE float64
        groups = labels // tf.reduce_max(labels)  # LINE division
        loss = tf.losses.sparse_softmax_cross_entropy(groups, tf.cast(wide, tf.float32))
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        with tf.control_dependencies([optimizer.minimize(loss)]):
            return tf.identity(loss)

    with strategy.scope():
        iterator = strategy.make_dataset_iterator(input_fn())
        losses = strategy.experimental_run_v2(step, args=iterator.get_next())
        loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, losses)
    with tf.Session() as session:
        session.run(tf.global_variables_initializer())
        session.run(iterator.initialize())
        for _ in range(FLAGS.steps):
            print(f"LOSS: {session.run(loss):.6f}")


if __name__ == "__main__":
    app.run(main)
