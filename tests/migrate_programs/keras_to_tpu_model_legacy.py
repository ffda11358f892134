"""Keras on a TPU as TF 1.12/1.13 wrote it (tf.contrib.tpu.keras_to_tpu_model), in the
shape of tensorflow/tpu's Keras Colabs and the AI Platform TPU template: absl flags,
the contrib resolver, one model compiled before the conversion, one compiled
after it, and the template's `if use_tpu:` form fed by an input_fn. Issue 35's whole-program test upgrades it (each conversion becomes a
TPUStrategy scope around the model's statements), runs the result strict and
compares the numbers."""

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_string("tpu", "", "TPU name or address")
flags.DEFINE_bool("use_tpu", True, "Whether to use TPU.")
FLAGS = flags.FLAGS

BATCH = 16  # the global batch: keras_to_tpu_model split it across the cores
PER_CORE = 4  # an input_fn's batch: keras_to_tpu_model gave each core one per step


def data():
    # Two global batches: each fit's epochs take two steps, each evaluation two.
    rng = np.random.RandomState(0)
    x = rng.rand(2 * BATCH, 8).astype("float32")
    y = tf.keras.utils.to_categorical(rng.randint(0, 3, 2 * BATCH), 3)
    return x, y


def dense_model():
    return tf.keras.models.Sequential([
        tf.keras.layers.Dense(3, activation="softmax", input_shape=(8,),
                              kernel_initializer="ones")])


def report(tag, tpu_model, x, y):
    loss, accuracy = tpu_model.evaluate(x, y, batch_size=BATCH, verbose=0)
    print(f"{tag}_loss: {loss:.6f}")
    print(f"{tag}_accuracy: {accuracy:.6f}")
    print(f"{tag}_kernel_0_sum: {float(np.sum(tpu_model.get_weights()[0][:, 0])):.6f}")


def compiled_after(x, y):
    # The template's order: converted first, compiled after the conversion.
    model = dense_model()
    resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tpu_model = tf.contrib.tpu.keras_to_tpu_model(
        model, strategy=tf.contrib.tpu.TPUDistributionStrategy(resolver))
    tpu_model.compile(optimizer=tf.keras.optimizers.SGD(lr=0.3),
                      loss="categorical_crossentropy", metrics=["accuracy"])
    tpu_model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, shuffle=False)
    report("after", tpu_model, x, y)
    cpu_model = tpu_model.sync_to_cpu()  # the TPU copy's weights, on the CPU model
    print(f"after_cpu_kernel_0_sum: {float(np.sum(cpu_model.get_weights()[0][:, 0])):.6f}")


def input_fn():
    x, y = data()
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(PER_CORE, drop_remainder=True)


def template(x, y):
    # The AI Platform template's form: converted only on a TPU, the strategy in a
    # variable, compiled after the branch, fed by an input_fn.
    model = dense_model()

    if FLAGS.use_tpu:
        resolver = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
        strategy = tf.contrib.tpu.TPUDistributionStrategy(resolver)
        model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=strategy)

    model.compile(optimizer=tf.train.GradientDescentOptimizer(learning_rate=0.5),
                  loss="categorical_crossentropy", metrics=["accuracy"])
    model.fit(input_fn, epochs=2, steps_per_epoch=2, verbose=0)
    report("template", model, x, y)


def main(_):
    x, y = data()
    # The Colab's order: built and compiled, then converted.
    model = dense_model()
    model.compile(loss=tf.keras.losses.categorical_crossentropy,
                  optimizer=tf.train.GradientDescentOptimizer(learning_rate=0.5),
                  metrics=["accuracy"])
    tpu_model = tf.contrib.tpu.keras_to_tpu_model(
        model,
        strategy=tf.contrib.tpu.TPUDistributionStrategy(
            tf.contrib.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)))
    tpu_model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, shuffle=False)
    report("before", tpu_model, x, y)
    compiled_after(x, y)
    template(x, y)


if __name__ == "__main__":
    app.run(main)
