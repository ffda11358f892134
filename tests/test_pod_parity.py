"""Issue 16: a 2-host x 4-core emulated pod equals 1 host x 8 cores and one device.

Three era programs (tests/scenarios/pod_ctl.py: a TF 2.x custom loop with
experimental_distribute_datasets_from_function; pod_tf1.py: TF 1.15
compat.v1 with steps_per_run; pod_keras.py: Keras fit with
experimental_steps_per_execution) each run once on one host and once on a
2-host pod (TPU_COMPAT_NUM_HOSTS=2): six subprocesses, three of them pods.
Every test below reads those runs, so each semantic of the issue is proved
by the same runs that prove the numbers.
"""

import json

import numpy as np
import pytest

from conftest import check_ok, parse_numbers, process_gone, run_scenario

# Slow: The 2-host parity runs: the pod fault, docs and device tests keep a pod in CI.
pytestmark = [pytest.mark.requires_tf, pytest.mark.slow]

REPLICAS = 8
KINDS = ("ctl", "tf1", "keras")
SCENARIOS = {"ctl": "pod_ctl.py", "tf1": "pod_tf1.py", "keras": "pod_keras.py"}
STEPS_PER_HOST_CALL = 4  # each scenario's default steps_per_loop / steps_per_run / steps_per_execution


