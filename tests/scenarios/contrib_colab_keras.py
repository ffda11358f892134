"""A TF 1.13 Colab-style Keras program on a TPU (issue 22, item 1).

The Colab bring-up of TF 1.13/1.14: a resolver dialing
``'grpc://' + os.environ['COLAB_TPU_ADDR']``,
``tf.contrib.distribute.initialize_tpu_system(resolver)``, then
``tf.contrib.distribute.TPUStrategy``, and a model built with
``tf.contrib.keras`` layers under ``strategy.scope()``. Run under
``tpu-compat run --tf1``; prints ``KEY: number`` lines the test compares with
a numpy reference.
"""
import os

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(1)
x_train = rng.randn(64, 3).astype(np.float32)
y_train = (x_train.dot(np.array([[2.0], [-1.0], [0.5]], np.float32)) - 0.5).astype(np.float32)

TPU_WORKER = 'grpc://' + os.environ['COLAB_TPU_ADDR']
resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=TPU_WORKER)
tf.contrib.distribute.initialize_tpu_system(resolver)
strategy = tf.contrib.distribute.TPUStrategy(resolver)

with strategy.scope():
    model = tf.contrib.keras.models.Sequential([
        tf.contrib.keras.layers.Dense(1, input_shape=(3,), kernel_initializer="zeros",
                                      bias_initializer="zeros")])
    model.compile(optimizer=tf.keras.optimizers.SGD(lr=0.1), loss="mse")



class IteratorCount(tf.keras.callbacks.Callback):
    """Input pipelines in the session's graph after each epoch (each validates): the
    per-epoch validation must reuse its pipeline, not add one per epoch (issue 34)."""

    def on_epoch_end(self, epoch, logs=None):
        graph = tf.compat.v1.get_default_graph()
        pipelines = [op for op in graph.get_operations() if op.type.startswith("MultiDeviceIterator")
                     or op.type in ("IteratorV2", "Iterator")]
        print("iterator_ops_after_epoch_%d: %d" % (epoch, len(pipelines)))
        print("val_loss_%d: %.9g" % (epoch, logs["val_loss"]))


print("keras_is_tf_keras: %d" % (tf.contrib.keras.layers.Dense is tf.keras.layers.Dense))
model.fit(x_train, y_train, batch_size=16, epochs=3, shuffle=False, verbose=0,
          validation_data=(x_train, y_train), callbacks=[IteratorCount()])
kernel, bias = model.get_weights()
for index, value in enumerate(kernel.ravel()):
    print("kernel_%d: %.9g" % (index, value))
print("bias_0: %.9g" % bias[0])
