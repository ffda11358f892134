"""Shared test machinery.

The emulated TPU's device layout is fixed once per process, so:

* tests that need TensorFlow *in process* get the 8-core emulated TPU that
  this conftest configures before TensorFlow initializes (``tpu8`` fixture);
* tests that need 1 or 2 replicas, graph mode (which poisons a process) or the
  command line run a script in a subprocess (``run_cli`` / ``run_scenario``).
"""

import ast
import atexit
import gc
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import pytest

from tpu_compat import _process, tf_support

import fork_server
import iterator_lifetimes
import module_order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(REPO_ROOT, "tests", "scenarios")
EXAMPLES = os.path.join(REPO_ROOT, "examples")

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# What `tpu-compat run` exports before TensorFlow's import (tf-keras, oneDNN
# off), before anything here imports it: the in-process tests (tpu8), the fork
# server and every fresh child then compute with the Keras and the kernels a
# user's `tpu-compat run` gets (test_fork_server.py compares them).
os.environ.update(_process.tensorflow_environment(os.environ))
# In-process TensorFlow tests use the default 8-core emulated TPU.
os.environ.setdefault("TPU_COMPAT_NUM_REPLICAS", "8")
for _var in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG",
             "TPU_COMPAT_BACKEND", "TPU_COMPAT_WARNINGS"):
    os.environ.pop(_var, None)

# A shell script that starts the suite with `&` (no job control) starts it with
# SIGINT ignored, and every program a test starts inherits that: a run then
# never sees the Ctrl-C the interrupt tests send (test_pod_faults.py) and
# `_InterruptWatch` rightly leaves an ignored SIGINT alone (test_pod_cli.py).
# Python installs its KeyboardInterrupt handler only where SIGINT starts at its
# default, so give the suite's processes the disposition a terminal gives them.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# -- requires_tf: the TF-free lane ------------------------------------------------
#
# `scan`, `upgrade` and `import tpu_compat` need no TensorFlow, and CI proves it
# by running the tests marked `tf_free` (what a missing TensorFlow can break) in
# a venv made with `pip install -e '.[test]'` alone.
# Tests that run TensorFlow (in process, or through `tpu-compat run` and the
# other commands that check for it) carry the `requires_tf` marker; without
# TensorFlow they are skipped with this reason instead of failing. find_spec
# looks TensorFlow up without importing it, so collection stays TF-free.
TF_INSTALLED = tf_support.tensorflow_importable()
NO_TF_REASON = ("requires_tf: TensorFlow is not installed in this environment "
                "(pip install -e '.[tensorflow,keras2,test]' runs these tests too)")


def _module_requires_tf(path):
    """Whether the module's own ``pytestmark = ...`` names ``requires_tf``.

    Read from the source, not by importing it: such a module usually imports
    TensorFlow (or NumPy, which comes with it) at its top.
    """
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in tree.body:
        if (isinstance(node, ast.Assign)
                and any(isinstance(target, ast.Name) and target.id == "pytestmark"
                        for target in node.targets)):
            return any(isinstance(part, ast.Attribute) and part.attr == "requires_tf"
                       for part in ast.walk(node.value))
    return False


class _ModuleNeedingTF(pytest.Module):
    """A test module marked ``requires_tf`` as a whole, where TF is missing: one skip."""

    def collect(self):
        raise pytest.skip.Exception(NO_TF_REASON, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    if TF_INSTALLED or not _module_requires_tf(module_path):
        return None  # pytest's own Module
    return _ModuleNeedingTF.from_parent(parent, path=module_path)


def pytest_collection_modifyitems(items):
    for item in items:
        if _declared_slow(item):
            item.add_marker(pytest.mark.slow)
    module_order.costliest_modules_first(items, module_order.load_seconds())
    if TF_INSTALLED:
        return
    skip = pytest.mark.skip(reason=NO_TF_REASON)
    for item in items:
        # A test that asks for the in-process emulated TPU needs TensorFlow
        # whether or not it says so.
        if (item.get_closest_marker("requires_tf") is not None
                or "tpu8" in getattr(item, "fixturenames", ())):
            item.add_marker(skip)


# -- slow, and whole_program: what CI's time goes to, declared by each test ------
#
# CI (.ci/run, README's test command) runs `-m "not slow"`; scripts/slow_tests.sh
# runs the rest before a release. A test declares its own cost where it is
# written, and says there which cheaper test keeps its claim in CI:
#
# * ``@pytest.mark.slow`` (or a ``pytest.param(..., marks=pytest.mark.slow)``)
#   for a test, or a case of one, that CI leaves out;
# * ``@pytest.mark.whole_program(ci_replicas=8)`` for a test that runs a whole
#   program in subprocesses once per replica count (its ``replicas``
#   parameter): CI runs the counts named (an int, a tuple, or ``()`` for none),
#   the other counts are slow. Adding a replica count to such a test adds
#   nothing to CI's time; a module fixture builds its runs with lazy_runs, one
#   run per program and count that a selected test asks for.
WHOLE_PROGRAM = "whole_program"


def _ci_replicas(marker):
    chosen = marker.kwargs.get("ci_replicas", 8)
    return (chosen,) if isinstance(chosen, int) else tuple(chosen)


def _declared_slow(item):
    """Whether ``item``'s whole_program marker leaves its case out of CI."""
    marker = item.get_closest_marker(WHOLE_PROGRAM)
    if marker is None:
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "replicas" not in params:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{WHOLE_PROGRAM} needs a "
                                f"'replicas' parameter to choose CI's runs by")
    return params["replicas"] not in _ci_replicas(marker)


