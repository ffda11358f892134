"""TF 2.x host placement on an emulated pod slice (run with TPU_COMPAT_NUM_HOSTS=2).

A pod program's input pipelines and host code name their host as
``/job:worker/task:h`` and TPU cores as ``/job:worker/task:h/device:TPU:i``;
on the emulated pod these are the worker processes' devices.
"""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)

for name in ["/job:worker/task:1/device:CPU:0",
             "/job:worker/replica:0/task:1/device:TPU:2",
             "/device:TPU:5",
             "/job:worker"]:
    with tf.device(name):
        print(f"PLACED {name} -> {tf.constant(1.0).device}")
try:
    tf.device("/job:worker/task:2")
except ValueError as error:
    print(f"ERROR {error}")
