"""TF 1.x's low-level TPU API (tf.compat.v1.tpu) on the emulated TPU and on a real one.

* Numerical parity against single-device references on 1, 2 and 8 emulated
  cores: one scenario process per replica count (tests/scenarios/lowlevel_parity.py).
* Clear errors naming the argument, checked in process on the 8-core TPU.
* Contract tests: on a real TPU every call reaches TensorFlow's own function
  with the caller's arguments (a recording stand-in replaces ``lowlevel.native.NATIVE``).
"""

import types
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.tpu import tpu_function

from conftest import check_ok, parse_numbers, run_scenario
from tpu_compat import TPUCompatDeprecationWarning, settings
from tpu_compat.runtime import backend as backend_lib
from tpu_compat import lowlevel
from tpu_compat.lowlevel import native as native_lib

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REL = 1e-5


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_parity_with_single_device_references(replicas):
    # Under fidelity tpu (run's default, stated here), and on 2 replicas under
    # --tf1 too (soft device placement off, as TF 2.21's v1 mode): a legitimate
    # low-level program passes the TPU's compile checks (test_fidelity.py's
    # claim; one process serves both).
    result = check_ok(run_scenario("lowlevel_parity.py", replicas, tf1=replicas == 2,
                                   env={"TPU_COMPAT_WARNINGS": "ignore",
                                        settings.FIDELITY_VAR: "tpu"}))
    numbers = parse_numbers(result.stdout)
    assert numbers.get("DONE") == 1, result.stdout
    for prefix in ("REPLICATE", "MOMENTUM"):
        # MEAN over per-shard mean losses (and SUM of 1/N-scaled ones) equal
        # full-batch SGD; one update per step; identical copies on all cores.
        assert numbers[f"{prefix}_REL_ERR"] < REL
        assert numbers[f"{prefix}_GLOBAL_STEP"] == 5
        assert numbers[f"{prefix}_COPIES_MAX_DIFF"] == 0
        assert numbers[f"{prefix}_OUTPUT_LISTS"] == replicas  # [replica][output]
        assert numbers[f"{prefix}_OUTPUTS_PER_REPLICA"] == 1  # the loss; train_op is a dep
    for key in ("SHARD_MATMUL_REL_ERR", "SHARD_AXIS1_REL_ERR", "SHARD_FIRST_ONLY_REL_ERR",
                "BATCH_PARALLEL_REL_ERR", "CONTRIB_STRATEGY_REL_ERR"):
        assert numbers[key] < REL, key
    assert numbers["CRS_ALL_MAX_ERR"] == 0
    assert numbers["CRS_GROUPS_MAX_ERR"] == 0
    assert numbers["OC_HOST_CALLS"] == numbers["OC_EXPECTED_CALLS"] == 5 * replicas
    assert numbers["OC_ON_HOST"] == 1
    assert numbers["CONTRIB_STRATEGY_REPLICAS"] == replicas


# -- errors, in process on the 8-core emulated TPU ---------------------------------


@pytest.fixture
def graph(tpu8):
    del tpu8
    with tf.Graph().as_default() as g, warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        yield g


def test_replicate_rejects_more_replicas_than_cores(graph):
    with pytest.raises(ValueError, match=r"inputs asks for 9 replicas but the emulated "
                                         r"TPU has 8 cores"):
        lowlevel.replicate(lambda x: x, [[tf.ones([1])]] * 9)


def test_replicate_rejects_mismatched_shapes_across_replicas(graph):
    with pytest.raises(ValueError, match=r"inputs: replica 1's input 0 has shape \(3,\) "
                                         r"but replica 0's has \(2,\)"):
        lowlevel.replicate(lambda x: x, [[tf.ones([2])], [tf.ones([3])]])


def test_replicate_rejects_inputs_that_are_not_lists_of_lists(graph):
    with pytest.raises(TypeError, match="inputs must be a list of lists"):
        lowlevel.replicate(lambda x: x, [tf.ones([2])])


