"""A TF 1.x TPUEstimator program, written as the Cloud TPU tutorials of TF 1.13-1.15 wrote them.

argparse flags passed whole as ``params=vars(args)`` (``use_tpu`` among them,
which TF 1.13-1.15 overwrote rather than refused), ``model_dir``, the Colab
bring-up ``TPUClusterResolver(tpu=...)`` in ``RunConfig(cluster=...)``, a
``session_config`` with ``log_device_placement`` (and, with
``--no_soft_placement``, without soft placement), ``tf.logging`` at INFO, and
a ``model_fn`` that logs and prints as it builds. Run it with
``tpu-compat run --tf1``; ``--use_tpu`` on the emulated TPU, without it on
the CPU (the single-device reference). Prints ``KEY: number`` lines.
"""
import argparse
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--use_tpu", action="store_true")
parser.add_argument("--tpu", default="")
parser.add_argument("--model_dir", required=True)
parser.add_argument("--train_batch_size", type=int, default=32)
parser.add_argument("--eval_batch_size", type=int, default=32)
parser.add_argument("--train_steps", type=int, default=8)
parser.add_argument("--eval_steps", type=int, default=2)
parser.add_argument("--iterations_per_loop", type=int, default=2)
parser.add_argument("--log_step_count_steps", type=int, default=4)
parser.add_argument("--learning_rate", type=float, default=0.05)
parser.add_argument("--no_soft_placement", action="store_true")
args = parser.parse_args()

tf.logging.set_verbosity(tf.logging.INFO)
FEATURES = 4
model_fn_calls = {"train": 0, "eval": 0}


def input_fn(params):
    rng = np.random.RandomState(11)
    x = rng.randn(512, FEATURES).astype(np.float32)
    y = x.dot(np.array([[2.0], [-1.0], [0.5], [1.5]], np.float32)) - 0.5
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    model_fn_calls[mode] += 1
    tf.logging.info("model_fn: building the %s graph", mode)
    print("model_fn print: %s" % mode)
    w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(features, w) + b
    loss = tf.losses.mean_squared_error(labels, prediction)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(params["learning_rate"])
        if params["use_tpu"]:
            optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def metric_fn(labels, prediction):
        return {"mse": tf.metrics.mean_squared_error(labels, prediction),
                "mean_prediction": tf.metrics.mean(prediction)}
    return tf.contrib.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, prediction]))


def main():
    resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=args.tpu)
    session_config = tf.ConfigProto(
        log_device_placement=True, allow_soft_placement=not args.no_soft_placement)
    config = tf.contrib.tpu.RunConfig(
        cluster=resolver, model_dir=args.model_dir, session_config=session_config,
        save_checkpoints_steps=1000, log_step_count_steps=args.log_step_count_steps,
        tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=args.iterations_per_loop))
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=model_fn, config=config, params=vars(args), use_tpu=args.use_tpu,
        train_batch_size=args.train_batch_size, eval_batch_size=args.eval_batch_size)
    estimator.train(input_fn, max_steps=args.train_steps)
    result = estimator.evaluate(input_fn, steps=args.eval_steps)
    for key in sorted(result):
        print("eval_%s: %.9g" % (key, result[key]))
    for index, value in enumerate(estimator.get_variable_value("w").ravel()):
        print("w%d: %.9g" % (index, value))
    print("b: %.9g" % estimator.get_variable_value("b")[0])
    print("model_fn_calls_train: %d" % model_fn_calls["train"])
    print("model_fn_calls_eval: %d" % model_fn_calls["eval"])
    print("eval_dir_files: %d" % len(tf.gfile.Glob(
        os.path.join(args.model_dir, "eval", "events.out.tfevents.*"))))


main()