class _Run:
    def __init__(self, result):
        self.result = check_ok(result)
        self.numbers = parse_numbers(result.stdout)

    def json(self, key):
        prefix = key + " "
        values = [json.loads(line[len(prefix):]) for line in self.result.stdout.splitlines()
                  if line.startswith(prefix)]
        assert values, f"no {key} line in:\n{self.result.stdout[-3000:]}"
        return values if len(values) > 1 else values[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(kind, hosts)``: the scenario's run, made once per module."""
    cache = {}

    def get(kind, hosts):
        if (kind, hosts) not in cache:
            model_dir = tmp_path_factory.mktemp(f"{kind}_{hosts}hosts")
            cache[kind, hosts] = _Run(run_scenario(
                SCENARIOS[kind], REPLICAS, "--model_dir", str(model_dir),
                env={"TPU_COMPAT_NUM_HOSTS": hosts if hosts > 1 else None,
                     "TPU_COMPAT_WARNINGS": "ignore"}))
        return cache[kind, hosts]
    return get


def _assert_close(got, want, what):
    for index, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{what}, tensor {index}")


@pytest.mark.parametrize("kind", KINDS)
def test_two_hosts_equal_one_host_and_one_device(runs, kind):
    one_host, pod = runs(kind, 1).json("RESULT"), runs(kind, 2).json("RESULT")
    assert any(np.any(np.asarray(w) != np.asarray(i))
               for w, i in zip(pod["reference"], pod["initial"])), "training changed nothing"
    _assert_close(pod["weights"], one_host["weights"], "2x4 vs 1x8")
    _assert_close(pod["weights"], pod["reference"], "2x4 vs one device")
    _assert_close(one_host["weights"], one_host["reference"], "1x8 vs one device")
    np.testing.assert_allclose(pod["losses"], one_host["losses"], rtol=1e-5)
    np.testing.assert_allclose(pod["losses"], pod["reference_losses"], rtol=1e-5)


def test_tf115_keras_fit_in_graph_mode_on_a_pod(runs):
    """TF 1.15 Keras: fit (a dataset, NumPy arrays) in the strategy's scope,
    steps_per_run steps per host call."""
    one_host, pod = runs("tf1", 1), runs("tf1", 2)
    for run in (one_host, pod):
        # fit of a dataset, then of NumPy arrays: 12 steps each
        assert run.json("KERAS_STEPS_PER_HOST_CALL") == [STEPS_PER_HOST_CALL] * 6
    got, want = pod.json("RESULT"), one_host.json("RESULT")
    _assert_close(got["keras_weights"], got["keras_reference"], "2x4 vs one device")
    _assert_close(got["keras_weights"], want["keras_weights"], "2x4 vs 1x8")
    initial = dict(zip(("b1", "b2", "w1", "w2"), got["initial"]))  # pod_tf1.NAMES order
    start = [initial[name] for name in ("w1", "b1", "w2", "b2")]    # the Keras layers' order
    assert any(np.any(np.asarray(w) != np.asarray(i))
               for w, i in zip(got["keras_reference"], start)), "fit changed nothing"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hosts", [1, 2])
def test_layout_is_a_pods(runs, kind, hosts):
    numbers = runs(kind, hosts).numbers
    assert numbers["NUM_REPLICAS"] == REPLICAS
    assert numbers["NUM_HOSTS"] == hosts
    assert numbers["REPLICAS_PER_HOST"] == REPLICAS // hosts
    assert numbers["CLUSTER_WORKERS"] == hosts  # cluster_resolver.cluster_spec()'s worker tasks
    assert numbers["CLUSTER_JOBS"] == 1


def test_distribute_dataset_splits_global_batches_as_a_pod(runs):
    """Each replica's slice of each global batch (ids 0..63, batches of 32).

    On one host replica r takes per-replica batch r. On a pod each host has
    its own input pipeline: TPUExtended cuts the global batch into
    per-replica batches and shards them by data over the hosts, so replica j
    of host h takes per-replica batch h + H*j (TF 2.21's own multi-host split
    orders them the same way). Every global batch holds the same examples.
    """
    one_host, pod = runs("ctl", 1).json("SPLIT"), runs("ctl", 2).json("SPLIT")
    hosts, per_host = 2, REPLICAS // 2
    for step, (flat, split) in enumerate(zip(one_host, pod)):
        assert flat == [list(range(32 * step + 4 * r, 32 * step + 4 * r + 4))
                        for r in range(REPLICAS)]
        assert split == [flat[h + hosts * j] for h in range(hosts) for j in range(per_host)]
        assert sorted(sum(split, [])) == list(range(32 * step, 32 * step + 32))
    assert runs("ctl", 2).json("SPLIT_HOSTS") == [[0] * 4 + [1] * 4] * 2


@pytest.mark.parametrize("kind", ["ctl", "tf1"])
@pytest.mark.parametrize("hosts", [1, 2])
def test_input_fn_runs_once_per_host_with_its_input_context(runs, kind, hosts):
    """experimental_distribute_datasets_from_function (TF 2) and
    make_input_fn_iterator (TF 1.15): [num_input_pipelines,
    input_pipeline_id, per-replica batch size, host the dataset lives on]."""
    calls = runs(kind, hosts).json("INPUT_FN_CALLS")
    assert calls == [[hosts, host, 32 // REPLICAS, host] for host in range(hosts)]


@pytest.mark.parametrize("hosts", [1, 2])
def test_dataset_pinned_to_one_host_is_refused_on_a_pod(runs, hosts):
    assert runs("ctl", hosts).numbers["PINNED_DATASET_REFUSED"] == (hosts > 1)


def test_host_device_names_on_a_pod(monkeypatch, tpu8):
    """A pod's `/job:worker/task:h` and `TPU:k` names mean host h and its core k."""
    del tpu8  # devices are listed: the session's layout must come first
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import devices  # pylint: disable=import-outside-toplevel
    cores = tuple(f"/job:worker/replica:0/task:{i // 4}/device:CPU:{i % 4}" for i in range(8))
    pod = backend_lib.Backend("cpu", 8, cores, "a 2-host test pod", num_hosts=2)
    monkeypatch.setattr(devices, "_emulating", lambda: pod)
    host1 = "/job:worker/replica:0/task:1/device:CPU:0"
    assert devices.resolve(host1)[0] == host1
    assert devices.resolve("/job:tpu_worker/replica:0/task:1/device:TPU:2")[0] == \
        "/job:worker/replica:0/task:1/device:CPU:2"
    assert devices.resolve("/device:TPU:5")[0] == cores[5]
    names = [d.name for d in devices.list_logical_devices("TPU")]
    assert names[4] == "/job:worker/replica:0/task:1/device:TPU:0"
    assert [devices.resolve(name)[0] for name in names] == list(cores)
    with pytest.raises(devices.DeviceMappingError, match=r"has 2 host\(s\)"):
        devices.resolve("/job:worker/replica:0/task:2/device:CPU:0")
    with pytest.raises(devices.DeviceMappingError, match="has 4 cores"):
        devices.resolve("/job:worker/replica:0/task:1/device:TPU:4")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hosts", [1, 2])
def test_training_loops_stay_on_device(runs, kind, hosts):
    """N steps per host call: one tf.function call / Session.run / Keras
    execution runs STEPS_PER_HOST_CALL steps."""
    numbers = runs(kind, hosts).numbers
    assert numbers["STEPS"] == numbers["HOST_CALLS"] * STEPS_PER_HOST_CALL
    if kind != "keras":
        assert numbers["STEPS_AFTER_FIRST_HOST_CALL"] == STEPS_PER_HOST_CALL
    if kind == "ctl":  # the step is traced per replica, not per step
        assert numbers["STEP_TRACES"] < numbers["STEPS"] * REPLICAS
        assert numbers["STEP_TRACES"] == runs(kind, 1).numbers["STEP_TRACES"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hosts", [1, 2])
def test_variables_identical_on_every_host(runs, kind, hosts):
    numbers = runs(kind, hosts).numbers
    assert numbers["TRAINED_COMPONENTS"] == 4 * REPLICAS  # 4 variables x 8 replicas, each read
    assert numbers["TRAINED_HOSTS"] == hosts
    assert numbers["TRAINED_SPREAD"] == 0.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hosts", [1, 2])
def test_checkpoint_written_once_and_restored_on_every_host(runs, kind, hosts):
    run = runs(kind, hosts)
    files = run.json("CHECKPOINT_FILES")
    assert sum(name.endswith(".index") for name in files) == 1, files
    # One data shard: one host (host 0) wrote every tensor, the chief none.
    assert run.numbers["CHECKPOINT_DATA_SHARDS"] == 1, files
    if kind == "ctl":
        assert run.numbers["SAVE_COUNTER_ON_CHIEF"] == 0
    variables = 4 if kind == "tf1" else 5  # + the Keras optimizer's iterations
    assert run.numbers["RESTORED_COMPONENTS"] == variables * REPLICAS
    assert run.numbers["RESTORED_HOSTS"] == hosts
    assert run.numbers["RESTORED_SPREAD"] == 0.0
    assert run.numbers["RESTORE_MAX_ABS_DIFF"] == 0.0
    assert run.numbers["RESTORED_STEPS"] == run.numbers["STEPS"]


@pytest.mark.parametrize("kind", KINDS)
def test_no_worker_outlives_the_program(runs, kind):
    pids = runs(kind, 2).json("WORKER_PIDS")
    assert len(pids) == 2
    assert [pid for pid in pids if not process_gone(pid)] == []
    assert runs(kind, 1).json("WORKER_PIDS") == []
