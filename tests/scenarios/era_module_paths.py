"""The TF 1.15 TPU reference trainers' deep module paths (ResNet/MnasNet main.py style).

absl flags, ``model_dir``, ``use_tpu``, ``iterations_per_loop``, ``num_cores``;
the resume loop reads the checkpoint's step with
``estimator._load_global_step_from_checkpoint_dir`` (``from
tensorflow.python.estimator import estimator``), trains with
``async_checkpoint.AsyncCheckpointSaverHook`` (``from
tensorflow.contrib.tpu.python.tpu import async_checkpoint``), and imports
``ModeKeys`` and ``RunConfig`` from their TF 1.x modules. Prints ``KEY: number``.
"""
import os

import numpy as np
import tensorflow as tf
from absl import app, flags
from tensorflow.contrib.tpu.python.tpu import async_checkpoint
from tensorflow.python.estimator import estimator
from tensorflow.python.estimator.model_fn import ModeKeys
from tensorflow.python.estimator.run_config import RunConfig

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", True, "Run on the TPU.")
flags.DEFINE_string("model_dir", None, "Where the checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("train_steps", 4, "Training steps.")
flags.DEFINE_integer("steps_per_eval", 2, "Steps between checkpoints.")
flags.DEFINE_integer("iterations_per_loop", 2, "Steps per TPU loop.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")


def input_fn(params):
    x = np.random.RandomState(1).randn(64, 2).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    del params
    assert mode == ModeKeys.TRAIN
    prediction = tf.layers.dense(features, 1)
    loss = tf.losses.mean_squared_error(labels, prediction)
    optimizer = tf.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1))
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    print(f"run_config_is_estimators: {int(RunConfig is tf.estimator.RunConfig)}")
    config = tf.estimator.tpu.RunConfig(
        model_dir=FLAGS.model_dir, save_checkpoints_steps=None,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop, num_shards=FLAGS.num_cores))
    classifier = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.train_batch_size)
    current_step = estimator._load_global_step_from_checkpoint_dir(FLAGS.model_dir)  # pylint: disable=protected-access
    print(f"step_before: {current_step}")
    while current_step < FLAGS.train_steps:
        next_checkpoint = min(current_step + FLAGS.steps_per_eval, FLAGS.train_steps)
        hooks = [async_checkpoint.AsyncCheckpointSaverHook(
            checkpoint_dir=FLAGS.model_dir, save_steps=FLAGS.steps_per_eval)]
        classifier.train(input_fn, max_steps=next_checkpoint, hooks=hooks)
        current_step = estimator._load_global_step_from_checkpoint_dir(FLAGS.model_dir)  # pylint: disable=protected-access
        print(f"step_after_loop: {current_step}")
    print(f"checkpoints: {len([f for f in os.listdir(FLAGS.model_dir) if f.endswith('.index')])}")


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
