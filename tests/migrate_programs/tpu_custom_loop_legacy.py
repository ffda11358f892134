"""A TF 2.1-era TPUStrategy custom training loop, as the era wrote it (absl
flags, TPU bring-up, model_dir): issue 35's whole-program migration test
upgrades it, runs the result strict and compares the numbers."""

import os

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_string("tpu", "", "TPU name or address")
flags.DEFINE_string("model_dir", None, "where checkpoints go")
flags.DEFINE_integer("epochs", 3, "epochs to train")
FLAGS = flags.FLAGS

BATCH = 16


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)

    rng = np.random.RandomState(0)
    x = rng.randn(128, 4).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
    dist_dataset = strategy.experimental_distribute_dataset(dataset)

    with strategy.scope():
        w = tf.Variable(tf.zeros([4, 1]), name="w")
        optimizer = tf.keras.optimizers.SGD(0.05)
        checkpoint = tf.train.Checkpoint(w=w)

    @tf.function
    def train_step(inputs):
        def step_fn(inputs):
            features, labels = inputs
            with tf.GradientTape() as tape:
                err = tf.matmul(features, w) - labels
                loss = tf.reduce_sum(tf.square(err)) / BATCH
            grads = tape.gradient(loss, [w])
            optimizer.apply_gradients(zip(grads, [w]))
            return loss
        per_replica = strategy.experimental_run_v2(step_fn, args=(inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    for epoch in range(FLAGS.epochs):
        total = 0.0
        for batch in dist_dataset:
            total += float(train_step(batch))
        print(f"loss_{epoch}: {total:.6f}")
    print(f"w_sum: {float(tf.reduce_sum(w)):.6f}")
    if FLAGS.model_dir:
        checkpoint.save(os.path.join(FLAGS.model_dir, "ckpt"))


if __name__ == "__main__":
    app.run(main)
