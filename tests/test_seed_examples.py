"""The seed spec's code examples (tests/seeds/*.py) run unchanged under `tpu-compat run`.

Every script in tests/seeds/ is one code example from /work/shared/seeds/
(its docstring names the seed file and section), completed only with the
imports and data definitions the fragment leaves out. Each one runs as
``python -m tpu_compat run --replicas N SCRIPT`` in a fresh process (the
emulated TPU's device layout is fixed per process), and its ``KEY: number``
lines are checked against what the example implies.

Per-script expectations that belong with the example live in the script as
module-level constants, read here by regex:

* ``MIN_CORES = K``: the example's DeviceAssignment needs K cores. With fewer
  emulated cores the run must fail with TensorFlow's own DeviceAssignment
  ``ValueError`` (exit code 1, raised in tensorflow/python/tpu/
  device_assignment.py, no tpu_compat frame in the traceback).
* ``EXPECTED_ERROR = r"..."``: the example cannot succeed as written, on real
  TensorFlow either (a bug in the documented example); the run must fail with
  exit code 1 and TensorFlow's error, matched by this regex in stderr.
  ``EXPECTED_FAILURE`` below does the same for one replica count only.

Replica counts: 1 and 8 for the simple examples, 1, 2 and 8 for the training
loops and the 2-core device-assignment boundary, to keep the file at about
40 subprocesses.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parent.parent
SEEDS_DIR = Path(__file__).resolve().parent / "seeds"
TIMEOUT_SECONDS = 300

ALL_COUNTS = (1, 2, 8)
SIMPLE_COUNTS = (1, 8)

# Training loops, and the example whose device assignment needs exactly 2
# cores, run at every replica count; the rest at 1 and 8.
FULL_MATRIX = {
    "s002_tf115_distribute_datasets_from_function",
    "s005_custom_training_loop",
    "s006_model_parallel_assign_to_logical_device",
    "s007_assign_to_logical_device",
}

# TensorFlow's own messages from DeviceAssignment.build
# (tensorflow/python/tpu/device_assignment.py).
DEVICE_ASSIGNMENT_ERROR = re.compile(
    r"^ValueError: (computation footprint \[[\d ]+\] does not fit in TPU "
    r"topology shape \[[\d ]+\]|requested \d+ replicas but only \d+ replicas "
    r"with shape \[[\d ]+\] and computation_stride \[[\d ]+\] fit in a TPU "
    r"mesh of shape \[[\d ]+\])$", re.MULTILINE)


class SameAs:
    """Expect a printed number equal to another printed number."""

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"SameAs({self.key!r})"


def _mirrored_all_cores(**numbers):
    # tf.distribute.MirroredStrategy() takes every local device. Under
    # `tpu-compat run --replicas N` the host CPU is split into the N emulated
    # cores, so a fallback MirroredStrategy has N replicas, like the TPU it
    # stands in for (`python SCRIPT` on this GPU-less machine gives 1, which
    # is what the doc's REPL outputs show; those are checked at N == 1).
    return lambda n: dict(replicas=n, **{
        key: value(n) if callable(value) else value for key, value in numbers.items()})


# script stem -> replicas -> {KEY: expected number}
EXPECTED = {
    "s001_tf115_distribute_dataset_run_v2":
        _mirrored_all_cores(records=8, value_sum=36.0),
    "s002_tf115_distribute_datasets_from_function": lambda n: dict(
        replicas=n, steps=3, per_replica_batch=8 // n,
        step_sum_min=8.0, step_sum_max=8.0),
    "s003_tf115_make_numpy_dataset": lambda n: dict(
        replicas=n, dataset_elements=10, value_sum=10.0),
    "s004_tf115_documented_signatures": lambda n: dict(
        replicas=n, extended_is_strategy_extended=1, local_results_per_step=n,
        reduce_axis0_sum=240.0, reduce_axis_none_sum=240.0,
        variable_total=240.0, replica_id_sum=n * (n - 1) // 2,
        from_function_sum=16.0),
    "s005_custom_training_loop": lambda n: dict(
        replicas=n, optimizer_iterations=1, weights_finite=1),
    "s006_model_parallel_assign_to_logical_device": lambda n: dict(
        replicas=1, num_replicas=1, num_cores_per_replica=2,
        output_sum=SameAs("expected_output_sum")),
    "s007_assign_to_logical_device": lambda n: dict(
        replicas=4, num_cores_per_replica=2, per_replica_rows=2,
        result_sum=56.0),
    "s008_replicate_to_logical_devices": lambda n: {},  # EXPECTED_ERROR
    "s009_split_to_logical_devices": lambda n: dict(
        replicas=1, num_cores_per_replica=8, result_sum=6.0),
    "s010_distribute_datasets_from_function_mirrored":
        _mirrored_all_cores(steps=3, step_sum_min=8.0, step_sum_max=8.0),
    "s011_values_from_function_constant":
        _mirrored_all_cores(local_result_len=lambda n: n, local_result_0=1.0),
    "s012_values_from_function_replica_id":
        _mirrored_all_cores(local_result_len=lambda n: n, local_result_0=3.0),
    "s013_values_from_function_num_replicas":
        _mirrored_all_cores(local_result_len=lambda n: n, local_result_0=lambda n: n),
    "s014_values_from_function_worker_devices": lambda n: dict(
        replicas=n, worker_devices=n, local_result_len=n, value_sum=float(n),
        values_on_worker_devices=1),
    "s015_make_numpy_dataset_mirrored":
        _mirrored_all_cores(steps=5, value_sum=10.0),
    "s016_run_values_from_function": lambda n: dict(
        replicas=n, local_result_len=n, local_result_min=2 * n,
        local_result_max=2 * n, result_sum=2 * n * n),
    "s017_tf114_make_input_fn_iterator": lambda n: {},  # EXPECTED_ERROR
    "s018_tf114_documented_signatures": lambda n: dict(
        replicas=n, deepcopy_replicas=n, config_cpu_devices=n,
        initialize_ops=1, step_1_sum=56.0, step_2_sum=184.0,
        input_fn_sum=2.0 * n, replica_id_sum=n * (n - 1) // 2),
    "s019_compat_v1_tpu_strategy_constructor": lambda n: dict(
        replicas=n, has_cluster_resolver=1, extended_is_strategy_extended=1,
        steps_per_run=1, extended_steps_per_run=1),
}

# The doc's REPL output lines, as TF 2.21 prints them (regexes on stdout).
REPL_OUTPUT = {
    "s011_values_from_function_constant":
        r"^\(<tf\.Tensor: shape=\(\), dtype=float32, numpy=1\.0>,\)$",
    # The doc shows (3.0,); NumPy 2 prints the same value as np.float64(3.0).
    "s012_values_from_function_replica_id": r"^\((np\.float64\()?3\.0\)?,\)$",
    "s013_values_from_function_num_replicas": r"^\(1,\)$",
    # The doc shows <TensorSliceDataset shapes: (), types: tf.float32>.
    "s015_make_numpy_dataset_mirrored":
        r"^<_?TensorSliceDataset .*shape=\(\), dtype=tf\.float32.*>$",
}

# (script, replicas) -> the clear error an example must fail with because
# the example itself cannot work with that many replicas (on any TPU).
EXPECTED_FAILURE = {
    # An unbatched dataset cannot be split across replicas; TF 1.x said so,
    # TF 2.21 raises an opaque IndexError, tpu_compat restores the message.
    ("s001_tf115_distribute_dataset_run_v2", 8):
        r"ValueError: experimental_distribute_dataset: the dataset is not batched, "
        r"so it cannot be split across 8 replicas",
    ("s003_tf115_make_numpy_dataset", 8):
        r"ValueError: experimental_distribute_dataset: the dataset is not batched, "
        r"so it cannot be split across 8 replicas",
    # value_fn indexes a 3-element array by replica id: written for <= 3 replicas.
    ("s012_values_from_function_replica_id", 8):
        r"IndexError: index 3 is out of bounds for axis 0 with size 3",
}

# Known failures under tpu-compat run (not in the completion of the
# fragment); strict, so a fix shows up as XPASS.
XFAIL = {}


def _seed_scripts():
    return sorted(SEEDS_DIR.glob("s[0-9][0-9][0-9]_*.py"))


def _module_constant(source, name):
    """The value of a module-level ``NAME = ...`` int or (raw) string literal."""
    match = re.search(
        rf"""^{name}\s*=\s*(?:(\d+)|r?(["'])(.*?)\2)\s*(?:#.*)?$""", source,
        re.MULTILINE)
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else match.group(3)


def _cases():
    cases = []
    for script in _seed_scripts():
        counts = ALL_COUNTS if script.stem in FULL_MATRIX else SIMPLE_COUNTS
        for replicas in counts:
            marks = ()
            reason = XFAIL.get((script.stem, replicas))
            if reason is not None:
                marks = (pytest.mark.xfail(strict=True, reason=reason),)
            cases.append(pytest.param(script, replicas, marks=marks,
                                      id=f"{script.stem}-replicas{replicas}"))
    return cases


def _env():
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # --replicas decides; nothing may point the backend at a real TPU.
    for name in ("TPU_COMPAT_NUM_REPLICAS", "TPU_COMPAT_BACKEND", "TPU_NAME",
                 "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG"):
        env.pop(name, None)
    return env


def _run(script, replicas, cwd):
    return subprocess.run(
        [sys.executable, "-m", "tpu_compat", "run", "--replicas", str(replicas),
         str(script)],
        capture_output=True, text=True, env=_env(), cwd=str(cwd),
        timeout=TIMEOUT_SECONDS)


def _numbers(stdout):
    """The ``KEY: number`` lines of a run."""
    numbers = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"([A-Za-z_]\w*): (-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)",
                             line.strip())
        if match:
            numbers[match.group(1)] = float(match.group(2))
    return numbers


def _traceback_files(stderr):
    return re.findall(r'^\s*File "([^"]+)", line \d+', stderr, re.MULTILINE)


def _describe(result):
    return (f"exit code {result.returncode}\n--- stdout ---\n"
            f"{result.stdout[-3000:]}\n--- stderr (tail) ---\n"
            f"{result.stderr[-6000:]}")


def test_every_seed_script_has_expectations():
    stems = {script.stem for script in _seed_scripts()}
    assert stems, f"no seed scripts in {SEEDS_DIR}"
    assert stems == set(EXPECTED), (
        f"without expectations: {sorted(stems - set(EXPECTED))}; "
        f"expectations without a script: {sorted(set(EXPECTED) - stems)}")
    for script in _seed_scripts():
        source = script.read_text()
        assert source.startswith('"""Seed 00'), (
            f"{script.name}: the docstring must name the seed file")
        assert re.search(r"^print\(\"[a-z_0-9]+: %", source, re.MULTILINE), (
            f"{script.name}: prints no KEY: number line")


@pytest.mark.requires_tf
@pytest.mark.parametrize("script,replicas", _cases())
def test_seed_example(script, replicas, tmp_path):
    source = script.read_text()
    min_cores = _module_constant(source, "MIN_CORES")
    expected_error = _module_constant(source, "EXPECTED_ERROR")

    result = _run(script, replicas, tmp_path)

    if min_cores is not None and replicas < min_cores:
        # Too few cores for the example's DeviceAssignment: TensorFlow's own,
        # clear ValueError, not a crash inside tpu_compat.
        assert result.returncode == 1, _describe(result)
        assert DEVICE_ASSIGNMENT_ERROR.search(result.stderr), _describe(result)
        files = _traceback_files(result.stderr)
        assert files and files[-1].endswith(
            os.path.join("tensorflow", "python", "tpu", "device_assignment.py")
        ), _describe(result)
        assert not [f for f in files if f"{os.sep}tpu_compat{os.sep}" in f], (
            _describe(result))
        return

    expected_error = EXPECTED_FAILURE.get((script.stem, replicas), expected_error)
    if expected_error is not None:
        # The documented example is wrong; it must fail as TensorFlow does.
        assert result.returncode == 1, _describe(result)
        assert re.search(expected_error, result.stderr, re.MULTILINE), (
            _describe(result))
        return

    assert result.returncode == 0, _describe(result)
    numbers = _numbers(result.stdout)
    for key, want in EXPECTED[script.stem](replicas).items():
        assert key in numbers, f"{key!r} not printed\n{_describe(result)}"
        if isinstance(want, SameAs):
            assert want.key in numbers, _describe(result)
            want_value = numbers[want.key]
        else:
            want_value = want
        assert numbers[key] == pytest.approx(want_value, rel=1e-6, abs=1e-6), (
            f"{key}: got {numbers[key]}, want {want}\n{_describe(result)}")
    repl = REPL_OUTPUT.get(script.stem)
    if repl is not None and replicas == 1:
        assert re.search(repl, result.stdout, re.MULTILINE), _describe(result)
