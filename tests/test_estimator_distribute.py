"""Issue #34 item 5: ``tf.estimator.Estimator`` with ``RunConfig(train_distribute=, eval_distribute=)``.

tests/scenarios/estimator_distribute_tf1.py is TF 1.14/1.15 code in the shape
of tensorflow/tpu's distribution_strategy/resnet_estimator.py: absl flags,
``model_dir``, a per-core batch size, ``TPUClusterResolver``, training in
rounds of ``max_steps`` with an evaluation after each. One run per replica
count trains and evaluates under ``tf.distribute.experimental.TPUStrategy``
(``tpu``), under ``tf.contrib.distribute.TPUStrategy(steps_per_run=2)`` with a
``MirroredStrategy`` over the (emulated) GPUs for evaluation (``contrib``),
and without a strategy on the global batch (``ref``, the single-device
reference). Before the change, ``RunConfig`` refused ``train_distribute``.

The era's semantics (tensorflow/estimator r1.15, estimator.py; see
tpu_compat/estimator/distributed.py): the input_fn's batch is per replica, the
replicas' gradients of the 1/N-scaled losses are summed (the mean over the
global batch), the reported loss is the mean of the replicas' losses, and the
metrics are over every replica's examples.
"""

import re
import warnings

import numpy as np
import pytest

from conftest import check_ok, lazy_runs, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

PROGRAM = "estimator_distribute_tf1.py"
REPLICAS = (8, 2)
# CI runs the program on 2 replicas (the same per-replica batch, loss scaling and
# metrics, a quarter of 8's graphs), 8 in the slow set: 8 replicas equal to one
# device stay in CI through test_estimator.py's parity run [8] (TPUEstimator)
# and test_parity.py (the strategies).
CI_REPLICAS = 2
RUNS = ("tpu", "contrib")
WEIGHTS = ("w0", "w1", "w2", "w3", "b")
METRICS = ("loss", "mae", "mean_prediction", "overshoot_rate")
# The program's constants (flags' defaults and its data), for the NumPy check.
PER_CORE_BATCH, TRAIN_STEPS, STEPS_PER_EVAL, LEARNING_RATE, MOMENTUM = 4, 8, 4, 0.1, 0.5


def _run(tmp_path_factory, replicas):
    model_dir = str(tmp_path_factory.mktemp(f"estimator_distribute_{replicas}"))
    result = check_ok(run_scenario(
        PROGRAM, replicas, "--model_dir", model_dir, "--num_cores", str(replicas),
        env={"TPU_COMPAT_WARNINGS": "ignore"}, tf1=True))
    final_losses = [float(value) for value in re.findall(
        r"^INFO:tensorflow:Loss for final step: ([-0-9.e]+)\.$", result.stderr, re.M)]
    return parse_numbers(result.stdout), final_losses


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return lazy_runs(lambda replicas: _run(tmp_path_factory, replicas))


@pytest.mark.whole_program(ci_replicas=CI_REPLICAS)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_trained_weights_equal_the_single_device_reference(runs, replicas):
    numbers, _ = runs[replicas]
    for run in RUNS:
        for weight in WEIGHTS:
            assert numbers[f"{run}_{weight}"] == pytest.approx(
                numbers[f"ref_{weight}"], rel=1e-5, abs=1e-6), (run, weight)
        # One global step per step, with steps_per_run=2 too.
        assert numbers[f"{run}_global_step"] == TRAIN_STEPS


@pytest.mark.whole_program(ci_replicas=CI_REPLICAS)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_eval_metrics_are_computed_over_every_replica(runs, replicas):
    numbers, _ = runs[replicas]
    assert 0.0 < numbers["ref_eval_overshoot_rate"] < 1.0  # not a trivial metric
    for run in RUNS:
        for metric in METRICS:
            assert numbers[f"{run}_eval_{metric}"] == pytest.approx(
                numbers[f"ref_eval_{metric}"], rel=1e-5), (run, metric)
        assert numbers[f"{run}_eval_global_step"] == TRAIN_STEPS


@pytest.mark.whole_program(ci_replicas=CI_REPLICAS)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_reported_loss_is_the_mean_of_the_replicas_losses(runs, replicas):
    """``train``'s "Loss for final step" (the Estimator's loss hooks see the same
    tensor): the MEAN reduction, so the global batch's loss, as the reference's."""
    _, losses = runs[replicas]
    assert len(losses) == 6, losses  # 2 rounds each of tpu, contrib, ref
    tpu, contrib, ref = losses[0:2], losses[2:4], losses[4:6]
    assert tpu == pytest.approx(ref, rel=1e-5)
    assert contrib == pytest.approx(ref, rel=1e-5)


def _numpy_reference(replicas):
    """Momentum SGD on the MSE of consecutive global batches (per-core batch x cores).

    Each ``train`` call (a round of STEPS_PER_EVAL steps) calls input_fn
    again, so every round reads the data from its first row.
    """
    rng = np.random.RandomState(3)
    x = rng.randn(2048, 4).astype(np.float32)
    y = x.dot(np.array([[1.5], [-2.0], [0.5], [1.0]], np.float32)) + 0.25 + (
        0.1 * rng.randn(2048, 1).astype(np.float32))
    x, y = x.astype(np.float64), y.astype(np.float64)
    params, velocity = np.zeros(5), np.zeros(5)
    batch = PER_CORE_BATCH * replicas
    for step in range(TRAIN_STEPS):
        first = (step % STEPS_PER_EVAL) * batch
        rows = slice(first, first + batch)
        inputs = np.hstack([x[rows], np.ones((batch, 1))])
        error = inputs.dot(params) - y[rows, 0]
        gradient = 2.0 * inputs.T.dot(error) / batch
        velocity = MOMENTUM * velocity + gradient
        params = params - LEARNING_RATE * velocity
    return dict(zip(WEIGHTS, params))


