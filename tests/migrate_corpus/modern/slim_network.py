"""The network of legacy/slim_network.py, written for TF 2 Keras."""
import tensorflow as tf


def network(is_training):
    regularizer = tf.keras.regularizers.l2(0.5e-4)
    layers = [
        tf.keras.layers.Conv2D(8, 3, padding="same", use_bias=False,
                               kernel_regularizer=regularizer),
        tf.keras.layers.BatchNormalization(momentum=0.999, epsilon=0.001, scale=False),
        tf.keras.layers.ReLU(),
        tf.keras.layers.Conv2D(8, 1, padding="same", activation="relu"),
        tf.keras.layers.SeparableConv2D(8, 3, padding="same", activation="relu"),
        tf.keras.layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.AveragePooling2D(2),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.Dense(2, activation="softmax"),
    ]
    del is_training
    return tf.keras.Sequential(layers)
