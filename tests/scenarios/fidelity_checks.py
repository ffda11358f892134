"""Fidelity scenario: each TPU-only failure category, once per step kind.

Run under ``tpu-compat run --tf1`` (TF 1.x: soft device placement off, as in
TF 2.21's v1 mode) with ``--fidelity cpu`` or ``tpu``. Each case prints
``CASE <name>: ok`` when its step was built and ran, or ``CASE <name>:
TPUCompilationError`` plus the message (which names the op and this file's
line) when the check rejected it.
"""

import sys

import numpy as np
import tensorflow as tf  # tf.compat.v1 under --tf1

from tpu_compat.fidelity.compile_checks import TPUCompilationError

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
# TF 1.x's multi-step loop: several steps per host call.
loop_strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=2)


def _double(x):
    return (x * 2).astype(np.float32)


def step_py_function(x):
    y = tf.py_function(lambda v: v * 2, [x], tf.float32)  # LINE py_function
    return tf.reduce_sum(y)


def step_numpy_function(x):
    y = tf.numpy_function(_double, [x], tf.float32)  # LINE numpy_function
    return tf.reduce_sum(y)


def step_string(x):
    text = tf.strings.as_string(x)  # LINE string
    return tf.reduce_sum(tf.strings.to_number(text))


def step_unique_with_counts(x):
    values, _, counts = tf.unique_with_counts(tf.reshape(x, [-1]))  # LINE unique_with_counts
    return tf.reduce_sum(values) + tf.cast(tf.reduce_sum(counts), tf.float32)


def step_print(x):
    with tf.control_dependencies([tf.print("x", x)]):  # LINE print
        return tf.reduce_sum(x)


def step_summary(x):
    summary = tf.summary.scalar("x", tf.reduce_sum(x))  # LINE summary
    with tf.control_dependencies([summary]):
        return tf.reduce_sum(x)


def _count(x):
    """A size computed from the step's data: XLA cannot make it a constant."""
    return tf.cast(tf.reduce_max(x), tf.int32) % 5 + 1


def step_fill_from_data(x):
    ones = tf.fill([_count(x)], 1.0)  # LINE fill_from_data
    return tf.reduce_sum(x) + tf.reduce_sum(ones)


def step_range_from_data(x):
    steps = tf.range(_count(x))  # LINE range_from_data
    return tf.reduce_sum(x) + tf.cast(tf.reduce_sum(steps), tf.float32)


def step_reshape_from_data(x):
    rows = tf.cast(tf.reduce_min(x) * 0.0 + 2.0, tf.int32)  # always 2, but from data
    grid = tf.reshape(x, [rows, -1])  # LINE reshape_from_data
    return tf.reduce_sum(grid[0])


# Legitimate TPU programs: must pass under tpu fidelity.
def step_shapes_from_tf_shape(x):
    """Sizes from tf.shape/tf.size/constants: XLA folds them, a TPU compiles this."""
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    labels = tf.cast(tf.argmax(x, axis=1), tf.int32)
    hot = tf.one_hot(labels, 10)
    positions = tf.cast(tf.range(tf.shape(x)[0]), tf.float32)
    zeros = tf.zeros(tf.shape(x)) + tf.zeros_like(x)
    tiled = tf.tile(x, [tf.size(x) // tf.size(x), 2])
    return (tf.reduce_sum(flat) + tf.reduce_sum(hot) + tf.reduce_sum(positions)
            + tf.reduce_sum(zeros) + tf.reduce_sum(tiled))


def step_boolean_mask_float64(x):
    masked = tf.boolean_mask(x, x > 1.0)  # data-dependent, but XLA bounds it
    return tf.cast(tf.reduce_sum(tf.cast(masked, tf.float64)), tf.float32)


def step_outside_compilation(x):
    total = tf.reduce_sum(x)
    tf.compat.v1.tpu.outside_compilation(
        lambda t: tf.summary.scalar("total", t), total)  # host: exempt
    return total


def step_while(x):
    return tf.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc + tf.reduce_sum(x)),
                         [0, 0.0])[1]


CASES = [step_py_function, step_numpy_function, step_string, step_unique_with_counts,
         step_print, step_summary, step_fill_from_data, step_range_from_data,
         step_reshape_from_data, step_boolean_mask_float64, step_outside_compilation,
         step_while, step_shapes_from_tf_shape]

data = tf.data.Dataset.from_tensor_slices(
    np.arange(64, dtype=np.float32).reshape(16, 4)).batch(8, drop_remainder=True)

with tf.compat.v1.Session() as session:
    for case in CASES:
        name = case.__name__[len("step_"):]
        try:
            with strategy.scope():
                iterator = strategy.make_dataset_iterator(data)
                per_replica = strategy.experimental_run(case, iterator)
                total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica)
            session.run(iterator.initialize())
            value = session.run(total)
            print(f"CASE {name}: ok {value}")
        except TPUCompilationError as error:
            print(f"CASE {name}: TPUCompilationError")
            print(str(error))
        sys.stdout.flush()


def loop_string(inputs):
    return tf.reduce_sum(tf.strings.to_number(tf.strings.as_string(inputs)))  # LINE steps_per_run


def loop_matmul(inputs):  # legitimate
    return tf.reduce_sum(tf.matmul(inputs, tf.ones([4, 1])))


def run_loop(replica_step):
    """A compat.v1 ``steps_per_run`` loop (extended.experimental_run_steps_on_iterator)."""
    with loop_strategy.scope():
        iterator = loop_strategy.make_dataset_iterator(data.repeat())

        def step_fn(ctx, inputs):
            ctx.set_last_step_output(
                "total", loop_strategy.experimental_run_v2(replica_step, args=(inputs,)),
                reduce_op=tf.distribute.ReduceOp.SUM)
            return tf.no_op()

        ctx = loop_strategy.extended.experimental_run_steps_on_iterator(
            step_fn, iterator, iterations=2, initial_loop_values={"total": 0.0})
    return iterator, ctx.last_step_outputs["total"]


with tf.compat.v1.Session() as session:
    for name, replica_step in [("steps_per_run", loop_string),
                               ("steps_per_run_legitimate", loop_matmul)]:
        try:
            iterator, total = run_loop(replica_step)
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(iterator.initialize())
            print(f"CASE {name}: ok {session.run(total)}")
        except TPUCompilationError as error:
            print(f"CASE {name}: TPUCompilationError")
            print(str(error))
        sys.stdout.flush()
