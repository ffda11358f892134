"""Issue #34 item 4: a TF-Slim TPUEstimator program (tests/scenarios/slim_tpu_estimator.py).

Written as the TPU MobileNet/AmoebaNet trainers were (``slim = tf.contrib.slim``,
``arg_scope`` from ``tensorflow.contrib.framework.python.ops``, conv2d with
batch_norm, separable_conv2d, pools, fully_connected). On 2 and 8 cores its trained
variables (by the era's names) and its evaluation loss equal the same program on
one device (``--nouse_tpu``). Before tf.contrib.slim was served it stopped at
``slim = tf.contrib.slim``.
"""

import numpy as np
import pytest

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = [pytest.mark.requires_tf]


def _numbers(tmp_path, replicas, *flags):
    return parse_numbers(check_ok(run_scenario(
        "slim_tpu_estimator.py", replicas, "--model_dir", str(tmp_path / str(replicas)),
        *flags, env={"TPU_COMPAT_WARNINGS": "ignore"}, tf1=True)).stdout)


# 2 replicas in CI (the same conv/batch-norm model_fn, a quarter of 8's graph);
# a TPUEstimator program on 8 replicas equal to one device stays in CI through
# test_estimator.py's test_tpu_runs_equal_the_single_device_reference[8].
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [8, 2])
def test_slim_model_fn_on_the_emulated_tpu_equals_one_device(tmp_path, replicas):
    tpu = _numbers(tmp_path, replicas, "--num_cores", str(replicas))
    cpu = _numbers(tmp_path, 1, "--nouse_tpu")
    assert sorted(tpu) == sorted(cpu)
    for name in ("Net/Conv2d_0/weights", "Net/Conv2d_0/BatchNorm/moving_mean",
                 "Net/Conv2d_1_depthwise/depthwise_weights", "Net/Conv2d_2/pointwise_weights",
                 "Net/Logits/weights", "Net/Logits/biases", "eval_loss"):
        assert name in cpu, name
    keys = sorted(cpu)
    np.testing.assert_allclose([tpu[k] for k in keys], [cpu[k] for k in keys], rtol=1e-4,
                               err_msg=str(keys))
