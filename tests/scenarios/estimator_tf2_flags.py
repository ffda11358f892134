"""A TF 2.x TPUEstimator program, written as the TF 2.1-2.3 guides wrote them.

absl flags, ``params=FLAGS.flag_values_dict()`` (the whole flag set, with
``use_tpu`` among it), the Colab bring-up (``TPUClusterResolver(tpu=...)``)
and a plain ``tf.compat.v1.train.GradientDescentOptimizer`` without
``CrossShardOptimizer``, which tensorflow_estimator 2.x accepted (its
``_validate_tpu_training_graph`` returned early under control flow v2). Run
as a TF 2 program (no ``--tf1``). Prints ``KEY: number`` lines; the test
checks them against a NumPy reference of what a TPU computed.

Usage: estimator_tf2_flags.py --model_dir DIR [--use_tpu] [--iterations N]
"""
from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", False, "Run on the TPU.")
flags.DEFINE_string("tpu", "", "The TPU's name (Colab: '').")
flags.DEFINE_string("model_dir", None, "Where checkpoints go.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size.")
flags.DEFINE_integer("iterations", 4, "iterations_per_loop.")
flags.DEFINE_integer("train_steps", 10, "Training steps.")
flags.DEFINE_float("learning_rate", 0.05, "SGD learning rate.")

FEATURES = 4


def data():
    rng = np.random.RandomState(7)
    x = rng.randn(1024, FEATURES).astype(np.float32)
    y = x.dot(np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)) + 0.25
    return x, y


def input_fn(params):
    x, y = data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    logging.info("model_fn building mode=%s", mode)
    w = tf.compat.v1.get_variable("w", [FEATURES, 1],
                                  initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    prediction = tf.matmul(features, w) + b
    loss = tf.reduce_mean(tf.square(prediction - labels))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(argv):
    del argv
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    config = tf.compat.v1.estimator.tpu.RunConfig(
        cluster=resolver, model_dir=FLAGS.model_dir, save_checkpoints_steps=1000,
        tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations))
    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.train_batch_size,
        params=FLAGS.flag_values_dict())
    estimator.train(input_fn, max_steps=FLAGS.train_steps)
    print("global_step: %d" % estimator.get_variable_value("global_step"))
    for index, value in enumerate(estimator.get_variable_value("w").ravel()):
        print("w%d: %.9g" % (index, value))
    print("b: %.9g" % estimator.get_variable_value("b")[0])


if __name__ == "__main__":
    app.run(main)