def test_replicate_rejects_an_infeed_queue(graph):
    with pytest.raises(ValueError, match="infeed_queue is not supported"):
        lowlevel.replicate(lambda: 1.0, infeed_queue=object())


def test_shard_rejects_more_shards_than_cores(graph):
    with pytest.raises(ValueError, match=r"num_shards=9 is larger than the 8 cores"):
        lowlevel.shard(lambda x: x, [tf.ones([9])], num_shards=9)


def test_shard_rejects_inputs_not_a_multiple_of_num_shards(graph):
    with pytest.raises(ValueError, match=r"inputs\[0\] has size 6 along axis 0, which "
                                         r"is not a multiple of num_shards=4"):
        lowlevel.batch_parallel(lambda x: x, [tf.ones([6, 2])], num_shards=4)


def test_shard_rejects_a_bad_num_shards(graph):
    with pytest.raises(ValueError, match="num_shards must be a positive integer"):
        lowlevel.shard(lambda x: x, [tf.ones([4])], num_shards=0)


def test_cross_replica_sum_outside_a_replicated_computation(graph):
    with pytest.raises(lowlevel.NotInReplicaContextError,
                       match="cross_replica_sum must be called inside a replicated"):
        lowlevel.cross_replica_sum(tf.ones([]))


def test_cross_replica_sum_checks_group_assignment(graph):
    with pytest.raises(ValueError, match=r"group_assignment must be a permutation of "
                                         r"range\(2\)"):
        lowlevel.replicate(
            lambda x: lowlevel.cross_replica_sum(x, [[0, 0]]), [[tf.ones([])]] * 2)


def test_cross_shard_optimizer_outside_a_replicated_computation(graph):
    var = tf.compat.v1.get_variable("v", [], initializer=tf.compat.v1.zeros_initializer())
    optimizer = lowlevel.CrossShardOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1))
    with pytest.raises(lowlevel.NotInReplicaContextError,
                       match="CrossShardOptimizer.apply_gradients must run inside"):
        optimizer.minimize(var * 2.0)


def test_cross_shard_optimizer_keeps_tensorflows_argument_checks(graph):
    with pytest.raises(ValueError, match="reduction"):
        lowlevel.CrossShardOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.1), reduction="bogus")
    with pytest.raises(TypeError, match="tf.training.Optimizer"):
        lowlevel.CrossShardOptimizer(tf.keras.optimizers.SGD())


def test_cross_shard_optimizer_sums_every_gradient_at_one_meeting(graph, monkeypatch):
    # One CrossReplicaSum per gradient, as TF 1.15 built them, but the replicas
    # meet once for all (issue 34 item 7: ResNet-50 had 214 meetings).
    from tpu_compat.lowlevel import cross_replica  # pylint: disable=import-outside-toplevel
    meetings, merged = [], cross_replica._merged_group_sums  # pylint: disable=protected-access

    def counted(context, xs, groups, index=None):
        meetings.append(len(xs))
        return merged(context, xs, groups, index)
    monkeypatch.setattr(cross_replica, "_merged_group_sums", counted)
    sums_before, ones = cross_replica.sums_built(), tf.compat.v1.ones_initializer()

    def step(x):
        # Created in the computation, as TPU programs do: one copy per core.
        with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
            weights = [tf.compat.v1.get_variable(f"w{i}", [2], initializer=ones)
                       for i in range(3)]
            unused = tf.compat.v1.get_variable("unused", [], initializer=ones)
        loss = sum(tf.reduce_sum(w * x * (i + 1)) for i, w in enumerate(weights))
        optimizer = lowlevel.CrossShardOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0))
        grads = optimizer.compute_gradients(loss, var_list=weights + [unused])
        return optimizer.apply_gradients(grads)
    xs = [[tf.constant([1.0, 2.0])], [tf.constant([3.0, 4.0])]]
    train_op = lowlevel.replicate(step, xs)
    assert meetings == [3, 3]  # one meeting per replica, the None gradient left out
    assert cross_replica.sums_built() - sums_before == 6
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(train_op)
        # MEAN: each weight moves by (i + 1) * the mean of the replicas' x.
        values = {v.op.name: v for v in tf.compat.v1.global_variables()}
        for i in range(3):
            np.testing.assert_allclose(session.run(values[f"model/w{i}"]),
                                       1.0 - (i + 1) * np.array([2.0, 3.0]))
        assert session.run(values["model/unused"]) == 1.0


