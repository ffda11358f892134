"""keras_to_tpu_model's refusals and its single-core cases, TF 1.x graph mode.

usage: tpu-compat run --tf1 --replicas 2 keras_tpu_checks.py

Prints ``RESULT {json}``: per case the error type and message (or None), and the
core counts of a stateful model and of ``using_single_core=True``.
"""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu='grpc://' + os.environ['COLAB_TPU_ADDR'])
strategy = tf.contrib.tpu.TPUDistributionStrategy(resolver)


def dense_model():
    return tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])


def outcome(call):
    try:
        value = call()
    except (ValueError, TypeError) as error:
        return [type(error).__name__, str(error)]
    return None if value is None or not isinstance(value, (int, str)) else value


x = np.ones((40, 4), np.float32)
y = np.ones((40, 2), np.float32)
tpu_model = tf.contrib.tpu.keras_to_tpu_model(dense_model(), strategy=strategy)
tpu_model.compile(optimizer=tf.train.GradientDescentOptimizer(0.1), loss="mse")
result = {
    "not_a_strategy": outcome(lambda: tf.contrib.tpu.keras_to_tpu_model(
        dense_model(), strategy=tf.distribute.MirroredStrategy())),
    "variable_shape": outcome(lambda: tf.contrib.tpu.keras_to_tpu_model(
        tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(None, 4))]),
        strategy=strategy)),
    "single_core_not_bool": outcome(lambda: tf.contrib.tpu.TPUDistributionStrategy(
        resolver, using_single_core="yes")),
    "sample_weight_mode": outcome(lambda: tpu_model.compile(
        optimizer="sgd", loss="mse", sample_weight_mode="temporal")),
    "weighted_metrics": outcome(lambda: tpu_model.compile(
        optimizer="sgd", loss="mse", weighted_metrics=["mae"])),
    # Run on 2 cores: the rules are the same on 8, where each model builds four times the replicas.
    # 40 samples in global batches of 16: the last batch of 8 splits across the cores...
    "fit_last_batch_8": outcome(lambda: tpu_model.fit(x, y, batch_size=16, verbose=0,
                                                      shuffle=False)),
    # ... 35 samples leave a last batch of 3, which does not.
    "fit_last_batch_3": outcome(lambda: tpu_model.fit(x[:35], y[:35], batch_size=16,
                                                      verbose=0)),
    "evaluate_batch_15": outcome(lambda: tpu_model.evaluate(x, y, batch_size=15, verbose=0)),
    "predict_batch_7": outcome(lambda: tpu_model.predict(x, batch_size=7)),
    "input_fn_with_y": outcome(lambda: tpu_model.fit(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(2, drop_remainder=True),
        y, steps_per_epoch=1)),
    "validation_fn_without_steps": outcome(lambda: tpu_model.fit(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(2, drop_remainder=True),
        steps_per_epoch=1, verbose=0,
        validation_data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(
            2, drop_remainder=True))),
}
# set_weights and load_weights reach both the TPU copy and the CPU model.
new_weights = [np.full((4, 2), 0.5, np.float32), np.full((2,), -1.0, np.float32)]
tpu_model.set_weights(new_weights)
result["set_weights_predict"] = tpu_model.predict(x[:8], batch_size=8).tolist()
path = os.path.join(tempfile.mkdtemp(), "w.h5")
tpu_model.save_weights(path)
tpu_model.set_weights([np.zeros((4, 2), np.float32), np.zeros((2,), np.float32)])
tpu_model.load_weights(path)
result["load_weights_predict"] = tpu_model.predict(x[:8], batch_size=8).tolist()
result["load_weights_cpu"] = [w.tolist() for w in tpu_model.sync_to_cpu().get_weights()]

stateful = tf.keras.Sequential([tf.keras.layers.LSTM(
    2, stateful=True, batch_input_shape=(8, 3, 4))])
result["stateful_cores"] = tf.contrib.tpu.keras_to_tpu_model(stateful, strategy=strategy).num_cores
# using_single_core=True on this 2-core TPU: one core trains, with one device's numbers,
# on global batches of 17 (two cores would refuse them), checked against full-batch SGD
# in numpy below.
single_core = tf.contrib.tpu.keras_to_tpu_model(
    dense_model(), strategy=tf.contrib.tpu.TPUDistributionStrategy(
        resolver, using_single_core=True))
single_core.compile(optimizer=tf.train.GradientDescentOptimizer(0.1), loss="mse")
rng = np.random.RandomState(7)
start = [rng.randn(4, 2).astype(np.float32), rng.randn(2).astype(np.float32)]
single_x, single_y = rng.randn(34, 4).astype(np.float32), rng.randn(34, 2).astype(np.float32)
single_core.set_weights(start)
single_history = single_core.fit(single_x, single_y, batch_size=17, epochs=2, shuffle=False,
                                 verbose=0)
result["single_core_cores"] = single_core.num_cores
result["single_core_loss"] = [float(v) for v in single_history.history["loss"]]
result["single_core_weights"] = [w.tolist() for w in single_core.get_weights()]
kernel, bias = (w.astype(np.float64) for w in start)
epoch_losses = []
for _ in range(2):
    losses = []
    for first in (0, 17):
        batch_x, batch_y = single_x[first:first + 17], single_y[first:first + 17]
        error = batch_x.dot(kernel) + bias - batch_y
        losses.append(np.mean(error ** 2))
        # d mean((xW + b - y)^2) over the 17 x 2 outputs
        kernel = kernel - 0.1 * batch_x.T.dot(error) * 2 / error.size
        bias = bias - 0.1 * error.sum(axis=0) * 2 / error.size
    epoch_losses.append(float(np.mean(losses)))
result["single_core_reference_loss"] = epoch_losses
result["single_core_reference_weights"] = [kernel.tolist(), bias.tolist()]
result["cores"] = tpu_model.num_cores

# An LSTM fitted on arrays whose last global batch is smaller (8 of 40 in batches of 16):
# that fit keeps the dynamic batch, so under --fidelity tpu its gradient is refused, at
# the line that called fit (the replica threads run tf_keras's step, none of this file).
lstm = tf.contrib.tpu.keras_to_tpu_model(tf.keras.Sequential([
    tf.keras.layers.LSTM(2, input_shape=(5, 3)), tf.keras.layers.Dense(1)]), strategy=strategy)
lstm.compile(optimizer=tf.train.GradientDescentOptimizer(0.1), loss="mse")
sequences, values = np.ones((40, 5, 3), np.float32), np.ones((40, 1), np.float32)
result["lstm_last_batch_8"] = outcome(lambda: lstm.fit(sequences, values, batch_size=16, verbose=0))  # LINE lstm
print("RESULT " + json.dumps(result))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
