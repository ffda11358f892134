"""A TF 1.15 graph-mode TPUStrategy loop, as the era wrote it (absl flags, TPU
bring-up, steps_per_run, make_dataset_iterator + experimental_run, the
iterator initialized in a tf.Session): run with `tpu-compat run --tf1`.
issue 35's whole-program test upgrades it to its TF 2.21 graph-mode form
(experimental_distribute_dataset(...).make_initializable_iterator(),
run(fn, args=(iterator.get_next(),)), .initializer, TF 2's TPUStrategy), runs
that strict and compares the numbers."""

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_string("tpu", "", "TPU name or address")
flags.DEFINE_integer("steps", 3, "training steps")
FLAGS = flags.FLAGS

BATCH = 16


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=2)

    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4) / 256.0
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        BATCH, drop_remainder=True)
    with strategy.scope():
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        optimizer = tf.train.GradientDescentOptimizer(0.1)

    def step_fn(inputs):
        features, labels = inputs
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        with tf.control_dependencies([optimizer.minimize(loss)]):
            return tf.identity(loss)

    iterator = strategy.make_dataset_iterator(dataset)
    per_replica_loss = strategy.experimental_run(step_fn, iterator)
    loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica_loss)
    print(f"replicas: {strategy.num_replicas_in_sync}")
    with tf.Session() as session:
        session.run(iterator.initialize())
        session.run(tf.global_variables_initializer())
        for step in range(FLAGS.steps):
            print(f"loss_{step}: {session.run(loss):.6f}")
        print(f"w_sum: {session.run(tf.reduce_sum(w)):.6f}")


if __name__ == "__main__":
    app.run(main)
