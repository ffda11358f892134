"""A TF 1.15 graph-mode TPUStrategy multi-step loop, as the era wrote it (absl
flags, TPU bring-up, steps_per_run, make_dataset_iterator,
extended.experimental_run_steps_on_iterator with ctx.set_last_step_output and
initial_loop_values, the loop's run_op and last-step loss in a tf.Session):
run with `tpu-compat run --tf1`. Each session.run of the loop trains
`--iterations` steps and prints the mean loss of the last of them.

The era's form of the loop: TensorFlow's own tests and tf.estimator's
train_distribute path (r1.15 tensorflow/python/distribute/minimize_loss_test.py,
tensorflow_estimator r1.15 estimator.py `_train_with_estimator_spec_distributed`).
issue 35's whole-program test upgrades it to its TF 2.21 graph-mode form and
compares the numbers; tests/test_migrate_steps_loop.py checks them against a
NumPy full-batch SGD reference."""

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_string("tpu", "", "TPU name or address")
flags.DEFINE_integer("iterations", 4, "training steps per session.run (steps_per_run)")
flags.DEFINE_integer("loops", 3, "session.run calls of the training loop")
flags.DEFINE_integer("batch", 16, "global batch size")
FLAGS = flags.FLAGS


def make_data():
    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4) / 256.0
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    return x, y


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(
        resolver, steps_per_run=FLAGS.iterations)

    x, y = make_data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        FLAGS.batch, drop_remainder=True)
    with strategy.scope():
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        iterator = strategy.make_dataset_iterator(dataset)

        def replica_step(inputs):
            features, labels = inputs
            loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
            train_op = optimizer.minimize(loss)
            with tf.control_dependencies([train_op]):
                return tf.identity(loss)

        def step_fn(ctx, inputs):
            per_replica_loss = strategy.extended.call_for_each_replica(
                replica_step, args=(inputs,))
            ctx.set_last_step_output("loss", per_replica_loss,
                                     reduce_op=tf.distribute.ReduceOp.MEAN)
            return strategy.group(per_replica_loss)

        loop = strategy.extended.experimental_run_steps_on_iterator(
            step_fn, iterator, iterations=FLAGS.iterations,
            initial_loop_values={"loss": tf.constant(1e7)})
    print(f"replicas: {strategy.num_replicas_in_sync}")
    with tf.Session() as session:
        session.run(iterator.initialize())
        session.run(tf.global_variables_initializer())
        for index in range(FLAGS.loops):
            _, loss = session.run([loop.run_op, loop.last_step_outputs["loss"]])
            print(f"loss_{index}: {loss:.6f}")
        print(f"w_sum: {session.run(tf.reduce_sum(w)):.6f}")


if __name__ == "__main__":
    app.run(main)
