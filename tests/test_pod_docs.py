"""docs/pods.md, claim by claim, on one emulated pod run.

The pod is built exactly as the two-machine recipe of docs/pods.md says, on
loopback: two workers started by hand (`python -m tpu_compat.pod.worker`,
what `tpu-compat worker` runs) with TF_CONFIG task type `worker`, and the
program under `tpu-compat run` with TF_CONFIG task type `chief`. The workers
run in another directory than the chief, as on another machine, which shows
which process writes a checkpoint. One pod run (tests/scenarios/pod_docs.py)
prints every fact; each test below checks one sentence of the docs.
"""

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

import conftest
from tpu_compat import _process
from conftest import (SCENARIOS, assert_one_error_line, check_ok, parse_numbers,
                      process_gone, run_cli, subprocess_env)
from test_pod_faults import _LOOPBACK_HEX, _listening_addresses

# A worker imports TensorFlow before it serves: generous, for a loaded 2-core
# machine (a bound on the wait for its "ready" line, not a guessed delay).
READY_SECONDS = 240


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("localhost", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _tf_config(addresses, task_type, index):
    return json.dumps({"cluster": {"worker": addresses},
                       "task": {"type": task_type, "index": index}})


def _start_worker(addresses, index, cwd):
    # In the environment `tpu-compat run --hosts` gives its own workers (the
    # TensorFlow the chief's `tpu-compat run` imports: its kernels), so the
    # suite's fork server forks it (issue 32's CI budget: two fresh workers
    # cost two TensorFlow imports, one after the other). Nothing here is about
    # how a worker process starts; _listening_addresses reads the forked
    # worker's own sockets (its pid is the worker's).
    env = _process.tensorflow_environment(
        subprocess_env(TF_CONFIG=_tf_config(addresses, "worker", index)))
    worker = _process.popen(
        [sys.executable, "-m", "tpu_compat.pod.worker", "--cores", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    ready = []
    reader = threading.Thread(target=lambda: ready.append(worker.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(READY_SECONDS)
    return worker, (ready or [""])[0]


@pytest.fixture(scope="module")
def pod_run(tmp_path_factory):
    """The scenario's numbers, its stdout, and the workers' pids."""
    # A module fixture is set up before the autouse one that starts the suite's
    # fork server: started here, so the workers and the chief are forked even
    # when this module is the first a pytest process runs.
    conftest._start_fork_server()  # pylint: disable=protected-access
    workers_dir = tmp_path_factory.mktemp("workers_machine")
    chief_dir = tmp_path_factory.mktemp("chief_machine")
    model_dir = tmp_path_factory.mktemp("shared") / "model_dir"
    addresses = [f"localhost:{port}" for port in _free_ports(2)]
    workers = []
    try:
        for index in range(2):
            worker, line = _start_worker(addresses, index, workers_dir)
            workers.append(worker)
            assert f"tpu-compat worker {index} ready on {addresses[index]}" in line, (
                line, worker.poll())
        listening = {worker.pid: _listening_addresses(worker.pid) for worker in workers}
        result = check_ok(run_cli(
            "run", os.path.join(SCENARIOS, "pod_docs.py"), str(model_dir),
            env={"TF_CONFIG": _tf_config(addresses, "chief", 0),
                 "TPU_COMPAT_WARNINGS": "ignore"},
            cwd=str(chief_dir), timeout=300))
        alive_after_chief = [worker.poll() is None for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
            worker.communicate(timeout=30)
    numbers = parse_numbers(result.stdout)
    assert numbers.get("DONE") == 1.0, result.stdout
    numbers["WORKERS_ALIVE_AFTER_CHIEF"] = float(all(alive_after_chief))
    numbers["workers' listening sockets"] = listening
    return numbers, result.stdout, [worker.pid for worker in workers]


# -- "How to run": the two-machine recipe, on loopback ----------------------------

@pytest.mark.requires_tf
@pytest.mark.slow
def test_chief_joins_the_workers_tf_config_names(pod_run):
    numbers, _, _ = pod_run
    assert numbers["POD_SPAWNED"] == 0.0
    assert numbers["WORKER_ADDRESSES_FROM_TF_CONFIG"] == 1.0


@pytest.mark.requires_tf
def test_workers_of_a_loopback_tf_config_listen_on_loopback_only(pod_run):
    """docs/pods.md, Network exposure: `tpu-compat worker` with a TF_CONFIG whose
    addresses are loopback keeps TensorFlow's server (no authentication) there
    (issue 33: it listened on every interface)."""
    listening = pod_run[0]["workers' listening sockets"]
    assert len(listening) == 2 and all(listening.values()), listening
    assert all(_LOOPBACK_HEX.fullmatch(address)
               for found in listening.values() for address, _ in found), listening


@pytest.mark.requires_tf
def test_workers_started_by_hand_outlive_the_program(pod_run):
    numbers, _, pids = pod_run
    assert numbers["WORKERS_ALIVE_AFTER_CHIEF"] == 1.0
    assert all(process_gone(pid) for pid in pids)  # once stopped, nothing is left


# -- the semantics table ------------------------------------------------------------

@pytest.mark.requires_tf
def test_replica_counts(pod_run):
    numbers, _, _ = pod_run
    assert numbers["NUM_REPLICAS_IN_SYNC"] == 8
    assert (numbers["NUM_HOSTS"], numbers["NUM_REPLICAS_PER_HOST"]) == (2, 4)
    assert (numbers["V1_NUM_HOSTS"], numbers["V1_NUM_REPLICAS_PER_HOST"]) == (2, 4)
    assert numbers["REPLICA_TASKS_IN_HOST_ORDER"] == 1.0


@pytest.mark.requires_tf
def test_resolver_answers_as_a_pod(pod_run):
    numbers, _, _ = pod_run
    assert numbers["CLUSTER_SPEC_WORKERS"] == 2
    assert numbers["MASTER_IS_WORKER0"] == 1.0
    assert numbers["NUM_ACCELERATORS_PER_HOST"] == 4
    assert (numbers["METADATA_NUM_HOSTS"], numbers["METADATA_CORES_PER_HOST"]) == (2, 4)


@pytest.mark.requires_tf
def test_tf1_session_on_the_master_reaches_every_host(pod_run):
    numbers, _, _ = pod_run
    assert numbers["SESSION_RESULT"] == 6.0
    assert numbers["SESSION_SEES_HOST1_CORES"] == 4


@pytest.mark.requires_tf
def test_input_function_runs_once_per_host_on_that_host(pod_run):
    numbers, _, _ = pod_run
    for prefix in ("DFF", "INPUT_FN"):
        assert numbers[f"{prefix}_CALLS"] == 2
        assert numbers[f"{prefix}_CONTEXTS_OK"] == 1.0
        assert numbers[f"{prefix}_REPLICA_READS_OWN_HOST"] == 1.0
    assert numbers["DFF_BUILT_ON_OWN_HOST"] == 1.0


@pytest.mark.requires_tf
def test_make_dataset_iterator_shards_each_global_batch_across_hosts(pod_run):
    numbers, stdout, _ = pod_run
    assert "MDI_SPLIT [[0, 2, 4, 6, 1, 3, 5, 7], [8, 10, 12, 14, 9, 11, 13, 15]]" in stdout
    assert numbers["MDI_SPLIT_AS_ONE_HOST"] == 0.0


@pytest.mark.requires_tf
def test_experimental_distribute_dataset_splits_as_make_dataset_iterator(pod_run):
    _, stdout, _ = pod_run
    assert "EDD_ERROR" not in stdout


@pytest.mark.requires_tf
def test_steps_per_run_loop_is_traced_once(pod_run):
    numbers, _, _ = pod_run
    assert numbers["SPR_TRACED_IN_FIRST_CALL"] == 1.0
    assert numbers["SPR_SECOND_CALL_RUNS_NO_PYTHON"] == 1.0
    assert numbers["SPR_WEIGHT"] == -80.0  # 20 steps x SUM over 8 replicas x 1 x 0.5


@pytest.mark.requires_tf
def test_keras_steps_per_execution_loop_is_traced_once(pod_run):
    numbers, _, _ = pod_run
    assert numbers["KERAS_SECOND_FIT_RUNS_NO_PYTHON"] == 1.0
    assert numbers["KERAS_KERNEL_MAX_DIFF"] == 0.0


@pytest.mark.requires_tf
def test_variables_identical_on_every_host(pod_run):
    numbers, _, _ = pod_run
    assert (numbers["VAR_COMPONENTS"], numbers["VAR_HOSTS"]) == (8, 2)
    assert numbers["VAR_MAX_DIFF"] == 0.0


@pytest.mark.requires_tf
def test_reduction_is_to_one_device(pod_run):
    numbers, _, _ = pod_run
    assert numbers["REDUCTION_TO_ONE_DEVICE"] == 1.0
    assert numbers["REDUCE_SUM"] == sum(range(8))


@pytest.mark.requires_tf
def test_checkpoint_written_once_restored_everywhere(pod_run):
    numbers, _, _ = pod_run
    assert numbers["CKPT_INDEX_FILES"] == 1
    assert numbers["CKPT_RESTORED_EVERYWHERE"] == 1.0


@pytest.mark.requires_tf
def test_checkpoint_needs_model_dir_that_worker0_and_the_chief_see(pod_run):
    numbers, _, _ = pod_run
    assert numbers["CKPT_WORKER0_WRITES"] == 1.0
    assert numbers["CKPT_CHIEF_WRITES_TENSORS"] == 0.0  # one host writes the tensors
    assert numbers["CKPT_DATA_SHARDS"] == 1
    assert numbers["CKPT_CHIEF_WRITES_STATE"] == 1.0


@pytest.mark.requires_tf
def test_fidelity_tpu_checks_replica_steps_on_a_pod(pod_run):
    numbers, _, _ = pod_run
    assert numbers["FIDELITY_TPU"] == 1.0
    assert numbers["FIDELITY_CATCHES_ON_POD"] == 1.0


@pytest.mark.requires_tf
def test_summaries_written_once(pod_run):
    numbers, _, _ = pod_run
    assert numbers["SUMMARY_EVENT_FILES"] == 1
    assert (numbers["SUMMARY_VALUES"], numbers["SUMMARY_VALUE"]) == (3, 8.0)


@pytest.mark.requires_tf
def test_tf_device_names_a_host_of_the_pod(pod_run):
    numbers, _, _ = pod_run
    assert numbers["DEVICE_SCOPE_HOST1"] == 1.0


# -- limits -------------------------------------------------------------------------

@pytest.mark.requires_tf
def test_hosts_with_a_real_tpu_backend_is_an_error():
    result = run_cli("run", "--backend", "tpu", os.path.join(SCENARIOS, "pod_docs.py"), "x",
                     env={"TPU_COMPAT_NUM_HOSTS": "2"}, timeout=120)
    assert_one_error_line(result, "TPU_COMPAT_NUM_HOSTS")


def test_replicas_must_be_a_multiple_of_hosts():
    result = run_cli("run", "--replicas", "8", os.path.join(SCENARIOS, "pod_docs.py"), "x",
                     env={"TPU_COMPAT_NUM_HOSTS": "3"}, timeout=120)
    assert_one_error_line(result, "must be a multiple of the number of hosts")
