"""TF 1.14/1.15's "Estimator + DistributionStrategy" path, written as 2019 code wrote it.

Modelled on tensorflow/tpu's models/experimental/distribution_strategy/
resnet_estimator.py: absl flags, ``model_dir``, a per-core batch size flag
(with a strategy, ``input_fn``'s batch is per replica), a TPU bring-up
(``TPUClusterResolver``, ``TF_CONFIG`` naming the session masters), and
``tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(
train_distribute=strategy, eval_distribute=strategy))``, trained in rounds of
``max_steps`` and evaluated after each.

One run trains and evaluates the same model three times, in the same process:

* ``tpu``: ``tf.distribute.experimental.TPUStrategy(resolver)`` (one step per
  run, the TF 1.15 default);
* ``contrib``: TF 1.14's ``tf.contrib.distribute.TPUStrategy(resolver,
  steps_per_run=2)`` for training and a multi-GPU script's
  ``tf.distribute.MirroredStrategy(["/gpu:0", ...])`` for evaluation (the
  GPUs are emulated devices here);
* ``ref``: the single-device reference, a plain Estimator without a strategy,
  whose batch is the global one (per-core batch x cores), as TF 1.14's
  Estimator fed the replicas consecutive per-replica batches.

Prints ``KEY: number`` lines: the trained weights, the evaluation metrics and
the global step of each.
"""
import json
import os

import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("tpu", "", "Name of the TPU to run against.")
flags.DEFINE_string("model_dir", None, "Directory for checkpoints (one per run).")
flags.DEFINE_integer("num_cores", 8, "Number of cores in the TPU.")
flags.DEFINE_integer("train_batch_size", 4, "Per core batch size.")
flags.DEFINE_integer("eval_batch_size", 2, "Per core batch size.")
flags.DEFINE_integer("steps_per_eval", 4, "Training steps between evaluations.")
flags.DEFINE_integer("train_steps", 8, "Total training steps.")
flags.DEFINE_integer("eval_steps", 2, "Evaluation steps.")
flags.DEFINE_float("learning_rate", 0.1, "Learning rate.")

FEATURES = 4
TRUE_W = np.array([[1.5], [-2.0], [0.5], [1.0]], np.float32)


def make_data(seed, rows):
    rng = np.random.RandomState(seed)
    x = rng.randn(rows, FEATURES).astype(np.float32)
    y = x.dot(TRUE_W) + 0.25 + 0.1 * rng.randn(rows, 1).astype(np.float32)
    return x, y


TRAIN = make_data(3, 2048)
EVAL = make_data(4, 512)


def input_fn(data, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices(data).repeat()
    return dataset.batch(batch_size, drop_remainder=True)


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(features, w) + b
    loss = tf.losses.mean_squared_error(labels, prediction)
    if mode == tf.estimator.ModeKeys.EVAL:
        eval_metric_ops = {
            "mae": tf.metrics.mean_absolute_error(labels, prediction),
            "mean_prediction": tf.metrics.mean(prediction),
            "overshoot_rate": tf.metrics.mean(tf.to_float(prediction > labels)),
        }
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=eval_metric_ops)
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.MomentumOptimizer(FLAGS.learning_rate, momentum=0.5)
    train_op = optimizer.minimize(loss, global_step=global_step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_and_evaluate(name, train_distribution, eval_distribution, batch_scale):
    config = tf.estimator.RunConfig(
        model_dir=os.path.join(FLAGS.model_dir, name),
        train_distribute=train_distribution,
        eval_distribute=eval_distribution,
        save_checkpoints_steps=FLAGS.steps_per_eval,
        save_checkpoints_secs=None,
        log_step_count_steps=2)
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    train_batch = FLAGS.train_batch_size * batch_scale
    eval_batch = FLAGS.eval_batch_size * batch_scale
    current_step = 0
    while current_step < FLAGS.train_steps:
        next_checkpoint = min(current_step + FLAGS.steps_per_eval, FLAGS.train_steps)
        estimator.train(input_fn=lambda: input_fn(TRAIN, train_batch),
                        max_steps=next_checkpoint)
        current_step = next_checkpoint
        eval_results = estimator.evaluate(input_fn=lambda: input_fn(EVAL, eval_batch),
                                          steps=FLAGS.eval_steps)
        tf.logging.info("Eval results: %s" % eval_results)
    for key in ("loss", "mae", "mean_prediction", "overshoot_rate", "global_step"):
        print("%s_eval_%s: %r" % (name, key, float(eval_results[key])))
    for index, value in enumerate(estimator.get_variable_value("w").ravel()):
        print("%s_w%d: %r" % (name, index, float(value)))
    print("%s_b: %r" % (name, float(estimator.get_variable_value("b")[0])))
    print("%s_global_step: %r" % (name, float(
        estimator.get_variable_value(tf.GraphKeys.GLOBAL_STEP))))


def main(unused_argv):
    resolver = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
    # As resnet_estimator.py: the Estimator reads its session masters from TF_CONFIG.
    os.environ["TF_CONFIG"] = json.dumps({
        "session_master": resolver.get_master(),
        "eval_session_master": resolver.get_master()})
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    train_and_evaluate("tpu", strategy, strategy, 1)
    train_and_evaluate(
        "contrib", tf.contrib.distribute.TPUStrategy(resolver, steps_per_run=2),
        tf.distribute.MirroredStrategy(["/gpu:%d" % i for i in range(FLAGS.num_cores)]), 1)
    train_and_evaluate("ref", None, None, FLAGS.num_cores)


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    flags.mark_flag_as_required("model_dir")
    app.run(main)
