"""Fidelity ``tpu``'s lint: ops a TPU computes differently warn at the user's line.

In process (the 8-core emulated TPU): one positive and one negative case per
row of fidelity/tpu_semantics.py's table, each in a TF 2.x ``strategy.run``
step inside a ``tf.function``; nothing outside a replica step (the input
pipeline, outside_compilation) nor under fidelity ``cpu`` warns; one warning
per op and line however many replicas and traces; the table against TF 2.21's
registry. A TF 1.x program under ``--tf1`` (absl flags, a graph-level seed)
sees all three rows at their lines, and fails at the first under
``--warnings=error``.
"""

# TensorFlow is imported where a test needs it: the module loads in the TF-free lane.
# pylint: disable=import-outside-toplevel
import os
import sys
import warnings

import numpy as np
import pytest

from tpu_compat import settings
from tpu_compat.deprecation import TPUSemanticsWarning
from conftest import check_ok, run_scenario

pytestmark = [pytest.mark.requires_tf,
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

THIS_FILE = os.path.abspath(__file__)


def _line(tag, path=THIS_FILE):
    with open(path) as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith(f"# LINE {tag}"):
                return number
    raise AssertionError(tag)


@pytest.fixture(scope="module")
def strategy(tpu8):
    del tpu8
    from tpu_compat.distribute import TPUStrategy
    from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
    return TPUStrategy(TPUClusterResolver(tpu=""))


@pytest.fixture
def lint(monkeypatch):
    """Fidelity tpu, with the once-per-line memory of earlier tests forgotten."""
    from tpu_compat.fidelity import tpu_semantics
    monkeypatch.setenv(settings.FIDELITY_VAR, "tpu")
    monkeypatch.setattr(tpu_semantics, "_warned", set())


def _step_warnings(strategy, fn, *args):
    """The lint's warnings while a ``tf.function`` of ``strategy.run(fn)`` is traced and run."""
    import tensorflow as tf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.function(lambda *a: strategy.run(fn, args=a))(*args)
    return [w for w in caught if issubclass(w.category, TPUSemanticsWarning)]


def _assert_one_warning_at(found, op_type, tag, rule):
    lines = [(w.filename, w.lineno) for w in found if f"op {op_type} (" in str(w.message)]
    assert lines == [(THIS_FILE, _line(tag))], [str(w.message) for w in found]
    message = next(str(w.message) for w in found if f"op {op_type} (" in str(w.message))
    assert message.startswith(f"{THIS_FILE}:{_line(tag)}: on a TPU, op {op_type} "), message
    assert f"[{rule}]" in message and "Fix: " in message, message


# -- findings in library code belong to the program's line (issue 35) -----------------------

# tensorboard's summary_v2.histogram computes its buckets in float64; tensorboard
# is not installed here, so a library module of the same shape stands in for it.
_SUMMARY_V2 = """
import tensorflow as tf


def histogram(name, data, step=None):
    wide = tf.cast(data, tf.float64)
    return tf.cast(tf.reduce_max(wide) - tf.reduce_min(wide), tf.float32)
"""


@pytest.fixture
def summary_library(tmp_path, monkeypatch):
    """``tensorboard/summary_v2.py``: a stand-in tensorboard package (sys.modules
    names its directory, as an installed one's would)."""
    import importlib.util
    import types
    library = tmp_path / "tensorboard"
    library.mkdir()
    (library / "__init__.py").write_text("")
    (library / "summary_v2.py").write_text(_SUMMARY_V2)
    package = types.ModuleType("tensorboard")
    package.__file__ = str(library / "__init__.py")
    monkeypatch.setitem(sys.modules, "tensorboard", package)
    spec = importlib.util.spec_from_file_location("tensorboard.summary_v2",
                                                  library / "summary_v2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_library_ops_are_attributed_to_the_users_line(strategy, lint, summary_library):
    class HistogramLayer:
        """A Keras-style layer writing a histogram summary in the replica step."""

        def __call__(self, x):
            summary_library.histogram("activations", x, step=0)  # LINE histogram
            return x * 2.0

    def step_histogram(x):
        import tensorflow as tf
        return tf.reduce_sum(HistogramLayer()(x))

    found = _step_warnings(strategy, step_histogram, np.ones([4], np.float32))
    _assert_one_warning_at(found, "Cast", "histogram", "float64")


def test_a_finding_with_no_program_frame_is_left_out():
    from tpu_compat import _callsite
    import tensorflow as tf
    library_file = os.path.join(_callsite.package_dir("tensorflow"), "python", "ops",
                                "math_ops.py")
    assert not _callsite.is_program_file(library_file)
    assert not _callsite.is_program_file("<string>")
    assert not _callsite.is_program_file(os.path.join(_callsite.PACKAGE_DIR, "x.py"))
    assert _callsite.is_program_file(THIS_FILE)
    del tf


# -- seeded stateful random ops ----------------------------------------------------------

def step_seeded_random():
    import tensorflow as tf
    return tf.reduce_sum(tf.random.uniform([3], seed=7))  # LINE seeded


def step_unseeded_and_stateless_random():
    import tensorflow as tf
    return (tf.reduce_sum(tf.random.uniform([3]))
            + tf.reduce_sum(tf.random.stateless_normal([3], seed=[1, 2])))


def test_seeded_random_op_warns_at_its_line(strategy, lint):
    found = _step_warnings(strategy, step_seeded_random)
    _assert_one_warning_at(found, "RandomUniform", "seeded", "seeded-random")
    assert "seed2=7)" in str(found[0].message)


def test_unseeded_and_stateless_random_ops_do_not_warn(strategy, lint):
    assert _step_warnings(strategy, step_unseeded_and_stateless_random) == []


# -- float64 -------------------------------------------------------------------------------

def step_float64(x):
    import tensorflow as tf
    wide = tf.cast(x, tf.float64)  # LINE float64
    return tf.cast(tf.reduce_sum(wide), tf.float32)


def step_float32(x):
    import tensorflow as tf
    return tf.reduce_sum(tf.cast(x, tf.int32)) + tf.cast(tf.reduce_sum(x * 2.0), tf.int32)


def test_float64_tensor_warns_at_its_line(strategy, lint):
    found = _step_warnings(strategy, step_float64, np.ones([2], np.float32))
    _assert_one_warning_at(found, "Cast", "float64", "float64")


def test_eager_run_of_a_plain_function_warns_too(strategy, lint):
    # TF 2.x eager: a TPU traces the step into a tf.function (the adapters too).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strategy.run(step_float64, args=(np.ones([2], np.float32),))
    found = [w for w in caught if issubclass(w.category, TPUSemanticsWarning)]
    _assert_one_warning_at(found, "Cast", "float64", "float64")


def test_float32_step_does_not_warn(strategy, lint):
    assert _step_warnings(strategy, step_float32, np.ones([2], np.float32)) == []


def step_float64_of_static_shapes(x):
    """The TPU ResNet's model_fn (transpose_input): an int32 truediv of static shapes
    (float64), which XLA folds before the step runs; the same math on data warns."""
    import tensorflow as tf
    size = tf.sqrt(tf.shape(x)[0] / (3 * tf.shape(x)[1]))
    on_data = tf.cast(tf.reduce_sum(x), tf.int32) / 3  # LINE float64 of data
    return tf.cast(size, tf.float32) + tf.cast(on_data, tf.float32)


def test_float64_of_static_shapes_does_not_warn_float64_of_data_does(strategy, lint):
    found = _step_warnings(strategy, step_float64_of_static_shapes, np.ones([6, 2], np.float32))
    assert {w.lineno for w in found} == {_line("float64 of data")}, [str(w.message) for w in found]


# -- integer division and modulo ----------------------------------------------------------

def step_divide_by_data(x):
    import tensorflow as tf
    count = tf.cast(tf.reduce_max(x), tf.int32)
    buckets = tf.range(6) // count  # LINE floordiv
    rest = tf.range(6) % count  # LINE floormod
    return tf.reduce_sum(buckets + rest)


def step_divide_by_constants(x):
    import tensorflow as tf
    steps = tf.cast(tf.reduce_max(x), tf.int32)
    guarded = tf.range(6) // tf.maximum(steps, 1)  # the fix the warning suggests
    return (steps // 4 + steps % 3 + tf.truncatediv(steps, tf.constant([2, -5]))
            + tf.reduce_sum(guarded)
            + tf.cast(x // 0.5, tf.int32)[0])  # a float divisor: not integer division


def step_divide_by_constant_zero(x):
    import tensorflow as tf
    steps = tf.cast(tf.reduce_max(x), tf.int32)
    return tf.reduce_sum(steps // tf.constant([3, 0]))  # LINE zero


def test_integer_division_by_data_warns_at_its_line(strategy, lint):
    found = _step_warnings(strategy, step_divide_by_data, np.full([2], 3.0, np.float32))
    _assert_one_warning_at(found, "FloorDiv", "floordiv", "integer-division")
    _assert_one_warning_at(found, "FloorMod", "floormod", "integer-division")
    assert "only known at run time" in str(found[0].message)


def test_integer_division_by_nonzero_constants_does_not_warn(strategy, lint):
    assert _step_warnings(strategy, step_divide_by_constants,
                          np.full([2], 3.0, np.float32)) == []


def test_integer_division_by_a_constant_zero_warns_where_the_cpu_raises(strategy, lint):
    import tensorflow as tf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            tf.function(lambda x: strategy.run(step_divide_by_constant_zero, args=(x,)))(
                np.full([2], 3.0, np.float32))
    found = [w for w in caught if issubclass(w.category, TPUSemanticsWarning)]
    _assert_one_warning_at(found, "FloorDiv", "zero", "integer-division")
    assert "a divisor that is 0" in str(found[0].message)


# -- where the lint does not look ----------------------------------------------------------

def test_fidelity_cpu_does_not_lint(strategy, lint, monkeypatch):
    monkeypatch.setenv(settings.FIDELITY_VAR, "cpu")
    assert _step_warnings(strategy, step_seeded_random) == []
    assert _step_warnings(strategy, step_float64, np.ones([2], np.float32)) == []


def test_input_pipeline_and_outside_compilation_do_not_warn(strategy, lint):
    import tensorflow as tf
    from tpu_compat.lowlevel import host
    data = tf.data.Dataset.range(8).map(
        lambda i: tf.cast(i, tf.float64) * tf.random.uniform([], seed=3, dtype=tf.float64)
        + tf.cast(i // (i + 1), tf.float64)).batch(8)
    iterator = iter(strategy.experimental_distribute_dataset(data))

    def step(x):
        host.outside_compilation(lambda: tf.random.uniform([2], seed=5))
        return tf.reduce_sum(tf.cast(x, tf.float32))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The function closes over the iterator: its graph captures the 8 device
        # iterators' handles and, a graph being a reference cycle, keeps them past
        # this test; conftest's iterator watch frees them at its end
        # (tests/iterator_lifetimes.py), not a later test's collection.
        tf.function(lambda: strategy.run(step, args=(next(iterator),)))()
    assert [w for w in caught if issubclass(w.category, TPUSemanticsWarning)] == []


def test_once_per_op_and_line_however_many_replicas_and_traces(strategy, lint):
    first = _step_warnings(strategy, step_seeded_random)
    again = _step_warnings(strategy, step_seeded_random)  # a new tf.function: traced again
    assert len(first) == 1 and again == []  # 8 replicas built the op, one warning


def test_warnings_as_errors_fail_the_step_at_the_line(strategy, lint):
    import tensorflow as tf
    with warnings.catch_warnings():
        warnings.simplefilter("error", TPUSemanticsWarning)
        with pytest.raises(TPUSemanticsWarning) as raised:
            tf.function(lambda: strategy.run(step_seeded_random))()
    assert str(raised.value).startswith(f"{THIS_FILE}:{_line('seeded')}: on a TPU, op "
                                        f"RandomUniform "), str(raised.value)


# -- the table -------------------------------------------------------------------------------

def test_seeded_random_row_is_every_seeded_op_xla_compiles(tpu8):
    """The stateful ops with a seed/seed2 pair that TF 2.21's XLA kernel registry has."""
    del tpu8
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry
    from tpu_compat.fidelity import compile_checks, tpu_semantics
    compile_checks._ensure_xla_kernels_registered()  # pylint: disable=protected-access
    seeded = set()
    for name in dir(tf.raw_ops):
        op_def = op_def_registry.get(name)
        if op_def is None or not {"seed", "seed2"} <= {a.name for a in op_def.attr}:
            continue
        if op_def.is_stateful and compile_checks._xla_kernels(name):  # pylint: disable=protected-access
            seeded.add(name)
    rows = {row.rule: row for row in tpu_semantics.ROWS}
    assert seeded == set(rows["seeded-random"].op_types)
    for op_type in rows["integer-division"].op_types:
        assert compile_checks._xla_kernels(op_type), op_type  # pylint: disable=protected-access
    assert all(row.source and row.fix and row.tpu_does for row in tpu_semantics.ROWS)


# -- a TF 1.x program under --tf1 -------------------------------------------------------------

SCENARIO = "tpu_semantics_tf1.py"


def _scenario_line(tag):
    from conftest import SCENARIOS
    return _line(tag, os.path.join(SCENARIOS, SCENARIO))


def test_tf1_program_warns_each_row_at_its_line_and_fails_at_the_first_as_errors():
    env = {settings.FIDELITY_VAR: None}  # run's default: tpu
    warned = check_ok(run_scenario(SCENARIO, 2, "--steps", "2", tf1=True, env=env))
    text = warned.stderr
    for tag, op_type in [("random", "RandomStandardNormal"), ("float64", "Cast"),
                         ("division", "FloorDiv")]:
        where = f"{SCENARIO}:{_scenario_line(tag)}: on a TPU, op {op_type} ("
        assert text.count(where) == 1, text[-4000:]  # once, not per replica or step
    assert "TPUSemanticsWarning" in text
    assert "Initializer" not in text  # variable initializers run on the host
    assert "LOSS:" in warned.stdout  # warnings only: the program ran

    failed = run_scenario(SCENARIO, 2, "--steps", "2", "--nolegacy_warnings", tf1=True,
                          env=dict(env, TPU_COMPAT_WARNINGS="error"))
    assert failed.returncode == 1, failed.stderr[-3000:]
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("tpu_compat.deprecation.TPUSemanticsWarning: ") or \
        last.startswith("TPUSemanticsWarning: "), last
    assert f"{SCENARIO}:{_scenario_line('random')}: on a TPU, op RandomStandardNormal" in last
    assert "LOSS:" not in failed.stdout
