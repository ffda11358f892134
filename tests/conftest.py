"""Shared test machinery.

The emulated TPU's device layout is fixed once per process, so:

* tests that need TensorFlow *in process* get the 8-core emulated TPU that
  this conftest configures before TensorFlow initializes (``tpu8`` fixture);
* tests that need 1 or 2 replicas, graph mode (which poisons a process) or the
  command line run a script in a subprocess (``run_cli`` / ``run_scenario``).
"""

import ast
import atexit
import fnmatch
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tpu_compat import tf_support

import fork_server

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(REPO_ROOT, "tests", "scenarios")
EXAMPLES = os.path.join(REPO_ROOT, "examples")

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
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
# by running this suite in a venv made with `pip install -e '.[test]'` alone.
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
        if _slow_in_ci(item.nodeid):
            item.add_marker(pytest.mark.slow)
    if TF_INSTALLED:
        return
    skip = pytest.mark.skip(reason=NO_TF_REASON)
    for item in items:
        # A test that asks for the in-process emulated TPU needs TensorFlow
        # whether or not it says so.
        if (item.get_closest_marker("requires_tf") is not None
                or "tpu8" in getattr(item, "fixturenames", ())):
            item.add_marker(skip)


# -- slow: left out of CI for its 20-minute budget -------------------------------
#
# CI (.ci/run, README's test command) runs `-m "not slow"`; scripts/slow_tests.sh
# runs the rest before a release. Besides the tests marked in their modules,
# these are slow because each runs whole programs in subprocesses, and each is
# a wider run of a claim a cheaper test keeps in CI: the other replica counts
# of a whole program whose 8-core run stays (test_parity keeps 1, 2 and 8 for
# the parity rules themselves; module fixtures build their runs with
# lazy_runs, so a deselected count costs nothing), the 2-host parity runs
# (the pod fault, docs and device tests keep a pod in CI), the Keras CNN whose
# empty batches the in-process guard test covers.
SLOW_IN_CI = (
    "tests/test_pod_parity.py::*",
    "tests/test_estimator_pod.py::test_pod_equals_one_host_and_the_cpu",
    "tests/test_era_programs.py::*[[]1[]]",
    "tests/test_era_programs.py::*[[]2[]]",
    "tests/test_empty_replica_batches.py::*[[]8-1[]]",
    "tests/test_empty_replica_batches.py::*[[]8-None[]]",
    "tests/test_empty_replica_batches.py::*[[]2-1[]]",
    "tests/test_empty_replica_batches.py::*[[]1-1[]]",
    "tests/test_contrib_programs.py::*[[]1[]]",
    "tests/test_contrib_programs.py::*[[]2[]]",
    "tests/test_keras_tpu_model.py::*[[]1[]]",
    "tests/test_research_programs.py::*[[]1[]]",
    "tests/test_research_programs.py::*[[]2[]]",
    "tests/test_keras_tpu_model.py::*[[]2[]]",
    "tests/test_infeed_outfeed.py::*[[]1-*",
    "tests/test_infeed_outfeed.py::*[[]2-*",
    "tests/test_keras.py::test_tf115_graph_fit_runs_steps_per_run_steps_per_host_call[[]2[]]",
    # [1] keeps the claim in CI. (This run also showed the session-close
    # stall that runtime/device_input.py removes; test_device_input.py keeps
    # that in CI.)
    "tests/test_keras.py::test_tf115_graph_fit_runs_steps_per_run_steps_per_host_call[[]8[]]",
    # All three counts of the eager eras' Keras programs: test_era_programs'
    # TF 2.x Keras program keeps 8-core Keras parity in CI, and this file's
    # in-process tests the eras' steps_per_run / experimental_steps_per_execution.
    "tests/test_keras.py::test_eager_eras_match_one_device[[]8[]]",
    "tests/test_keras.py::test_eager_eras_match_one_device[[]1[]]",
    "tests/test_keras.py::test_eager_eras_match_one_device[[]2[]]",
    "tests/test_examples.py::test_tf2_example_is_independent_of_the_replica_count[[]2[]]",
    "tests/test_examples.py::test_tf1_example_matches_numpy_full_batch_sgd[[]1[]]",
    "tests/test_examples.py::test_tf1_example_matches_numpy_full_batch_sgd[[]2[]]",
    "tests/test_migrate_upgrade.py::test_upgraded_script_runs_with_legacy_warnings_as_errors_and_same_numbers[[]s0[!0]*",
    "tests/test_migrate_upgrade.py::test_upgraded_script_runs_with_legacy_warnings_as_errors_and_same_numbers[[]tf2*",
    "tests/test_migrate_prefilter.py::test_tf_keras_files_the_tree_check_rejects_have_no_findings",
    "tests/test_backend.py::test_auto_emulates_8_cores_without_contacting_anything[[]grpc*",
    "tests/test_backend.py::test_auto_emulates_8_cores_without_contacting_anything[[]my-old*",
    "tests/test_backend.py::test_asking_for_missing_hardware_is_a_clear_error[[]gpu*",
    "tests/test_pod_faults.py::test_tf_config_two_machine_recipe_on_loopback",
    "tests/test_pod_docs.py::test_chief_joins_the_workers_tf_config_names",
    # The TPUEstimator parity program on 2 cores; 1 and 8 stay in CI, with
    # test_parity's 1, 2 and 8 for the replica rules themselves.
    "tests/test_estimator.py::test_tpu_runs_equal_the_single_device_reference[[]2[]]",
    # Every example against its golden file; test_regress's changed-learning-rate
    # test keeps regress --check against a golden file in CI, and test_examples
    # the examples' numbers.
    "tests/test_regress.py::test_examples_pass_their_golden_files",
    # SIGTERM with a stopped worker: the same shutdown path as ctrl-c, whose
    # case stays in CI.
    "tests/test_pod_faults.py::test_interrupt_with_a_stopped_worker_ends_the_run_and_its_workers[[]sigterm[]]",
    # 1 and 2 hosts of the TF 1.13-1.15 session idiom; test_pod_devices and the
    # pod fault tests keep a pod's sessions in CI.
    "tests/test_pod_session_idiom.py::*",
    # The pod benchmark's smoke run: the heaviest of them (the emulated pod's
    # chief and worker and native MultiWorkerMirroredStrategy's workers, each a
    # TensorFlow process; about 58 s of CPU). The other benchmarks' smoke runs
    # stay in CI, and the pod tests keep the pod itself there.
    "tests/test_benchmarks_smoke.py::test_benchmark_smoke_run_exits_0_with_its_figures[[]pod[]]",
)


