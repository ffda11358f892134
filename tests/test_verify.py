"""`tpu-compat verify LEGACY MIGRATED`: same numbers, and no legacy API left.

The library cases use plain ``python`` and scripts without TensorFlow; the
command-line cases run the repository's examples and their `tpu-compat
upgrade`d copies on a 2-core emulated TPU (their numbers do not depend on the
replica count, tests/test_examples.py).
"""

import os
import textwrap

import pytest

from tpu_compat.migrate import upgrade
from tpu_compat.regress import measure, script_process, verify
from conftest import EXAMPLES, SCENARIOS, run_cli

TF1_EXAMPLE = os.path.join(EXAMPLES, "tf1_linear_regression.py")
TF2_EXAMPLE = os.path.join(EXAMPLES, "tf2_custom_training_loop.py")
EAGER_STEP = os.path.join(SCENARIOS, "eager_step_tf21.py")
OPTIONS = measure.RunOptions(replicas=2, timeout=20.0, seed=0)


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


def upgraded_copy(example, directory, edit=None):
    result = upgrade.upgrade_file(example)
    assert result.error is None
    text = result.output.decode("utf-8")
    if edit is not None:
        text = edit(text)
    target = directory / os.path.basename(example)
    target.write_text(text)
    return str(target)


# -- library, with plain python --------------------------------------------------------------

# Their scripts import no TensorFlow: a fresh `python` costs milliseconds of
# CPU, a fork of the suite's fork server 1-2 s (issue 32's CI budget). These
# tests' children start fresh.
plain_children = pytest.mark.fresh_process


@plain_children
def test_equal_numbers_pass(tmp_path):
    legacy = write(tmp_path / "legacy.py", "print('loss: 0.5')\nprint('acc=0.9')\n")
    migrated = write(tmp_path / "migrated.py", "print('loss: 0.50000001')\nprint('acc=0.9')\n")
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert result.passed and result.problem is None
    assert result.comparison.summary() == "all 2 numbers equal within rtol=0.0001, atol=1e-06"


@plain_children
def test_different_numbers_fail_with_the_differences(tmp_path):
    legacy = write(tmp_path / "legacy.py", "print('loss: 0.5')\nprint('acc=0.9')\n")
    migrated = write(tmp_path / "migrated.py", "print('loss: 0.7')\n")
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert not result.passed
    assert [(d.key, d.kind) for d in result.comparison.differences] == [
        ("loss", "changed"), ("acc", "missing")]


@plain_children
def test_migrated_copy_uses_the_legacy_sidecar_unless_it_has_its_own(tmp_path):
    legacy = write(tmp_path / "legacy.py", "print('final loss was 0.25')\n")
    write(tmp_path / "legacy.regress.toml", "[patterns]\nloss = 'final loss was (\\S+)'\n")
    (tmp_path / "out").mkdir()
    migrated = write(tmp_path / "out" / "legacy.py", "print('final loss was 0.25')\n")
    assert verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command).passed
    write(tmp_path / "out" / "legacy.regress.toml", "standard_lines = true\n")
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert result.problem.startswith(f"{migrated} (migrated) reported no numbers")


@plain_children
def test_legacy_api_left_in_the_migrated_script_is_named(tmp_path):
    legacy = write(tmp_path / "legacy.py", "print('loss: 0.5')\n")
    # What a run under --warnings=error prints when a legacy API is called.
    migrated = write(tmp_path / "migrated.py", """\
        import sys
        print("Traceback (most recent call last):", file=sys.stderr)
        print("tpu_compat.deprecation.TPUCompatDeprecationWarning: Strategy.unwrap is "
              "a TF 1.15 API; use strategy.experimental_local_results(value) instead. "
              "[TPC015]", file=sys.stderr)
        sys.exit(1)
    """)
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert result.problem == (
        f"{migrated} still uses legacy TPU APIs, so it fails under --warnings=error: "
        f"Strategy.unwrap is a TF 1.15 API; use strategy.experimental_local_results(value) "
        f"instead. [TPC015]")


