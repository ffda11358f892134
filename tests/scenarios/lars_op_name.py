"""A TF 1.15 TPUEstimator program with a LARS optimizer that names its slots by param.op.name.

Written as the TPU pre-training code of 2019-2020 was (SimCLR's
lars_optimizer.py and the LARS/LAMB optimizers copied from it): a
``tf.train.Optimizer`` subclass whose ``apply_gradients`` makes each
parameter's momentum with ``tf.get_variable(param.op.name + "/Momentum")``,
excludes batch norm and biases from weight decay by ``param.name``, scales
the step by the trust ratio ``||w|| / ||g||``, and is wrapped in
``CrossShardOptimizer`` on the TPU. absl flags, ``model_dir``, ``use_tpu``,
``num_cores``, a ``TPUClusterResolver`` bring-up. Without ``--use_tpu`` it is
the one-device reference of the same global batch.

Prints ``KEY: number`` lines: every variable's sum and sum of squares (the
momentum slots too) after ``--train_steps``.
"""
import re

import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", False, "Run on the TPU.")
flags.DEFINE_string("tpu", "", "TPU name.")
flags.DEFINE_string("model_dir", None, "Where the checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("train_steps", 3, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 1, "Steps per TPU loop.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")
flags.DEFINE_float("learning_rate", 0.3, "LARS learning rate.")

DIM, HIDDEN, CLASSES = 5, 7, 3
EETA = 0.001


class LARSOptimizer(tf.train.Optimizer):
    """Layer-wise adaptive rate scaling, as the era's TPU code wrote it."""

    def __init__(self, learning_rate, momentum=0.9, weight_decay=1e-4,
                 exclude_from_weight_decay=("batch_normalization", "bias"), name="LARSOptimizer"):
        super().__init__(False, name)
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.exclude_from_weight_decay = exclude_from_weight_decay

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        assignments = []
        for grad, param in grads_and_vars:
            if grad is None or param is None:
                continue
            param_name = re.match("^(.*):\\d+$", param.name).group(1)
            v = tf.get_variable(name=param.op.name + "/Momentum", shape=param.shape.as_list(),
                                dtype=tf.float32, trainable=False,
                                initializer=tf.zeros_initializer())
            if self._use_weight_decay(param_name):
                grad += self.weight_decay * param
            w_norm = tf.norm(param, ord=2)
            g_norm = tf.norm(grad, ord=2)
            trust_ratio = tf.where(tf.greater(w_norm, 0),
                                   tf.where(tf.greater(g_norm, 0), EETA * w_norm / g_norm, 1.0),
                                   1.0)
            next_v = self.momentum * v + trust_ratio * self.learning_rate * grad
            assignments.extend([param.assign(param - next_v), v.assign(next_v)])
        if global_step is not None:
            assignments.append(global_step.assign_add(1))
        return tf.group(*assignments, name=name)

    def _use_weight_decay(self, param_name):
        return not any(re.search(r, param_name) for r in self.exclude_from_weight_decay)


def input_fn(params):
    rng = np.random.RandomState(7)
    x = rng.randn(64, DIM).astype(np.float32)
    y = rng.randint(0, CLASSES, size=64).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    del params
    init = tf.constant_initializer(
        np.random.RandomState(3).randn(DIM, HIDDEN).astype(np.float32) * 0.5)
    hidden = tf.nn.relu(tf.layers.dense(features, HIDDEN, kernel_initializer=init, name="dense"))
    head_init = tf.constant_initializer(
        np.random.RandomState(4).randn(HIDDEN, CLASSES).astype(np.float32) * 0.5)
    logits = tf.layers.dense(hidden, CLASSES, kernel_initializer=head_init, name="head")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = LARSOptimizer(FLAGS.learning_rate)
    if FLAGS.use_tpu:
        optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    config = tf.estimator.tpu.RunConfig(
        cluster=resolver if FLAGS.use_tpu else None, model_dir=FLAGS.model_dir,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop, num_shards=FLAGS.num_cores))
    estimator = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.train_batch_size)
    estimator.train(input_fn, max_steps=FLAGS.train_steps)
    for name in estimator.get_variable_names():
        if name.startswith(("dense", "head")):
            value = estimator.get_variable_value(name)
            print(f"{name}_sum: {float(np.sum(value))!r}")
            print(f"{name}_sumsq: {float(np.sum(np.square(value)))!r}")


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
