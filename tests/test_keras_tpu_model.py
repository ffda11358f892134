"""The TF 1.9-1.13 Keras TPU API (tf.contrib.tpu.keras_to_tpu_model), whole programs.

Two programs written as that era wrote them run under ``tpu-compat run --tf1`` at
1, 2 and 8 emulated cores and are checked against the same model trained on one
device (tf_keras, no strategy) on the same global batches, at rtol 1e-5:

* keras_tpu_iris.py, the TF 1.12 Iris Colab: compiled before the conversion with a
  ``tf.train`` optimizer, ``fit(x, y, batch_size=GLOBAL, validation_split=...)``,
  ``evaluate``, ``predict``, ``sync_to_cpu``; the global batch does not change with
  the core count, so every count gives the reference's numbers.
* keras_tpu_template.py, the AI Platform TPU template: argparse flags, compiled after
  the conversion with ``SGD(lr=)``, ``fit(input_fn, steps_per_epoch, validation_data=
  input_fn, validation_steps)``: each core pulls its own batch, so the reference fits
  batches of ``batch_size * cores``; ``save_weights`` under ``model_dir`` loads into a
  fresh CPU model.
"""
import json
import pathlib
import re

import numpy as np
import pytest

from conftest import check_ok, run_cli, run_scenario

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
RTOL = 1e-5
ATOL = 1e-6


def _result(result):
    check_ok(result)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=RTOL, atol=ATOL)


def _same_training(got, want):
    assert sorted(got["history"]) == sorted(want["history"])
    for key in want["history"]:
        _close(got["history"][key], want["history"][key])
    _close(got["evaluate"], want["evaluate"])
    assert len(got["weights"]) == len(want["weights"])
    for got_weight, want_weight in zip(got["weights"], want["weights"]):
        _close(got_weight, want_weight)


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_iris_colab_numpy_fit_matches_one_device(replicas, tmp_path):
    result = _result(run_scenario("keras_tpu_iris.py", replicas, tf1=True))
    got, want = result["distributed"], result["reference"]
    assert got["num_cores"] == replicas
    _same_training(got, want)
    _close(got["predict"], want["predict"])
    # sync_to_cpu returned the CPU model holding the TPU weights.
    _close(got["cpu_predict"], want["predict"])
    # batch_size is the global batch: 17 does not split across the cores.
    if replicas > 1:
        assert got["odd_batch_error"].startswith(
            f"batch_size must be divisible by the number of TPU cores in use (17 vs {replicas})")
    else:
        assert got["odd_batch_error"] is None


def test_using_single_core_runs_one_core():
    result = _result(run_scenario("keras_tpu_iris.py", 8, "--single_core", tf1=True))
    got, want = result["distributed"], result["reference"]
    assert got["num_cores"] == 1
    assert got["odd_batch_error"] is None
    _same_training(got, want)


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_template_input_fn_fit_matches_one_device(replicas, tmp_path):
    result = _result(run_scenario(
        "keras_tpu_template.py", replicas, "--model_dir", str(tmp_path / "model"),
        "--num_cores", str(replicas), tf1=True))
    got, want = result["distributed"], result["reference"]
    _same_training(got, want)
    # save_weights copied the TPU weights back: a fresh CPU model loads them.
    for restored, weight in zip(got["restored"], got["weights"]):
        np.testing.assert_array_equal(restored, weight)
    assert (tmp_path / "model" / "model.h5").exists()
    errors = got["errors"]
    assert errors["dataset_directly"].startswith("Taking a Dataset directly is not yet supported")
    assert errors["no_steps"].startswith(
        "When using tf.data as input to a model, you should specify the steps_per_epoch")
    assert "requires static shapes" in errors["unknown_batch"]
    assert "drop_remainder=True" in errors["unknown_batch"]


def test_each_use_warns_once_at_the_programs_line():
    result = check_ok(run_scenario("keras_tpu_iris.py", 2, tf1=True))
    source = (REPO_ROOT / "tests" / "scenarios" / "keras_tpu_iris.py").read_text().splitlines()
    warned = {}
    for line in result.stderr.splitlines():
        match = re.match(r".*keras_tpu_iris\.py:(\d+): TPUCompatDeprecationWarning: .*\[(TPC16\d)\]$", line)
        if match:
            warned.setdefault(match.group(2), []).append(int(match.group(1)))
    assert sorted(warned) == ["TPC160", "TPC161", "TPC162"]
    assert [source[n - 1].strip() for n in warned["TPC160"]] == [
        "tpu_model = tf.contrib.tpu.keras_to_tpu_model("]
    assert "tf.contrib.tpu.TPUDistributionStrategy(" in source[warned["TPC161"][0] - 1]
    assert "tpu_model.sync_to_cpu()" in source[warned["TPC162"][0] - 1]


def test_scan_reports_the_keras_tpu_api():
    result = run_cli("scan", "--format", "json", str(REPO_ROOT / "tests" / "scenarios" / "keras_tpu_iris.py"))
    assert result.returncode == 1, result.stderr
    rules = sorted(finding["rule"] for finding in json.loads(result.stdout)["findings"])
    assert {"TPC160", "TPC161", "TPC162"} <= set(rules)