def test_core_names_the_argument(graph):
    with pytest.raises(ValueError, match="num must be a non-negative int"):
        lowlevel.core(-1)
    assert lowlevel.core(0) == ""


def test_each_call_warns_once_at_the_users_line(graph):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TPUCompatDeprecationWarning)
        lowlevel.rewrite(lambda: tf.constant(1.0))
    records = [w for w in caught if issubclass(w.category, TPUCompatDeprecationWarning)]
    assert [str(w.message)[-8:] for w in records] == ["[TPC041]"]
    assert records[0].filename == __file__


def test_replicate_inside_tf_function_as_tf2_allowed(tpu8):
    del tpu8

    @tf.function
    def replicated():
        return lowlevel.replicate(
            lambda x: [lowlevel.cross_replica_sum(x) * 1.0, x + 1.0],
            [[tf.constant(float(i))] for i in range(4)])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        outputs = replicated()
    assert [[float(v) for v in replica] for replica in outputs] == [
        [6.0, 1.0], [6.0, 2.0], [6.0, 3.0], [6.0, 4.0]]


# -- contract: a real TPU gets TensorFlow's own implementation ---------------------

REAL_TPU = backend_lib.Backend("tpu", 8, (), "contract test: a stand-in TPU")


@pytest.fixture
def native(tpu8, monkeypatch):
    del tpu8
    calls = []

    def recorder(name):
        def record(*args, **kwargs):
            calls.append((name, args, kwargs))
            return (name, "native result")
        return record

    stand_in = types.SimpleNamespace(**{name: recorder(name) for name in vars(
        native_lib.NATIVE)})
    monkeypatch.setattr(native_lib, "NATIVE", stand_in)
    monkeypatch.setattr(backend_lib, "get_backend", lambda *a, **k: REAL_TPU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        yield calls


def computation(*args):
    return args


def test_real_tpu_replicate_rewrite_shard_reach_tensorflow(native):
    inputs, da = [[1], [2]], object()
    assert lowlevel.replicate(computation, inputs, device_assignment=da,
                              maximum_shapes=[3]) == ("replicate", "native result")
    lowlevel.rewrite(computation, [1], name="r")
    lowlevel.shard(computation, [1], num_shards=2, input_shard_axes=[1],
                   outputs_from_all_shards=False, output_shard_axes=[0])
    lowlevel.batch_parallel(computation, [1], num_shards=4)
    assert native == [
        ("replicate", (computation, inputs), dict(
            infeed_queue=None, device_assignment=da, name=None, maximum_shapes=[3],
            padding_spec=None, xla_options=None)),
        ("rewrite", (computation, [1]), dict(infeed_queue=None, device_assignment=None,
                                             name="r", xla_options=None)),
        ("shard", (computation, [1]), dict(
            num_shards=2, input_shard_axes=[1], outputs_from_all_shards=False,
            output_shard_axes=[0], infeed_queue=None, device_assignment=None, name=None,
            xla_options=None)),
        ("batch_parallel", (computation, [1]), dict(
            num_shards=4, infeed_queue=None, device_assignment=None, name=None,
            xla_options=None)),
    ]


def test_real_tpu_cross_replica_sum_outside_compilation_core_reach_tensorflow(native):
    lowlevel.cross_replica_sum("x", [[0, 1]], name="s")
    lowlevel.outside_compilation(computation, 1, k=2)
    lowlevel.core(1)
    with pytest.raises(TypeError):  # the stand-in is no context manager: it was reached
        with lowlevel.bfloat16_scope("b"):
            pass
    assert native == [
        ("cross_replica_sum", ("x", [[0, 1]]), {"name": "s"}),
        ("outside_compilation", (computation, 1), {"k": 2}),
        ("core", (1,), {}),
        ("bfloat16_scope", ("b",), {}),
    ]


def test_real_tpu_cross_shard_optimizer_is_tensorflows(native, monkeypatch):
    from tensorflow.python.tpu import tpu_optimizer
    seen = []
    monkeypatch.setattr(tpu_optimizer.CrossShardOptimizer, "apply_gradients",
                        lambda self, gv, global_step=None, name=None:
                        seen.append((gv, global_step, name)) or "applied")
    optimizer = lowlevel.CrossShardOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1))
    assert isinstance(optimizer, tpu_optimizer.CrossShardOptimizer)
    assert optimizer.apply_gradients([("g", "v")], "step", "n") == "applied"
    assert seen == [([("g", "v")], "step", "n")]


