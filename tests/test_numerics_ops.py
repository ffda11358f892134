"""numerics-diff --ops-at-step's recorder (fidelity/numerics_ops.py), in process.

A replica step traced once and run several times (a tf.range loop in one
tf.function) is counted per run; the op recorded at the chosen step has the
contribution numpy + ml_dtypes gives for that step's inputs, an op whose
operands bfloat16 holds exactly contributes 0, and without the variable
nothing is built.
"""

import json
import os

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from tpu_compat import settings
from tpu_compat.distribute import TPUStrategy
from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
from tpu_compat.patching.changes import Changes
from tpu_compat.patching import registry
from tpu_compat.fidelity import compile_checks, numerics, numerics_ops

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

STEPS = 3
HERE = os.path.abspath(__file__)


@pytest.fixture(scope="module")
def strategy(tpu8):
    del tpu8
    return TPUStrategy(TPUClusterResolver(tpu=""))


@pytest.fixture
def tpu_numerics(monkeypatch):
    monkeypatch.setenv(settings.NUMERICS_VAR, "tpu")
    monkeypatch.delenv(settings.NUMERICS_OPS_VAR, raising=False)
    changes = Changes()
    registry.apply_alone("numerics", changes)
    yield
    changes.undo()


def _recording(monkeypatch, tmp_path, step):
    recorder = numerics_ops.Recorder(step, str(tmp_path / f"ops{step}.json"))
    monkeypatch.setattr(numerics_ops, "_recorder", recorder)
    return recorder


def _inputs():
    rng = np.random.RandomState(0)
    xs = rng.randn(STEPS, 4, 16).astype(np.float32)
    xs[0] = np.round(xs[0] * 4)  # step 1: small integers, exact in bfloat16
    w = rng.randn(16, 8).astype(np.float32)
    integers = rng.randint(-3, 4, size=(16, 8)).astype(np.float32)
    return xs, w, integers


def _loop(strategy, xs, w, integers):
    """One tf.function: a tf.range loop of STEPS replica steps, traced once."""
    xs, w, integers = (tf.constant(v) for v in (xs, w, integers))

    def replica_step(x):
        rounded = tf.matmul(x, w)  # line of the rounded op
        exact = tf.matmul(tf.round(x), integers)  # line of the exact op
        return tf.reduce_sum(rounded) + tf.reduce_sum(exact)

    @tf.function
    def loop():
        total = tf.constant(0.0)
        for i in tf.range(STEPS):
            per_replica = strategy.run(replica_step, args=(xs[i],))
            total += strategy.experimental_local_results(per_replica)[0]
        return total

    return loop()


def _line_of(text):
    with open(HERE, encoding="utf-8") as stream:
        return 1 + next(i for i, line in enumerate(stream) if text in line)


def _bf16(values):
    return np.asarray(values, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def _reference(x, w):
    exact = x.astype(np.float64) @ w.astype(np.float64)
    rounded = _bf16(x) @ _bf16(w)
    return np.max(np.abs(rounded - exact)) / np.max(np.abs(exact))


def test_the_chosen_run_of_a_step_traced_once_and_its_ops(strategy, tpu_numerics,
                                                          monkeypatch, tmp_path):
    xs, w, integers = _inputs()
    found = {}
    for step in (1, 2):
        recorder = _recording(monkeypatch, tmp_path, step)
        _loop(strategy, xs, w, integers)
        recorder.write()
        with open(recorder.path, encoding="utf-8") as stream:
            found[step] = json.load(stream)
    for step, report in found.items():
        assert (report["step"], report["steps_run"]) == (step, STEPS)  # runs, not traces
        assert all(op["file"] == HERE and op["pass"] == "forward" and op["op"] == "MatMul"
                   and op["executions"] == 1 for op in report["ops"])
        by_line = {op["line"]: op for op in report["ops"]}
        assert sorted(by_line) == [_line_of("line of the rounded op"),
                                   _line_of("line of the exact op")]
        assert by_line[_line_of("line of the exact op")]["relative"] == 0.0
        rounded = by_line[_line_of("line of the rounded op")]["relative"]
        # float32 accumulation against float64: far below the rounding's ~1e-3.
        assert rounded == pytest.approx(_reference(xs[step - 1], w), rel=1e-3)
        assert report["ops"][0]["line"] == _line_of("line of the rounded op")  # largest first
    # Step 1's x is exact in bfloat16, step 2's is not: a different contribution.
    assert found[1]["ops"][0]["relative"] != found[2]["ops"][0]["relative"]
    assert 1e-4 < found[2]["ops"][0]["relative"] < 1e-2


def test_recording_leaves_the_numbers_as_they_are(strategy, tpu_numerics, monkeypatch,
                                                   tmp_path):
    xs, w, integers = _inputs()
    plain = _loop(strategy, xs, w, integers).numpy()
    _recording(monkeypatch, tmp_path, 2)
    assert _loop(strategy, xs, w, integers).numpy() == plain


def test_backward_ops_are_told_apart_and_eager_steps_counted(strategy, tpu_numerics,
                                                             monkeypatch, tmp_path):
    xs, w, _ = _inputs()
    variable = tf.Variable(w)

    def replica_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, variable)))  # forward line
        return tape.gradient(loss, variable)  # backward line

    recorder = _recording(monkeypatch, tmp_path, 2)
    for i in range(STEPS):  # eager: each run is its own trace-free step
        strategy.run(replica_step, args=(tf.constant(xs[i]),))
    # Another replica function (an evaluation step, say) counts on the same count.
    strategy.run(lambda x: tf.matmul(x, variable), args=(tf.constant(xs[0]),))
    report = recorder.report()
    assert report["steps_run"] == STEPS + 1
    passes = {(op["pass"], op["line"]) for op in report["ops"]}
    assert passes == {("forward", _line_of("# forward line")),
                      ("backward", _line_of("# backward line"))}
    assert all(op["relative"] > 1e-4 for op in report["ops"])