def _slow_in_ci(nodeid):
    return any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in SLOW_IN_CI)


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


# -- fresh_process: runs that must not be forked from the fork server ------------
#
# run_cli's `tpu-compat run` children are forked from a process that imported
# TensorFlow once (tests/fork_server.py says what they get, and which requests
# go fresh). Tests marked fresh_process start every run afresh: the claims
# about how a process starts.
_fork_server = None
_fresh_process_test = False


@pytest.fixture(autouse=True)
def _fresh_process_marker(request):
    global _fresh_process_test  # pylint: disable=global-statement
    _fresh_process_test = request.node.get_closest_marker("fresh_process") is not None
    yield
    _fresh_process_test = False


def _forked_run(args, env, cwd, timeout):
    global _fork_server  # pylint: disable=global-statement
    if _fresh_process_test or not TF_INSTALLED or not fork_server.enabled():
        return None
    if _fork_server is None:
        _fork_server = fork_server.ForkServer(fork_server.server_environment(subprocess_env()))
        atexit.register(_fork_server.close)
    return _fork_server.try_run(args, env, cwd, timeout)


def run_cli(*args, env=None, cwd=None, timeout=600):
    """Runs ``python -m tpu_compat ARGS``; returns the CompletedProcess.

    ``run`` is forked from the fork server where it may be (``fork_server.forkable``).
    """
    env = subprocess_env(**(env or {}))
    cwd = cwd or REPO_ROOT
    forked = _forked_run(args, env, cwd, timeout)
    if forked is not None:
        return forked
    return subprocess.run(
        [sys.executable, "-m", "tpu_compat", *args], capture_output=True,
        text=True, env=env, cwd=cwd, timeout=timeout)


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


@pytest.fixture(scope="session")
def tpu8():
    """The in-process backend: an 8-core emulated TPU (routing not installed)."""
    from tpu_compat.runtime import backend  # pylint: disable=import-outside-toplevel
    chosen = backend.get_backend()
    assert chosen.num_replicas == 8 and chosen.kind == "cpu"
    return chosen


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
