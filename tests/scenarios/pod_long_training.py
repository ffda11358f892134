"""A long TF 2.1-style custom training loop, for the pod fault tests.

usage: pod_long_training.py MAX_SECONDS [SECONDS_PER_CALL [INSIDE_FILE]]

Colab-style bring-up, TPUStrategy, a Keras model trained by a custom loop
whose tf.function trains on device (a tf.range loop) for SECONDS_PER_CALL
seconds per call, fed by experimental_distribute_datasets_from_function (one
input pipeline per host). It prints ``calling: N`` before and ``step: N``
after each call, flushed, so that a test knows where the program is, and
stops by itself after MAX_SECONDS (a test that fails to interrupt it still
ends). With INSIDE_FILE (an absolute path), each call writes that file from
inside its TensorFlow execution: once it exists, the program's main thread is
in TensorFlow's C++ code, not in Python (``calling: N`` is printed before the
call, and the first call then traces for a while in Python).
"""
import sys
import time

import numpy as np
import tensorflow as tf

MAX_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
SECONDS_PER_CALL = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
INSIDE_FILE = sys.argv[3] if len(sys.argv) > 3 else None
GLOBAL_BATCH = 32
MAX_STEPS_PER_CALL = 1000000

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print("replicas: %d" % strategy.num_replicas_in_sync, flush=True)
print("hosts: %d" % strategy.extended.num_hosts, flush=True)
print("cluster_workers: %d" % len(resolver.cluster_spec().as_dict()["worker"]), flush=True)

rng = np.random.RandomState(0)
features = rng.randn(GLOBAL_BATCH * 8, 10).astype(np.float32)
labels = features.sum(axis=1, keepdims=True).astype(np.float32)


def dataset_fn(ctx):
    per_replica = ctx.get_per_replica_batch_size(GLOBAL_BATCH)
    return (tf.data.Dataset.from_tensor_slices((features, labels))
            .shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
            .repeat().batch(per_replica, drop_remainder=True))


with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu",
                                                       input_shape=(10,)),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
iterator = iter(strategy.experimental_distribute_datasets_from_function(dataset_fn))


@tf.function
def train(iterator, seconds):
    def step_fn(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                tf.square(model(x, training=True) - y), global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    deadline = tf.timestamp() + seconds
    if INSIDE_FILE:
        # A stateful op, so the function runs it (and in order with the loop).
        tf.io.write_file(INSIDE_FILE, "inside a call\n")
    total = tf.constant(0.0)
    steps = tf.constant(0)
    for _ in tf.range(MAX_STEPS_PER_CALL):
        per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
        total += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        steps += 1
        if tf.timestamp() > deadline:
            break
    return steps, total / tf.cast(steps, tf.float32)


start = time.monotonic()
calls = 0
while time.monotonic() - start < MAX_SECONDS:
    calls += 1
    print("calling: %d" % calls, flush=True)
    steps, loss = train(iterator, tf.constant(SECONDS_PER_CALL, tf.float64))
    print("step: %d steps: %d loss: %.6f" % (calls, int(steps), float(loss)), flush=True)
print("finished: 1", flush=True)
