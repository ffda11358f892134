"""A TF 1.15 Keras LSTM on a TPU strategy, one step per host call, in graph mode.

usage: tpu-compat run --tf1 --replicas N keras_tf115_lstm.py [tf2_class]

Written as the AI Platform TPU LSTM template's TF 1.x code was: ``import
tensorflow as tf`` meaning TF 1.x, a resolver, ``TPUStrategy(resolver)`` with
no ``steps_per_run``, the model built and compiled in the strategy's scope,
``fit`` of a dataset with whole batches. TF 1.15 trained it in its TPU loop,
each core's model on the iterator's static per-core shape, so the LSTM's
gradient compiled; under ``--fidelity tpu`` (``run``'s default) the emulated
TPU checks that it would. With ``tf2_class`` the strategy is TF 2's class,
``tf.compat.v2.distribute.TPUStrategy(resolver)``, still in graph mode: what
``tpu-compat upgrade`` makes of the template (TF 2.0-2.3's Keras took the
same TPU loop for it). Prints ``loss:`` and ``core_batch:`` (the static
batch size the model saw in a replica, 0 if unknown).
"""
import sys

import numpy as np
import tensorflow as tf

tf.disable_v2_behavior()
tf.set_random_seed(0)

GLOBAL_BATCH = 16
core_batches = []


def record_batch(inputs):
    if tf.distribute.in_cross_replica_context():
        return inputs
    core_batches.append(inputs.shape[0].value or 0)
    return inputs


def main():
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    if "tf2_class" in sys.argv[1:]:
        strategy = tf.compat.v2.distribute.TPUStrategy(resolver)
    else:
        strategy = tf.distribute.experimental.TPUStrategy(resolver)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Lambda(record_batch, input_shape=(5, 3)),
            tf.keras.layers.LSTM(4),
            tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.train.GradientDescentOptimizer(0.1), loss="mse")
    rng = np.random.RandomState(0)
    x = rng.randn(64, 5, 3).astype(np.float32)
    y = rng.randn(64, 1).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.batch(GLOBAL_BATCH, drop_remainder=True).repeat()
    # Two epochs of two steps: each epoch's later step starts from an update.
    history = model.fit(dataset, steps_per_epoch=2, epochs=2, verbose=0)
    print("loss: %.9g" % history.history["loss"][-1])
    print("core_batch: %d" % min(core_batches))


if __name__ == "__main__":
    main()
