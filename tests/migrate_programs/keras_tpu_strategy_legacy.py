"""Keras on the TF 1.15 TPUStrategy, as tensorflow/tpu's models/experimental
mnist_keras wrote it (absl flags, contrib bring-up, steps_per_run, model_dir):
issue 35's whole-program test upgrades it, runs the result strict and compares
the numbers. Upgrade drops both contrib imports (every name they bind has a TF 2
name), builds TF 2's TPUStrategy (the object only opens Keras' scope) and
writes export_saved_model as model.save."""

import os

import numpy as np
import tensorflow.compat.v1 as tf
from absl import app, flags
# The contrib modules of TF 1.13/1.14 bring-up.
from tensorflow.contrib import cluster_resolver as contrib_cluster_resolver
from tensorflow.contrib import distribute as contrib_distribute

flags.DEFINE_string("tpu", "", "TPU name or address")
flags.DEFINE_string("model_dir", None, "where the SavedModel goes")
FLAGS = flags.FLAGS

BATCH = 16


def main(_):
    resolver = contrib_cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    contrib_distribute.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=4)

    rng = np.random.RandomState(0)
    x = rng.rand(64, 8).astype("float32")
    y = tf.keras.utils.to_categorical(rng.randint(0, 3, 64), 3)
    with strategy.scope():
        model = tf.keras.models.Sequential([
            tf.keras.layers.Dense(3, activation="softmax", input_shape=(8,),
                                  kernel_initializer="ones")])
        model.compile(loss=tf.keras.losses.categorical_crossentropy,
                      optimizer=tf.train.GradientDescentOptimizer(learning_rate=0.5),
                      metrics=["accuracy"])
    print(f"replicas: {strategy.num_replicas_in_sync}")
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, shuffle=False)
    loss, accuracy = model.evaluate(x, y, batch_size=BATCH, verbose=0)
    print(f"loss: {loss:.6f}")
    print(f"accuracy: {accuracy:.6f}")
    print(f"kernel_0_sum: {float(np.sum(model.get_weights()[0][:, 0])):.6f}")
    if FLAGS.model_dir:
        path = os.path.join(FLAGS.model_dir, "export")
        tf.keras.experimental.export_saved_model(model, path)
        print(f"saved_model: {int(os.path.exists(os.path.join(path, 'saved_model.pb')))}")


if __name__ == "__main__":
    app.run(main)
