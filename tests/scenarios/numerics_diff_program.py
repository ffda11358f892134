"""A program whose numbers --numerics tpu moves, and some it leaves alone.

usage: numerics_diff_program.py [--scale S]   (run under `tpu-compat run`)

``matmul_sum``: a float32 matmul in a replica step (rounded under tpu);
``host_sum``: the same matmul on the host, outside any replica step (exact
either way); ``rows``: a count.
"""
import sys

import numpy as np
import tensorflow as tf

scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
rng = np.random.RandomState(3)
a = (scale * rng.randn(8, 64)).astype(np.float32)
b = rng.randn(64, 4).astype(np.float32)
strategy = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
step = tf.function(lambda: strategy.run(lambda: tf.reduce_sum(tf.matmul(a, b))))
print(f"matmul_sum: {float(strategy.experimental_local_results(step())[0]):.9g}")
print(f"host_sum: {float(tf.reduce_sum(tf.matmul(a, b))):.9g}")
print(f"rows: {a.shape[0]}")
