"""The program of legacy/contrib_survey.py, written for TF 2."""
import os

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
    tpu="grpc://" + os.environ["COLAB_TPU_ADDR"])
tf.tpu.experimental.initialize_tpu_system(resolver)
one = tf.distribute.OneDeviceStrategy("/cpu:0")
cluster = tf.distribute.cluster_resolver.TFConfigClusterResolver()
topology = tf.tpu.experimental.Topology(serialized=b"")
dataset = tf.data.Dataset.range(10).map(lambda x: x, num_parallel_calls=tf.data.AUTOTUNE)
dataset = dataset.batch(2, drop_remainder=True)
csv = tf.data.experimental.make_csv_dataset("f.csv", batch_size=4)
model = tf.keras.models.Sequential()
regularizer = lambda w: 0.01 * tf.nn.l2_loss(w)
for path in tf.train.checkpoints_iterator("model_dir"):
    flat = tf.nest.flatten([path])
    names = tf.train.list_variables(path)
    reader = tf.train.load_checkpoint(path)
cell = tf.keras.layers.StackedRNNCells([tf.keras.layers.LSTMCell(4)])
outputs = tf.keras.layers.RNN(cell)(tf.ones([2, 1, 3]))


def summarize(step, loss):
    with tf.summary.create_file_writer("model_dir").as_default():
        with tf.summary.record_if(True):
            tf.summary.scalar("loss", loss[0], step=step)
            tf.summary.histogram("h", loss, step=step)
            tf.summary.image("i", tf.zeros([1, 2, 2, 1]), step=step)
    tf.summary.flush()
