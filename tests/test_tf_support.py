"""Without TensorFlow: what still works, and the one line the rest prints; broken mixes.

"No TensorFlow" is simulated in a subprocess by a path finder that finds no
``tensorflow``, ``tf_keras`` or ``keras`` (installing a venv without it per test would cost
minutes); scripts/check_install_plan.py and a TF-free venv were used to check
the same by hand (docs/install.md).
"""

import os
import subprocess
import sys
import warnings

import pytest

import fork_server
from conftest import EXAMPLES, REPO_ROOT, subprocess_env
from tpu_compat import _process, tf_support

# What a missing TensorFlow can break, all of it: CI's TF-free lane runs these.
pytestmark = pytest.mark.tf_free

NO_TENSORFLOW = """\
import importlib.machinery, sys
class _PathFinderWithoutTensorFlow(importlib.machinery.PathFinder):
    # Finds nothing for these packages, exactly as when they are not installed.
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "keras"):
            return None
        return super().find_spec(name, path, target)
sys.meta_path[:] = [_PathFinderWithoutTensorFlow if finder is importlib.machinery.PathFinder
                    else finder for finder in sys.meta_path]
"""

# Hypothesis's pytest plugin imports all of Hypothesis as pytest starts (~2 s of
# CPU per session, issue 32's CI budget); no session below uses it.
NO_HYPOTHESIS = "'-p', 'no:hypothesispytest'"


def _without_tensorflow(code, cwd=None):
    return subprocess.run([sys.executable, "-c", NO_TENSORFLOW + code], capture_output=True,
                          text=True, env=subprocess_env(), cwd=cwd, timeout=300)


# `import tpu_compat`, `scan` and `upgrade` without TensorFlow (and NumPy), over
# the examples and everything else the suite migrates: tests/test_tf_free_corpus.py.


def test_run_matrix_and_doctor_print_one_line_with_the_pip_command():
    result = _without_tensorflow(f"""
from tpu_compat.cli import main
sys.exit(main(["run", {EXAMPLES + "/tf1_linear_regression.py"!r}]))
""")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"tpu-compat: error: {tf_support.MISSING_TENSORFLOW}"]
    assert "pip install 'tensorflow>=" in result.stderr

    result = _without_tensorflow("""
from tpu_compat.cli import main
sys.exit(main(["matrix"]))
""")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"tpu-compat: error: {tf_support.MISSING_TENSORFLOW}"]

    result = _without_tensorflow("""
from tpu_compat.cli import main
sys.exit(main(["doctor"]))
""")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    problems = [line for line in result.stdout.splitlines() if line.startswith("problem:")]
    assert problems == [f"problem: {tf_support.MISSING_TENSORFLOW}"]


