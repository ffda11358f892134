"""Issue 22: TF 1.15's pod session idiom on the emulated pod.

The Cloud TPU reference models copied ``resolver.cluster_spec().as_cluster_def()``
into the session config and opened ``tf.Session(resolver.master(), config=...)``.
On a 2-host emulated pod that failed with "The ClusterSpec names the job and
task index to be the same names that were provided when the server booted".
tests/scenarios/pod_tf1.py --copy_cluster_def (absl flags, steps_per_run loop,
model_dir checkpoint restored on every host) on 2 hosts x 2 cores and on one
host of 4, each against the single-device reference it trains itself.
"""
import json

import numpy as np
import pytest

from conftest import check_ok, run_scenario

# Slow: 1 and 2 hosts of the TF 1.13-1.15 session idiom: test_pod_devices and the
# pod fault tests keep a pod's sessions in CI.
pytestmark = [pytest.mark.requires_tf, pytest.mark.slow]

REPLICAS = 4


def _result(tmp_path, hosts):
    result = check_ok(run_scenario(
        "pod_tf1.py", REPLICAS, "--model_dir", str(tmp_path / f"{hosts}hosts"),
        "--copy_cluster_def",
        env={"TPU_COMPAT_NUM_HOSTS": hosts if hosts > 1 else None,
             "TPU_COMPAT_WARNINGS": "ignore"}))
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, result.stdout[-3000:]
    return json.loads(lines[0][len("RESULT "):])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("idiom")
    return {hosts: _result(tmp_path, hosts) for hosts in (1, 2)}


@pytest.mark.parametrize("hosts", [1, 2])
def test_the_cluster_def_session_trains_as_one_device(results, hosts):
    got = results[hosts]
    np.testing.assert_allclose(got["losses"], got["reference_losses"], rtol=1e-5)
    for index, (a, b) in enumerate(zip(got["weights"], got["reference"])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{hosts} host(s) vs one device, tensor {index}")
    assert any(np.any(np.asarray(w) != np.asarray(i))
               for w, i in zip(got["weights"], got["initial"])), "training changed nothing"


def test_two_hosts_equal_one(results):
    np.testing.assert_allclose(results[2]["losses"], results[1]["losses"], rtol=1e-5)
    for index, (a, b) in enumerate(zip(results[2]["weights"], results[1]["weights"])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=f"2x2 vs 1x4, tensor {index}")
