"""A TF 1.x infeed/outfeed TPU program (the AI Platform template's pattern)."""
import tensorflow as tf
from tensorflow.contrib.tpu.ops.gen_tpu_ops import infeed_enqueue  # expect: TPC141
from tensorflow.contrib.tpu.ops.gen_tpu_ops import outfeed_dequeue  # expect: TPC147


def step():
    x, y = tf.contrib.tpu.infeed_dequeue_tuple([tf.float32, tf.float32], [(2, 5), (2,)])  # expect: TPC142
    bias = tf.contrib.tpu.infeed_dequeue(tf.float32, (2,))  # expect: TPC143
    loss = tf.reduce_mean(tf.square(x[:, 0] + bias - y))
    return (tf.contrib.tpu.outfeed_enqueue_tuple((loss,)),  # expect: TPC144
            tf.contrib.tpu.outfeed_enqueue(loss))  # expect: TPC145


def loop():
    return tf.contrib.tpu.repeat(10, step)  # expect: TPC148


def counted():
    return tf.contrib.tpu.while_loop(lambda i: i < 10, lambda i: i + 1, [0])  # expect: TPC149


features = tf.placeholder(tf.float32, [16, 5])
labels = tf.placeholder(tf.float32, [16])
for i, (f, l) in enumerate(zip(tf.split(features, 8), tf.split(labels, 8))):
    tf.contrib.tpu.infeed_enqueue_tuple([f, l], [(2, 5), (2,)], device_ordinal=i)  # expect: TPC140
    infeed_enqueue(tf.zeros([2]), device_ordinal=i)
    tf.contrib.tpu.outfeed_dequeue_tuple([tf.float32], [()], device_ordinal=i)  # expect: TPC146
    outfeed_dequeue(tf.float32, (), device_ordinal=i)
