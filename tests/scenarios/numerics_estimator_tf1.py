"""--numerics tpu, TPUEstimator spelling: use_tpu=True, iterations_per_loop=2.

usage: numerics_estimator_tf1.py   (run under `tpu-compat run --tf1 --replicas N`)

Trains numerics_model's perceptron for its 5 steps (loops of 2, 2 and 1 steps)
with a model_fn building it from tf.get_variable and a CrossShardOptimizer
(each replica a slice of the global batch of 16, gradients averaged across
shards), predicts the first batch on the TPU, and prints one
``NUMERICS {json}`` line with the trained weights and that prediction.
"""
import json
import tempfile

import numpy as np
import tensorflow as tf

import numerics_model as model_lib
from tpu_compat.runtime import backend as backend_lib


def dense_layers(x):
    w1, b1, w2, b2 = model_lib.initial_weights()
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        hidden = tf.nn.relu(tf.matmul(x, tf.get_variable("w1", initializer=w1))
                            + tf.get_variable("b1", initializer=b1))
        return (tf.matmul(hidden, tf.get_variable("w2", initializer=w2))
                + tf.get_variable("b2", initializer=b2))


def model_fn(features, labels, mode, params):
    del params
    prediction = dense_layers(features)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.tpu.TPUEstimatorSpec(mode, predictions={"y": prediction})
    loss = tf.reduce_mean(tf.square(prediction - labels))
    optimizer = tf.tpu.CrossShardOptimizer(
        tf.train.GradientDescentOptimizer(model_lib.LEARNING_RATE))
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    features, labels = model_lib.data()

    def train_input_fn(params):
        # One host: each step dequeues one batch per replica, in order, so
        # step k trains on rows [16k, 16k + 16) as the reference does.
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
            params["batch_size"], drop_remainder=True)

    def predict_input_fn(params):
        return tf.data.Dataset.from_tensor_slices(features[:model_lib.GLOBAL_BATCH]).batch(
            params["batch_size"], drop_remainder=True)

    config = tf.estimator.tpu.RunConfig(
        model_dir=tempfile.mkdtemp(), save_checkpoints_steps=1000, log_step_count_steps=None,
        tpu_config=tf.estimator.tpu.TPUConfig(iterations_per_loop=2))
    estimator = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=True,
        train_batch_size=model_lib.GLOBAL_BATCH, predict_batch_size=model_lib.GLOBAL_BATCH)
    estimator.train(train_input_fn, max_steps=model_lib.STEPS)
    weights = [estimator.get_variable_value(f"model/{n}") for n in ("w1", "b1", "w2", "b2")]
    prediction = [p["y"] for p in estimator.predict(predict_input_fn)]
    print("NUMERICS " + json.dumps({
        "replicas": backend_lib.get_backend().num_replicas,
        "global_step": int(estimator.get_variable_value("global_step")),
        "weights": [np.asarray(w, np.float64).tolist() for w in weights],
        "prediction": np.asarray(prediction, np.float64).tolist()}))


main()