class lazy_runs(dict):  # pylint: disable=invalid-name
    """A module fixture's runs by key (a replica count), each made when a test
    first asks for it, so the tests deselected as slow start no process."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, key):
        value = self[key] = self._make(key)
        return value


def subprocess_env(**overrides):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("TPU_COMPAT_NUM_REPLICAS", None)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


# -- the fork server, and fresh_process: the children that must not be forked --
#
# Every child that imports TensorFlow is forked from a server that imported it
# once (tests/fork_server.py says what a child gets, and which requests go
# fresh): the server's socket is exported to os.environ, so the children of
# children (a forked `tpu-compat run`'s pod workers, say) find it too, and
# run_cli forks `tpu-compat run` and matrix through it. Tests marked
# fresh_process start every process afresh: the claims about how a process
# starts. TPU_COMPAT_TEST_FORK_SERVER=0 turns the server off.
_fork_server = None


def _start_fork_server():
    global _fork_server  # pylint: disable=global-statement
    if _fork_server is None and TF_INSTALLED and fork_server.enabled():
        _fork_server = fork_server.ForkServer(fork_server.server_environment(subprocess_env()))
        atexit.register(_fork_server.close)
        os.environ[fork_server.SOCKET_VAR] = _fork_server.path


@pytest.fixture(scope="session", autouse=True)
def _fork_server_started():
    """The server starts before any module fixture of the first module a worker
    runs (a session fixture is set up before module fixtures), so those fork
    too; and only in a process that runs tests (not xdist's controller)."""
    _start_fork_server()


@pytest.fixture(autouse=True)
def _fork_server_or_fresh_process(request, _fork_server_started):
    """Children of this test are forked by the server, unless it is fresh_process."""
    del _fork_server_started
    if request.node.get_closest_marker("fresh_process") is None:
        yield
        return
    server = os.environ.pop(fork_server.SOCKET_VAR, None)
    try:
        yield
    finally:
        if server is not None:
            os.environ[fork_server.SOCKET_VAR] = server


def run_cli(*args, env=None, cwd=None, timeout=600):
    """Runs ``python -m tpu_compat ARGS``; returns the CompletedProcess.

    ``run`` and ``matrix`` are forked by the fork server where it
    will (``fork_server.forkable``); their children, wherever they are.
    """
    env = subprocess_env(**(env or {}))
    cwd = cwd or REPO_ROOT
    command = [sys.executable, "-m", "tpu_compat", *args]
    import_env = fork_server.import_environment(args, env)
    if import_env is None or fork_server.SOCKET_VAR not in env:
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout)
    # subprocess.run's own steps, with the child forked.
    with _process.popen(command, import_env=import_env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, env=env, cwd=cwd) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_scenario(name, replicas, *args, env=None, tf1=False):
    """Runs tests/scenarios/NAME under ``tpu-compat run --replicas N``."""
    flags = ["run", "--replicas", str(replicas)] + (["--tf1"] if tf1 else [])
    return run_cli(*flags, os.path.join(SCENARIOS, name), *args, env=env)


def parse_numbers(stdout):
    """``KEY: number`` lines of a run, as a dict of floats."""
    numbers = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        try:
            numbers[key.strip()] = float(value)
        except ValueError:
            continue
    return numbers


