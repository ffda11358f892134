"""Backend choice: emulated by default, overridable, never on the network."""

import json
import sys
import textwrap

import pytest

from tpu_compat import _process
from conftest import SCENARIOS, assert_one_error_line, run_cli, subprocess_env

pytestmark = pytest.mark.requires_tf


def _probe(*args, env=None):
    result = run_cli("run", f"{SCENARIOS}/backend_probe.py", *args, env=env)
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


# One name in CI; the others take the same path (slow).
@pytest.mark.parametrize("tpu_argument,worker", [
    ("", "emulated-tpu.invalid:8470"),
    pytest.param("my-old-tpu", "emulated-tpu.invalid:8470", marks=pytest.mark.slow),
    pytest.param("grpc://10.240.1.2:8470", "10.240.1.2:8470", marks=pytest.mark.slow)])
def test_auto_emulates_8_cores_without_contacting_anything(tpu_argument, worker):
    info = _probe(tpu_argument)
    assert info["kind"] == "cpu" and info["replicas"] == 8
    assert info["logical_cpus"] == 8
    assert info["master"] == ""
    assert info["accelerators"] == {"TPU": 8}
    # What a one-host TPU's resolver answers (a TPU node's worker job; its
    # address is the grpc:// one given, as TensorFlow's resolver reports it).
    assert info["cluster_spec"] == {"worker": [worker]}
    assert info["connected_type"] == "TPUClusterResolver"
    assert info["connected_cluster_spec"] == {"worker": [worker]}
    assert (info["job_name"], info["task"], info["get_master"]) == ("worker", ["worker", 0], "")
    assert info["metadata"] == [8, 1, 8, 8]  # cores, hosts, cores per host, devices
    assert info["topology_known"]  # connect() initialized the (emulated) TPU system
    assert info["session_value"] == 6.0
    assert "/job:localhost/" in info["eager_device"]  # nothing connected for real


def test_num_replicas_variable():
    info = _probe(env={"TPU_COMPAT_NUM_REPLICAS": "2"})
    assert (info["replicas"], info["logical_cpus"]) == (2, 2)


def test_forced_cpu_backend_says_requested():
    info = _probe(env={"TPU_COMPAT_BACKEND": "cpu", "TPU_COMPAT_NUM_REPLICAS": "1"})
    assert info["kind"] == "cpu" and info["reason"].startswith("requested;")


@pytest.mark.parametrize("backend,message", [
    ("tpu", "TPU_COMPAT_BACKEND=tpu but no TPU is reachable"),
    pytest.param("gpu", "TPU_COMPAT_BACKEND=gpu but TensorFlow lists no GPU",
                 marks=pytest.mark.slow),  # the tpu case keeps the error's path in CI
])
def test_asking_for_missing_hardware_is_a_clear_error(backend, message):
    result = run_cli("run", f"{SCENARIOS}/backend_probe.py", env={"TPU_COMPAT_BACKEND": backend})
    assert_one_error_line(result, message)


def test_too_late_to_emulate_is_a_clear_error():
    code = textwrap.dedent("""
        import tensorflow as tf
        tf.constant(1.0) + 1.0          # initializes TF's devices: 1 CPU
        import tpu_compat
        try:
            tpu_compat.install(num_replicas=4)
        except RuntimeError as error:
            print(type(error).__name__ + ": " + str(error))
    """)
    # A plain `python -c` (no `tpu-compat run`), forked by the test fork server:
    # its child has TensorFlow imported and no device initialized, as a fresh
    # python has (tests/fork_server.py); the claim is about initialization.
    result = _process.run_tensorflow_child([sys.executable, "-c", code], 600,
                                           env=subprocess_env())
    assert "EmulationTooLateError: cannot emulate a TPU with 4 cores: TensorFlow already " \
           "initialized its devices with 1 logical CPU device(s)" in result.stdout, result.stderr
    assert "call tpu_compat.install() at the top of the program" in result.stdout
    assert "TPU_COMPAT_NUM_REPLICAS=1" in result.stdout


def test_same_layout_after_initialization_is_accepted(tpu8):
    import tpu_compat
    with tpu_compat.install(num_replicas=8) as handle:
        assert handle.backend.num_replicas == 8


def test_changing_layout_in_process_is_refused(tpu8):
    from tpu_compat.runtime import backend
    with pytest.raises(backend.EmulationTooLateError, match="needs a new process"):
        backend.get_backend(num_replicas=2)
