"""Issue #34 item 2: gradients through emulated cross-replica sums, per op.

On a TPU the gradient of ``cross_replica_sum`` is the cross-replica sum of the
gradient, op by op (TF r1.15 tensorflow/python/tpu/ops/tpu_ops.py,
``_cross_replica_sum_grad``), so each replica's gradient is the gradient of the
sum of every replica's loss. Two programs that differentiate two sums of
different shapes (global batch-norm moments, a cross-replica concat) are
checked against one device computing the same global batch:

* in process: ``tf.compat.v1.tpu.replicate`` with ``tf.gradients`` inside, and
  a TF 2 ``TPUStrategy.run`` in a ``tf.function`` with a ``GradientTape``;
* a whole SimCLR-style TPUEstimator program on 2 cores in CI, 8 in the slow set
  (tests/scenarios/contrastive_cross_replica_grads.py), trained with
  ``CrossShardOptimizer``, against its own ``use_tpu=False`` run; it reads its loss
  back with ``tf.losses.get_total_loss()``, as SimCLR's TF 1 model_fn does.

Replicas that reach the sums' gradients in different orders still get each op's sum
(8 and 2 replicas), a sum only some replicas differentiate is refused by name, and
each replica reads only its own entries of the losses and update-ops collections.
"""

import warnings

import numpy as np
import pytest
import tensorflow as tf

from conftest import tpu_and_one_device_numbers
from tpu_compat import TPUCompatDeprecationWarning
from tpu_compat import lowlevel

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

N, ROWS, DIM = 8, 2, 3
rng = np.random.RandomState(0)
X = rng.randn(N, ROWS, DIM).astype(np.float32)
W = rng.randn(N, ROWS, DIM).astype(np.float32)
A = rng.randn(N * ROWS, DIM).astype(np.float32)


def replica_loss(hidden, w, everyone):
    """One replica's loss from its hidden rows and every replica's (a contrastive-like
    loss: the other replicas' rows depend on this replica's through the global mean)."""
    return tf.reduce_sum(hidden * w) + tf.reduce_sum(tf.square(everyone) * A)


def one_device_gradient():
    with tf.Graph().as_default():
        x = tf.constant(X)
        hidden = tf.tanh(x - tf.reduce_mean(tf.reshape(x, [-1, DIM]), axis=0))
        everyone = tf.reshape(hidden, [-1, DIM])
        total = tf.add_n([replica_loss(hidden[r], W[r], everyone) for r in range(N)])
        gradient = tf.gradients(total, x)[0]
        with tf.compat.v1.Session() as session:
            return session.run(gradient)


def replicated_gradient():
    def computation(x, w, replica):
        hidden = tf.tanh(x - lowlevel.cross_replica_sum(tf.reduce_mean(x, axis=0)) / N)
        one_hot = tf.one_hot(replica, N)
        everyone = lowlevel.cross_replica_sum(one_hot[:, None, None] * hidden[None])
        loss = replica_loss(hidden, w, tf.reshape(everyone, [-1, DIM]))
        return tf.gradients(loss, x)[0]

    with tf.Graph().as_default():
        inputs = [[tf.constant(X[r]), tf.constant(W[r]), tf.constant(r)] for r in range(N)]
        outputs = lowlevel.replicate(computation, inputs)
        with tf.compat.v1.Session() as session:
            return np.stack([out[0] for out in session.run(outputs)])


def test_replicate_gradients_equal_one_device(tpu8):
    del tpu8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        got = replicated_gradient()
    np.testing.assert_allclose(got, one_device_gradient(), rtol=1e-5, atol=1e-6)


def test_tf2_strategy_run_gradient_tape_equals_one_device(tpu8):
    del tpu8
    from tpu_compat.runtime.strategy_v2 import CompatTPUStrategy  # pylint: disable=import-outside-toplevel
    strategy = CompatTPUStrategy()

    @tf.function
    def step():
        def replica_fn():
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group
            x = tf.gather(tf.constant(X), replica)
            with tf.GradientTape() as tape:
                tape.watch(x)
                hidden = tf.tanh(x - lowlevel.cross_replica_sum(tf.reduce_mean(x, 0)) / N)
                everyone = lowlevel.cross_replica_sum(
                    tf.one_hot(replica, N)[:, None, None] * hidden[None])
                loss = replica_loss(hidden, tf.gather(tf.constant(W), replica),
                                    tf.reshape(everyone, [-1, DIM]))
            return tape.gradient(loss, x)
        return strategy.run(replica_fn)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        got = np.stack([t.numpy() for t in strategy.experimental_local_results(step())])
    np.testing.assert_allclose(got, one_device_gradient(), rtol=1e-5, atol=1e-6)


