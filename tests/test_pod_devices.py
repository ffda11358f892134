"""Device names of a pod program land on the emulated pod's hosts."""

import json

import numpy as np
import pytest

from conftest import check_ok, run_scenario

pytestmark = pytest.mark.requires_tf


def test_host_and_core_names_map_onto_the_pod_workers():
    result = check_ok(run_scenario("pod_devices.py", 8,
                                   env={"TPU_COMPAT_NUM_HOSTS": "2"}))
    placed = dict(line[len("PLACED "):].split(" -> ")
                  for line in result.stdout.splitlines() if line.startswith("PLACED "))
    assert placed == {
        # Host 1's CPU is worker process 1's.
        "/job:worker/task:1/device:CPU:0": "/job:worker/replica:0/task:1/device:CPU:0",
        # TPU core 2 of host 1 is host 1's third emulated core.
        "/job:worker/replica:0/task:1/device:TPU:2":
            "/job:worker/replica:0/task:1/device:CPU:2",
        # Core 5 of the slice: host 1 (4 cores a host), its core 1.
        "/device:TPU:5": "/job:worker/replica:0/task:1/device:CPU:1",
        "/job:worker": "/job:worker/replica:0/task:0/device:CPU:0",
    }
    assert ("ERROR '/job:worker/task:2' names task 2 of the TPU host job 'worker', "
            "but the emulated TPU has 2 host(s)") in result.stdout


def test_keras_predict_on_a_pod_returns_rows_in_input_order():
    result = check_ok(run_scenario("pod_predict.py", 4, env={"TPU_COMPAT_NUM_HOSTS": "2"}))
    assert "HOSTS: 2" in result.stdout
    line = next(l for l in result.stdout.splitlines() if l.startswith("PREDICT "))
    predicted = json.loads(line[len("PREDICT "):])
    want = np.array(predicted["want"])
    # numpy input, partial last batch included; a dataset of whole batches.
    np.testing.assert_allclose(predicted["numpy"], want, rtol=1e-6)
    np.testing.assert_allclose(predicted["dataset"], want[:len(predicted["dataset"])], rtol=1e-6)
    assert len(predicted["numpy"]) == 36 and len(predicted["dataset"]) == 32
