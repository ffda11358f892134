"""The program of legacy/keras_tpu_model.py written for TF 2: the model is built and
compiled in the TPU strategy's scope, so there is one copy of the weights."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')
model.fit(np.zeros((64, 4)), np.zeros((64, 1)), batch_size=16, epochs=1)
model.save_weights('weights.h5')
