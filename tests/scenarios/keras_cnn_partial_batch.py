"""A TF 2.1-2.3 Colab Keras CNN on a TPU whose validation set leaves a partial
last batch smaller than the replica count (some cores get no examples).

usage: tpu-compat run --replicas N keras_cnn_partial_batch.py [--epochs E]

Prints ``KEY: number`` lines:

* ``tpu_loss_E``, ``tpu_val_loss_E``, ``tpu_val_accuracy_E``: ``model.fit``'s
  history under the TPU strategy;
* ``ref_val_loss_E``, ``ref_val_accuracy_E``: a single-device tf_keras
  ``evaluate`` of the weights the strategy had at the end of epoch E, over the
  same validation examples (each counted once, as a TPU counts them);
* ``one_loss_E``, ``one_val_loss_E``: the same fit on one device;
* ``tpu_eval_loss`` / ``ref_eval_loss`` (and accuracy): ``model.evaluate``.
"""
import argparse
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch_size", type=int, default=16)
args = parser.parse_args()

TRAIN = 4 * args.batch_size
VALID = 2 * args.batch_size + 3          # a last batch of 3 examples
rng = np.random.RandomState(7)
# Each global training batch is 8 copies of 2 examples, so every core (of 1, 2
# or 8) normalizes the same statistics as one device does over the whole batch:
# the training numbers are the single-device ones at every replica count.
base = args.batch_size // 8
x_base = rng.rand(TRAIN // 8, 12, 12, 3).astype(np.float32)
y_base = rng.randint(0, 4, size=TRAIN // 8).astype(np.int32)
x_train = np.concatenate([np.tile(x_base[i:i + base], (8, 1, 1, 1))
                          for i in range(0, len(x_base), base)])
y_train = np.concatenate([np.tile(y_base[i:i + base], 8)
                          for i in range(0, len(y_base), base)])
x_valid = rng.rand(VALID, 12, 12, 3).astype(np.float32)
y_valid = rng.randint(0, 4, size=VALID).astype(np.int32)

# TF 2.1's Colab bring-up
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
    tpu='grpc://' + os.environ['COLAB_TPU_ADDR'])
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print("replicas: %d" % strategy.num_replicas_in_sync)


def create_model():
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu",
                               input_shape=(12, 12, 3)),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(4, 3, padding="same"),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Activation("relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation="softmax"),
    ])


tf.random.set_seed(1)
initial = create_model().get_weights()


def compiled():
    model = create_model()
    model.set_weights(initial)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def datasets():
    train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(args.batch_size)
    val_ds = tf.data.Dataset.from_tensor_slices((x_valid, y_valid)).batch(args.batch_size)
    return train_ds, val_ds


class KeepWeights(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.per_epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.per_epoch.append(self.model.get_weights())


with strategy.scope():
    model = compiled()
train_ds, val_ds = datasets()
kept = KeepWeights()
history = model.fit(train_ds, validation_data=val_ds, epochs=args.epochs,
                    callbacks=[kept], verbose=0).history
eval_loss, eval_accuracy = model.evaluate(val_ds, verbose=0)
print("tpu_eval_loss: %.9g" % eval_loss)
print("tpu_eval_accuracy: %.9g" % eval_accuracy)

reference = compiled()
for epoch in range(args.epochs):
    print("tpu_loss_%d: %.9g" % (epoch, history["loss"][epoch]))
    print("tpu_val_loss_%d: %.9g" % (epoch, history["val_loss"][epoch]))
    print("tpu_val_accuracy_%d: %.9g" % (epoch, history["val_accuracy"][epoch]))
    reference.set_weights(kept.per_epoch[epoch])
    loss, accuracy = reference.evaluate(x_valid, y_valid, batch_size=VALID, verbose=0)
    print("ref_val_loss_%d: %.9g" % (epoch, loss))
    print("ref_val_accuracy_%d: %.9g" % (epoch, accuracy))
loss, accuracy = reference.evaluate(x_valid, y_valid, batch_size=VALID, verbose=0)
print("ref_eval_loss: %.9g" % loss)
print("ref_eval_accuracy: %.9g" % accuracy)

one = compiled()
train_ds, val_ds = datasets()
one_history = one.fit(train_ds, validation_data=val_ds, epochs=args.epochs, verbose=0).history
for epoch in range(args.epochs):
    print("one_loss_%d: %.9g" % (epoch, one_history["loss"][epoch]))
    print("one_val_loss_%d: %.9g" % (epoch, one_history["val_loss"][epoch]))
    print("one_val_accuracy_%d: %.9g" % (epoch, one_history["val_accuracy"][epoch]))
