"""A small training program whose rounded ops numerics-diff --ops-at-step names.

usage: numerics_ops_program.py [--steps N]   (run under `tpu-compat run`; with
`--tf1` it builds a TF 1.x graph with tpu.replicate and runs it in a Session loop)

Each step multiplies its batch by a weight matrix (the "hidden" matmul) and by
a matrix of small integers (the "exact" matmul, whose operands bfloat16 holds
exactly, so its rounding moves nothing), trains the weights by SGD, and prints
the loss. Step 1's batch is small integers too; later batches are random.
"""
import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_integer("steps", 3, "training steps")
FLAGS = flags.FLAGS

BATCH, FEATURES, UNITS = 8, 32, 4


def batches(steps):
    rng = np.random.RandomState(5)
    first = rng.randint(-3, 4, size=(BATCH, FEATURES)).astype(np.float32)
    rest = rng.randn(steps - 1, BATCH, FEATURES).astype(np.float32)
    return np.concatenate([first[None], rest])


def matrices():
    rng = np.random.RandomState(6)
    weights = rng.randn(FEATURES, UNITS).astype(np.float32)
    integers = rng.randint(-2, 3, size=(FEATURES, UNITS)).astype(np.float32)
    return weights, integers


def loss_of(x, w, integers):
    hidden = tf.matmul(x, w)  # the hidden matmul
    exact = tf.matmul(tf.round(x), integers)  # the exact matmul
    return tf.reduce_mean(tf.square(hidden - 0.1 * exact))


def main_tf2(data, w0, integers):
    strategy = tf.distribute.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    with strategy.scope():
        w = tf.Variable(w0)

    def replica_step(x):
        with tf.GradientTape() as tape:
            loss = loss_of(x, w, integers)
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    @tf.function
    def train(x):
        return strategy.run(replica_step, args=(x,))

    for i in range(len(data)):
        loss = strategy.experimental_local_results(train(tf.constant(data[i])))[0]
        print(f"loss_{i + 1}: {float(loss):.9g}")


def main_tf1(data, w0, integers):
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, FEATURES])

    def computation(x):
        with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
            w = tf.compat.v1.get_variable("w", initializer=w0)
        loss = loss_of(x, w, integers)
        optimizer = tf.compat.v1.tpu.CrossShardOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.01))
        with tf.control_dependencies([optimizer.minimize(loss)]):
            return tf.identity(loss)

    train = tf.compat.v1.tpu.replicate(computation, [[x], [x]])
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        for i in range(len(data)):
            loss = session.run(train, {x: data[i]})[0][0]
            print(f"loss_{i + 1}: {float(loss):.9g}")


def main(argv):
    del argv
    w0, integers = matrices()
    data = batches(FLAGS.steps)
    if tf.executing_eagerly():
        main_tf2(data, w0, integers)
    else:
        main_tf1(data, w0, integers)


if __name__ == "__main__":
    app.run(main)