@plain_children
def test_a_tpu_semantics_warning_stopping_the_migrated_script_is_named(tmp_path):
    legacy = write(tmp_path / "legacy.py", "print('loss: 0.5')\n")
    # What a run under --warnings=error prints when fidelity tpu's lint warns.
    migrated = write(tmp_path / "migrated.py", """\
        import sys
        print("Traceback (most recent call last):", file=sys.stderr)
        print("tpu_compat.deprecation.TPUSemanticsWarning: step.py:7: on a TPU, op Cast "
              "(Cast) in a replica step produces a float64 tensor: ... [float64]",
              file=sys.stderr)
        sys.exit(1)
    """)
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert result.problem == (
        f"{migrated} computes something differently on a TPU, which fails it under "
        f"--warnings=error (--fidelity cpu turns the check off): step.py:7: on a TPU, op "
        f"Cast (Cast) in a replica step produces a float64 tensor: ... [float64]")


@plain_children
def test_a_failing_legacy_script_is_reported_first(tmp_path):
    legacy = write(tmp_path / "legacy.py", "raise SystemExit(4)\n")
    migrated = write(tmp_path / "migrated.py", "print('loss: 0.5')\n")
    result = verify.verify(legacy, migrated, OPTIONS, command=script_process.python_command)
    assert result.problem == f"{legacy} (legacy) exited with code 4"


@plain_children
def test_migrated_runs_strictly_with_warnings_error_and_legacy_leniently(tmp_path, monkeypatch):
    launches = []

    def record_command(launch):
        launches.append(launch)
        return script_process.python_command(launch)

    legacy = write(tmp_path / "legacy.py", "print('loss: 0.5')\n")
    migrated = write(tmp_path / "migrated.py", "print('loss: 0.5')\n")
    verify.verify(legacy, migrated, OPTIONS, command=record_command)
    assert [(l.script, l.warnings, l.strict, l.replicas, l.seed) for l in launches] == [
        (legacy, "once", "off", 2, 0), (migrated, "error", "on", 2, 0)]
    assert script_process.tpu_compat_command(launches[1])[3:] == [
        "run", "--replicas", "2", "--warnings", "error", "--strict", "on", migrated]


# -- the command line on the examples and their upgraded copies -------------------------------


@pytest.mark.requires_tf
def test_upgraded_tf2_example_computes_what_the_legacy_one_did(tmp_path):
    migrated = upgraded_copy(TF2_EXAMPLE, tmp_path)
    result = run_cli("verify", TF2_EXAMPLE, migrated, "--replicas", "2")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == (
        "EQUAL: all 5 numbers equal within rtol=0.0001, atol=1e-06")


@pytest.mark.requires_tf
def test_upgraded_tf1_example_runs_strict_with_the_legacy_numbers(tmp_path):
    """The TF 1.15 graph program (compat.v1 TPUStrategy with steps_per_run, its
    multi-step loop with iterations=strategy.steps_per_run) upgrades with no TODO
    (issue 35) and its copy computes what the legacy one did under
    --warnings error --strict on."""
    result = upgrade.upgrade_file(TF1_EXAMPLE)
    assert {o.action for o in result.outcomes} == {upgrade.REWRITTEN}, result.outcomes
    migrated = upgraded_copy(TF1_EXAMPLE, tmp_path)
    assert "_run_steps_on_iterator(\n        strategy, step_fn, iterator, " \
           "iterations=STEPS_PER_RUN," in open(migrated).read()
    result = run_cli("verify", TF1_EXAMPLE, migrated, "--replicas", "2")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == (
        "EQUAL: all 8 numbers equal within rtol=0.0001, atol=1e-06")


