"""The TF 1.15 adapter (compat.v1 TPUStrategy) on the 8-core emulated TPU, eagerly.

Graph mode poisons a process, so its checks live in scenarios/v1_graph_surface.py.
"""

import numpy as np
import pytest
import tensorflow as tf

from tpu_compat.compat.v1.distribute.experimental import TPUStrategy
from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
from conftest import check_ok, run_scenario

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def resolver(tpu8):
    del tpu8
    return TPUClusterResolver(tpu="")


@pytest.fixture(scope="module")
def strategy(resolver):
    return TPUStrategy(resolver, steps_per_run=4)


def _dataset(total=64, batch=8):
    return tf.data.Dataset.range(total).map(lambda x: tf.cast(x, tf.float32)).batch(batch)


def test_properties(strategy, resolver):
    assert strategy.num_replicas_in_sync == 8
    assert strategy.cluster_resolver is resolver
    with pytest.warns(DeprecationWarning, match=r"steps_per_run .*\[TPC008\]"):
        assert strategy.steps_per_run == 4
    assert strategy.extended.steps_per_run == 4
    assert len(strategy.extended.parameter_devices) == 8
    assert strategy.extended.experimental_enable_get_next_as_optional is True


@pytest.mark.parametrize("value", [0, -3, 1.5, "4", True])
def test_steps_per_run_must_be_a_positive_int(resolver, value):
    with pytest.raises(ValueError, match=rf"steps_per_run must be a positive int .*got {value!r}"):
        TPUStrategy(resolver, steps_per_run=value)


def test_make_dataset_iterator_and_experimental_run(strategy):
    iterator = strategy.make_dataset_iterator(_dataset())
    assert iterator.initialize() is None or iterator.initialize() == []
    assert iterator.output_types == tf.float32
    result = strategy.experimental_run(lambda x: x * 10.0, iterator)
    # One example of each global batch of 8 per replica.
    assert [v.numpy().tolist() for v in strategy.unwrap(result)] == [
        [0.0], [10.0], [20.0], [30.0], [40.0], [50.0], [60.0], [70.0]]
    with pytest.warns(DeprecationWarning, match="TPC002"):
        assert strategy.reduce(tf.distribute.ReduceOp.SUM, result).numpy().tolist() == [280.0]
    assert strategy.reduce(tf.distribute.ReduceOp.MEAN, result).numpy().tolist() == [35.0]


def test_global_batch_must_divide_across_replicas(strategy):
    static = tf.data.Dataset.range(48).batch(12, drop_remainder=True)
    with pytest.raises(ValueError, match="global batch size 12 does not divide across 8 replicas"):
        strategy.make_dataset_iterator(static)
    iterator = strategy.make_dataset_iterator(_dataset(total=48, batch=12))  # dynamic shape
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="a global batch does not divide across 8 replicas"):
        strategy.experimental_run(tf.identity, iterator)


def test_experimental_run_rejects_non_callable(strategy):
    with pytest.raises(TypeError, match="experimental_run: fn must be callable, got int"):
        strategy.experimental_run(3)


def test_make_input_fn_iterator_gets_an_input_context(strategy):
    contexts = []

    def input_fn(context):
        contexts.append(context)
        return tf.data.Dataset.from_tensors([[1.0]]).repeat().batch(
            context.get_per_replica_batch_size(16))

    iterator = strategy.make_input_fn_iterator(input_fn)
    iterator.initialize()
    result = strategy.experimental_run(lambda x: tf.reduce_sum(x), iterator)
    assert float(strategy.reduce("SUM", result, axis=None)) == 16.0
    assert [(c.num_input_pipelines, c.input_pipeline_id, c.get_per_replica_batch_size(16))
            for c in contexts] == [(1, 0, 2)]