def test_cross_replica_sum_inside_a_tpu_strategy_replica(tpu8):
    """The same op works in a compat.v1 TPUStrategy's replica context."""
    del tpu8
    from tpu_compat.runtime.strategy_v1 import CompatTPUStrategyV1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        strategy = CompatTPUStrategyV1()

        def replica_fn():
            context = tf.distribute.get_replica_context()
            shards = tpu_function.get_tpu_context().number_of_shards
            value = tf.cast(context.replica_id_in_sync_group, tf.float32) + 1.0
            return lowlevel.cross_replica_sum(value) + 0.0 * shards, float(shards)

        totals, shards = strategy.run(replica_fn)
    assert {float(t) for t in strategy.experimental_local_results(totals)} == {36.0}
    assert {float(s) for s in strategy.experimental_local_results(shards)} == {8.0}
    np.testing.assert_equal(tpu_function.get_tpu_context().number_of_shards,
                            None)


def test_real_tpu_feeds_and_training_loop_reach_tensorflow(native):
    # Issue 22: on a real TPU the infeed/outfeed ops and the training loop are
    # TensorFlow's own (tpu_ops, training_loop), called with the program's arguments.
    lowlevel.infeed_enqueue_tuple(["x"], [[2]], device_ordinal=3)
    lowlevel.infeed_enqueue("x", [2], device_ordinal=1)
    lowlevel.infeed_dequeue_tuple(["f"], [[2]], name="d")
    lowlevel.infeed_dequeue("f", [2])
    lowlevel.outfeed_enqueue_tuple(["y"])
    lowlevel.outfeed_enqueue("y")
    lowlevel.outfeed_dequeue_tuple(["f"], [[]], device_ordinal=5)
    lowlevel.outfeed_dequeue("f", [], device_ordinal=2)
    lowlevel.repeat(4, computation)
    lowlevel.while_loop(computation, computation, [1])
    assert native == [
        ("infeed_enqueue_tuple", (), dict(inputs=["x"], shapes=[[2]], layouts=[],
                                          device_ordinal=3, name=None)),
        ("infeed_enqueue", (), dict(input="x", shape=[2], layout=[], device_ordinal=1,
                                    name=None)),
        ("infeed_dequeue_tuple", (), dict(dtypes=["f"], shapes=[[2]], name="d")),
        ("infeed_dequeue", (), dict(dtype="f", shape=[2], name=None)),
        ("outfeed_enqueue_tuple", (), dict(inputs=["y"], name=None)),
        ("outfeed_enqueue", (), dict(input="y", name=None)),
        ("outfeed_dequeue_tuple", (), dict(dtypes=["f"], shapes=[[]], device_ordinal=5,
                                           name=None)),
        ("outfeed_dequeue", (), dict(dtype="f", shape=[], device_ordinal=2, name=None)),
        ("repeat", (4, computation), dict(inputs=None, infeed_queue=None, name=None)),
        ("while_loop", (computation, computation), dict(inputs=[1], infeed_queue=None,
                                                        name=None)),
    ]
