"""--numerics tpu, training: a two-layer model trained on the emulated TPU matches
a numpy re-implementation of the same steps with bfloat16-rounded matmul operands.

tests/scenarios/numerics_model.py holds the model's data, initial weights and
the numpy reference (ml_dtypes.bfloat16, float64 accumulation, no TensorFlow).
The TF 2.x spelling (numerics_training.py: TPUStrategy + Keras fit and predict)
runs on 2 replicas, and on 1, 8 and an emulated pod of 2 hosts x 2 cores in
the slow lane; the TF 1.x spelling
(numerics_training_tf1.py, --tf1: tpu.replicate + CrossShardOptimizer +
Session) on 2, and the TPUEstimator spelling (numerics_estimator_tf1.py, --tf1:
use_tpu=True, iterations_per_loop=2, predict on the TPU) on 2. The TF 2.x runs
also train once more with TensorFloat-32 off, which a TPU computes in full
float32.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

from tpu_compat import settings
from conftest import SCENARIOS, check_ok, run_cli, run_scenario

pytestmark = pytest.mark.requires_tf

# Both sides accumulate differently (float32 vs float64) over 5 steps; the
# bfloat16 rounding moves the same numbers by ~4e-4 of their largest.
MATCH = 1e-5
MOVED = 1e-4


def _model():
    spec = importlib.util.spec_from_file_location(
        "numerics_model", os.path.join(SCENARIOS, "numerics_model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODEL = _model()


def _results(stdout):
    found = {}
    for line in stdout.splitlines():
        key, _, payload = line.partition(" ")
        if key.startswith("NUMERICS"):
            found[key] = json.loads(payload)
    return found


def _run(spelling, replicas):
    env = {settings.NUMERICS_VAR: "tpu", "TPU_COMPAT_WARNINGS": "ignore"}
    if spelling == "pod":  # an emulated pod slice: 2 worker processes of 2 cores
        return _results(check_ok(run_cli(
            "run", "--replicas", str(replicas), "--hosts", "2",
            os.path.join(SCENARIOS, "numerics_training.py"), env=env)).stdout)
    scenario = {"tf2": "numerics_training.py", "tf1": "numerics_training_tf1.py",
                "estimator": "numerics_estimator_tf1.py"}[spelling]
    return _results(check_ok(run_scenario(scenario, replicas, tf1=spelling != "tf2",
                                          env=env)).stdout)


def _relative(actual, expected):
    actual = np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in actual])
    expected = np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in expected])
    return float(np.max(np.abs(actual - expected)) / np.max(np.abs(expected)))


@pytest.fixture(scope="module")
def references():
    features, _ = MODEL.data()
    first_batch = features[:MODEL.GLOBAL_BATCH]
    found = {}
    for rounded in (True, False):
        weights, _ = MODEL.reference(rounded)
        found[rounded] = (weights, MODEL.forward(weights, first_batch, rounded)[2])
    return found


def _check(run, references, replicas, key="NUMERICS", rounded=True, row_order=True):
    result = run[key]
    assert result["replicas"] == replicas
    weights, prediction = references[rounded]
    other_weights, _ = references[not rounded]
    assert _relative(result["weights"], weights) <= MATCH
    got = np.asarray(result["prediction"])
    if not row_order:
        got, prediction = np.sort(got, axis=0), np.sort(prediction, axis=0)
    assert _relative([got], [prediction]) <= MATCH
    # The emulated TPU's numbers are not the other mode's.
    assert _relative(result["weights"], other_weights) >= MOVED


@pytest.mark.parametrize("spelling, replicas", [
    ("tf2", 2), ("tf1", 2), ("estimator", 2),
    pytest.param("tf2", 1, marks=pytest.mark.slow),
    pytest.param("tf2", 8, marks=pytest.mark.slow),
    pytest.param("pod", 4, marks=pytest.mark.slow)])
def test_training_matches_the_bfloat16_reference(references, spelling, replicas):
    run = _run(spelling, replicas)
    # On the emulated pod, Keras predict returns the batch's rows in another
    # order (rows 4-7 and 8-11 swapped with 2 hosts x 2 cores), numerics or
    # not: the rows are compared as a set there.
    row_order = spelling != "pod"
    _check(run, references, replicas, row_order=row_order)
    if "NUMERICS_TF32_OFF" in run:
        # TF32 off: tf2xla asks for HIGHEST, a TPU computes float32.
        _check(run, references, replicas, "NUMERICS_TF32_OFF", rounded=False,
               row_order=row_order)
    else:
        assert spelling in ("tf1", "estimator")
    if spelling == "estimator":  # iterations_per_loop=2: loops of 2, 2 and 1 steps
        assert run["NUMERICS"]["global_step"] == MODEL.STEPS

