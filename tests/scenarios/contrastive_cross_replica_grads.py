"""A SimCLR-style TF 1.15 TPUEstimator program: cross-replica ops in the forward pass.

Written as the self-supervised TPU code of 2019-2020 was (absl flags,
``model_dir``, ``use_tpu``, ``iterations_per_loop``, ``num_cores``,
``TPUClusterResolver`` bring-up): a "global batch norm" whose moments are
``tf.tpu.cross_replica_sum`` of the per-replica moments, and a contrastive
loss over the whole global batch whose hidden vectors are concatenated across
replicas with SimCLR's ``scatter_nd`` + ``cross_replica_sum`` idiom
(``tpu_cross_replica_concat``, placed by ``xla.replica_id()``), so the loss is differentiated through two
different cross-replica sums of different shapes. As SimCLR's model_fn, it
adds weight decay with ``tf.losses.add_loss`` and reads its loss back with
``tf.losses.get_total_loss()``, each replica's own on a TPU. Trained with
``CrossShardOptimizer``. Without ``--use_tpu`` it is the one-device reference
of the same global batch (both cross-replica ops are identities there).

Prints ``KEY: number`` lines: the loss, every trained variable's sum and
sum of squares after ``--train_steps``.
"""
import numpy as np
import tensorflow as tf
from absl import app, flags
from tensorflow.compiler.tf2xla.python import xla

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", False, "Run on the TPU.")
flags.DEFINE_string("tpu", "", "TPU name.")
flags.DEFINE_string("model_dir", None, "Where the checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("train_steps", 2, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 1, "Steps per TPU loop.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")
flags.DEFINE_float("learning_rate", 0.5, "SGD learning rate.")
flags.DEFINE_float("temperature", 0.5, "Contrastive temperature.")

DIM, HIDDEN, PROJ = 4, 6, 3


def num_replicas():
    return FLAGS.num_cores if FLAGS.use_tpu else 1


def replica_id():
    # As SimCLR's objective.py read it: XLA's replica id, a uint32 on a TPU.
    return tf.cast(tf.cast(xla.replica_id(), tf.uint32), tf.int32)


def cross_replica_mean(tensor):
    if num_replicas() == 1:
        return tensor
    return tf.tpu.cross_replica_sum(tensor) / num_replicas()


def global_batch_norm(x, name):
    """Batch norm over the global batch: moments summed across the replicas."""
    with tf.variable_scope(name):
        gamma = tf.get_variable("gamma", [x.shape[-1]], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [x.shape[-1]], initializer=tf.zeros_initializer())
        mean = cross_replica_mean(tf.reduce_mean(x, axis=0))
        mean_of_squares = cross_replica_mean(tf.reduce_mean(tf.square(x), axis=0))
        variance = mean_of_squares - tf.square(mean)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-3)


def tpu_cross_replica_concat(tensor):
    """Every replica's rows, in replica order, on every replica."""
    if num_replicas() == 1:
        return tensor
    # SimCLR's form: this replica's rows at its index, zeros elsewhere, summed.
    ext_tensor = tf.scatter_nd(indices=[[xla.replica_id()]], updates=[tensor],
                               shape=[num_replicas()] + tensor.shape.as_list())
    ext_tensor = tf.tpu.cross_replica_sum(ext_tensor)
    return tf.reshape(ext_tensor, [-1] + ext_tensor.shape.as_list()[2:])


def input_fn(params):
    rng = np.random.RandomState(5)
    x = rng.randn(64, DIM).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices(x).repeat()
    dataset = dataset.batch(params["batch_size"], drop_remainder=True)
    return dataset.map(lambda x: (x, tf.zeros([params["batch_size"]], tf.int32)))


def model_fn(features, labels, mode, params):
    del labels
    init = tf.constant_initializer(
        np.random.RandomState(3).randn(DIM, HIDDEN).astype(np.float32) * 0.5)
    hidden = tf.layers.dense(features, HIDDEN, kernel_initializer=init, name="dense")
    hidden = tf.nn.relu(global_batch_norm(hidden, "bn"))
    proj_init = tf.constant_initializer(
        np.random.RandomState(4).randn(HIDDEN, PROJ).astype(np.float32) * 0.5)
    z = tf.math.l2_normalize(
        tf.layers.dense(hidden, PROJ, kernel_initializer=proj_init, name="head"), -1)
    z_all = tpu_cross_replica_concat(z)
    local = tf.shape(z)[0]
    offset = replica_id() * local if num_replicas() > 1 else 0
    logits = tf.matmul(z, z_all, transpose_b=True) / FLAGS.temperature
    targets = tf.one_hot(tf.range(local) + offset, tf.shape(z_all)[0])
    tf.losses.softmax_cross_entropy(targets, logits)
    # SimCLR's model_fn: weight decay added to the losses collection, and the
    # loss read back from it (each TPU replica built its own collection once).
    tf.losses.add_loss(1e-2 * tf.add_n(
        [tf.nn.l2_loss(v) for v in tf.trainable_variables() if "kernel" in v.name]))
    loss = tf.losses.get_total_loss()
    optimizer = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
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
        if name.startswith(("dense", "head", "bn")) and "Momentum" not in name:
            value = estimator.get_variable_value(name)
            print(f"{name}_sum: {float(np.sum(value))!r}")
            print(f"{name}_sumsq: {float(np.sum(np.square(value)))!r}")


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
