"""Issue 36: a TPUEstimator step's variable reads are ordered before its writes.

BERT's optimizer computes the learning rate from ``global_step`` and increments
the step by hand beside the train op, with nothing ordering the two. A TPU ran
the step as one XLA program in one fixed order, so the run was reproducible;
the emulated TPU ran it as a graph, and each run of several steps gave other
weights (8 replicas, 6 steps, iterations_per_loop=3: three runs, three different
results, none the reference; 1 replica: one run in three differed). The whole
program (tests/scenarios/estimator_step_order.py) must give the weights of the
one-device computation below, in which step k reads ``global_step == k``.
"""

import numpy as np
import pytest
from conftest import check_ok, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

STEPS, BATCH, RATE = 6, 16, 0.05


def _reference_weights():
    """Plain SGD on the scenario's data, the learning rate of step k being
    RATE * (k + 1): the step's own global step, read before its increment."""
    rng = np.random.RandomState(11)
    x = rng.randn(64, 4).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 3.0, -4.0], np.float32) + 0.1 * rng.randn(64).astype(
        np.float32)
    w = np.zeros(4)
    for step in range(STEPS):
        rows = slice(BATCH * step % 64, BATCH * step % 64 + BATCH)
        xb, yb = x[rows].astype(np.float64), y[rows].astype(np.float64)
        gradient = 2 * xb.T @ (xb @ w - yb) / BATCH
        w = w - RATE * (step + 1) * gradient
    return w


def test_learning_rate_from_global_step_with_a_hand_made_increment_eight_replicas(tmp_path):
    numbers = parse_numbers(check_ok(run_scenario(
        "estimator_step_order.py", 8, "--use_tpu", "--num_cores=8",
        f"--model_dir={tmp_path}", f"--train_steps={STEPS}", "--iterations_per_loop=3",
        env={"TPU_COMPAT_WARNINGS": "ignore"}, tf1=True)).stdout)
    assert numbers["global_step"] == STEPS
    weights = [numbers[f"w{i}"] for i in range(4)]
    np.testing.assert_allclose(weights, _reference_weights(), rtol=1e-5)


def test_reads_downstream_of_a_write_are_left_alone(tpu8):
    """The ordering adds read -> write edges only where no cycle can form, and
    only for reads of the variable written."""
    del tpu8
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator.tpu._ordering import step_reads_before_writes  # pylint: disable=import-outside-toplevel
    with tf.Graph().as_default():
        step = tf.compat.v1.Variable(1.0, use_resource=True, name="step")
        other = tf.compat.v1.Variable(1.0, use_resource=True, name="other")
        read = step.read_value()                    # unordered against the increment
        rate = read * 2.0
        increment = step.assign_add(1.0, read_value=False)
        with tf.control_dependencies([increment]):
            after = step.read_value()               # wants the new value
        update = other.assign(other.read_value() * rate, read_value=False)
        fetches = [tf.group(update, increment), after]
        step_reads_before_writes(fetches)
        assert read.op.inputs[0].op in increment.control_inputs   # through its Identity
        assert after.op.inputs[0].op not in increment.control_inputs
        assert [op.type for op in update.control_inputs] == ["ReadVariableOp"]
        assert update.control_inputs[0].inputs[0] is other.handle
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                _, new_step = session.run(fetches)
                assert new_step == session.run(step)
            # each run's rate from the step it started with: 2*1 * 2*2 * 2*3
            assert session.run(other) == 48.0
