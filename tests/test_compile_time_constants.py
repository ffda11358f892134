"""Fidelity tpu's "shapes XLA cannot bound" check, on traced graphs in process.

``ValueDependence`` decides whether a compile-time-constant input (Reshape's
``shape``, Range's ``limit``...) is computed from tensor values. These trace
small tf.functions and ask it directly about the ops they contain, through
nested functions, ``tf.cond`` and ``tf.while_loop``; the end-to-end errors are
in tests/test_fidelity.py.
"""

import pytest
import tensorflow as tf
from tensorflow.python.framework import kernels, op_def_registry

from tpu_compat.fidelity import compile_time_constants as ctc
from tpu_compat.fidelity import compile_checks

SPEC = tf.TensorSpec([4, 4], tf.float32)
# In process, after the session's 8-core layout: a module-level eager value
# would initialize TensorFlow's devices at collection time, with one CPU.
pytestmark = [pytest.mark.requires_tf, pytest.mark.usefixtures("tpu8")]
_captured = []


def _limit():
    """An eager value the functions capture (made on first use)."""
    if not _captured:
        _captured.append(tf.constant(3))
    return _captured[0]


def _from_data(fn, op_type):
    """``{input name: from data?}`` of the one ``op_type`` op ``fn`` traces,
    searched through the functions its graph calls."""
    graph = tf.function(fn).get_concrete_function(SPEC).graph
    dependence = ctc.ValueDependence()
    pending, found = [graph], []
    while pending:
        current = pending.pop()
        for op in current.get_operations():
            if op.type == op_type:
                found.append(op)
            for inner in compile_checks._function_graphs(op, current):  # pylint: disable=protected-access
                dependence.bind(inner, op)
                pending.append(inner)
    assert len(found) == 1, [op.name for op in found]
    return {name: dependence.from_data(tensor)
            for name, tensor in ctc.constant_inputs(found[0])}


def _count(x):
    return tf.cast(tf.reduce_max(x), tf.int32)


@pytest.mark.parametrize("fn, op_type, expected", [
    # Folded or bounded by XLA: a TPU compiles these.
    (lambda x: tf.reshape(x, [tf.shape(x)[0], -1]), "Reshape", {"shape": False}),
    (lambda x: tf.range(tf.shape(x)[0] * 2), "Range",
     {"start": False, "limit": False, "delta": False}),
    (lambda x: tf.one_hot(tf.cast(x[0], tf.int32), 10), "OneHot", {"depth": False}),
    (lambda x: tf.fill([tf.size(x), tf.rank(x)], 1.0), "Fill", {"dims": False}),
    (lambda x: tf.range(_limit()), "Range", {"start": False, "limit": False, "delta": False}),
    (lambda x: tf.range(tf.minimum(_count(x), 10)), "Range",
     {"start": False, "limit": False, "delta": False}),
    # From the step's values: a TPU cannot compile these.
    (lambda x: tf.fill([_count(x)], 1.0), "Fill", {"dims": True}),
    (lambda x: tf.range(_count(x)), "Range", {"start": False, "limit": True, "delta": False}),
    (lambda x: tf.tile(x, [_count(x), 1]), "Tile", {"multiples": True}),
    (lambda x: tf.one_hot(tf.cast(x[0], tf.int32), _count(x)), "OneHot", {"depth": True}),
    (lambda x: tf.range(tf.cast(tf.random.uniform([], 1, 5), tf.int32)), "Range",
     {"start": False, "limit": True, "delta": False}),
])
def test_constant_inputs_from_data_or_not(fn, op_type, expected):
    assert _from_data(fn, op_type) == expected


def test_followed_through_a_nested_function_its_arguments_and_captures():
    @tf.function
    def rows(x, n):
        return tf.reshape(x, [n, -1])

    assert _from_data(lambda x: rows(x, tf.shape(x)[0]), "Reshape") == {"shape": False}
    assert _from_data(lambda x: rows(x, _count(x) % 2 + 2), "Reshape") == {"shape": True}


def test_followed_through_cond_branches_and_predicate():
    def by_branch(x):
        n = tf.cond(tf.constant(True), lambda: _count(x), lambda: tf.constant(2))
        return tf.range(n)

    def by_predicate(x):
        n = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.constant(3), lambda: tf.constant(2))
        return tf.range(n)

    def shape_only(x):
        n = tf.cond(tf.constant(True), lambda: tf.shape(x)[0], lambda: tf.constant(2))
        return tf.range(n)

    assert _from_data(by_branch, "Range")["limit"] is True
    assert _from_data(by_predicate, "Range")["limit"] is True
    assert _from_data(shape_only, "Range")["limit"] is False


def test_followed_through_while_loop_variables():
    def grows_from_data(x):
        _, n = tf.while_loop(lambda i, n: i < 3, lambda i, n: (i + 1, n + _count(x)), [0, 1])
        return tf.range(n)

    def counts_only(x):
        _, n = tf.while_loop(lambda i, n: i < 3, lambda i, n: (i + 1, n + tf.shape(x)[0]),
                             [0, 1])
        return tf.range(n)

    assert _from_data(grows_from_data, "Range")["limit"] is True
    assert _from_data(counts_only, "Range")["limit"] is False


def test_table_names_real_ops_and_inputs_with_xla_kernels():
    """Every row of the table is an op TF 2.21 knows, with those inputs and an XLA kernel."""
    compile_checks._ensure_xla_kernels_registered()  # pylint: disable=protected-access
    for op_type, names in ctc.MUST_BE_CONSTANT.items():
        op_def = op_def_registry.get(op_type)
        assert op_def is not None, op_type
        assert set(names) <= {arg.name for arg in op_def.input_arg}, op_type
        xla = [k for k in kernels.get_registered_kernels_for_op(op_type).kernel
               if k.device_type == "XLA_CPU_JIT"]
        assert xla, f"{op_type} has no XLA kernel"
