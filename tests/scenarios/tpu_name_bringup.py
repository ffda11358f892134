"""The era's TPU bring-up, with the TPU from TPU_NAME (tests/test_tpu_name.py)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
print("replicas", strategy.num_replicas_in_sync)
