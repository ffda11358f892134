"""Strict mode: modern calls follow TF 2.21's TPUStrategy rules, legacy ones their era's.

The scenario (tests/scenarios/strict_checks.py) makes every call once per run;
each expected error is TensorFlow's own type and message (tpu_strategy.py).
"""

import json
import os
import warnings

import pytest

from tpu_compat import _config, deprecation, settings
from conftest import SCENARIOS, check_ok, run_cli

PURE_EAGER = ("NotImplementedError: TPUStrategy.run(fn, ...) does not support pure eager "
              "execution. please make sure the function passed into `strategy.run` is a "
              "`tf.function` or `strategy.run` is called inside a `tf.function` if eager "
              "behavior is enabled.")
RAGGED = ("ValueError: Found tensor {path}with spec <class 'tensorflow.python.ops.ragged."
          "ragged_tensor.RaggedTensorSpec'>. TPUStrategy does not support distributed "
          "datasets with device prefetch when using sparse or ragged tensors. If you intend "
          "to use sparse or ragged tensors, please pass a tf.distribute.InputOptions object "
          "with experimental_fetch_to_device set to False to your dataset distribution "
          "function.")
# Calls TF 2.21's TPUStrategy accepts: they compute what a single device does.
ACCEPTED = ("run_tf_function_eager", "run_callable_module", "run_plain_inside_tf_function",
            "experimental_run_v2_plain_eager", "run_variable_argument",
            "run_tf_function_variable_argument_eager", "v1_experimental_run_plain_eager")


def _checks(strict, replicas):
    result = check_ok(run_cli("run", "--strict", strict, "--replicas", str(replicas),
                              os.path.join(SCENARIOS, "strict_checks.py")))
    line = next(l for l in result.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module", params=[2, 8])
def strict_run(request):
    return request.param, _checks("on", request.param)


@pytest.mark.requires_tf
def test_strict_run_rejects_pure_eager_plain_functions(strict_run):
    _, checks = strict_run
    assert checks["run_plain_eager"] == PURE_EAGER
    assert checks["v1_run_plain_eager"] == PURE_EAGER  # TPUStrategyV1.run checks too


@pytest.mark.requires_tf
def test_strict_keeps_what_tpus_accept_and_legacy_entry_points(strict_run):
    _, checks = strict_run
    for name in ACCEPTED + ("reduce_sum_axis0", "reduce_mean_axis0", "run_train_step_eager",
                            "distribute_ragged_dataset_host_fetch"):
        assert checks[name] == "ok", name
    for name in ACCEPTED:
        assert checks[name + "_max_error"] < 1e-5, name
    assert checks["slope_error"] < 1e-6  # gradients summed over all replicas, once
    assert checks["reduce_max_error"] < 1e-3  # float32 sums of up to 32 values ~ 10^2


@pytest.mark.requires_tf
def test_strict_run_checks_arguments_like_tensorflow(strict_run):
    _, checks = strict_run
    assert checks["run_variable_in_star_args"] == (
        "ValueError: TPUStrategy.run() cannot handle Variables passed to *args. Either "
        "name the function argument, or capture the Variable implicitly.")
    assert checks["run_input_of_unknown_rank"].startswith("ValueError: ")
    assert checks["run_input_of_unknown_rank"].rstrip().endswith(
        'ValueError: input tensor Tensor("x:0", dtype=float32) to TPUStrategy.run() has '
        'unknown rank, which is not allowed')


@pytest.mark.requires_tf
def test_strict_input_checks_like_tensorflow(strict_run):
    replicas, checks = strict_run
    assert checks["distribute_dataset_per_replica"] == (
        "NotImplementedError: InputReplicationMode.PER_REPLICA is only supported in "
        "`experimental_distribute_datasets_from_function`.")
    assert checks["datasets_from_function_per_replica"] == (
        "NotImplementedError: InputReplicationMode.PER_REPLICA is only supported in  "
        "`experimental_distribute_datasets_from_function` of tf.distribute.MirroredStrategy")
    assert checks["distribute_ragged_dataset"] == RAGGED.format(path=" ")
    assert checks["datasets_from_function_ragged"] == RAGGED.format(path="0 ")
    # TF 2.21 splits a partial global batch of b in pieces of ceil(b / replicas)
    # (6 on 2 replicas: [3, 3]; 18 on 8: [3] * 6 + [0, 0]).
    examples = 2 * replicas + 2
    piece = -(-examples // replicas)
    assert checks["partial_batch_split"] == [
        max(0, min(piece, examples - i * piece)) for i in range(replicas)]
    assert checks["require_static_shapes"] is True  # as TPUExtended says


@pytest.mark.requires_tf
def test_off_keeps_the_legacy_conveniences():
    checks = _checks("off", 2)
    for name in ("run_plain_eager", "run_variable_in_star_args", "run_input_of_unknown_rank",
                 "datasets_from_function_per_replica", "distribute_ragged_dataset",
                 "v1_run_plain_eager") + ACCEPTED:
        assert checks[name] == "ok", name
    assert checks["run_plain_eager_max_error"] < 1e-5
    assert checks["partial_batch_split"] == [4, 2]  # TF 2.0-2.3's split, kept by the shim
    assert checks["require_static_shapes"] is False
    # MirroredStrategy's own message (the emulated TPU is a Mirrored one underneath).
    assert checks["distribute_dataset_per_replica"].endswith(
        "is only supported in `distribute_datasets_from_function`.")


# -- how strict mode is switched (in process: no TensorFlow work) ------------------------


@pytest.fixture
def strict_module(monkeypatch):
    from tpu_compat.runtime import strict  # pylint: disable=import-outside-toplevel
    for var in (settings.STRICT_VAR, settings.WARNINGS_VAR):
        monkeypatch.delenv(var, raising=False)
    return strict


@pytest.mark.requires_tf
@pytest.mark.parametrize("choice,expected", [("on", True), ("off", False), (" ON ", True)])
def test_explicit_choice_wins(strict_module, monkeypatch, choice, expected):
    monkeypatch.setenv(settings.STRICT_VAR, choice)
    monkeypatch.setenv(settings.WARNINGS_VAR, "ignore" if expected else "error")
    assert strict_module.enabled() is expected


@pytest.mark.requires_tf
def test_auto_follows_the_warning_policy(strict_module, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        assert not strict_module.enabled()
        monkeypatch.setenv(settings.WARNINGS_VAR, "error")
        assert strict_module.enabled()


@pytest.mark.requires_tf
def test_auto_follows_warning_filters_that_make_legacy_warnings_errors(strict_module):
    with warnings.catch_warnings():
        deprecation.apply_policy("error")  # what install(warnings="error") does
        assert strict_module.enabled()
        deprecation.apply_policy("once")
        assert not strict_module.enabled()
        # -W error::DeprecationWarning covers TPUCompatDeprecationWarning ...
        warnings.simplefilter("error", DeprecationWarning)
        assert strict_module.enabled()
        # ... a filter for some messages only does not decide for every call.
        warnings.filterwarnings("ignore", message="Strategy.unwrap", category=Warning)
        assert strict_module.enabled()
        deprecation.apply_policy("ignore")
        assert not strict_module.enabled()
    deprecation.apply_policy(None)


def test_bad_strict_value_names_the_variable_and_choices():
    with pytest.raises(_config.ConfigError,
                       match="TPU_COMPAT_STRICT='maybe' is not valid; allowed values: "
                             "auto, on, off"):
        settings.read("strict", {"TPU_COMPAT_STRICT": "maybe"})
    assert settings.read("strict", {}) == "auto"
