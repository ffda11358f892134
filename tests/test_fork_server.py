"""The suite's fork server gives a `tpu-compat run` what a fresh process gives it.

tests/fork_server.py forks `tpu-compat run` from a process that has imported
TensorFlow; this compares such a run with a fresh one, field by field, so that
a difference shows here rather than as a puzzling failure elsewhere. That
includes what TensorFlow fixed at its import (oneDNN's kernels on or off, the
Keras ``tf.keras`` is): a forked child, a fresh `tpu-compat run` and the suite's
own process (the in-process ``tpu8`` tests) compute with the same kernels.
"""

import json
import subprocess
import sys

import pytest

import conftest
import fork_server

pytestmark = pytest.mark.requires_tf

_PROBE = """\
import importlib, json, os, sys
import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.python.util import _pywrap_util_port
print("RESULT " + json.dumps({
    "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "cwd": os.getcwd(),
    "path": sys.path, "stdin": sys.stdin.read(), "name": __name__,
    "env": {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    "tf_keras": tf.keras.Model is tf_keras.Model,
    "devices": [d.name for d in tf.config.list_logical_devices()],
    # Fixed when TensorFlow was imported (port.cc caches TF_ENABLE_ONEDNN_OPTS).
    "onednn": _pywrap_util_port.IsMklEnabled(),
    "keras": [tf.keras.__name__,
              importlib.import_module(tf.keras.__name__.partition(".")[0]).__version__],
    "draw": float(np.random.uniform()),
}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


def _result(completed):
    line = next(l for l in completed.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def server():
    """A server of this module's own, so that its tests see its runs only."""
    started = fork_server.ForkServer(
        fork_server.server_environment(conftest.subprocess_env()))
    yield started
    started.close()


def test_a_forked_run_sees_what_a_fresh_process_sees(server, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    args = ("run", "--replicas", "2", str(probe), "3")
    env = conftest.subprocess_env()
    forked = [server.try_run(args, env, str(tmp_path), 300) for _ in range(2)]
    assert None not in forked, "the runs were not forked"
    fresh = _fresh(args, tmp_path)
    for run in forked + [fresh]:
        assert run.returncode == 3, run.stderr
        assert run.stderr.rstrip().endswith("to stderr")
    seen = [_result(run) for run in forked + [fresh]]
    draws = [view.pop("draw") for view in seen]
    assert seen[0] == seen[1] == seen[2]
    assert seen[0]["tf_keras"] and seen[0]["keras"][1].startswith("2.")
    assert seen[0]["devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert seen[0]["onednn"] is False  # `tpu-compat run` turns oneDNN off
    # This process, where the tpu8 tests run, imported the same TensorFlow.
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.python.util import _pywrap_util_port  # pylint: disable=import-outside-toplevel
    assert _pywrap_util_port.IsMklEnabled() is seen[0]["onednn"]
    assert tf.keras.__name__ == seen[0]["keras"][0]
    assert len(set(draws)) == 3, "NumPy's generator must be seeded afresh in each child"


def _fresh(args, tmp_path):
    return subprocess.run([sys.executable, "-m", "tpu_compat", *args], capture_output=True,
                          text=True, env=conftest.subprocess_env(), cwd=str(tmp_path),
                          timeout=300)


def test_a_forked_run_past_its_timeout_is_killed_as_subprocess_run_kills(server, tmp_path):
    probe = tmp_path / "sleeper.py"
    probe.write_text("import time\ntime.sleep(600)\n")
    quick = tmp_path / "quick.py"
    quick.write_text("print('quick')\n")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        server.try_run(("run", "--replicas", "1", str(probe)), conftest.subprocess_env(),
                       str(tmp_path), 3)
    assert raised.value.timeout == 3
    # The server reaped the killed child and is still of use.
    again = server.try_run(("run", "--replicas", "1", str(quick)),
                           conftest.subprocess_env(), str(tmp_path), 300)
    assert again is not None and again.stdout == "quick\n", again


@pytest.mark.parametrize("args,overrides,expected", [
    (("run", "x.py"), {}, True),
    (("run", "x.py"), {"TF_CONFIG": "{}", "TPU_COMPAT_NUM_REPLICAS": "2"}, True),
    (("run", "x.py"), {"TF_USE_LEGACY_KERAS": "1"}, True),
    (("run", "x.py"), {"TF_USE_LEGACY_KERAS": "0"}, False),
    (("run", "x.py"), {"TF_ENABLE_ONEDNN_OPTS": "0"}, True),
    (("run", "x.py"), {"TF_ENABLE_ONEDNN_OPTS": "1"}, False),
    (("run", "x.py"), {"TF_CPP_MIN_LOG_LEVEL": "0"}, False),
    (("run", "x.py"), {"PYTHONPATH": "/elsewhere"}, False),
    (("run", "x.py"), {"OMP_NUM_THREADS": "1"}, False),
    (("scan", "x.py"), {}, False),
    (("doctor",), {}, True),
    (("matrix", "--format", "json"), {}, True),
    # doctor sets nothing before TensorFlow's import: Keras 3 there is a fresh process.
    (("doctor",), {"TF_USE_LEGACY_KERAS": None}, False),
    (("verify", "x.py"), {}, False),
])
def test_runs_that_depend_on_how_a_process_starts_go_fresh(args, overrides, expected):
    env = conftest.subprocess_env()
    server_env = fork_server.server_environment(env)
    request = {**env, **overrides}
    request = {name: value for name, value in request.items() if value is not None}
    assert fork_server.forkable(args, request, server_env) is expected


def test_the_server_imports_tensorflow_in_what_the_runner_exports_before_its_import():
    from tpu_compat import runner
    exported = {}
    runner.prepare_environment(environ=exported)
    server_env = fork_server.server_environment({})
    for name in ("TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS"):
        assert server_env[name] == exported[name], name