# 2 cores in CI: 8 replicas' gradients through the same two sums stay in CI in process
# (test_replicate_gradients_equal_one_device, ..._meet_by_op[8]), and a TPUEstimator
# program's 8-core parity in test_estimator's [8].
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [2, 8])
def test_tpu_estimator_contrastive_program_trains_as_one_device(tmp_path, replicas):
    tpu, cpu = tpu_and_one_device_numbers("contrastive_cross_replica_grads.py", tmp_path,
                                          replicas, flags=(f"--num_cores={replicas}",))
    assert len(tpu) == 12 and set(tpu) == set(cpu), (tpu, cpu)
    for key, value in cpu.items():
        # Batch norm over the global batch makes the dense bias's gradient 0.
        assert tpu[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


def _sums_in_replica_order(x, replica, skip_on_replica_zero=False):
    """A replica-dependent graph: replica 0 reaches the two sums' gradients in the other
    order than the rest (TF's gradient walk follows each replica's own graph), and the
    sums have different shapes, so a pairing by arrival would add [6] to [3]."""
    first = lowlevel.cross_replica_sum(x)
    second = lowlevel.cross_replica_sum(tf.tile(x * x, [2]))
    if replica == 0:
        second = tf.identity(tf.identity(tf.identity(second)))
    else:
        first = tf.identity(tf.identity(tf.identity(first)))
    loss = tf.reduce_sum(tf.sin(first) * tf.range(1.0, 4.0))
    if not (skip_on_replica_zero and replica == 0):
        loss += tf.reduce_sum(tf.square(second) * tf.range(1.0, 7.0))
    return tf.gradients(loss, x)[0]


def _order_one_device_gradient(xs):
    with tf.Graph().as_default():
        x = tf.constant(xs)
        first, second = tf.reduce_sum(x, 0), tf.tile(tf.reduce_sum(x * x, 0), [2])
        per_replica = (tf.reduce_sum(tf.sin(first) * tf.range(1.0, 4.0))
                       + tf.reduce_sum(tf.square(second) * tf.range(1.0, 7.0)))
        gradient = tf.gradients(len(xs) * per_replica, x)[0]  # every replica's loss
        with tf.compat.v1.Session() as session:
            return session.run(gradient)


@pytest.mark.parametrize("replicas", [8, 2])
def test_sums_differentiated_in_different_orders_meet_by_op(tpu8, replicas):
    """Issue #34 item 2: gradients meet by op, not by arrival (refused before the fix:
    CrossReplicaGradientOrderError), and equal one device's on the same global batch."""
    del tpu8
    xs = rng.randn(replicas, 3).astype(np.float32) * 0.5

    def computation(x):
        replica = tf.get_static_value(
            tf.distribute.get_replica_context().replica_id_in_sync_group)
        return _sums_in_replica_order(x, replica)

    with tf.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        outputs = lowlevel.replicate(computation, [[tf.constant(x)] for x in xs])
        with tf.compat.v1.Session() as session:
            got = np.stack([out[0] for out in session.run(outputs)])
    np.testing.assert_allclose(got, _order_one_device_gradient(xs), rtol=1e-5, atol=1e-6)


def test_a_sum_only_some_replicas_differentiate_is_refused_with_its_name(tpu8):
    """Its gradient would be the other replicas' sum without replica 0's: refused."""
    del tpu8

    def computation(x):
        replica = tf.get_static_value(
            tf.distribute.get_replica_context().replica_id_in_sync_group)
        return _sums_in_replica_order(x, replica, skip_on_replica_zero=True)

    with tf.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        with pytest.raises(lowlevel.cross_replica.CrossReplicaGradientOrderError,
                           match=r"CrossReplicaSum_1.*built by replicas \[1\] but not by "
                                 r"replicas \[0\]"):
            lowlevel.replicate(computation, [[tf.ones([3])] for _ in range(2)])


def _all_reduce_step(strategy):
    """A TF 2 replica step reducing with ReplicaContext.all_reduce (SimCLR's global
    batch norm and cross-replica concat), differentiated with a GradientTape."""
    @tf.function
    def step():
        def replica_fn():
            context = tf.distribute.get_replica_context()
            replica = context.replica_id_in_sync_group
            x = tf.gather(tf.constant(X), replica)
            with tf.GradientTape() as tape:
                tape.watch(x)
                mean = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.reduce_mean(x, 0)) / N
                hidden = tf.tanh(x - mean)
                everyone = context.all_reduce(
                    "sum", tf.one_hot(replica, N)[:, None, None] * hidden[None])
                loss = replica_loss(hidden, tf.gather(tf.constant(W), replica),
                                    tf.reshape(everyone, [-1, DIM]))
            return tape.gradient(loss, x)
        return strategy.run(replica_fn)
    return step


