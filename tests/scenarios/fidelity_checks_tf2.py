"""Fidelity scenario, TF 2.x replica steps: ``strategy.run`` in a tf.function,
eager ``run``/``experimental_run_v2`` (traced, as a TPU does) and Keras
``model.fit``, under the TF 2.x TPUStrategy.

Run under ``tpu-compat run`` (TF 2.x: the step functions are traced, so soft
device placement is off) with ``--fidelity cpu`` or ``tpu``. Same output as
fidelity_checks.py: ``CASE <name>: ok <value>`` or ``CASE <name>:
TPUCompilationError`` plus the message.
"""

import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.keras import layers, models, optimizers

from tpu_compat.fidelity.compile_checks import TPUCompilationError

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

GLOBAL_BATCH = 8
features = np.arange(GLOBAL_BATCH * 2 * 4, dtype=np.float32).reshape(-1, 4) / 10.0
labels = features.sum(axis=1, keepdims=True)


def case_run_in_function():
    data = tf.data.Dataset.from_tensor_slices(features).batch(GLOBAL_BATCH)
    iterator = iter(strategy.experimental_distribute_dataset(data))

    def step(x):
        text = tf.strings.as_string(x)  # LINE run_in_function
        return tf.reduce_sum(tf.cast(tf.strings.length(text), tf.float32))

    @tf.function
    def train_step():
        return strategy.reduce("SUM", strategy.run(step, args=(next(iterator),)), axis=None)

    return float(train_step())


def case_library_step():
    # The replica function is TensorFlow's own: no frame of this file is on the
    # replica thread's stack, so the error names the line that asked for the step.
    data = tf.data.Dataset.from_tensor_slices(features).batch(GLOBAL_BATCH)
    iterator = iter(strategy.experimental_distribute_dataset(data))

    @tf.function
    def train_step():
        text = strategy.run(tf.strings.as_string, args=(next(iterator),))  # LINE library_step
        lengths = [tf.reduce_sum(tf.strings.length(t))
                   for t in strategy.experimental_local_results(text)]
        return tf.add_n(lengths)

    return int(train_step())


def _run_in_function(step):
    data = tf.data.Dataset.from_tensor_slices(features).batch(GLOBAL_BATCH)
    iterator = iter(strategy.experimental_distribute_dataset(data))

    @tf.function
    def train_step():
        return strategy.reduce("SUM", strategy.run(step, args=(next(iterator),)), axis=None)

    return float(train_step())


def case_run_in_function_range_from_data():
    def step(x):
        count = tf.cast(tf.reduce_max(x), tf.int32) + 1
        steps = tf.range(count)  # LINE run_in_function_range_from_data
        return tf.reduce_sum(x) + tf.cast(tf.reduce_sum(steps), tf.float32)

    return _run_in_function(step)


def case_run_in_function_shapes():  # legitimate: must pass under tpu
    def step(x):
        flat = tf.reshape(x, [tf.shape(x)[0], -1])
        hot = tf.one_hot(tf.cast(tf.argmax(x, axis=1), tf.int32), 10)
        positions = tf.cast(tf.range(tf.shape(x)[0]), tf.float32)
        return tf.reduce_sum(flat) + tf.reduce_sum(hot) + tf.reduce_sum(positions)

    return _run_in_function(step)


def _eager_input():
    data = tf.data.Dataset.from_tensor_slices(features).batch(GLOBAL_BATCH)
    return next(iter(strategy.experimental_distribute_dataset(data)))


def _string_lengths(x):
    text = tf.strings.as_string(x)  # LINE eager_run_v2_plain
    return tf.reduce_sum(tf.cast(tf.strings.length(text), tf.float32))


@tf.function
def _string_lengths_function(x):
    text = tf.strings.as_string(x)  # LINE eager_run_function
    return tf.reduce_sum(tf.cast(tf.strings.length(text), tf.float32))


@tf.function
def _matmul_function(x):
    return tf.reduce_sum(tf.matmul(x, tf.ones([4, 2])))


def _eager_sum(per_replica):
    return float(strategy.reduce("SUM", per_replica, axis=None))


# Eager replica steps (TF 2.0-2.3 programs): a TPU traces and compiles them.
def case_eager_run_v2_plain():
    return _eager_sum(strategy.experimental_run_v2(_string_lengths, args=(_eager_input(),)))


def case_eager_run_function():
    return _eager_sum(strategy.run(_string_lengths_function, args=(_eager_input(),)))


def case_eager_run_function_legitimate():  # must pass under tpu
    return _eager_sum(strategy.run(_matmul_function, args=(_eager_input(),)))


def _digit_count(x):
    text = tf.strings.as_string(x)  # LINE keras_fit_string
    return x + tf.cast(tf.strings.length(text), tf.float32)[:, :1] * 0.0


def _fit(model):
    model.compile(optimizer=optimizers.SGD(0.01), loss="mse")
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(GLOBAL_BATCH)
    history = model.fit(dataset, epochs=1, verbose=0)
    return history.history["loss"][-1]


def case_keras_fit_string():
    with strategy.scope():
        model = models.Sequential([layers.Lambda(_digit_count, input_shape=(4,)),
                                   layers.Dense(1)])
    return _fit(model)


def case_keras_fit():  # legitimate: must pass under tpu
    with strategy.scope():
        model = models.Sequential([layers.Dense(8, activation="relu", input_shape=(4,),
                                                kernel_initializer="ones"),
                                   layers.Dense(1, kernel_initializer="ones")])
    return _fit(model)


for case in [case_run_in_function, case_library_step, case_run_in_function_range_from_data,
             case_run_in_function_shapes, case_eager_run_v2_plain, case_eager_run_function,
             case_eager_run_function_legitimate, case_keras_fit_string, case_keras_fit]:
    name = case.__name__[len("case_"):]
    try:
        print(f"CASE {name}: ok {case()}")
    except TPUCompilationError as error:
        print(f"CASE {name}: TPUCompilationError")
        print(str(error))
    sys.stdout.flush()