@pytest.mark.whole_program(ci_replicas=CI_REPLICAS)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_the_reference_is_sgd_on_the_global_batch(runs, replicas):
    numbers, _ = runs[replicas]
    expected = _numpy_reference(replicas)
    for weight in WEIGHTS:
        assert numbers[f"ref_{weight}"] == pytest.approx(expected[weight], rel=1e-4,
                                                         abs=1e-5), weight


@pytest.fixture
def estimator_lib(tpu8):
    del tpu8
    from tpu_compat import estimator  # pylint: disable=import-outside-toplevel
    return estimator


@pytest.mark.requires_tf
def test_run_config_strategy_errors_name_the_argument(estimator_lib):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.python.distribute import distribute_config  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():  # the legacy names warn; not what is tested here
        warnings.simplefilter("ignore")
        _check_strategy_errors(estimator_lib, tf, distribute_config)


def _check_strategy_errors(estimator_lib, tf, distribute_config):
    strategy = tf.distribute.get_strategy()  # the default strategy: a tf.distribute.Strategy
    with pytest.raises(ValueError, match="train_distribute must be a tf.distribute.Strategy"):
        estimator_lib.RunConfig(train_distribute="mirrored")
    with pytest.raises(ValueError, match="eval_distribute must be a tf.distribute.Strategy"):
        estimator_lib.RunConfig().replace(eval_distribute=8)
    both = distribute_config.DistributeConfig(train_distribute=strategy)
    with pytest.raises(ValueError, match="either train_distribute or "
                                         "experimental_distribute.train_distribute"):
        estimator_lib.RunConfig(train_distribute=strategy, experimental_distribute=both)
    config = estimator_lib.RunConfig(experimental_distribute=both)
    assert config.train_distribute is strategy and config.eval_distribute is None
    remote = distribute_config.DistributeConfig(remote_cluster={"worker": ["a:1"]})
    with pytest.raises(ValueError, match="remote_cluster"):
        estimator_lib.RunConfig(experimental_distribute=remote)
    with pytest.raises(ValueError, match="TPUEstimator: RunConfig train_distribute"):
        estimator_lib.tpu.TPUEstimator(
            model_fn=lambda features, labels, mode, params: None, train_batch_size=8,
            config=estimator_lib.tpu.RunConfig(train_distribute=strategy))


def _fetch_hook(find, into):
    """A SessionRunHook appending, at each run, the value of the tensor ``find()`` gives."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    class Fetch(tf.compat.v1.train.SessionRunHook):
        def begin(self):
            self._tensor = find()

        def before_run(self, run_context):
            return tf.compat.v1.train.SessionRunArgs(self._tensor)

        def after_run(self, run_context, run_values):
            into.append(float(run_values.results))
    return Fetch()


@pytest.mark.requires_tf
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_loss_reduction_and_hooks_as_tf115(estimator_lib, tmp_path, reduction):
    """TF 1.15's rules on 4 replicas: a v1 optimizer scales a MEAN-reduced loss by
    1/4 and the gradients are summed; a ``tf.losses`` SUM loss is not scaled. The
    Estimator's hooks see the loss reduced the same way (MEAN or SUM); the
    model_fn's own training_hooks are replica 0's and see its loss."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    replicas, per_replica, learning_rate = 4, 2, 0.01
    x = np.linspace(-1.0, 1.0, replicas * per_replica * 2, dtype=np.float32).reshape(-1, 2)
    y = (x[:, :1] * 3.0 - x[:, 1:] + 0.5).astype(np.float32)
    sum_reduction = tf.compat.v1.losses.Reduction.SUM

    def input_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica, drop_remainder=True)

    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
        kwargs = {"reduction": sum_reduction} if reduction == "sum" else {}
        loss = tf.compat.v1.losses.mean_squared_error(labels, tf.matmul(features, w), **kwargs)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_lib.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                           training_hooks=[_fetch_hook(lambda: loss, seen)])

    seen, reported = [], []  # by the model_fn's hooks (one per replica), by train()'s hook
    estimator_hook = _fetch_hook(
        lambda: tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1], reported)
    strategy = tf.compat.v1.distribute.MirroredStrategy(
        [f"/device:CPU:{i}" for i in range(replicas)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = estimator_lib.Estimator(model_fn, config=estimator_lib.RunConfig(
            model_dir=str(tmp_path), train_distribute=strategy))
        estimator.train(input_fn, hooks=[estimator_hook], steps=1)
        w = estimator.get_variable_value("w")
    # Step 1 (w = 0): replica i reads the dataset's i-th batch.
    squared = [np.square(y[i * per_replica:(i + 1) * per_replica]) for i in range(replicas)]
    losses = [s.sum() if reduction == "sum" else s.mean() for s in squared]
    grads = [-2.0 * x[i * per_replica:(i + 1) * per_replica].T.dot(
        y[i * per_replica:(i + 1) * per_replica]) / (1 if reduction == "sum" else per_replica)
        for i in range(replicas)]
    if reduction == "sum":
        assert reported == pytest.approx([sum(losses)], rel=1e-5)
        expected_w = -learning_rate * sum(grads)
    else:
        assert reported == pytest.approx([np.mean(losses)], rel=1e-5)
        expected_w = -learning_rate * np.mean(grads, axis=0)
    assert seen == pytest.approx([losses[0]], rel=1e-5)  # replica 0's hook, its own loss
    np.testing.assert_allclose(w, expected_w, rtol=1e-5)
