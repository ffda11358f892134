"""A long TF 2.1-style custom training loop, for the pod fault tests.

usage: pod_long_training.py MAX_SECONDS [STEPS_PER_CALL]

Colab-style bring-up, TPUStrategy, a Keras model trained by a custom loop
whose tf.function runs STEPS_PER_CALL steps on device (a tf.range loop), fed
by experimental_distribute_datasets_from_function (one pipeline per host).
It prints ``step: N`` after each call, flushed, so that a test knows training
is under way, and stops by itself after MAX_SECONDS (a test that fails to
interrupt it still ends).
"""
import sys
import time

import numpy as np
import tensorflow as tf

MAX_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
GLOBAL_BATCH = 32
STEPS_PER_CALL = int(sys.argv[2]) if len(sys.argv) > 2 else 20

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print("replicas: %d" % strategy.num_replicas_in_sync, flush=True)
print("hosts: %d" % strategy.extended.num_hosts, flush=True)

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
def train(iterator):
    def step_fn(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                tf.square(model(x, training=True) - y), global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    total = tf.constant(0.0)
    for _ in tf.range(STEPS_PER_CALL):
        per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
        total += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
    return total / STEPS_PER_CALL


start = time.monotonic()
step = 0
while time.monotonic() - start < MAX_SECONDS:
    loss = float(train(iterator))
    step += STEPS_PER_CALL
    print("step: %d loss: %.6f" % (step, loss), flush=True)
print("finished: 1", flush=True)
