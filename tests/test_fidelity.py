"""Fidelity ``tpu``: replica steps a TPU cannot compile fail at trace time.

One scenario run per fidelity (tests/scenarios/fidelity_checks.py, TF 1.x
mode: soft device placement off, as in TF 2.21's v1 mode) covers every
category and the compat.v1 ``steps_per_run`` loop; legitimate steps
(boolean_mask + float64, outside_compilation, tf.while_loop) must pass under
``tpu``. A second one (fidelity_checks_tf2.py, TF 2.x) covers ``strategy.run``
inside a tf.function, eager ``run``/``experimental_run_v2`` and Keras
``model.fit``. Shapes XLA cannot bound are unit-tested in
test_compile_time_constants.py. That a legitimate low-level program
(tpu.replicate, shard, outside_compilation) still passes under ``tpu`` with
--tf1 is tests/test_tpu_lowlevel.py's 2-replica parity run.
"""

import pytest

from tpu_compat import _config, settings
from conftest import check_ok, run_scenario

FAILING = {
    "py_function": ["EagerPyFunc"],
    "numpy_function": ["PyFunc"],
    "string": ["AsString"],
    "unique_with_counts": ["UniqueWithCounts"],
    "print": ["PrintV2"],
    "summary": ["ScalarSummary"],
    "steps_per_run": ["AsString", "StringToNumber"],
    # Shapes XLA cannot bound: a compile-time-constant input computed from data.
    "fill_from_data": ["Fill"],
    "range_from_data": ["Range"],
    "reshape_from_data": ["Reshape"],
}
PASSING = ["boolean_mask_float64", "outside_compilation", "while",
           "steps_per_run_legitimate", "shapes_from_tf_shape"]
# TF 2.x replica steps (fidelity_checks_tf2.py): case -> op types on its line.
FAILING_TF2 = {
    "run_in_function": ["AsString"],
    # A library function as the step: the program's line is the one calling run.
    "library_step": ["AsString"],
    "keras_fit_string": ["AsString"],
    "run_in_function_range_from_data": ["Range"],
    # Eager: a TPU traces an eager run into a tf.function and compiles it.
    "eager_run_v2_plain": ["AsString"],
    "eager_run_function": ["AsString"],
}
PASSING_TF2 = ["keras_fit", "run_in_function_shapes", "eager_run_function_legitimate"]


def _source_line(tag, scenario="fidelity_checks.py"):
    with open(f"tests/scenarios/{scenario}") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# LINE {tag}"):
                return number
    raise AssertionError(tag)


def _cases(stdout):
    cases, current = {}, None
    for line in stdout.splitlines():
        if line.startswith("CASE "):
            current, _, verdict = line[len("CASE "):].partition(": ")
            cases[current] = [verdict]
        elif current is not None:
            cases[current].append(line)
    return cases


@pytest.fixture(scope="module")
def runs():
    return {fidelity: _cases(check_ok(run_scenario(
        "fidelity_checks.py", 2, tf1=True,
        env={settings.FIDELITY_VAR: fidelity, "TPU_COMPAT_WARNINGS": "ignore"})).stdout)
        for fidelity in ("cpu", "tpu")}


@pytest.fixture(scope="module")
def runs_tf2():
    return {fidelity: _cases(check_ok(run_scenario(
        "fidelity_checks_tf2.py", 2,
        env={settings.FIDELITY_VAR: fidelity, "TPU_COMPAT_WARNINGS": "ignore"})).stdout)
        for fidelity in ("cpu", "tpu")}


def _assert_fails_only_under_tpu(runs, case, op_types, scenario):
    assert runs["cpu"][case][0].startswith("ok"), runs["cpu"][case]
    verdict, *message = runs["tpu"][case]
    assert verdict == "TPUCompilationError", runs["tpu"][case]
    text = "\n".join(message)
    line = _source_line(case, scenario)
    for op_type in op_types:
        assert f"{scenario}:{line}: a TPU cannot compile op {op_type} " in text, text
    assert "Fix:" in text


def _assert_passes_with_the_same_result(runs, case):
    assert runs["tpu"][case][0].startswith("ok"), runs["tpu"][case]
    assert runs["tpu"][case][0] == runs["cpu"][case][0]


@pytest.mark.requires_tf
@pytest.mark.parametrize("case", sorted(FAILING))
def test_runs_on_cpu_fails_under_tpu_naming_op_and_line(runs, case):
    _assert_fails_only_under_tpu(runs, case, FAILING[case], "fidelity_checks.py")


@pytest.mark.requires_tf
@pytest.mark.parametrize("case, argument", [
    ("fill_from_data", "dims"), ("range_from_data", "limit"), ("reshape_from_data", "shape")])
def test_unbounded_shape_names_the_input_and_the_fix(runs, case, argument):
    text = "\n".join(runs["tpu"][case][1:])
    assert f"its input `{argument}` is computed from tensor values" in text, text
    assert "compile-time constant" in text and "tf.shape" in text, text
    assert text.count("a TPU cannot compile op") == 1, text  # the cause alone, not its users


@pytest.mark.requires_tf
@pytest.mark.parametrize("case", PASSING)
def test_legitimate_steps_pass_under_tpu_with_the_same_result(runs, case):
    _assert_passes_with_the_same_result(runs, case)


@pytest.mark.requires_tf
@pytest.mark.parametrize("case", sorted(FAILING_TF2))
def test_tf2_steps_run_on_cpu_fail_under_tpu_naming_op_and_line(runs_tf2, case):
    _assert_fails_only_under_tpu(runs_tf2, case, FAILING_TF2[case], "fidelity_checks_tf2.py")


@pytest.mark.requires_tf
@pytest.mark.parametrize("case", PASSING_TF2)
def test_tf2_legitimate_steps_pass_under_tpu_with_the_same_result(runs_tf2, case):
    _assert_passes_with_the_same_result(runs_tf2, case)


def test_bad_fidelity_value_names_the_variable():
    with pytest.raises(_config.ConfigError, match="TPU_COMPAT_FIDELITY='gpu'.*cpu, tpu"):
        settings.read("fidelity", {settings.FIDELITY_VAR: "gpu"})
    assert settings.read("fidelity", {}) == "cpu"


@pytest.mark.parametrize("environ, flag, expected", [
    ({}, None, "tpu"),                                   # run's default: a TPU's rules
    ({}, "cpu", "cpu"),                                  # --fidelity cpu
    ({"TPU_COMPAT_FIDELITY": "cpu"}, None, "cpu"),       # the variable the user set
    ({"TPU_COMPAT_FIDELITY": "cpu"}, "tpu", "tpu"),      # the flag wins
])
def test_run_checks_replica_steps_as_a_tpu_unless_the_user_chose(environ, flag, expected):
    from tpu_compat import runner  # pylint: disable=import-outside-toplevel
    environ = dict(environ, TF_USE_LEGACY_KERAS="1")
    runner.prepare_environment({"fidelity": flag}, environ=environ)
    assert environ["TPU_COMPAT_FIDELITY"] == expected
