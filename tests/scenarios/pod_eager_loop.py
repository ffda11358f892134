"""TF 2.1's tutorial custom loop on a pod, for the pod fault tests.

usage: pod_eager_loop.py MAX_SECONDS [HOST_SECONDS]

Colab-style bring-up, TPUStrategy, and the loop of TF 2.1's "Custom training
with tf.distribute.Strategy" tutorial: the distributed dataset is iterated in
Python (``for x in train_dist_dataset``) and each step is one tf.function
call. Unlike pod_long_training.py, every step's input is fetched eagerly, and
TensorFlow's (2.21) eager iterator runs each fetch on a new executor
(``context.execution_mode(SYNC)`` in tensorflow/python/data/ops/iterator_ops.py):
when a worker stops answering, those executors hold the error, and Python
reports each one it cannot raise as the interpreter ends ("Exception ignored in
Executor.__del__ ... UnavailableError", issue 33). It prints ``step: N`` after
each step, flushed, then does the host's own work for HOST_SECONDS (what a
loop's logging or summary writing takes; a sleep here), so that a test that
acts on that line knows the program's next TensorFlow call is the input fetch.
It stops by itself after MAX_SECONDS.
"""
import sys
import time

import numpy as np
import tensorflow as tf

MAX_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
HOST_SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
GLOBAL_BATCH = 32

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print("replicas: %d" % strategy.num_replicas_in_sync, flush=True)

rng = np.random.RandomState(0)
features = rng.randn(GLOBAL_BATCH * 8, 10).astype(np.float32)
labels = features.sum(axis=1, keepdims=True).astype(np.float32)
train_dataset = (tf.data.Dataset.from_tensor_slices((features, labels))
                 .repeat().batch(GLOBAL_BATCH, drop_remainder=True))
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu",
                                                       input_shape=(10,)),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        loss = tf.nn.compute_average_loss(
            tf.square(model(x, training=True) - y), global_batch_size=GLOBAL_BATCH)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.experimental_run_v2(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


start = time.monotonic()
step = 0
for x in train_dist_dataset:
    step += 1
    loss = distributed_train_step(x)
    print("step: %d loss: %.6f" % (step, float(loss)), flush=True)
    time.sleep(HOST_SECONDS)
    if time.monotonic() - start > MAX_SECONDS:
        break
print("finished: 1", flush=True)
