"""A TF 2.3-era Keras predict on a TPU pod slice: rows come back in input order.

tf.keras of TF 2.2/2.3 reordered a TPU pod's predict outputs (the pod hands
out each global batch in (replica, host) order; see
tpu_compat/keras/pod.py). Run on an emulated pod
(TPU_COMPAT_NUM_HOSTS=2) by tests/test_pod_devices.py: predictions from numpy
input with a partial last batch and from a batched tf.data.Dataset, against
the same model's predictions on one device.
"""
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

import pod_report

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 8, "Global batch size of predict.")
flags.DEFINE_integer("rows", 36, "Rows to predict (36 leaves a partial last batch).")


def build_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(3, activation="tanh", input_shape=(4,),
                              kernel_initializer=tf.keras.initializers.RandomNormal(seed=5)),
        tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.RandomNormal(seed=6))])
    model.compile(optimizer="sgd", loss="mse")
    return model


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    pod_report.emit("HOSTS", strategy.extended.num_hosts)

    # Each row is its own index, so a misplaced row shows which one it is.
    features = np.arange(FLAGS.rows * 4, dtype=np.float32).reshape(FLAGS.rows, 4) / 100.0
    with strategy.scope():
        model = build_model()
    reference = build_model()
    reference.set_weights(model.get_weights())
    want = reference.predict(features, batch_size=FLAGS.batch_size, verbose=0)

    from_numpy = model.predict(features, batch_size=FLAGS.batch_size, verbose=0)
    whole_batches = (FLAGS.rows // FLAGS.batch_size) * FLAGS.batch_size
    dataset = tf.data.Dataset.from_tensor_slices(features[:whole_batches]).batch(
        FLAGS.batch_size, drop_remainder=True)
    from_dataset = model.predict(dataset, verbose=0)
    pod_report.emit("PREDICT", {
        "want": want[:, 0].tolist(),
        "numpy": from_numpy[:, 0].tolist(),
        "dataset": from_dataset[:, 0].tolist()})


if __name__ == "__main__":
    app.run(main)
