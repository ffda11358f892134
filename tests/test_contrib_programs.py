"""Whole TF 1.x programs that stop on tf.contrib names beside the TPU ones (issue 22).

Each runs under ``tpu-compat run --tf1`` at 1, 2 and 8 emulated cores and is
checked against a numpy reference of the same training.
"""

import numpy as np
import pytest

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

REPLICAS = (1, 2, 8)


def _aiplatform_reference(steps=12, batch=16, learning_rate=0.05):
    """Plain gradient descent on the program's data: (weights, per-step losses)."""
    rng = np.random.RandomState(0)
    features = rng.randn(64, 4).astype(np.float64)
    labels = features.dot(np.array([[1.0], [-2.0], [0.5], [3.0]])) + 0.25
    w, b = np.zeros((4, 1)), np.zeros(1)
    batches = []
    for step in range(steps):
        start = (step * batch) % 64
        x, y = features[start:start + batch], labels[start:start + batch]
        batches.append((x, y, w.copy(), b.copy()))
        error = x.dot(w) + b - y
        w = w - learning_rate * 2.0 * x.T.dot(error) / batch
        b = b - learning_rate * 2.0 * error.mean(axis=0)
    eval_mse = float(np.mean((features.dot(w) + b - labels) ** 2))
    return w, b, eval_mse, batches


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_aiplatform_template_matches_numpy(tmp_path, replicas):
    result = check_ok(run_scenario(
        "contrib_aiplatform_tpu.py", replicas, "--use_tpu", "--model_dir",
        str(tmp_path / "model"), tf1=True))
    numbers = parse_numbers(result.stdout)
    w, b, eval_mse, batches = _aiplatform_reference()
    for index in range(4):
        assert numbers[f"w_{index}"] == pytest.approx(w[index, 0], rel=1e-4, abs=1e-5)
    assert numbers["b_0"] == pytest.approx(b[0], rel=1e-4, abs=1e-5)
    assert numbers["eval_mse"] == pytest.approx(eval_mse, rel=1e-4)
    # The host_call's tf.contrib.summary scalars, one per step: TF 1.15 sent
    # each core's tensors to the host and the template logged loss[0], core
    # 0's loss on its share of the batch.
    assert numbers["summary_count"] == 12
    share = 16 // replicas
    for step, (x, y, w_before, b_before) in enumerate(batches):
        expected = np.mean((x[:share].dot(w_before) + b_before - y[:share]) ** 2)
        assert numbers[f"summary_loss_{step}"] == pytest.approx(expected, rel=1e-4), step
    # Each contrib name warned once, at the program's line.
    for rule in ("TPC101", "TPC102", "TPC118", "TPC119", "TPC120", "TPC121"):
        assert f"contrib_aiplatform_tpu.py" in result.stderr and f"[{rule}]" in result.stderr


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_colab_keras_bring_up_matches_numpy(replicas):
    result = check_ok(run_scenario("contrib_colab_keras.py", replicas, tf1=True))
    numbers = parse_numbers(result.stdout)
    rng = np.random.RandomState(1)
    x_train = rng.randn(64, 3)
    y_train = x_train.dot(np.array([[2.0], [-1.0], [0.5]])) - 0.5
    w, b = np.zeros((3, 1)), np.zeros(1)
    for epoch in range(3):
        for start in range(0, 64, 16):
            x, y = x_train[start:start + 16], y_train[start:start + 16]
            error = x.dot(w) + b - y
            w = w - 0.1 * 2.0 * x.T.dot(error) / 16
            b = b - 0.1 * 2.0 * error.mean(axis=0)
        # Each epoch validates on the whole training set with that epoch's weights.
        val_loss = ((x_train.dot(w) + b - y_train) ** 2).mean()
        assert numbers[f"val_loss_{epoch}"] == pytest.approx(val_loss, rel=1e-4, abs=1e-6)
    # Issue 34: the fit loop's validation reuses its input pipeline (re-initialized) in
    # every later epoch, as tf_keras's graph-mode fit does; a new one per epoch grew the
    # session's graph by some 350 ops per validation on 8 replicas.
    assert numbers["iterator_ops_after_epoch_0"] > 0
    assert numbers["iterator_ops_after_epoch_2"] == numbers["iterator_ops_after_epoch_0"]
    assert numbers["keras_is_tf_keras"] == 1
    for index in range(3):
        assert numbers[f"kernel_{index}"] == pytest.approx(w[index, 0], rel=1e-4, abs=1e-5)
    assert numbers["bias_0"] == pytest.approx(b[0], rel=1e-4, abs=1e-5)
    for rule in ("TPC105", "TPC104"):
        assert f"[{rule}]" in result.stderr
