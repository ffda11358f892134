"""The README's legacy examples run unchanged and give replica-independent numbers."""

import os

import numpy as np
import pytest

import fork_server
from conftest import EXAMPLES, check_ok, lazy_runs, parse_numbers, run_cli

pytestmark = pytest.mark.requires_tf

# The README's command (`tpu-compat run examples/tf1_linear_regression.py`, 8
# emulated cores), as a newcomer runs it: a fresh process, not a fork of the
# suite's fork server. The other runs here are forked (tests/fork_server.py:
# a forked run is what a fresh one is, test_fork_server.py).
README_REPLICAS = 8


@pytest.fixture(scope="module")
def tf1_runs():
    def run(replicas):
        fresh = {fork_server.SOCKET_VAR: None} if replicas == README_REPLICAS else None
        return parse_numbers(check_ok(run_cli(
            "run", "--replicas", str(replicas),
            os.path.join(EXAMPLES, "tf1_linear_regression.py"), env=fresh)).stdout)
    return lazy_runs(run)


@pytest.fixture(scope="module")
def tf2_runs():
    return lazy_runs(lambda n: parse_numbers(check_ok(run_cli(
        "run", "--replicas", str(n), os.path.join(EXAMPLES, "tf2_custom_training_loop.py"))).stdout))


def _full_batch_sgd_reference():
    """examples/tf1_linear_regression.py's training, in NumPy, on one device."""
    rng = np.random.RandomState(0)
    features = rng.randn(1024, 8).astype(np.float32)
    labels = features.dot(np.arange(1, 9, dtype=np.float32).reshape(8, 1)) + 0.5
    weights, bias = np.zeros((8, 1), np.float64), np.zeros(1, np.float64)
    for step in range(50):
        start = (step * 64) % 1024
        x, y = features[start:start + 64], labels[start:start + 64]
        error = x.dot(weights) + bias - y
        weights -= 0.1 * 2 * x.T.dot(error) / 64
        bias -= 0.1 * 2 * error.sum(axis=0) / 64
    return weights.sum(), bias[0]


@pytest.mark.whole_program(ci_replicas=8)
# interpreter: one whole legacy program (TF 1.x graph mode, under `tpu-compat
# run`) on each Python CI has; the others' programs are the version matrix's.
@pytest.mark.interpreter
@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_tf1_example_matches_numpy_full_batch_sgd(tf1_runs, replicas):
    numbers = tf1_runs[replicas]
    assert numbers["replicas"] == replicas
    weight_sum, bias = _full_batch_sgd_reference()
    assert numbers["weight_sum"] == pytest.approx(weight_sum, rel=1e-5)
    assert numbers["bias"] == pytest.approx(bias, rel=1e-4)


# Not `interpreter`: Python 3.12's lane checks the program against NumPy above,
# with one run; the replica counts' agreement is the same on every Python.
@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", [2, 8])
def test_tf1_example_is_independent_of_the_replica_count(tf1_runs, replicas):
    numbers = tf1_runs[replicas]
    for key, value in tf1_runs[1].items():
        if key != "replicas":
            assert numbers[key] == pytest.approx(value, rel=1e-5, abs=1e-6)


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", [2, 8])
def test_tf2_example_is_independent_of_the_replica_count(tf2_runs, replicas):
    assert tf2_runs[replicas]["replicas"] == replicas
    for key, value in tf2_runs[1].items():
        if key != "replicas":
            assert tf2_runs[replicas][key] == pytest.approx(value, rel=1e-5)
    assert tf2_runs[1]["epoch_2_mean_loss"] < tf2_runs[1]["epoch_0_mean_loss"]


def test_tpu_estimator_example_on_the_cpu_matches_its_8_core_golden_file():
    """use_tpu=False (BERT's default) computes what 8 emulated TPU cores compute.

    The golden file is the example on 8 cores (``tpu-compat regress``, which
    also checks that run); ``loss`` is replica 0's share of the last eval
    batch on the TPU, as TF 1.15 reported it, so it is not compared.
    """
    import json  # pylint: disable=import-outside-toplevel
    with open(os.path.join(EXAMPLES, "golden", "tf1_tpu_estimator_classifier.json")) as f:
        golden = json.load(f)["numbers"]
    numbers = parse_numbers(check_ok(run_cli(
        "run", "--tf1", "--replicas", "8",
        os.path.join(EXAMPLES, "tf1_tpu_estimator_classifier.py"))).stdout)
    assert numbers["replicas"] == 1
    for key in ("eval_accuracy", "eval_loss", "global_step", "predicted_examples",
                "predicted_positive_probability_sum"):
        assert numbers[key] == pytest.approx(golden[key], rel=1e-5), key
