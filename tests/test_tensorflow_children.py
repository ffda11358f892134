"""Children that import TensorFlow start in what `tpu-compat run` exports first.

tpu_compat._process.tensorflow_environment is computed from the settings rows
`run` exports before TensorFlow's import (tf-keras, oneDNN off); the pod's
workers, regress/verify's script processes and the benchmark programs start
through it. None of this imports TensorFlow: the children here print their
environment and exit. tests/test_fork_server.py checks what TensorFlow itself
makes of it (oneDNN's state, Keras) in a forked, a fresh and the suite's process.
"""

import json
import os
import sys

import pytest

from tpu_compat import _process, runner, settings
from tpu_compat.regress import script_process

# Without tf-keras (CI's TF-free lane) the environment differs: these run there too.
pytestmark = pytest.mark.tf_free

PRINT_ENVIRONMENT = "import json, os; print(json.dumps(dict(os.environ)))"


def _exported_by_run_before_tensorflow(environ):
    """What `tpu-compat run` sets of TensorFlow's own variables in ``environ``."""
    exported = dict(environ)
    runner.prepare_environment(environ=exported)
    return {name: value for name, value in exported.items()
            if name.startswith("TF_") and environ.get(name) != value}


def _runs_choices(env):
    # TF_USE_LEGACY_KERAS=1 only where tf-keras is installed (not in CI's TF-free lane).
    return env[settings.ONEDNN_VAR], env.get(settings.LEGACY_KERAS_VAR)


def test_the_environment_is_what_run_exports_before_tensorflow():
    rows = _process.tensorflow_import_rows()
    assert [row.variable for row in rows] == [settings.LEGACY_KERAS_VAR, settings.ONEDNN_VAR]
    env = _process.tensorflow_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", **_exported_by_run_before_tensorflow({"PATH": "/bin"})}
    assert env[settings.ONEDNN_VAR] == "0"
    # The user's choice stands, as it does for run; the caller's mapping is not changed.
    chosen = {settings.ONEDNN_VAR: "1", settings.LEGACY_KERAS_VAR: "0"}
    assert _process.tensorflow_environment(chosen) == chosen
    assert _process.tensorflow_environment(chosen) is not chosen


def test_a_tensorflow_child_starts_in_it(tmp_path):
    env = {"PATH": os.environ.get("PATH", "/bin")}
    finished = _process.run_tensorflow_child([sys.executable, "-c", PRINT_ENVIRONMENT],
                                             60, env=env)
    assert finished.returncode == 0, finished.stderr
    seen = json.loads(finished.stdout)
    assert _runs_choices(seen) == _runs_choices(_process.tensorflow_environment({}))
    process = _process.start_tensorflow_child(
        [sys.executable, "-c", PRINT_ENVIRONMENT], env=env, stdout=open(
            tmp_path / "out", "w", encoding="utf-8"))
    assert process.wait(timeout=60) == 0
    seen = json.loads((tmp_path / "out").read_text(encoding="utf-8"))
    assert _runs_choices(seen) == _runs_choices(_process.tensorflow_environment({}))


def test_regress_script_processes_start_in_it(tmp_path, monkeypatch):
    # Whichever command runs the script (regress and verify: `tpu-compat run`;
    # here `python SCRIPT`, which imports nothing), its process starts in it.
    monkeypatch.delenv(settings.ONEDNN_VAR, raising=False)
    script = tmp_path / "probe.py"
    script.write_text(PRINT_ENVIRONMENT + "\n", encoding="utf-8")
    result = script_process.run(script_process.Launch(str(script), 8, 60),
                                command=script_process.python_command)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[settings.ONEDNN_VAR] == "0"
