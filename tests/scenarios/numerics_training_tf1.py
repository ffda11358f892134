"""--numerics tpu, TF 1.x spelling: tpu.replicate, CrossShardOptimizer, a Session.

usage: numerics_training_tf1.py   (run under `tpu-compat run --tf1 --replicas N`)

Trains numerics_model's perceptron with variables from tf.get_variable in a
replicated computation (each replica a slice of the global batch of 16,
gradients averaged across shards), then prints one ``NUMERICS {json}`` line
with the trained weights and a prediction of the first batch.
"""
import json

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


def main():
    features, labels = model_lib.data()
    replicas = backend_lib.get_backend().num_replicas
    step = tf.placeholder(tf.int32, [])
    start = step * model_lib.GLOBAL_BATCH
    batch_x = tf.slice(tf.constant(features), [start, 0],
                       [model_lib.GLOBAL_BATCH, model_lib.SIZES[0]])
    batch_y = tf.slice(tf.constant(labels), [start, 0],
                       [model_lib.GLOBAL_BATCH, model_lib.SIZES[2]])
    inputs = [list(pair) for pair in zip(tf.split(batch_x, replicas),
                                         tf.split(batch_y, replicas))]

    def computation(x, y):
        loss = tf.reduce_mean(tf.square(dense_layers(x) - y))
        optimizer = tf.tpu.CrossShardOptimizer(
            tf.train.GradientDescentOptimizer(model_lib.LEARNING_RATE))
        return optimizer.minimize(loss)

    train = tf.tpu.replicate(computation, inputs)
    predict = tf.tpu.replicate(
        lambda x: dense_layers(x),
        [[tf.constant(features[:model_lib.GLOBAL_BATCH])]] * replicas)
    with tf.Session() as session:
        session.run(tf.global_variables_initializer())
        for i in range(model_lib.STEPS):
            session.run(train, {step: i})
        by_name = {v.op.name: v for v in tf.global_variables()}
        weights = session.run([by_name[f"model/{n}"] for n in ("w1", "b1", "w2", "b2")])
        prediction = session.run(predict)[0][0]
    print("NUMERICS " + json.dumps({
        "replicas": replicas,
        "weights": [np.asarray(w, np.float64).tolist() for w in weights],
        "prediction": np.asarray(prediction, np.float64).tolist()}))


main()