def test_pytest_plugin_prints_one_line_when_a_test_needs_tensorflow(tmp_path):
    (tmp_path / "test_uses_tpu.py").write_text(
        "def test_plain():\n    assert True\n\n"
        "def test_strategy(tpu_strategy):\n    assert tpu_strategy.num_replicas_in_sync\n")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    pytest_main = ("import pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
                   + NO_HYPOTHESIS + ", {!r}]))\n")
    result = _without_tensorflow(pytest_main.format("test_uses_tpu.py"), cwd=tmp_path)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if tf_support.MISSING_TENSORFLOW in line]
    assert len(lines) == 1 and "1 tests use TPU fixtures" in lines[0]
    # A suite that does not use the fixtures is not disturbed.
    result = _without_tensorflow(pytest_main.format("test_plain.py"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout


def _requires_tf_suite(directory):
    """A copy of this suite's conftest (with the modules it imports), a module
    marked as a whole, a mixed module."""
    for name in ("conftest.py", "fork_server.py", "iterator_lifetimes.py", "module_order.py"):
        with open(os.path.join(REPO_ROOT, "tests", name), encoding="utf-8") as handle:
            (directory / name).write_text(handle.read())
    (directory / "test_whole_module.py").write_text(
        "import pytest\nimport tensorflow as tf\n\npytestmark = pytest.mark.requires_tf\n\n"
        "def test_tf():\n    assert tf.__version__\n")
    (directory / "test_mixed.py").write_text(
        "import pytest\n\n@pytest.mark.requires_tf\ndef test_tf():\n"
        "    import tensorflow\n\ndef test_scan():\n    assert True\n")


RUN_PYTEST = ("import pytest\ncode = pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', "
              + NO_HYPOTHESIS + ", "
              "'-W', 'ignore::pytest.PytestUnknownMarkWarning'])\n"
              "assert 'tensorflow' not in sys.modules\nsys.exit(code)\n")


def test_requires_tf_tests_are_skipped_without_tensorflow_and_never_imported(tmp_path):
    """This suite's own marker, as CI's TF-free lane (.ci/run) relies on it."""
    _requires_tf_suite(tmp_path)
    result = _without_tensorflow(RUN_PYTEST, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 2 skipped" in result.stdout, result.stdout
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 2 and all("requires_tf: TensorFlow is not installed" in line
                                     for line in skipped), result.stdout


@pytest.mark.requires_tf
def test_requires_tf_skips_nothing_where_tensorflow_is_installed(tmp_path):
    _requires_tf_suite(tmp_path)
    # The copied conftest would start a fork server (a second TensorFlow
    # import) that no test here uses: the marker's claim needs none. The
    # session itself is forked by this suite's fork server (fresh where it
    # declines), in the environment it imported TensorFlow in: a process
    # where TensorFlow is installed is the claim, not how one starts (issue
    # 32's CI budget: a TensorFlow import less).
    command = [sys.executable, "-c", "import sys\n" + RUN_PYTEST.replace(
        "assert 'tensorflow' not in sys.modules\n", "")]
    env = fork_server.server_environment(subprocess_env(TPU_COMPAT_TEST_FORK_SERVER="0"))
    with _process.popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        cwd=tmp_path, env=env) as process:
        try:
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout and "skipped" not in result.stdout, result.stdout


# -- broken mixes -----------------------------------------------------------------------------


def _installed(monkeypatch, tensorflows, tf_keras):
    monkeypatch.setattr(tf_support, "installed_tf_distributions", lambda: dict(tensorflows))
    monkeypatch.setattr(tf_support, "_tf_keras_version", lambda: tf_keras)


def test_two_tensorflow_distributions_on_a_tpu_vm(monkeypatch):
    # `pip install tf-keras` on a TPU VM pulls `tensorflow` over tensorflow-tpu.
    _installed(monkeypatch, {"tensorflow-tpu": "2.21.0", "tensorflow": "2.21.0"}, "2.21.0")
    problem, = tf_support.mix_problems()
    assert problem.startswith("2 TensorFlow distributions are installed "
                              "(tensorflow 2.21.0, tensorflow-tpu 2.21.0)")
    assert problem.endswith(
        "keep tensorflow-tpu: pip uninstall -y tensorflow tensorflow-tpu && "
        "pip install 'tensorflow-tpu==2.21.0' && pip install 'tf-keras==2.21.*' --no-deps")


def test_tf_keras_that_does_not_match_tensorflow(monkeypatch):
    _installed(monkeypatch, {"tensorflow-cpu": "2.21.0"}, "2.19.0")
    assert tf_support.mix_problems() == [
        "tf-keras 2.19.0 does not match tensorflow-cpu 2.21.0 (tf-keras X.Y works only "
        "with TensorFlow X.Y): pip install 'tf-keras==2.21.*' --no-deps"]
    _installed(monkeypatch, {"tensorflow": "2.20.1"}, "2.21.0")
    assert tf_support.mix_problems()[0].endswith(": pip install 'tf-keras==2.20.*'")
    _installed(monkeypatch, {"tensorflow": "2.21.0"}, "2.21.1")
    assert tf_support.mix_problems() == []
    assert tf_support.tf_keras_install_command() == "pip install 'tf-keras==2.21.*'"


def test_doctor_reports_the_mix(monkeypatch):
    from tpu_compat.commands import doctor  # pylint: disable=import-outside-toplevel
    _installed(monkeypatch, {"tensorflow-cpu": "2.21.0", "tensorflow": "2.21.0"}, "2.21.0")
    monkeypatch.setattr(doctor.runner, "tf_keras_installed", lambda: True)
    monkeypatch.setattr(tf_support, "tensorflow_importable", lambda: True)
    monkeypatch.setitem(sys.modules, "tpu_compat.runtime.backend", None)  # skip the backend
    facts, problems = doctor.diagnose(environ={"TF_USE_LEGACY_KERAS": "1"})
    assert dict(facts)["TensorFlow"] == "tensorflow 2.21.0, tensorflow-cpu 2.21.0"
    assert any(p.startswith("2 TensorFlow distributions") for p in problems), problems


# -- the proven range --------------------------------------------------------------------------


def test_versions_outside_the_proven_range_warn_once(monkeypatch):
    monkeypatch.setattr(tf_support, "_warned_versions", set())
    low, high = tf_support.PROVEN_TF_RANGE
    below = f"2.{int(low.split('.')[1]) - 1}.1"  # the minor under the range
    assert tf_support.is_proven(f"{high}.0") and tf_support.is_proven(f"{low}.0rc1")
    assert not tf_support.is_proven(below) and not tf_support.is_proven("2.99.0-dev20990101")
    assert not tf_support.is_proven("not a version")
    with pytest.warns(tf_support.UntestedTensorFlowWarning) as caught:
        tf_support.warn_if_unproven(below)
    assert str(caught[0].message) == (
        f"tpu_compat was tested with TensorFlow {low} to {high} on Python "
        f"{tf_support.PYTHON} (docs/tf_versions.md); "
        f"TensorFlow {below} is outside that range and may not work")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf_support.warn_if_unproven(below)      # once per process
        tf_support.warn_if_unproven(f"{high}.0")   # proven: silent


def test_a_python_no_cell_proved_warns_for_every_tensorflow(monkeypatch):
    # setup.cfg's python_requires keeps pip off such a Python; with
    # --ignore-requires-python the warning still says the truth.
    monkeypatch.setattr(tf_support, "_warned_versions", set())
    monkeypatch.setattr(tf_support, "PYTHON", "3.99")
    high = tf_support.PROVEN_TF_RANGE[1]
    assert not tf_support.is_proven(f"{high}.0")
    proven = ", ".join(sorted(tf_support.PROVEN_TF_RANGES,
                              key=lambda minor: tuple(map(int, minor.split(".")))))
    with pytest.warns(tf_support.UntestedTensorFlowWarning) as caught:
        tf_support.warn_if_unproven(f"{high}.0")
    assert str(caught[0].message) == (
        f"tpu_compat was tested on Python {proven} (docs/tf_versions.md); Python 3.99 "
        f"was not, and TensorFlow {high}.0 on it may not work")


def test_proven_range_is_this_pythons():
    assert tf_support.PYTHON == "%d.%d" % sys.version_info[:2]
    if tf_support.PYTHON in tf_support.PROVEN_TF_RANGES:
        assert tf_support.PROVEN_TF_RANGE == tf_support.PROVEN_TF_RANGES[tf_support.PYTHON]


@pytest.mark.requires_tf
def test_install_warns_on_an_unproven_tensorflow(tpu8, monkeypatch):
    from tpu_compat import routing  # pylint: disable=import-outside-toplevel
    del tpu8
    monkeypatch.setattr(tf_support, "_warned_versions", set())
    monkeypatch.setattr(tf_support, "PROVEN_TF_RANGE", ("2.10", "2.11"))
    with pytest.warns(tf_support.UntestedTensorFlowWarning, match="tested with TensorFlow 2.10 to 2.11"):
        routing.install()
    routing.uninstall()