def tpu_and_one_device_numbers(program, model_dirs, replicas=8, flags=()):
    """The ``KEY: number`` lines of a TPUEstimator scenario (``--use_tpu``, ``--model_dir``)
    run on the emulated TPU and, without ``--use_tpu``, on one device: ``(tpu, cpu)``.
    ``flags``: more of the program's flags, for both runs (its core count)."""
    env = {"TPU_COMPAT_WARNINGS": "ignore"}
    runs = {}
    for mode, mode_flags in (("tpu", ["--use_tpu"]), ("cpu", [])):
        runs[mode] = parse_numbers(check_ok(run_scenario(
            program, replicas, *mode_flags, *flags, "--model_dir", str(model_dirs / mode),
            env=env, tf1=True)).stdout)
    return runs["tpu"], runs["cpu"]


def warned_source_lines(stderr, scenario, rules=r"TPC\d+"):
    """``{rule: [stripped source line, ...]}`` of the legacy-API warnings a run of
    tests/scenarios/SCENARIO printed at its own lines, for rules matching ``rules``."""
    with open(os.path.join(SCENARIOS, scenario), encoding="utf-8") as f:
        source = f.read().splitlines()
    pattern = re.compile(rf".*{re.escape(scenario)}:(\d+): TPUCompatDeprecationWarning: "
                         rf".*\[({rules})\]$")
    warned = {}
    for line in stderr.splitlines():
        match = pattern.match(line)
        if match:
            warned.setdefault(match.group(2), []).append(source[int(match.group(1)) - 1].strip())
    return warned


def check_ok(result):
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout:\n{result.stdout[-3000:]}\n"
        f"stderr:\n{result.stderr[-5000:]}")
    return result


def assert_one_error_line(result, message):
    """tpu_compat's own error: exit code 2 and one line (TensorFlow's C++ log aside)."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert [l for l in lines if "tpu-compat" in l] == [lines[-1]], result.stderr
    assert lines[-1].startswith("tpu-compat: error: ") and message in lines[-1], lines[-1]


# Eager iterators a test makes, so that the ones a reference cycle keeps die
# at that test's end, young, not in a later test's garbage collection, which
# would wait up to a minute for their autotune thread (tests/iterator_lifetimes.py).
_iterators = iterator_lifetimes.WATCH


@pytest.fixture(scope="session")
def tpu8():
    """The in-process backend: an 8-core emulated TPU (routing not installed)."""
    from tpu_compat.runtime import backend  # pylint: disable=import-outside-toplevel
    chosen = backend.get_backend()
    assert chosen.num_replicas == 8 and chosen.kind == "cpu"
    # Only a test with tpu8 can make an eager iterator in process (one without
    # fails in _tensorflow_devices_left_to_tpu8 below).
    _iterators.hook()
    return chosen


gc.callbacks.append(iterator_lifetimes.LONG_COLLECTIONS)
LONG_COLLECTION_SECONDS = 10.0


@pytest.fixture(autouse=True)
def _eager_iterators_die_young():
    """Collects garbage after a test that leaves an eager iterator alive (only
    then), and warns, naming the test, of a collection that took long in it."""
    iterator_lifetimes.LONG_COLLECTIONS.take()
    yield
    _iterators.release()
    wall, cpu = iterator_lifetimes.LONG_COLLECTIONS.take()
    if wall > LONG_COLLECTION_SECONDS:
        warnings.warn(pytest.PytestWarning(
            f"a garbage collection took {wall:.0f} s ({cpu:.1f} s of CPU) in this "
            f"test: if not a loaded machine, probably an eager tf.data iterator, "
            f"left in a reference cycle, waiting for its autotune thread "
            f"(tests/iterator_lifetimes.py)"))


@pytest.fixture(autouse=True)
def _tensorflow_devices_left_to_tpu8(request):
    """Fails the test that initializes TensorFlow's devices in process without ``tpu8``.

    The layout is fixed at that moment, so such a test would leave its worker
    with one CPU device and every later ``tpu8`` test there would error at
    setup, far from the cause. This names the cause instead.
    """
    yield
    if "tpu8" in request.fixturenames or "tensorflow" not in sys.modules:
        return
    from tensorflow.python.eager import context  # pylint: disable=import-outside-toplevel
    if not context.context()._initialized:  # pylint: disable=protected-access
        return
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    found = len(tf.config.list_logical_devices("CPU"))
    if found != 8:
        pytest.fail(f"{request.node.nodeid} initialized TensorFlow's devices in this "
                    f"process with {found} CPU device(s) before the tpu8 fixture "
                    f"configured 8: use the tpu8 fixture, or run the code in a "
                    f"subprocess", pytrace=False)


def process_gone(pid, within=10.0):
    """Whether process ``pid`` has ended (a zombie counts) within ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False
