"""A TF 1.x infeed/outfeed training program, as the AI Platform TPU template and
the TPU fundamentals codelab wrote it (argparse flags, model_dir, Colab bring-up,
initialize_system, an infeed thread and an outfeed thread, batch_parallel with
tpu.repeat). Run with `tpu-compat run --tf1`. Prints the trained weights.

--feed per_step: the codelab's other form, one feed_dict-fed infeed per step
and batch_parallel(step) without repeat, all in the main thread.
"""

import argparse
import os
import threading
import time
from functools import partial

import numpy as np
import tensorflow as tf
from tensorflow.contrib.cluster_resolver import TPUClusterResolver
from tensorflow.contrib.tpu.ops.gen_tpu_ops import infeed_enqueue_tuple, outfeed_dequeue_tuple

FEATURES = 5
TIMEOUT = tf.RunOptions(timeout_in_ms=60000)  # nothing hangs: bounded waits


def fit_batch(features, labels):
    with tf.variable_scope('linear', reuse=tf.AUTO_REUSE):
        w = tf.get_variable('w', [FEATURES, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable('b', [1], initializer=tf.zeros_initializer())
    predictions = tf.matmul(features, w) + b
    loss = tf.reduce_mean(tf.square(predictions[:, 0] - labels))
    optimizer = tf.contrib.tpu.CrossShardOptimizer(
        tf.train.GradientDescentOptimizer(learning_rate=0.1))
    global_step = tf.train.get_or_create_global_step()
    return global_step, loss, optimizer.minimize(loss, global_step=global_step)


def tpu_computation_with_infeed(batch_size, num_shards):
    features, labels = tf.contrib.tpu.infeed_dequeue_tuple(
        dtypes=[tf.float32, tf.float32],
        shapes=[(batch_size // num_shards, FEATURES), (batch_size // num_shards)])
    global_step, loss, train_op = fit_batch(features, labels)
    return tf.contrib.tpu.outfeed_enqueue_tuple((global_step, loss)), train_op


def setup_feed(features, labels, num_shards):
    infeed_ops, outfeed_ops = [], []
    batches = zip(tf.split(features, num_shards), tf.split(labels, num_shards))
    for i, batch in enumerate(batches):
        infeed_ops.append(infeed_enqueue_tuple(batch, [b.shape for b in batch],
                                               device_ordinal=i))
        outfeed_ops.append(outfeed_dequeue_tuple(dtypes=[tf.int64, tf.float32],
                                                 shapes=[(), ()], device_ordinal=i))
    return infeed_ops, outfeed_ops


def make_data(steps, batch_size):
    rng = np.random.RandomState(7)
    x = rng.rand(steps, batch_size, FEATURES).astype(np.float32)
    y = (x @ rng.rand(FEATURES).astype(np.float32) + 0.5).astype(np.float32)
    return x, y


def main(args):
    x_all, y_all = make_data(args.max_steps, args.batch_size)
    x = tf.placeholder(tf.float32, [args.batch_size, FEATURES])
    y = tf.placeholder(tf.float32, [args.batch_size])
    infeed_ops, outfeed_ops = setup_feed(x, y, args.num_shards)
    step = partial(tpu_computation_with_infeed, batch_size=args.batch_size,
                   num_shards=args.num_shards)
    if args.feed == 'threads':
        def computation_loop():
            return tf.contrib.tpu.repeat(args.max_steps, step)
        tpu_computation = tf.contrib.tpu.batch_parallel(computation_loop,
                                                        num_shards=args.num_shards)
    else:
        tpu_computation = tf.contrib.tpu.batch_parallel(step, num_shards=args.num_shards)

    tpu_init = tf.contrib.tpu.initialize_system()
    tpu_shutdown = tf.contrib.tpu.shutdown_system()
    saver = tf.train.Saver()
    sess = tf.Session(TPUClusterResolver(tpu=args.tpu).get_master())
    sess.run(tpu_init)
    sess.run(tf.global_variables_initializer())
    outfeed_data = []
    started = time.time()

    if args.feed == 'threads':
        def _run_infeed():
            for i in range(args.max_steps):
                sess.run(infeed_ops, {x: x_all[i], y: y_all[i]}, options=TIMEOUT)

        def _run_outfeed():
            for i in range(args.max_steps):
                outfeed_data.append(sess.run(outfeed_ops, options=TIMEOUT))

        infeed_thread = threading.Thread(target=_run_infeed)
        outfeed_thread = threading.Thread(target=_run_outfeed)
        infeed_thread.start()
        outfeed_thread.start()
        sess.run(tpu_computation, options=TIMEOUT)
        infeed_thread.join()
        outfeed_thread.join()
    else:
        for i in range(args.max_steps):
            sess.run(infeed_ops, {x: x_all[i], y: y_all[i]}, options=TIMEOUT)
            sess.run(tpu_computation, options=TIMEOUT)
            outfeed_data.append(sess.run(outfeed_ops, options=TIMEOUT))

    train_seconds = time.time() - started
    sess.run(tpu_shutdown)
    saver.save(sess, os.path.join(args.model_dir, 'model.ckpt'), global_step=args.max_steps)
    with tf.variable_scope('linear', reuse=True):
        w, b = sess.run([tf.get_variable('w'), tf.get_variable('b')])
    print('weights:', ' '.join(repr(float(v)) for v in list(w[:, 0]) + list(b)))
    print('outfeeds:', len(outfeed_data))
    print('last global_step:', max(int(gs) for gs, _ in outfeed_data[-1]))
    print('last loss:', float(np.mean([loss for _, loss in outfeed_data[-1]])))
    print('global_step:', sess.run(tf.train.get_global_step()))
    print('train_seconds:', train_seconds)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--model-dir', type=str, default='/tmp/tpu-template')
    parser.add_argument('--max-steps', type=int, default=20)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--num-shards', type=int, default=8)
    parser.add_argument('--feed', choices=['threads', 'per_step'], default='threads')
    parser.add_argument('--tpu', default=None)
    args, _ = parser.parse_known_args()
    if 'COLAB_TPU_ADDR' in os.environ:
        args.tpu = 'grpc://' + os.environ['COLAB_TPU_ADDR']
    main(args)
