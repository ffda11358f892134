"""Research code trained on Cloud TPUs (issue 34, items 1 and 3): whole programs.

* tests/scenarios/tpu_global_batch_norm.py: a TF 1.15 TPUEstimator program whose
  ``tf.layers.BatchNormalization`` subclass overrides ``_moments(inputs,
  reduction_axes, keep_dims)`` with ``tf.tpu.cross_replica_sum`` (the TPU
  "global batch norm"). tf_keras 2.21 calls ``_moments(..., mask=...)``; the era
  called it without (tpu_compat/keras/batch_norm_moments.py). On N cores its
  trained weights and moving statistics equal the same program on one device
  (``--nouse_tpu``), where the layer is ordinary batch norm over the global batch.
"""

import numpy as np
import pytest

from conftest import check_ok, lazy_runs, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

REPLICAS = (1, 2, 8)
BN_PROGRAM = "tpu_global_batch_norm.py"


def _bn_numbers(tmp_path_factory, replicas, *flags):
    model_dir = str(tmp_path_factory.mktemp(f"global_bn_{replicas}"))
    result = check_ok(run_scenario(BN_PROGRAM, replicas, "--model_dir", model_dir,
                                   *flags, tf1=True))
    return parse_numbers(result.stdout)


@pytest.fixture(scope="module")
def bn_runs(tmp_path_factory):
    runs = lazy_runs(lambda n: _bn_numbers(tmp_path_factory, n))
    runs["cpu"] = _bn_numbers(tmp_path_factory, 1, "--nouse_tpu")
    return runs


@pytest.mark.parametrize("replicas", REPLICAS)
def test_cross_replica_batch_norm_equals_global_batch_norm_on_one_device(bn_runs, replicas):
    tpu, cpu = bn_runs[replicas], bn_runs["cpu"]
    assert sorted(tpu) == sorted(cpu)
    for prefix in ("bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance",
                   "dense/kernel", "dense/bias"):
        assert any(key.startswith(prefix + "_") for key in cpu), prefix
    keys = sorted(cpu)
    np.testing.assert_allclose([tpu[k] for k in keys], [cpu[k] for k in keys],
                               rtol=1e-5, atol=1e-6, err_msg=str(keys))
    # Training moved every statistic away from its initial value (0 and 1).
    assert abs(cpu["bn/moving_mean_1"]) > 0.5 and abs(cpu["bn/moving_variance_0"] - 1) > 0.5
