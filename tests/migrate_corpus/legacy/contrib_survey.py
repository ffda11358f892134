"""The tf.contrib names TPU programs used beside the TPU ones (docs/contrib_survey.md)."""
import json
import os

import tensorflow as tf
from tensorflow.contrib import summary  # expect: TPC100
import tensorflow.contrib.tpu  # expect: TPC100
from tensorflow.contrib.tpu.python.tpu import tpu_config  # expect: TPC100
from tensorflow.contrib.training.python.training import evaluation  # expect: TPC100
from tensorflow import contrib  # expect: TPC100
import tensorflow.contrib.slim as slim  # expect: TPC100

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
    tpu="grpc://" + os.environ["COLAB_TPU_ADDR"])
tf.contrib.distribute.initialize_tpu_system(resolver)  # expect: TPC105
one = tf.contrib.distribute.OneDeviceStrategy("/cpu:0")  # expect: TPC106
cluster = tf.contrib.cluster_resolver.TFConfigClusterResolver()  # expect: TPC107
topology = tf.contrib.tpu.Topology(serialized=b"")  # expect: TPC108
with tf.Session() as session:
    tf.contrib.cloud.configure_gcs(session, credentials=json.load(open("adc.json")))  # expect: TPC109
    cache = tf.contrib.cloud.BlockCacheParams(max_bytes=1)  # expect: TPC129
dataset = tf.data.Dataset.range(10).map(lambda x: x, num_parallel_calls=tf.contrib.data.AUTOTUNE)  # expect: TPC101
dataset = dataset.apply(tf.contrib.data.batch_and_drop_remainder(2))  # expect: TPC102
csv = tf.contrib.data.make_csv_dataset("f.csv", batch_size=4)  # expect: TPC103
model = tf.contrib.keras.models.Sequential()  # expect: TPC104
regularizer = tf.contrib.layers.l2_regularizer(0.01)  # expect: TPC110
for path in tf.contrib.training.checkpoints_iterator("model_dir"):  # expect: TPC111
    flat = tf.contrib.framework.nest.flatten([path])  # expect: TPC112
    names = tf.contrib.framework.list_variables(path)  # expect: TPC113
    reader = tf.contrib.framework.load_checkpoint(path)  # expect: TPC114
cell = tf.contrib.rnn.MultiRNNCell([tf.contrib.rnn.BasicLSTMCell(4)])  # expect: TPC116 TPC115
outputs, state = tf.contrib.rnn.static_rnn(cell, [tf.ones([2, 3])], dtype=tf.float32)  # expect: TPC117


def host_call_fn(gs, loss):
    with tf.contrib.summary.create_file_writer("model_dir").as_default():  # expect: TPC118
        with tf.contrib.summary.always_record_summaries():  # expect: TPC120
            tf.contrib.summary.scalar("loss", loss[0], step=gs[0])  # expect: TPC119
            tf.contrib.summary.histogram("h", loss, step=gs[0])  # expect: TPC125
            tf.contrib.summary.image("i", tf.zeros([1, 2, 2, 1]), step=gs[0])  # expect: TPC126
            return tf.contrib.summary.all_summary_ops()  # expect: TPC121


with tf.contrib.summary.record_summaries_every_n_global_steps(10):  # expect: TPC122
    pass
with tf.contrib.summary.never_record_summaries():  # expect: TPC123
    recording = tf.contrib.summary.should_record_summaries()  # expect: TPC124
flush = tf.contrib.summary.flush()  # expect: TPC127
tf.contrib.summary.initialize(graph=tf.get_default_graph())  # expect: TPC128
