"""--numerics tpu, TF 2.x spelling: Keras fit and predict on a TPUStrategy.

usage: numerics_training.py   (run under `tpu-compat run --replicas N`)

Trains numerics_model's perceptron with model.fit (one global batch of 16 per
step, split over the replicas), then predicts the first batch, and prints one
``NUMERICS {json}`` line; then the same with TensorFloat-32 turned off
(``NUMERICS_TF32_OFF``), which a TPU then computes in full float32.
"""
import json

import numpy as np
import tensorflow as tf

import numerics_model as model_lib


def train():
    strategy = tf.distribute.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    features, labels = model_lib.data()
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(model_lib.SIZES[1], activation="relu",
                                  input_shape=(model_lib.SIZES[0],)),
            tf.keras.layers.Dense(model_lib.SIZES[2])])
        model.set_weights(model_lib.initial_weights())
        model.compile(optimizer=tf.keras.optimizers.SGD(model_lib.LEARNING_RATE),
                      loss="mse")
    model.fit(features, labels, batch_size=model_lib.GLOBAL_BATCH, epochs=1,
              shuffle=False, verbose=0)
    prediction = model.predict(features[:model_lib.GLOBAL_BATCH],
                               batch_size=model_lib.GLOBAL_BATCH, verbose=0)
    return {"replicas": strategy.num_replicas_in_sync,
            "weights": [w.astype(np.float64).tolist() for w in model.get_weights()],
            "prediction": prediction.astype(np.float64).tolist()}


print("NUMERICS " + json.dumps(train()))
tf.config.experimental.enable_tensor_float_32_execution(False)
print("NUMERICS_TF32_OFF " + json.dumps(train()))
