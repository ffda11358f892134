"""The TF 2 Fashion-MNIST Colab's first cells (tensorflow/tpu tools/colab/fashion_mnist.ipynb @da262fc).

usage: tpu-compat run --replicas N colab_version_check.py

Its version check, ``import distutils`` then
``distutils.version.LooseVersion(tf.__version__)`` (the era's Pythons had
``distutils.version`` imported by then; ``import distutils`` alone does not
import it), then the Colab's bring-up (``'grpc://' + COLAB_TPU_ADDR``,
``initialize_tpu_system``, ``experimental.TPUStrategy``) and a short
``fit`` of a small model on synthetic Fashion-MNIST-shaped data. Prints
``name: value`` lines.
"""
import os

import numpy as np
import tensorflow as tf

import distutils
if distutils.version.LooseVersion(tf.__version__) <= '2.0':
    raise Exception('This notebook is compatible with TensorFlow 1.14 or higher')
from distutils.version import LooseVersion  # noqa: E402  (the other spelling of the check)

rng = np.random.RandomState(0)
x_train = rng.rand(64, 28, 28, 1).astype(np.float32)
y_train = rng.randint(0, 10, size=64).astype(np.float32)

resolver = tf.distribute.cluster_resolver.TPUClusterResolver('grpc://' + os.environ['COLAB_TPU_ADDR'])
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

with strategy.scope():
    model = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(input_shape=(28, 28, 1)),
        tf.keras.layers.Dense(10, activation='softmax')])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3),
                  loss='sparse_categorical_crossentropy', metrics=['sparse_categorical_accuracy'])
history = model.fit(x_train, y_train, batch_size=16, epochs=1, steps_per_epoch=2, verbose=0)

print("version_check_passed:", int(LooseVersion(tf.__version__) > LooseVersion("2.0")))
print("replicas:", strategy.num_replicas_in_sync)
print("loss_finite:", int(bool(np.isfinite(history.history["loss"][-1]))))