def test_steps_per_run_runs_n_steps_in_one_host_call(strategy):
    with strategy.scope():
        steps_taken = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    iterator = strategy.make_dataset_iterator(_dataset(total=8 * 40))
    python_calls = []

    def step_fn(ctx, inputs):
        python_calls.append(1)   # a Python-side count: traced once, not per step
        per_replica = strategy.experimental_run_v2(
            lambda x: (steps_taken.assign_add(1.0), tf.reduce_sum(x))[1], args=(inputs,))
        ctx.set_last_step_output("sum", per_replica, reduce_op=tf.distribute.ReduceOp.SUM)
        ctx.set_non_tensor_output("marker", "kept")
        return tf.no_op()

    ctx = strategy.extended.experimental_run_steps_on_iterator(
        step_fn, iterator, iterations=strategy.extended.steps_per_run,
        initial_loop_values={"sum": 0.0})
    assert float(steps_taken.read_value()) == 4.0
    assert float(ctx.last_step_outputs["sum"]) == float(sum(range(24, 32)))  # 4th batch
    assert ctx.non_tensor_outputs == {"marker": "kept"}
    assert ctx.run_op is None
    for _ in range(3):
        ctx = strategy.extended.experimental_run_steps_on_iterator(
            step_fn, iterator, iterations=strategy.extended.steps_per_run,
            initial_loop_values={"sum": 0.0})
    assert float(steps_taken.read_value()) == 16.0
    assert len(python_calls) == 1   # 4 host calls of 4 steps, traced once
    assert float(ctx.last_step_outputs["sum"]) == float(sum(range(120, 128)))


def test_steps_per_run_one_ignores_iterations_as_tpus_did(resolver):
    strategy = TPUStrategy(resolver)
    with strategy.scope():
        steps_taken = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    iterator = strategy.make_dataset_iterator(_dataset())

    def step_fn(ctx, inputs):
        del ctx
        return strategy.experimental_run_v2(lambda x: steps_taken.assign_add(1.0), args=(inputs,))

    strategy.extended.experimental_run_steps_on_iterator(step_fn, iterator, iterations=5)
    assert float(steps_taken.read_value()) == 1.0


def test_initialize_finalize_and_config(strategy):
    assert strategy.experimental_initialize() == []
    assert strategy.experimental_finalize() == []
    config = strategy.update_config_proto(tf.compat.v1.ConfigProto())
    assert config.device_count["CPU"] == 8


def test_numpy_dataset_and_distribute_dataset(strategy):
    dataset = strategy.experimental_make_numpy_dataset(np.arange(16, dtype=np.float32))
    distributed = strategy.experimental_distribute_dataset(dataset.batch(16))
    batch = next(iter(distributed))
    assert float(strategy.reduce("SUM", batch, axis=0)) == 120.0
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(float(ctx.replica_id_in_sync_group)))
    assert [float(v) for v in strategy.experimental_local_results(values)] == list(range(8))


def test_call_for_each_replica(strategy):
    with strategy.scope():
        result = strategy.extended.call_for_each_replica(
            lambda: tf.distribute.get_replica_context().replica_id_in_sync_group)
    assert [int(v) for v in strategy.experimental_local_results(result)] == list(range(8))


def test_device_assignment_with_several_cores_per_replica_is_refused(resolver):
    from tpu_compat.runtime import resolver as resolver_lib
    topology = resolver_lib.initialize_tpu_system(resolver)
    assignment = tf.tpu.experimental.DeviceAssignment.build(
        topology, computation_shape=[1, 1, 1, 2], num_replicas=4)
    with pytest.raises(ValueError, match="has 2 cores per replica, but the TF 1.15 "
                                         "TPUStrategy supports only one core per replica"):
        TPUStrategy(resolver, device_assignment=assignment)
    single = tf.tpu.experimental.DeviceAssignment.build(topology, num_replicas=1)
    assert TPUStrategy(resolver, device_assignment=single).num_replicas_in_sync == 1


def test_graph_mode_surface():
    result = check_ok(run_scenario("v1_graph_surface.py", 2))
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert lines["initialize_is_op"] == "True"
    assert lines["output_types"] == "<dtype: 'float32'>"
    assert lines["first_sum"] == "1.0"                       # [0] + [1]
    assert lines["steps_counter_after_one_run"] == "3.0"     # steps_per_run=3, one sess.run
    assert lines["steps_counter_after_two_runs"] == "6.0"
    assert lines["last_step_sum"] == "25.0"   # batches 4k+1: first_sum took b0, runs b1-b3, b4-b6
    assert lines["input_fn_sum"] == "4.0"
    assert lines["numpy_dataset_sum"] == "6.0"
    assert lines["distributed_dataset_sum"] == "1.0"
    assert lines["initialize_ops"] == "1"
    # batches of 2 on 2 replicas: replica 0 gets [0], replica 1 gets [1], then [2], [3]
    assert lines["one_shot_per_replica"] == "[[0.0, 1.0], [2.0, 3.0]]"
    assert lines["topology_mesh"] == "[1, 1, 1, 2]"
    assert lines["get_next_before_initialize"].startswith("FailedPreconditionError")
    assert "not been initialized" in lines["get_next_before_initialize"]