@pytest.mark.requires_tf
def test_a_legacy_call_put_back_into_the_upgraded_tf1_example_fails_clearly(tmp_path):
    migrated = upgraded_copy(TF1_EXAMPLE, tmp_path, edit=lambda text: text.replace(
        "sess.run(iterator.initializer)", "sess.run(iterator.initialize())"))
    result = run_cli("verify", TF1_EXAMPLE, migrated, "--replicas", "2")
    assert result.returncode == 1
    last = result.stdout.splitlines()[-1]
    assert last == (f"FAILED: {migrated} still uses legacy TPU APIs, so it fails under "
                    f"--warnings=error: InputIterator.initialize is a TF 1.15 API (removed "
                    f"in TF 2.0); use the iterator's initializer property in graph mode; "
                    f"nothing in TF2 instead. [TPC018]")
    assert f"legacy:   {TF1_EXAMPLE}: 8 numbers" in result.stdout


@pytest.mark.requires_tf
def test_changed_learning_rate_fails_with_a_table(tmp_path):
    migrated = upgraded_copy(
        TF2_EXAMPLE, tmp_path,
        edit=lambda text: text.replace("learning_rate=0.5", "learning_rate=0.3"))
    result = run_cli("verify", TF2_EXAMPLE, migrated, "--replicas", "2")
    assert result.returncode == 1
    out = result.stdout
    assert "DIFFERENT: 4 of 5 numbers differ beyond rtol=0.0001, atol=1e-06" in out
    table = out[out.index("    key "):].splitlines()
    assert table[0].split() == ["key", "legacy", "migrated", "abs", "diff", "rel", "diff"]
    assert [row.split()[0] for row in table[1:]] == [
        "epoch_0_mean_loss", "epoch_1_mean_loss", "epoch_2_mean_loss", "weight_sum"]


def _migrated_eager_step(directory, wrap_in_tf_function):
    """EAGER_STEP with the renames `upgrade` makes; optionally the step traced."""
    text = open(EAGER_STEP).read()
    text = text.replace("tf.distribute.experimental.TPUStrategy(", "tf.distribute.TPUStrategy(")
    text = text.replace("strategy.experimental_run_v2(", "strategy.run(")
    if wrap_in_tf_function:
        text = text.replace("\ndef step_fn(", "\n@tf.function\ndef step_fn(")
    code = text.split('"""')[2]
    assert "experimental_run_v2" not in code and "distribute.experimental" not in code
    target = directory / "eager_step_tf21.py"
    target.write_text(text)
    return str(target)


@pytest.mark.requires_tf
def test_migration_that_only_works_under_the_shim_fails_verify(tmp_path):
    # strategy.run(plain_fn) in pure eager mode: the shim's leniency would run
    # it, TF 2.21's TPUStrategy raises; verify runs the migrated side strictly.
    migrated = _migrated_eager_step(tmp_path, wrap_in_tf_function=False)
    result = run_cli("verify", EAGER_STEP, migrated, "--replicas", "2")
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert f"legacy:   {EAGER_STEP}: 3 numbers" in result.stdout
    assert result.stdout.splitlines()[-1] == (
        f"FAILED: {migrated} (migrated) exited with code 1: NotImplementedError: "
        f"TPUStrategy.run(fn, ...) does not support pure eager execution. please make sure "
        f"the function passed into `strategy.run` is a `tf.function` or `strategy.run` is "
        f"called inside a `tf.function` if eager behavior is enabled.")


@pytest.mark.requires_tf
def test_migration_with_the_step_in_a_tf_function_passes_verify(tmp_path):
    migrated = _migrated_eager_step(tmp_path, wrap_in_tf_function=True)
    result = run_cli("verify", EAGER_STEP, migrated, "--replicas", "2")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == (
        "EQUAL: all 3 numbers equal within rtol=0.0001, atol=1e-06")


@pytest.mark.parametrize("argv,message", [
    (["verify", TF1_EXAMPLE], "the following arguments are required: MIGRATED.py"),
    (["verify", TF1_EXAMPLE, TF1_EXAMPLE, "--rtol", "-1"],
     "--rtol='-1' is not valid; expected a non-negative number"),
])
def test_verify_usage_errors(argv, message):
    result = run_cli(*argv)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
