"""TPUEstimator on an emulated TPU pod slice (2 hosts x 4 cores).

One TF 1.15 program (tests/scenarios/estimator_pod.py: absl flags,
``TPUClusterResolver(tpu='')``, PER_HOST_V2, an input_fn sharding by
``params['context']``) runs on 2 hosts x 4 cores, on 1 host x 8 cores and
with ``use_tpu=False``: training (resumed from model_dir), evaluation and
prediction from the checkpoints give the same numbers, ``input_fn`` is
called as on a real pod, and no worker process outlives the program.
"""

import re
import warnings

import pytest

from conftest import check_ok, lazy_runs, parse_numbers, process_gone, run_scenario

pytestmark = pytest.mark.requires_tf

SCENARIO = "estimator_pod.py"
# Where the runs legitimately differ: how input_fn was called, the pod
# itself, and checkpoint steps (the TPU checks the cadence once per loop).
NOT_COMPARED = ("input_", "pod_worker_pid_", "num_hosts", "checkpoints")
MODES = ("train", "eval", "predict", "per_host_v1", "per_host_v2", "broadcast",
         "per_shard_v1")


@pytest.fixture(scope="module")
def runs():
    # Made when first asked for: CI's tests read the pod run only (the
    # comparison with one host and the CPU is in the slow set; how one host
    # and the CPU call input_fn, CI checks in process, below).
    flags = {"pod": ((8,), {"TPU_COMPAT_NUM_HOSTS": 2}), "one_host": ((8,), None),
             "cpu": ((1, "--nouse_tpu"), None)}

    def make(name):
        (replicas, *extra), env = flags[name]
        return check_ok(run_scenario(SCENARIO, replicas, "--survey", *extra, tf1=True,
                                     env=env)).stdout
    return lazy_runs(make)


def _numbers(runs, name):
    return parse_numbers(runs[name])


@pytest.mark.slow  # 2-host parity; the pod tests keep a pod in CI
def test_pod_equals_one_host_and_the_cpu(runs):
    reference = _numbers(runs, "cpu")
    compared = [key for key in reference if not key.startswith(NOT_COMPARED)]
    assert len(compared) >= 30
    for name in ("pod", "one_host"):
        numbers = _numbers(runs, name)
        for key in compared:
            assert numbers[key] == pytest.approx(reference[key], rel=1e-5, abs=1e-6), (
                name, key)
    pod, one_host = _numbers(runs, "pod"), _numbers(runs, "one_host")
    assert pod["checkpoints"] == one_host["checkpoints"]
    for mode in MODES:  # CI: test_one_host_.../test_the_cpu_calls_... below
        assert one_host[f"input_calls_{mode}"] == (8 if mode == "per_shard_v1" else 1)
        assert _numbers(runs, "cpu")[f"input_calls_{mode}"] == 1
    # Exact counts: steps, checkpoints and summaries written once.
    assert pod["train_global_step"] == pod["eval_global_step"] == 10
    assert pod["checkpoint_data_files"] == 1
    assert pod["eval_event_files"] == 1
    assert pod["train_event_files"] == one_host["train_event_files"]
    assert pod["host_call_events"] == pod["host_call_distinct_steps"] == 10
    assert pod["host_call_last_step"] == 9
    assert pod["predict_count"] == pod["predict_distinct_ids"] == 17


def _deployments(stdout, mode):
    """``[(invocation, total, replicas fed, host task)]`` of a mode's input_fn calls."""
    found = re.findall(rf"^input_deployment_{mode}_\d+: (\d+)/(\d+) feeds (\d+) "
                       rf"replicas on /job:worker/replica:0/task:(\d+)/device:CPU:0$",
                       stdout, re.MULTILINE)
    return [tuple(int(value) for value in match) for match in found]


