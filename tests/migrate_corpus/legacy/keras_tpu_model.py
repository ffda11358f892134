"""A TF 1.13 Keras-on-TPU program: keras_to_tpu_model with a TPUDistributionStrategy."""
import os

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.train.GradientDescentOptimizer(0.1), loss='mse')
resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu='grpc://' + os.environ['COLAB_TPU_ADDR'])  # expect: TPC063
tpu_model = tf.contrib.tpu.keras_to_tpu_model(  # expect: TPC160
    model, strategy=tf.contrib.tpu.TPUDistributionStrategy(resolver))  # expect: TPC161
tpu_model.fit(np.zeros((64, 4)), np.zeros((64, 1)), batch_size=16, epochs=1)
cpu_model = tpu_model.sync_to_cpu()  # expect: TPC162
cpu_model.save_weights('weights.h5')
