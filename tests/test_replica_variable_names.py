"""Issue #34 (simclr-tf1): a variable's ``op.name`` in every emulated replica is its own.

On a TPU the model_fn was built once (TF r1.15 tensorflow/python/tpu/tpu.py,
``split_compile_and_replicate``), so ``param.op.name`` was the variable's
name; the era's LARS optimizers name their momentum
``tf.get_variable(param.op.name + "/Momentum")``. Before the fix replica 1 looked
up ``dense/kernel/replica_1/Momentum`` and the program stopped with "Variable
... does not exist". Checked in process (``tpu.replicate``: the name, the op
still usable as a control dependency) and as a whole TPUEstimator program on 8
cores (tests/scenarios/lars_op_name.py) against its own one-device run.
"""

import warnings

import numpy as np
import pytest
import tensorflow as tf

from conftest import tpu_and_one_device_numbers
from tpu_compat import TPUCompatDeprecationWarning
from tpu_compat import lowlevel
from tpu_compat.lowlevel.replica_variable_names import ReplicaCopyOp
from tpu_compat.patching import registry
from tpu_compat.patching.changes import Changes

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def variable_names_row():
    """The registry's row alone (install()'s, without its routing), undone after the test."""
    changes = Changes()
    registry.apply_alone("replica variable names", changes)
    yield
    changes.undo()


def test_every_replica_sees_the_variables_own_op_name(tpu8, variable_names_row):
    del tpu8, variable_names_row
    seen = {}

    def computation(x):
        kernel = tf.compat.v1.get_variable("kernel", [3], initializer=tf.ones_initializer())
        replica = tf.get_static_value(
            tf.distribute.get_replica_context().replica_id_in_sync_group)
        seen[int(replica)] = kernel.op.name
        with tf.control_dependencies([kernel.op]):  # the copy's own op, as a dependency
            return tf.reduce_sum(kernel * x)

    with tf.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        with tf.compat.v1.variable_scope("model"):
            outputs = lowlevel.replicate(computation, [[tf.fill([3], float(r))] for r in range(8)])
        # Outside the replicas every variable's op is TensorFlow's own answer.
        assert not any(isinstance(v.op, ReplicaCopyOp) for v in tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            got = [out[0] for out in session.run(outputs)]
    assert seen == {r: "model/kernel" for r in range(8)}, seen
    assert got == [3.0 * r for r in range(8)]


def test_lars_program_names_momentum_by_op_and_trains_as_one_device(tmp_path):
    tpu, cpu = tpu_and_one_device_numbers("lars_op_name.py", tmp_path)
    # Four variables and their four momentum slots, by the variables' own names.
    assert len(tpu) == 16 and set(tpu) == set(cpu), (tpu, cpu)
    assert "dense/kernel/Momentum_sum" in tpu
    for key, value in cpu.items():
        assert tpu[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


@pytest.fixture
def replica_rows():
    """The collections and variable-name rows alone, undone after the test."""
    changes = Changes()
    registry.apply_alone("replica collections", changes)
    registry.apply_alone("replica variable names", changes)
    yield
    changes.undo()


def test_moving_averages_of_the_mobilenet_trainers_average_each_variable_once(tpu8, replica_rows):
    """tensorflow/tpu's mobilenet.py: ema.apply(tf.trainable_variables() +
    tf.moving_average_variables()) in the replicated model_fn. Replica k read the
    variables replicas 0..k-1's apply had added and averaged them again: one more
    merge_call than replica 0, and MirroredStrategy stopped on the count mismatch."""
    del tpu8, replica_rows
    decay, rate = 0.75, 0.1
    xs = [[float(r + 1), -1.0] for r in range(8)]

    def computation(x):
        w = tf.compat.v1.get_variable("w", [2], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(w * x)
        optimizer = lowlevel.CrossShardOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(rate))
        train_op = optimizer.minimize(loss)
        ema = tf.compat.v1.train.ExponentialMovingAverage(decay)
        averaged = tf.compat.v1.trainable_variables() + tf.compat.v1.moving_average_variables()
        with tf.control_dependencies([train_op]):
            return [tf.constant(len(averaged)), ema.apply(averaged)]

    with tf.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        outputs = lowlevel.replicate(computation, [[tf.constant(x)] for x in xs])
        averaged = tf.compat.v1.moving_average_variables()
        names = sorted(v.name for v in tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            counts = [out[0] for out in session.run(outputs)]
            values = session.run({v.name: v.read_value() for v in tf.compat.v1.global_variables()})
    w, average = values["w:0"], values["w/ExponentialMovingAverage:0"]
    assert counts == [1] * 8  # each replica averages w once, as the one model_fn a TPU built
    assert [v.name for v in averaged] == ["w:0"]
    assert names == ["w/ExponentialMovingAverage:0", "w:0"]
    # One device on the global batch: CrossShardOptimizer's mean gradient, then the average.
    expected_w = 1.0 - rate * np.mean(xs, axis=0)
    np.testing.assert_allclose(w, expected_w, rtol=1e-6)
    np.testing.assert_allclose(average, decay * 1.0 + (1 - decay) * expected_w, rtol=1e-6)
