"""A TF 1.12-1.14 TPU program: tf.contrib names and the low-level TPU API."""
import tensorflow as tf
from tensorflow.contrib import cluster_resolver as contrib_cluster_resolver  # expect: TPC100
from tensorflow.contrib import data as contrib_data  # expect: TPC100
from tensorflow.contrib import distribute as contrib_distribute  # expect: TPC100
from tensorflow.contrib import tpu as contrib_tpu  # expect: TPC100
import tensorflow.compat.v1 as tf1

resolver = contrib_cluster_resolver.TPUClusterResolver(tpu='')  # expect: TPC063
strategy = contrib_distribute.TPUStrategy(resolver, steps_per_run=100)  # expect: TPC062
legacy_strategy = tf.contrib.distribute.TPUStrategy(resolver)  # expect: TPC062
dataset = tf.data.TFRecordDataset(["f"]).apply(
    contrib_data.parallel_interleave(tf.data.TFRecordDataset, cycle_length=4))  # expect: TPC065
dataset = dataset.apply(tf.contrib.data.shuffle_and_repeat(100))  # expect: TPC066
dataset = dataset.apply(contrib_data.map_and_batch(lambda x: x, batch_size=8))  # expect: TPC064
hparams = tf.contrib.training.HParams(learning_rate=0.1)  # expect: TPC068
init = tf.contrib.layers.xavier_initializer()  # expect: TPC069


def model(x):
    hidden = tf.contrib.layers.layer_norm(x)  # expect: TPC067
    with tf.device(contrib_tpu.core(0)):  # expect: TPC058
        hidden = contrib_tpu.outside_compilation(tf.identity, hidden)  # expect: TPC057
    total = contrib_tpu.cross_replica_sum(hidden)  # expect: TPC053
    opt = contrib_tpu.CrossShardOptimizer(tf.train.AdamOptimizer())  # expect: TPC054
    return opt.minimize(tf.reduce_sum(total))


with contrib_tpu.bfloat16_scope():  # expect: TPC059
    outputs = contrib_tpu.replicate(model, [[tf.ones([2])]] * 8)  # expect: TPC051
one = contrib_tpu.rewrite(model, [tf.ones([2])])  # expect: TPC052
sharded = contrib_tpu.shard(model, [tf.ones([8])], num_shards=8)  # expect: TPC055
batched = contrib_tpu.batch_parallel(model, [tf.ones([8])], num_shards=8)  # expect: TPC056
init_op = contrib_tpu.initialize_system()  # expect: TPC060
shutdown_op = contrib_tpu.shutdown_system()  # expect: TPC061

# The same API through tf.compat.v1.tpu (TF 1.15 and later).
outputs = tf1.tpu.replicate(model, [[tf.ones([2])]] * 8)  # expect: TPC040
one = tf1.tpu.rewrite(model, [tf.ones([2])])  # expect: TPC041
total = tf1.tpu.cross_replica_sum(tf.ones([]))  # expect: TPC042
opt = tf1.tpu.CrossShardOptimizer(tf1.train.AdamOptimizer())  # expect: TPC043
sharded = tf1.tpu.shard(model, [tf.ones([8])], num_shards=8)  # expect: TPC044
batched = tf1.tpu.batch_parallel(model, [tf.ones([8])], num_shards=8)  # expect: TPC045
host = tf1.tpu.outside_compilation(tf.identity, total)  # expect: TPC046
device = tf1.tpu.core(0)  # expect: TPC047
with tf1.tpu.bfloat16_scope():  # expect: TPC048
    pass
init_op = tf1.tpu.initialize_system()  # expect: TPC049
shutdown_op = tf1.tpu.shutdown_system()  # expect: TPC050