@pytest.mark.parametrize("mode,calls,batch,deployments", [
    # PER_HOST_V2 (train, eval, predict): once per host, one core's batch.
    ("train", 2, 16 // 8, [(0, 2, 4, 0), (1, 2, 4, 1)]),
    ("eval", 2, 16 // 8, [(0, 2, 4, 0), (1, 2, 4, 1)]),
    ("predict", 2, 8 // 8, [(0, 2, 4, 0), (1, 2, 4, 1)]),
    ("per_host_v2", 2, 16 // 8, [(0, 2, 4, 0), (1, 2, 4, 1)]),
    # PER_HOST_V1: once per host, the host's batch (global / hosts).
    ("per_host_v1", 2, 16 // 2, [(0, 2, 4, 0), (1, 2, 4, 1)]),
    # BROADCAST: once, on host 0, the global batch for all 8 cores.
    ("broadcast", 1, 16, [(0, 1, 8, 0)]),
    # PER_SHARD_V1: once per core, on the core's host.
    ("per_shard_v1", 8, 16 // 8, [(core, 8, 1, core // 4) for core in range(8)]),
])
def test_input_fn_is_called_per_host_on_the_hosts_cpu(runs, mode, calls, batch,
                                                       deployments):
    pod = _numbers(runs, "pod")
    assert pod["num_hosts"] == 2
    assert pod[f"input_calls_{mode}"] == calls
    assert pod[f"input_batch_{mode}"] == batch
    assert _deployments(runs["pod"], mode) == deployments
    # One host and the CPU: in process below (test_one_host_calls_input_fn_once_per_mode,
    # test_the_cpu_calls_input_fn_once_per_mode),
    # and in the slow parity test's runs.


def test_sessions_run_on_the_pods_master_and_no_worker_survives(runs):
    masters = dict(re.findall(r"^(resolver_master|run_config_master): (\S*)$",
                              runs["pod"], re.MULTILINE))
    assert masters["resolver_master"].startswith("grpc://")
    assert masters["run_config_master"] == masters["resolver_master"]
    pids = [int(value) for key, value in _numbers(runs, "pod").items()
            if key.startswith("pod_worker_pid_")]
    assert len(pids) == 2
    assert all(process_gone(pid) for pid in pids)


# -- in process --------------------------------------------------------------------

_HOSTS = ("/job:worker/replica:0/task:0/device:CPU:0",
          "/job:worker/replica:0/task:1/device:CPU:0")


def _tpu_context(pipeline, batch_sizes, **host_layout):
    """(config, InternalContext) of a RunConfig whose TPUConfig names the
    InputPipelineConfig ``pipeline`` (``"PER_HOST_V1"``...), on the TPU with
    ``batch_sizes`` (train, eval, predict) and 8 replicas; ``host_layout``: the
    context's other functions (``host_devices_fn``)."""
    from tpu_compat.estimator import tpu  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator.tpu import context  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy names warn (TPC072-TPC074)
        config = tpu.RunConfig(tpu_config=tpu.TPUConfig(
            per_host_input_for_training=getattr(tpu.InputPipelineConfig, pipeline)))
    return config, context.InternalContext(config, *batch_sizes, use_tpu=True,
                                           eval_on_tpu=True, num_replicas_fn=lambda: 8,
                                           **host_layout)


def test_tpu_context_places_replicas_and_input_on_their_hosts(tpu8):
    del tpu8
    from tpu_compat.estimator._spec import ModeKeys  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator.tpu import context  # pylint: disable=import-outside-toplevel
    _, ctx = _tpu_context("PER_HOST_V1", (64, 64, 64), host_devices_fn=lambda: _HOSTS)
    with ctx.with_mode(ModeKeys.TRAIN):
        assert (ctx.num_hosts, ctx.num_of_replicas_per_host) == (2, 4)
        # PER_HOST_V1: the host's batch in input_fn, one core's in model_fn.
        assert (ctx.batch_size_for_input_fn, ctx.batch_size_for_model_fn) == (32, 8)
        user = context.TPUContext(ctx, input_device=_HOSTS[1], invocation_index=1,
                                  host_id=1)
        assert user.current_input_fn_deployment() == (_HOSTS[1], 1, 2, 4)
        assert (user.num_hosts, user.current_host, user.num_of_replicas_per_host) == (
            2, 1, 4)
        assert user.device_for_replica(5) == (_HOSTS[1], 1)
        assert user.tpu_host_placement_function(0) == _HOSTS[0]
        with pytest.raises(ValueError, match=r"host_id must be in \[0, 2\)"):
            user.tpu_host_placement_function(2)
        with pytest.raises(ValueError, match=r"replica_id must be in \[0, 8\)"):
            user.device_for_replica(8)


def test_tf_config_of_an_emulated_pods_chief_is_not_an_estimator_cluster():
    import json  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator import run_config  # pylint: disable=import-outside-toplevel
    pod = {"cluster": {"worker": ["localhost:2222", "localhost:2223"]},
           "task": {"type": "chief", "index": 0}}
    assert run_config.check_no_cluster({"TF_CONFIG": json.dumps(pod)}) == pod
    workers = {"cluster": {"worker": ["a:1", "b:1"], "ps": ["c:1"]},
               "task": {"type": "worker", "index": 0}}
    with pytest.raises(ValueError, match="describes a cluster of 3 tasks"):
        run_config.check_no_cluster({"TF_CONFIG": json.dumps(workers)})
    # A chief whose host count disagrees is no pod here: a cluster (the backend
    # reports the disagreement); a TF_CONFIG that is not JSON says so.
    with pytest.raises(ValueError, match=r"describes a cluster of 2 tasks \(worker\)"):
        run_config.check_no_cluster({"TF_CONFIG": json.dumps(pod), "TPU_COMPAT_NUM_HOSTS": "3"})
    with pytest.raises(ValueError, match="^TF_CONFIG is not valid JSON: Expecting"):
        run_config.check_no_cluster({"TF_CONFIG": "{"})
    assert run_config.check_no_cluster({}) == {}


def test_one_host_calls_input_fn_once_per_mode(tpu8):
    """What the pod program's one-host run prints as ``input_calls_<mode>``
    (compared with the pod's in the slow parity test): on one host of 8 cores,
    training, evaluation and prediction (PER_HOST_V2) call input_fn once, with
    one core's batch, for all 8 replicas. Training's other pipelines:
    test_estimator.py's test_input_fn_calls_and_batch_sizes_per_input_pipeline_mode."""
    del tpu8
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator._spec import ModeKeys  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator.tpu import input_pipeline  # pylint: disable=import-outside-toplevel
    config, ctx = _tpu_context("PER_HOST_V2", (16, 16, 8))
    calls = []

    def input_fn(params):
        deployment = params["context"].current_input_fn_deployment()
        calls.append((params["batch_size"], deployment[1:]))
        return tf.data.Dataset.range(32).batch(params["batch_size"], drop_remainder=True)

    for mode, batch in ((ModeKeys.TRAIN, 2), (ModeKeys.EVAL, 2), (ModeKeys.PREDICT, 1)):
        del calls[:]
        with tf.Graph().as_default(), ctx.with_mode(mode):
            input_pipeline.InputPipeline(ctx, input_fn, None, {}, config)
        assert calls == [(batch, (0, 1, 8))], mode


def test_the_cpu_calls_input_fn_once_per_mode(tpu8, tmp_path):
    """What the pod program's ``--nouse_tpu`` run prints as ``input_calls_<mode>``
    (compared with the pod's in the slow parity test): with use_tpu=False,
    train, evaluate and predict call input_fn once, with the global batch,
    whichever input pipeline the TPUConfig names."""
    del tpu8
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator import tpu  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipelines = tpu.InputPipelineConfig
    data = np.arange(32 * 2, dtype=np.float32).reshape(32, 2)
    calls = []

    def input_fn(params):
        calls.append((params["batch_size"], "context" in params))
        dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1]))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    def predict_input_fn(params):
        calls.append((params["batch_size"], "context" in params))
        return tf.data.Dataset.from_tensor_slices(data[:17]).batch(params["batch_size"])

    def model_fn(features, labels, mode, params):
        assert not params["use_tpu"]
        weight = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        prediction = tf.matmul(features, weight)
        if mode == tpu.estimator.ModeKeys.PREDICT:
            return tpu.TPUEstimatorSpec(mode, predictions={"y": prediction})
        loss = tf.reduce_mean(tf.square(prediction - labels))
        return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=(
            tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step())))

    def estimator(pipeline):
        return tpu.TPUEstimator(
            model_fn=model_fn, use_tpu=False, train_batch_size=16, eval_batch_size=16,
            predict_batch_size=8, config=tpu.RunConfig(
                model_dir=str(tmp_path / str(pipeline)), tpu_config=tpu.TPUConfig(
                    iterations_per_loop=2, per_host_input_for_training=pipeline)))

    def called(run):
        del calls[:]
        run()
        return list(calls)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy names warn (TPC072-TPC074)
        v2 = estimator(pipelines.PER_HOST_V2)
        assert called(lambda: v2.train(input_fn, max_steps=2)) == [(16, False)]
        assert called(lambda: v2.evaluate(input_fn, steps=1)) == [(16, False)]
        predictions = []
        assert called(lambda: predictions.extend(v2.predict(predict_input_fn))) == [
            (8, False)]
        assert len(predictions) == 17
        for pipeline in (pipelines.PER_HOST_V1, pipelines.BROADCAST, pipelines.PER_SHARD_V1):
            other = estimator(pipeline)
            assert called(lambda: other.train(input_fn, max_steps=2)) == [(16, False)], (
                pipeline)