def _py_functions(strategy, step):
    """The step's py_functions, and the conds that hold one (the chosen step's record)."""
    graph = tf.function(lambda: strategy.run(step)).get_concrete_function().graph
    return [op for op in graph.get_operations() if "PyFunc" in op.type or "If" in op.type]


def test_off_by_default_nothing_is_built_and_on_its_ops_are_host_ops(
        strategy, tpu_numerics, monkeypatch, tmp_path):
    assert numerics_ops.recorder() is None

    def step():
        return tf.matmul(tf.ones([2, 3]) / 3, tf.ones([3, 2]) / 3)

    assert numerics_ops.replica_step(step) is step
    assert not _py_functions(strategy, step)
    _recording(monkeypatch, tmp_path, 1)
    recorded = _py_functions(strategy, step)
    # Replica 0's marker and its one record (run at the chosen step only);
    # the TPU checks leave them out.
    assert sorted(op.type for op in recorded) == ["EagerPyFunc", "If"]
    assert all(compile_checks._is_host_op(op) for op in recorded)  # pylint: disable=protected-access


def test_keras_fit_with_steps_per_execution_counts_each_step(strategy, tpu_numerics,
                                                             monkeypatch, tmp_path):
    """Two steps per traced call: each is counted, and a Keras step's ops (no
    user frame in the replica's thread) are placed at the line that called fit."""
    import tf_keras  # pylint: disable=import-outside-toplevel
    rng = np.random.RandomState(1)
    x, y = rng.randn(32, 8).astype(np.float32), rng.randn(32, 1).astype(np.float32)
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(8,))])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    recorder = _recording(monkeypatch, tmp_path, 3)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # the fit line
    report = recorder.report()
    assert report["steps_run"] == 4
    assert {(op["pass"], op["line"]) for op in report["ops"]} == {
        ("forward", _line_of("# the fit line")), ("backward", _line_of("# the fit line"))}
    assert all("dense" in op["name"] and op["relative"] > 0 for op in report["ops"])


def test_a_non_finite_output_is_kept_and_listed_first(tmp_path):
    # pylint: disable=protected-access
    recorder = numerics_ops.Recorder(1, str(tmp_path / "ops.json"))
    recorder._sites = [{"op": "MatMul", "name": name, "file": "f.py", "line": 1,
                        "pass": "forward"} for name in ("finite", "nan", "zero")]
    recorder._begin_step()
    for site, difference, magnitude in ((0, 0.5, 1.0), (1, float("nan"), 1.0),
                                        (1, 0.1, 2.0), (2, 0.0, 0.0)):
        recorder._record(site, 1, difference, magnitude)
    recorder._record(0, 2, 9.0, 1.0)  # another step: not kept
    recorder.write()
    with open(recorder.path, encoding="utf-8") as stream:
        report = json.load(stream)
    assert [op["name"] for op in report["ops"]] == ["nan", "finite", "zero"]
    assert np.isnan(report["ops"][0]["relative"]) and report["ops"][0]["executions"] == 2
    assert [op["relative"] for op in report["ops"][1:]] == [0.5, 0.0]
