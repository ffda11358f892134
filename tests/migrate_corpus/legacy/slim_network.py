"""A TF-Slim network of the TPU reference models (issue 34: docs/contrib_survey.md)."""
import tensorflow as tf
from tensorflow.contrib.framework.python.ops import arg_scope  # expect: TPC100

slim = tf.contrib.slim


@tf.contrib.framework.add_arg_scope  # expect: TPC181
def scaled(inputs, factor=1.0):
    return inputs * factor


def network_arg_scope(is_training):
    regularizer = tf.contrib.layers.l2_regularizer(1e-4)  # expect: TPC110
    initializer = tf.contrib.layers.variance_scaling_initializer(mode="FAN_OUT")  # expect: TPC198
    with tf.contrib.framework.arg_scope([tf.contrib.slim.conv2d], weights_regularizer=regularizer):  # expect: TPC180 TPC187
        with tf.contrib.slim.arg_scope([tf.contrib.slim.batch_norm], is_training=is_training) as sc:  # expect: TPC180 TPC186
            del initializer
            return sc


def network(images, is_training):
    with arg_scope(network_arg_scope(is_training)):
        net = tf.contrib.slim.conv2d(images, 8, 3, normalizer_fn=tf.contrib.slim.batch_norm)  # expect: TPC187 TPC186
        net = tf.contrib.layers.convolution2d(net, 8, 1)  # expect: TPC188
        net = tf.contrib.slim.separable_conv2d(net, 8, 3)  # expect: TPC194
        net = tf.contrib.layers.separable_convolution2d(net, None, 3)  # expect: TPC195
        net = tf.contrib.slim.max_pool2d(net, 2)  # expect: TPC192
        net = tf.contrib.slim.avg_pool2d(net, 2)  # expect: TPC185
        net = tf.contrib.slim.dropout(net, 0.8, is_training=is_training)  # expect: TPC189
        net = tf.contrib.slim.flatten(net)  # expect: TPC190
        net = tf.contrib.slim.repeat(net, 2, tf.contrib.slim.fully_connected, 8)  # expect: TPC193 TPC191
        net = tf.contrib.layers.stack(net, scaled, [1.0, 2.0])  # expect: TPC197
        assert tf.contrib.framework.has_arg_scope(scaled)  # expect: TPC182
        assert tf.contrib.framework.arg_scoped_arguments(scaled) == ("factor",)  # expect: TPC183
        assert tf.contrib.framework.current_arg_scope()  # expect: TPC184
        weights = tf.contrib.framework.variable("w", [8, 2])  # expect: TPC199
        bias = tf.contrib.framework.model_variable("b", [2])  # expect: TPC200
        init = tf.contrib.slim.xavier_initializer()  # expect: TPC069
        del init
        return tf.contrib.layers.softmax(tf.matmul(net, weights) + bias)  # expect: TPC196
