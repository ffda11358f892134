"""A TF 2.0-era program with no TPU (MirroredStrategy, numpy input through
the strategy): issue 35 upgrades it and runs the result with plain python on
stock TF 2.21, no tpu_compat."""

import sys

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
x = np.arange(32, dtype="float32").reshape(16, 2)
dataset = strategy.experimental_make_numpy_dataset(x).batch(4)

with strategy.scope():
    v = tf.Variable(0.0)


@tf.function
def step(batch):
    def replica_fn(b):
        v.assign_add(tf.reduce_sum(b))
        return tf.reduce_mean(b)
    return strategy.reduce(tf.distribute.ReduceOp.SUM,
                           strategy.experimental_run_v2(replica_fn, args=(batch,)),
                           axis=None)


total = 0.0
for batch in strategy.experimental_distribute_dataset(dataset):
    total += float(step(batch))
print(f"total: {total:.6f}")
print(f"v: {float(v.numpy()):.6f}")
print("tpu_compat_loaded:", int(any(m.split(".")[0] == "tpu_compat" for m in sys.modules)))
