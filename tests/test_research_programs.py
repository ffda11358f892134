"""Research code trained on Cloud TPUs (issue 34, items 1 and 3): whole programs.

* tests/scenarios/tpu_global_batch_norm.py: a TF 1.15 TPUEstimator program whose
  ``tf.layers.BatchNormalization`` subclass overrides ``_moments(inputs,
  reduction_axes, keep_dims)`` with ``tf.tpu.cross_replica_sum`` (the TPU
  "global batch norm"). tf_keras 2.21 calls ``_moments(..., mask=...)``; the era
  called it without (tpu_compat/keras/batch_norm_moments.py). On N cores its
  trained weights and moving statistics equal the same program on one device
  (``--nouse_tpu``), where the layer is ordinary batch norm over the global batch.
* tests/scenarios/tf2_lars_pretraining.py: a TF 2 custom-loop pre-training
  program as SimCLR's TF 2 code wrote it: a LARS optimizer subclassing the public
  ``tf.keras.optimizers.Optimizer`` (OptimizerV2's ``_set_hyper``,
  ``_create_slots``, ``_resource_apply_dense``: tpu_compat/keras/optimizer_base.py),
  a ``Dense(-1)`` sized in its parent's ``build`` (tpu_compat/keras/placeholder_units.py),
  a small ResNet with ``SyncBatchNormalization``, ``strategy.run`` in a
  ``tf.function`` loop over ``tf.range``. On 2 and 8 cores (2 in CI) it trains to the
  weights of the same program on one core; its LARS steps equal a NumPy LARS.
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


@pytest.mark.whole_program(ci_replicas=8)
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


LARS_PROGRAM = "tf2_lars_pretraining.py"


def _lars_numbers(tmp_path_factory, replicas):
    model_dir = tmp_path_factory.mktemp(f"lars_{replicas}")
    result = check_ok(run_scenario(LARS_PROGRAM, replicas, "--model_dir", str(model_dir)))
    numbers = parse_numbers(result.stdout)
    numbers["checkpoint_files"] = len(list(model_dir.glob("ckpt-*.index")))
    return numbers


@pytest.fixture(scope="module")
def lars_runs(tmp_path_factory):
    return lazy_runs(lambda n: _lars_numbers(tmp_path_factory, n))


def _numpy_lars(param, grads, learning_rate, momentum, weight_decay, eeta):
    """LARS with momentum (You et al. 2017), as the program's optimizer defines it."""
    param = np.array(param, np.float64)
    velocity = np.zeros_like(param)
    for grad in grads:
        grad = np.array(grad, np.float64) + weight_decay * param
        param_norm, grad_norm = np.linalg.norm(param), np.linalg.norm(grad)
        trust = eeta * param_norm / grad_norm if param_norm > 0 and grad_norm > 0 else 1.0
        velocity = momentum * velocity + learning_rate * trust * grad
        param = param - velocity
    return param


def test_lars_subclass_of_the_public_optimizer_computes_lars(lars_runs):
    numbers = lars_runs[2]  # the run CI's parity case makes
    expected = _numpy_lars([[0.5, -1.0], [2.0, 0.25]],
                           [[[0.1, 0.2], [-0.3, 0.4]], [[-0.2, 0.05], [0.1, 0.3]]],
                           learning_rate=0.5, momentum=0.9, weight_decay=0.1, eeta=0.01)
    got = [numbers[f"lars_probe_{i}"] for i in range(4)]
    np.testing.assert_allclose(got, expected.ravel(), rtol=1e-6)
    assert numbers["optimizer_iterations"] == 4
    assert numbers["checkpoints"] == 2 and numbers["checkpoint_files"] == 2


# CI runs 2 cores (the 8-core run costs about 30 s of CPU more): 2 replicas already
# sum SyncBatchNormalization's statistics and LARS's gradients across replicas.
# 8-core parity of a TF 2 custom loop stays in CI in test_parity's
# test_custom_training_loop_matches_single_device[...-8] cases, and cross-replica
# batch norm on 8 cores in test_cross_replica_batch_norm_equals_global_batch_norm_on_one_device[8].
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [2, 8])
def test_tf2_pretraining_loop_on_n_cores_equals_one_core(lars_runs, replicas):
    tpu, one = lars_runs[replicas], lars_runs[1]
    assert tpu["num_replicas"] == replicas and one["num_replicas"] == 1
    weights = sorted(k for k in one if "tiny_res_net/" in k)
    assert sorted(k for k in tpu if "tiny_res_net/" in k) == weights
    assert any("projection_head/dense/kernel" in k for k in weights)
    assert any("moving_variance" in k for k in weights)
    np.testing.assert_allclose([tpu[k] for k in weights], [one[k] for k in weights],
                               rtol=2e-5, err_msg=str(weights))


def test_the_era_subclassing_points_come_and_go_with_install(tpu8):
    """In process: each change is made by install() and undone by uninstall()."""
    del tpu8
    import warnings  # pylint: disable=import-outside-toplevel

    import tf_keras  # pylint: disable=import-outside-toplevel
    import tpu_compat  # pylint: disable=import-outside-toplevel
    from tf_keras.src.optimizers.legacy import optimizer_v2  # pylint: disable=import-outside-toplevel

    class EraBatchNorm(tf_keras.layers.BatchNormalization):
        calls = []

        def _moments(self, inputs, reduction_axes, keep_dims):
            self.calls.append(keep_dims)
            return super()._moments(inputs, reduction_axes, keep_dims=keep_dims)

    modern = tf_keras.optimizers.Optimizer
    inputs = np.arange(12, dtype=np.float32).reshape(6, 2)
    with pytest.raises(ValueError, match="units"):
        tf_keras.layers.Dense(-1)
    with pytest.raises(TypeError, match="mask"):
        EraBatchNorm()(inputs, training=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tpu_compat.install():
            assert tf_keras.optimizers.Optimizer is optimizer_v2.OptimizerV2
            assert tf_keras.optimizers.Adam is not optimizer_v2.OptimizerV2  # tf_keras's own
            layer = tf_keras.layers.Dense(units=-1)
            assert layer.units == -1
            layer.units = 3
            assert layer(inputs).shape == (6, 3)
            out = EraBatchNorm(epsilon=0.0)(inputs, training=True).numpy()
            assert EraBatchNorm.calls == [False]
            expected = (inputs - inputs.mean(0)) / inputs.std(0)
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert tf_keras.optimizers.Optimizer is modern
    with pytest.raises(ValueError, match="units"):
        tf_keras.layers.Dense(-1)
    with pytest.raises(TypeError, match="mask"):
        EraBatchNorm()(inputs, training=True)
