"""The TF 2.x adapters on the 8-core emulated TPU (eager and tf.function)."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_compat.compat.v2.distribute.experimental import TPUStrategy as ExperimentalTPUStrategy
from tpu_compat.distribute import TPUStrategy
from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
from tpu_compat.runtime import resolver as resolver_lib

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def strategy(tpu8):
    del tpu8
    return TPUStrategy(TPUClusterResolver(tpu=""))


def _range_batches(strategy, total, batch):
    dataset = tf.data.Dataset.range(total).map(lambda x: tf.cast(x, tf.float32)).batch(batch)
    return strategy.experimental_distribute_dataset(dataset)


def test_behaves_like_a_tpu_strategy(strategy):
    assert strategy.num_replicas_in_sync == 8
    assert isinstance(strategy, tf.distribute.Strategy)
    assert isinstance(strategy.cluster_resolver, TPUClusterResolver)
    assert len(strategy.extended.worker_devices) == 8
    assert strategy.extended.num_hosts == 1
    with strategy.scope():
        variable = tf.Variable(1.0)
        assert tf.distribute.get_strategy() is strategy
    assert type(variable).__name__ == "MirroredVariable"
    assert len(strategy.experimental_local_results(variable)) == 8


def test_class_name_is_not_taken_for_a_real_tpu_by_keras(strategy):
    # tf-keras picks TPU-only code paths by class-name prefix.
    assert not any(c.__name__.startswith("TPUStrategy") for c in type(strategy).__mro__)


@pytest.mark.parametrize("call", ["experimental_run_v2", "run"])
def test_run_eagerly_and_in_tf_function(strategy, call):
    batch = next(iter(_range_batches(strategy, 16, 16)))
    method = getattr(strategy, call)
    eager = method(lambda x: x * 2.0, args=(batch,))
    traced = tf.function(lambda b: method(lambda x: x * 2.0, args=(b,)))(batch)
    for result in (eager, traced):
        values = [v.numpy().tolist() for v in strategy.experimental_local_results(result)]
        assert values == [[2.0 * (2 * i), 2.0 * (2 * i + 1)] for i in range(8)]


@pytest.mark.parametrize("convention", ["tuple", "list", "positional", "keyword_fn", "no_args"])
def test_experimental_run_v2_calling_conventions(strategy, convention):
    value = next(iter(_range_batches(strategy, 8, 8)))
    fn = lambda x=tf.constant([1.0]): tf.reduce_sum(x)  # noqa: E731
    calls = {
        "tuple": lambda: strategy.experimental_run_v2(fn, args=(value,)),
        "list": lambda: strategy.experimental_run_v2(fn, args=[value]),
        "positional": lambda: strategy.experimental_run_v2(fn, value),
        "keyword_fn": lambda: strategy.experimental_run_v2(fn=fn, args=(value,)),
        "no_args": lambda: strategy.experimental_run_v2(fn),
    }
    total = strategy.reduce("SUM", calls[convention](), axis=None)
    assert float(total) == (8.0 if convention == "no_args" else 28.0)


def test_experimental_run_v2_inside_tf_range_loop(strategy):
    with strategy.scope():
        counter = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

    @tf.function
    def loop(n):
        for _ in tf.range(n):
            strategy.experimental_run_v2(lambda: counter.assign_add(1.0))
        return counter.read_value()

    assert float(loop(tf.constant(5))) == 5.0


def test_reduce_without_axis_warns_and_means_axis_none(strategy):
    values = strategy.run(lambda: tf.constant([1.0, 2.0]))
    with pytest.warns(DeprecationWarning, match=r"reduce without axis .*\[TPC002\]"):
        summed = strategy.reduce(tf.distribute.ReduceOp.SUM, values)
    assert summed.numpy().tolist() == [8.0, 16.0]
    assert float(strategy.reduce("MEAN", values, axis=0)) == 1.5


def test_experimental_make_numpy_dataset(strategy):
    with pytest.warns(DeprecationWarning, match="TPC004"):
        dataset = strategy.experimental_make_numpy_dataset(np.ones([10], dtype=np.float32))
    assert dataset.element_spec == tf.TensorSpec([], tf.float32)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset.batch(8))))
    assert float(strategy.reduce("SUM", batch, axis=0)) == 8.0


def _pipeline(distributed):
    """Type names of the datasets feeding a TF DistributedDataset, outermost first."""
    (dataset,) = distributed._cloned_datasets  # pylint: disable=protected-access
    names = []
    while dataset is not None:
        names.append(type(dataset).__name__)
        dataset = getattr(dataset, "_input_dataset", None)
    return names


def test_full_batches_are_split_by_tensorflows_own_prefetched_pipeline(strategy):
    # Issue #32: with every batch full the legacy split is TF 2.21's, so the
    # adapter hands the dataset to TensorFlow's pipeline, whose rebatch is
    # prefetched (one element per replica), as a native MirroredStrategy's fit
    # reads it; the per-replica pipeline of the legacy split had no prefetch and
    # Keras fit with steps_per_run ran slower than native steps_per_execution.
    full = tf.data.Dataset.range(64).batch(16, drop_remainder=True)
    distributed = strategy.experimental_distribute_dataset(full)
    assert type(distributed).__name__ == "DistributedDataset"
    pipeline = _pipeline(distributed)
    assert pipeline.index("_PrefetchDataset") == pipeline.index("_RebatchDataset") - 1
    batches = [[t.numpy().tolist() for t in strategy.experimental_local_results(batch)]
               for batch in distributed]
    assert batches == [[[16 * step + 2 * replica, 16 * step + 2 * replica + 1]
                        for replica in range(8)] for step in range(4)]
    assert distributed.element_spec._value_specs[0].shape == [2]  # pylint: disable=protected-access
    # A last partial batch keeps TF 2.0-2.3's split (test_strict: [4, 2] on 2 replicas).
    partial = strategy.experimental_distribute_dataset(tf.data.Dataset.range(60).batch(16))
    assert type(partial).__name__ == "DistributedDatasetsFromFunction"


def test_datasets_from_function_and_input_context(strategy):
    seen = []

    def dataset_fn(input_context):
        seen.append((input_context.num_input_pipelines, input_context.input_pipeline_id,
                     input_context.get_per_replica_batch_size(16)))
        return tf.data.Dataset.from_tensors([[1.0]]).repeat().batch(2)

    with pytest.warns(DeprecationWarning, match="TPC003"):
        legacy = strategy.experimental_distribute_datasets_from_function(dataset_fn)
    modern = strategy.distribute_datasets_from_function(dataset_fn)
    assert seen == [(1, 0, 2), (1, 0, 2)]
    for distributed in (legacy, modern):
        batch = next(iter(distributed))
        assert strategy.reduce("SUM", batch, axis=0).numpy().tolist() == [[16.0]]


def test_values_from_function(strategy):
    array = np.arange(8, dtype=np.float32) * 10
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: array[ctx.replica_id_in_sync_group])
    assert [float(v) for v in strategy.experimental_local_results(values)] == array.tolist()
    doubled = strategy.run(lambda v: v * 2, args=(values,))
    assert float(strategy.reduce("SUM", doubled, axis=None)) == 2 * array.sum()


def test_update_config_proto_shows_every_emulated_core(strategy):
    config = strategy.update_config_proto(tf.compat.v1.ConfigProto())
    assert config.device_count["CPU"] == 8


def test_experimental_class_warns_and_maps_device_assignment(tpu8):
    del tpu8
    resolver = TPUClusterResolver(tpu="")
    topology = resolver_lib.initialize_tpu_system(resolver)
    assignment = tf.tpu.experimental.DeviceAssignment.build(
        topology, computation_shape=[1, 1, 1, 2], num_replicas=4)
    with pytest.warns(DeprecationWarning, match="TPC005"):
        strategy = ExperimentalTPUStrategy(resolver, device_assignment=assignment)
    assert strategy.num_replicas_in_sync == 4


class TestLogicalDevices:

    @pytest.fixture(scope="class")
    def model_parallel(self, tpu8):
        del tpu8
        resolver = TPUClusterResolver(tpu="")
        topology = resolver_lib.initialize_tpu_system(resolver)
        assignment = tf.tpu.experimental.DeviceAssignment.build(
            topology, computation_shape=[1, 1, 1, 2], num_replicas=4)
        return TPUStrategy(resolver, experimental_device_assignment=assignment)

    def test_topology_and_assignment(self, model_parallel):
        assert list(resolver_lib.initialize_tpu_system(None).mesh_shape) == [1, 2, 2, 2]
        assert model_parallel.num_replicas_in_sync == 4

    def test_annotations_return_the_value(self, model_parallel):
        x = tf.ones([4, 8, 6, 2])
        assert model_parallel.experimental_assign_to_logical_device(x, 1) is x
        assert model_parallel.experimental_split_to_logical_devices(x, [1, 2, 1, 1]) is x
        assert model_parallel.experimental_replicate_to_logical_devices(x) is x

    @pytest.mark.parametrize("call,message", [
        (lambda s, x: s.experimental_assign_to_logical_device(x, 2),
         r"`logical_device_id` must be in \[0, 2\).*Received logical device id 2"),
        (lambda s, x: s.experimental_assign_to_logical_device(x, -1),
         r"Received logical device id -1"),
        (lambda s, x: s.experimental_split_to_logical_devices(x, [1, 2]),
         r"Length of `partition_dimensions` must equal the rank of `tensor.shape` \(4\)"),
        (lambda s, x: s.experimental_split_to_logical_devices(x, [1, 2, 2, 1]),
         r"product of `partition_dimensions` must equal the number of logical devices "
         r"per replica \(=2\).*product is 4"),
        (lambda s, x: s.experimental_split_to_logical_devices(x, [1, 1, 1, 4]),
         r"`partition_dimensions\[3\]` must be divisible .* \(4\)\. Received: 2"),
    ], ids=["id-too-large", "id-negative", "rank", "product", "divisible"])
    def test_annotations_validate_like_tensorflow(self, model_parallel, call, message):
        with pytest.raises(ValueError, match=message):
            call(model_parallel, tf.ones([4, 8, 6, 2]))

    def test_impossible_assignment_fails_with_tensorflows_error(self, tpu8):
        topology = resolver_lib.initialize_tpu_system(None)
        with pytest.raises(ValueError, match="requested 16 replicas but only 8 replicas"):
            tf.tpu.experimental.DeviceAssignment.build(topology, num_replicas=16)
        with pytest.raises(ValueError, match="does not fit in TPU topology shape"):
            tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1, 1, 1, 3])


def test_checkpoint_round_trip_with_unstrategied_and_mirrored(strategy, tmp_path):
    with strategy.scope():
        trained = tf.Variable([1.0, 2.0, 3.0])
    trained.assign([4.0, 5.0, 6.0])
    path = tf.train.Checkpoint(v=trained).save(str(tmp_path / "adapter"))
    plain = tf.Variable([0.0, 0.0, 0.0])
    tf.train.Checkpoint(v=plain).restore(path).assert_consumed()
    assert plain.numpy().tolist() == [4.0, 5.0, 6.0]
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with mirrored.scope():
        native = tf.Variable([0.0, 0.0, 0.0])
    tf.train.Checkpoint(v=native).restore(path).assert_consumed()
    assert native.numpy().tolist() == [4.0, 5.0, 6.0]
    native.assign([7.0, 8.0, 9.0])
    back = tf.train.Checkpoint(v=native).save(str(tmp_path / "native"))
    tf.train.Checkpoint(v=trained).restore(back).assert_consumed()
    assert all(v.numpy().tolist() == [7.0, 8.0, 9.0]
               for v in strategy.experimental_local_results(trained))