def test_all_reduce_gradient_equals_one_device_without_walking_other_replicas(
        tpu8, monkeypatch):
    """Issue #34 item 3: TF's custom_gradient walked every replica's graph per all_reduce
    (the trace grew with depth squared); the emulated TPU's all_reduce walks none of it."""
    del tpu8
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.ops import op_selector
    from tpu_compat._tf_internals import distribute_lib
    from tpu_compat.lowlevel import replica_all_reduce
    from tpu_compat.runtime.strategy_v2 import CompatTPUStrategy
    base = distribute_lib.ReplicaContextBase
    monkeypatch.setattr(base, "all_reduce", replica_all_reduce.emulated_all_reduce(
        base.all_reduce))
    walked = []
    walk = op_selector.get_backward_walk_ops

    def counting_walk(*args, **kwargs):
        ops_walked = walk(*args, **kwargs)
        walked.append(len(ops_walked))
        return ops_walked

    monkeypatch.setattr(op_selector, "get_backward_walk_ops", counting_walk)
    strategy = CompatTPUStrategy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        got = np.stack([t.numpy() for t in
                        strategy.experimental_local_results(_all_reduce_step(strategy)())])
    np.testing.assert_allclose(got, one_device_gradient(), rtol=1e-5, atol=1e-6)
    # 8 replicas x (2 forward + 2 gradient all-reduces) custom gradients, each
    # walking only its own identities (TF's own walked the replicas' graphs: 100s of ops).
    assert walked and max(walked) <= 4, walked


def test_each_replica_reads_its_own_losses_collection(tpu8, monkeypatch):
    """SimCLR's tf.losses.get_total_loss(): one replica's losses, as the one model_fn a TPU
    built (replica k read replicas 0..k's before); outside the replicas, every entry."""
    del tpu8
    from tpu_compat._tf_internals import ops  # pylint: disable=import-outside-toplevel
    from tpu_compat.lowlevel import replica_collections  # pylint: disable=import-outside-toplevel
    graph_class = ops.Graph
    monkeypatch.setattr(graph_class, "add_to_collection", replica_collections._recording_add(  # pylint: disable=protected-access
        graph_class.add_to_collection))
    monkeypatch.setattr(graph_class, "get_collection", replica_collections._filtering_get(  # pylint: disable=protected-access
        graph_class.get_collection))

    def computation(x):
        tf.compat.v1.losses.add_loss(tf.reduce_sum(x))
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, tf.no_op())
        updates = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))
        return tf.compat.v1.losses.get_total_loss() + 0.0 * updates, tf.constant(updates)

    with tf.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        outputs = lowlevel.replicate(computation, [[tf.fill([3], float(r + 1))] for r in range(N)])
        every_loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)
        with tf.compat.v1.Session() as session:
            got = session.run(outputs)
    assert [float(total) for total, _ in got] == [3.0 * (r + 1) for r in range(N)]
    assert [int(updates) for _, updates in got] == [1] * N
    assert len(every_loss) == N
