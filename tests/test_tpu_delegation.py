"""Contract tests: on a real TPU, every legacy method reaches the right modern one.

There is no TPU here, so each adapter is mixed into a stand-in for TensorFlow's
TPU strategy: a MirroredStrategy on the logical CPUs with the TPU strategy's
constructor signature and logical-device methods. The backend is told it is
a real TPU, so the adapters take exactly the code paths they take on one, and
``mock`` records what reaches the native strategy.
"""

from unittest import mock

import pytest
import tensorflow as tf
from tensorflow.python.distribute import mirrored_strategy

from tpu_compat.runtime import adapter
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import resolver as resolver_lib
from tpu_compat.runtime.strategy_v1 import CompatTPUStrategyV1
from tpu_compat.runtime.strategy_v2 import CompatExperimentalTPUStrategy, CompatTPUStrategy

pytestmark = [pytest.mark.requires_tf, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REAL_TPU = backend_lib.Backend("tpu", 8, (), "contract test: a stand-in TPU")


class _StandInResolver:
    """What a real TPUClusterResolver is to the adapters: an opaque object."""

    def master(self):
        return "grpc://stand-in:8470"


class StandInTPUStrategyV2(mirrored_strategy.MirroredStrategy):
    """TPUStrategyV2's constructor and annotation API, Mirrored underneath."""

    def __init__(self, tpu_cluster_resolver=None, experimental_device_assignment=None,
                 experimental_spmd_xla_partitioning=False):
        self.native_init = (tpu_cluster_resolver, experimental_device_assignment,
                            experimental_spmd_xla_partitioning)
        super().__init__([f"/cpu:{i}" for i in range(8)])
        self.extended._tpu_cluster_resolver = tpu_cluster_resolver

    def experimental_assign_to_logical_device(self, tensor, logical_device_id):
        return ("assign", tensor, logical_device_id)

    def experimental_split_to_logical_devices(self, tensor, partition_dimensions):
        return ("split", tensor, partition_dimensions)

    def experimental_replicate_to_logical_devices(self, tensor):
        return ("replicate", tensor)


class StandInTPUStrategyV1(mirrored_strategy.MirroredStrategyV1):
    """TPUStrategyV1's constructor, Mirrored underneath."""

    def __init__(self, tpu_cluster_resolver=None, steps_per_run=None, device_assignment=None):
        self.native_init = (tpu_cluster_resolver, steps_per_run, device_assignment)
        super().__init__([f"/cpu:{i}" for i in range(8)])
        self.extended._tpu_cluster_resolver = tpu_cluster_resolver
        self.extended.steps_per_run = steps_per_run


@pytest.fixture
def real_tpu(tpu8, monkeypatch):
    del tpu8
    monkeypatch.setattr(backend_lib, "get_backend", lambda *a, **k: REAL_TPU)


def _on_stand_in(adapter_cls, native_cls, *args, **kwargs):
    return adapter.concrete_class(adapter_cls, native_cls)(*args, **kwargs)


@pytest.fixture
def v2(real_tpu):
    return _on_stand_in(CompatTPUStrategy, StandInTPUStrategyV2, _StandInResolver())


@pytest.fixture
def v1(real_tpu):
    return _on_stand_in(CompatTPUStrategyV1, StandInTPUStrategyV1, _StandInResolver(),
                        steps_per_run=5)


def test_constructors_pass_legacy_arguments_to_the_native_ones(real_tpu):
    resolver = _StandInResolver()
    assignment = mock.create_autospec(tf.tpu.experimental.DeviceAssignment, instance=True)
    assignment.num_cores_per_replica = 1
    modern = _on_stand_in(CompatTPUStrategy, StandInTPUStrategyV2, resolver,
                          experimental_device_assignment=assignment,
                          experimental_spmd_xla_partitioning=True)
    assert modern.native_init == (resolver, assignment, True)
    experimental = _on_stand_in(CompatExperimentalTPUStrategy, StandInTPUStrategyV2,
                                resolver, device_assignment=assignment)
    assert experimental.native_init == (resolver, assignment, False)
    legacy = _on_stand_in(CompatTPUStrategyV1, StandInTPUStrategyV1, resolver, 5, assignment)
    assert legacy.native_init == (resolver, 5, assignment)
    assert modern.cluster_resolver is resolver and legacy.cluster_resolver is resolver


def test_default_resolver_is_tensorflows_empty_name(real_tpu, monkeypatch):
    made = []
    monkeypatch.setattr(resolver_lib, "TPUClusterResolver", lambda tpu: made.append(tpu) or tpu)
    _on_stand_in(CompatTPUStrategy, StandInTPUStrategyV2)
    assert made == [""]


def _step(x):
    return x * 2.0


@pytest.mark.parametrize("call", [
    lambda s, v: s.experimental_run_v2(_step, args=(v,)),
    lambda s, v: s.experimental_run_v2(_step, [v]),
    lambda s, v: s.experimental_run_v2(fn=_step, args=(v,), kwargs=None),
    lambda s, v: s.run(_step, args=(v,)),
], ids=["run_v2_tuple", "run_v2_positional_list", "run_v2_keywords", "run"])
def test_run_v2_reaches_native_run_with_the_same_function_and_args(v2, call):
    value = tf.constant(3.0)
    with mock.patch.object(StandInTPUStrategyV2, "run", autospec=True,
                           side_effect=lambda self, fn, args=(), kwargs=None, options=None:
                           fn(*args)) as native_run:
        result = call(v2, value)
    # Eagerly the adapter traces the call once (TF 1.15/2.0 TPU semantics),
    # so the native run is reached inside that trace, with the user's fn.
    (self, fn, *_), kwargs = native_run.call_args
    assert self is v2 and fn is _step
    assert len(kwargs["args"]) == 1 and kwargs["kwargs"] in (None, {})
    assert float(result) == 6.0


def test_run_inside_tf_function_is_the_native_run_unchanged(v2):
    with mock.patch.object(StandInTPUStrategyV2, "run", autospec=True,
                           return_value=tf.constant(1.0)) as native_run:
        tf.function(lambda: v2.experimental_run_v2(_step, args=(tf.constant(1.0),)))()
    native_run.assert_called_once()
    assert native_run.call_args.args[1] is _step


def test_reduce_without_axis_reaches_native_reduce_with_axis_none(v2):
    with mock.patch.object(StandInTPUStrategyV2, "reduce", autospec=True,
                           return_value="reduced") as native_reduce:
        assert v2.reduce("SUM", "value") == "reduced"
        assert v2.reduce("MEAN", "value", axis=0) == "reduced"
    assert native_reduce.call_args_list == [mock.call(v2, "SUM", "value", axis=None),
                                            mock.call(v2, "MEAN", "value", axis=0)]


def test_renamed_methods_reach_their_modern_names(v2):
    dataset_fn = lambda ctx: tf.data.Dataset.range(8)  # noqa: E731
    options = tf.distribute.InputOptions()
    with mock.patch.object(StandInTPUStrategyV2, "distribute_datasets_from_function",
                           autospec=True, return_value="dd") as modern_from_function, \
            mock.patch.object(StandInTPUStrategyV2, "experimental_local_results",
                              autospec=True, return_value=("r",)) as local_results, \
            mock.patch.object(StandInTPUStrategyV2, "experimental_distribute_dataset",
                              autospec=True, return_value="ds") as distribute_dataset:
        assert v2.experimental_distribute_datasets_from_function(dataset_fn, options) == "dd"
        assert v2.unwrap("value") == ("r",)
        assert v2.experimental_distribute_dataset("dataset") == "ds"
    modern_from_function.assert_called_once_with(v2, dataset_fn, options=options)
    local_results.assert_called_once_with(v2, "value")
    distribute_dataset.assert_called_once_with(v2, "dataset", options=None)


def test_numpy_dataset_is_a_tensor_slices_dataset(v2):
    dataset = v2.experimental_make_numpy_dataset([[1.0, 2.0], [3.0, 4.0]])
    assert [row.numpy().tolist() for row in dataset] == [[1.0, 2.0], [3.0, 4.0]]


def test_logical_device_annotations_reach_tensorflows(v2):
    tensor = tf.ones([2, 4])
    assert v2.experimental_assign_to_logical_device(tensor, 1) == ("assign", tensor, 1)
    assert v2.experimental_split_to_logical_devices(tensor, [1, 2]) == ("split", tensor, [1, 2])
    assert v2.experimental_replicate_to_logical_devices(tensor) == ("replicate", tensor)


def test_v1_iterator_methods_reach_the_native_v1_ones(v1):
    # Static batch: the dataset goes through untouched (a dynamic one gets a
    # divisibility check mapped over it first).
    dataset = tf.data.Dataset.range(16).batch(8, drop_remainder=True)
    with mock.patch.object(StandInTPUStrategyV1, "make_dataset_iterator", autospec=True,
                           return_value="it") as make_iterator, \
            mock.patch.object(StandInTPUStrategyV1, "make_input_fn_iterator", autospec=True,
                              return_value="fn_it") as make_fn_iterator:
        assert v1.make_dataset_iterator(dataset) == "it"
        input_fn = lambda ctx: dataset  # noqa: E731
        assert v1.make_input_fn_iterator(input_fn) == "fn_it"
    make_iterator.assert_called_once_with(v1, dataset)
    assert make_fn_iterator.call_args.args == (v1, input_fn)


def test_v1_experimental_run_is_native_run_on_one_get_next(v1):
    iterator = mock.Mock()
    iterator.get_next.return_value = tf.constant(2.0)
    with mock.patch.object(StandInTPUStrategyV1, "run", autospec=True,
                           side_effect=lambda self, fn, args=(), kwargs=None, options=None:
                           fn(*args)) as native_run:
        assert float(v1.experimental_run(_step, iterator)) == 4.0
    iterator.get_next.assert_called_once_with()
    assert native_run.call_args.args[1] is _step


def test_v1_steps_per_run_and_initialize_reach_tensorflow(v1, monkeypatch):
    assert v1.steps_per_run == 5
    initialized, shut_down = [], []
    monkeypatch.setattr(resolver_lib, "_native_initialize_tpu_system", initialized.append)
    monkeypatch.setattr(resolver_lib, "_native_shutdown_tpu_system", shut_down.append)
    assert v1.experimental_initialize() == [] and v1.experimental_finalize() == []
    assert initialized == [v1.cluster_resolver] and shut_down == [v1.cluster_resolver]
