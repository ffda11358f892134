"""TF 1.15 ``tf.compat.v1.distribute.experimental.TPUStrategy``.

Signature ``(tpu_cluster_resolver=None, steps_per_run=None,
device_assignment=None)``, graph and eager mode, with the whole TF 1.15
surface: ``make_dataset_iterator``, ``make_input_fn_iterator``,
``experimental_run``, ``experimental_run_v2``, ``reduce`` without ``axis``,
``experimental_initialize``/``experimental_finalize``, ``unwrap``,
``extended.experimental_run_steps_on_iterator`` with ``steps_per_run`` steps
per host call. On a real TPU it is TensorFlow's ``TPUStrategyV1``; on the
emulated TPU, ``MirroredStrategyV1`` over the emulated cores.
"""

import numbers

import tensorflow as tf

from tpu_compat._tf_internals import (
    distribute_lib, distribute_utils, mirrored_strategy, tpu_strategy)
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import emulated
from tpu_compat.runtime import hooks
from tpu_compat.runtime import resolver as resolver_lib
from tpu_compat.runtime.adapter import (
    CompatStrategyMixin, global_batch_size, static_batch_size)

__all__ = ["CompatTPUStrategyV1", "validate_steps_per_run"]


def validate_steps_per_run(steps_per_run):
    """``None`` means 1; anything but a positive int is a ValueError."""
    if steps_per_run is None:
        return 1
    if isinstance(steps_per_run, bool) or not isinstance(
            steps_per_run, numbers.Integral) or steps_per_run < 1:
        raise ValueError(
            f"steps_per_run must be a positive int (or None for 1), got "
            f"{steps_per_run!r}")
    return int(steps_per_run)


def _batch_divides_check(replicas, advice):
    """A dataset map asserting each batch splits evenly (a TPU needs that)."""
    def check(*element):
        first = tf.nest.flatten(element)[0]
        size = tf.shape(first)[0]
        with tf.control_dependencies([tf.compat.v1.assert_equal(
                size % replicas, 0, message=(
                    f"make_dataset_iterator: a global batch does not divide "
                    f"across {replicas} replicas; {advice}. Batch size:"),
                data=[size])]):
            element = tf.nest.map_structure(tf.identity, element)
        return element if len(element) > 1 else element[0]
    return check


class _OneShotDistributedIterator:
    """TF 1.15's graph-mode ``make_one_shot_iterator()`` of a distributed dataset.

    TF 2.21 refuses one-shot iterators of distributed datasets in graph mode.
    This one reads per-replica batches from one host-side one-shot iterator:
    replica ``i`` gets the ``i``-th per-replica slice of each global batch (the
    ``get_next`` ops are chained, so the order is fixed), and it needs no
    initialization, as in TF 1.15.
    """

    def __init__(self, strategy, dataset):
        replicas = strategy.num_replicas_in_sync
        global_batch = global_batch_size(dataset, replicas)
        if global_batch is None or global_batch % replicas:
            raise ValueError(
                f"make_one_shot_iterator: cannot split the dataset's global "
                f"batch ({global_batch or 'unknown'}) evenly across {replicas} "
                f"replicas; use make_initializable_iterator()")
        self._iterator = tf.compat.v1.data.make_one_shot_iterator(
            dataset.rebatch(global_batch // replicas))
        self._devices = strategy.extended.worker_devices
        self.initializer = tf.no_op(name="one_shot_distributed_iterator_init")

    def initialize(self):
        return []

    @property
    def output_types(self):
        return tf.compat.v1.data.get_output_types(self._iterator)

    @property
    def output_shapes(self):
        return tf.compat.v1.data.get_output_shapes(self._iterator)

    @property
    def output_classes(self):
        return tf.compat.v1.data.get_output_classes(self._iterator)

    @property
    def element_spec(self):
        return self._iterator.element_spec

    def get_next(self, name=None):
        del name
        per_replica, previous = [], []
        for device in self._devices:
            with tf.device(device), tf.control_dependencies(previous):
                element = tf.nest.map_structure(tf.identity, self._iterator.get_next())
            per_replica.append(element)
            previous = tf.nest.flatten(element)
        return distribute_utils.regroup(per_replica)


class _GraphDistributedDataset:
    """A TF 2.21 ``DistributedDatasetV1`` that also has TF 1.15's one-shot iterator."""

    def __init__(self, distributed, strategy, dataset):
        self._distributed = distributed
        self._strategy = strategy
        self._dataset = dataset

    def make_one_shot_iterator(self):
        with self._strategy.scope():
            return _OneShotDistributedIterator(self._strategy, self._dataset)

    def __iter__(self):
        return iter(self._distributed)

    def __getattr__(self, name):
        return getattr(self._distributed, name)


class CompatTPUStrategyV1(CompatStrategyMixin, distribute_lib.StrategyV1):
    """TF 1.15's TPUStrategy, on a real or an emulated TPU."""

    @staticmethod
    def _native_classes():
        return mirrored_strategy.MirroredStrategyV1, tpu_strategy.TPUStrategyV1

    def __init__(self, tpu_cluster_resolver=None, steps_per_run=None,
                 device_assignment=None):
        steps = validate_steps_per_run(steps_per_run)
        self._check_device_assignment(device_assignment, "device_assignment")
        if (device_assignment is not None
                and device_assignment.num_cores_per_replica != 1):
            # TF 1.15's TPUStrategy only supported one core per replica.
            raise ValueError(
                f"device_assignment has {device_assignment.num_cores_per_replica} "
                f"cores per replica, but the TF 1.15 TPUStrategy supports only "
                f"one core per replica; use tf.distribute.TPUStrategy(resolver, "
                f"experimental_device_assignment=...) for model parallelism")
        self._tpu_compat_backend = backend_lib.get_backend()
        resolver = self._resolve(tpu_cluster_resolver)
        if self._tpu_compat_backend.emulated:
            extended = emulated.EmulatedTPUExtended(
                self, emulated.replica_devices(self._tpu_compat_backend,
                                               device_assignment),
                cluster_resolver=resolver, device_assignment=device_assignment,
                steps_per_run=steps)
            distribute_lib.StrategyV1.__init__(self, extended)
        else:
            self._tpu_compat_native.__init__(
                self, resolver, steps_per_run=steps,
                device_assignment=device_assignment)

    @property
    def cluster_resolver(self):
        # TF 2.21's TPUStrategyV1 returns None here (it looks up the wrong
        # attribute); TF 1.15 code expects the resolver.
        return self.extended._tpu_cluster_resolver  # pylint: disable=protected-access

    @property
    def steps_per_run(self):
        """DEPRECATED: use ``.extended.steps_per_run`` instead."""
        return self.extended.steps_per_run

    # -- TF 1.x input iterators ------------------------------------------------

    def make_dataset_iterator(self, dataset):
        """An input iterator splitting each global batch across the replicas."""
        replicas = self.num_replicas_in_sync
        advice = (f"use a global batch size that is a multiple of {replicas} "
                  f"(with drop_remainder=True), or make_input_fn_iterator to "
                  f"batch per replica yourself")
        batch = static_batch_size(dataset)
        if batch is not None and batch % replicas:
            raise ValueError(
                f"make_dataset_iterator: the dataset's global batch size {batch} "
                f"does not divide across {replicas} replicas; {advice}")
        if batch is None and replicas > 1:
            dataset = dataset.map(_batch_divides_check(replicas, advice))
        return super().make_dataset_iterator(dataset)

    def make_input_fn_iterator(
            self, input_fn,
            replication_mode=distribute_lib.InputReplicationMode.PER_WORKER):
        """An input iterator from ``input_fn(tf.distribute.InputContext)``."""
        if not callable(input_fn):
            raise TypeError(f"make_input_fn_iterator: input_fn must be callable, "
                            f"got {type(input_fn).__name__}")
        return super().make_input_fn_iterator(input_fn,
                                              replication_mode=replication_mode)

    def experimental_distribute_dataset(self, dataset, options=None):
        """A distributed dataset; in graph mode with TF 1.15's iterator methods."""
        distributed = super().experimental_distribute_dataset(dataset, options=options)
        if tf.executing_eagerly() or tf.inside_function():
            return distributed
        return _GraphDistributedDataset(distributed, self, dataset)

    def experimental_run(self, fn, input_iterator=None):
        """Runs ``fn`` on each replica with one ``get_next()`` of the iterator."""
        if not callable(fn):
            raise TypeError(
                f"experimental_run: fn must be callable, got {type(fn).__name__}")
        with self.scope():
            args = ((input_iterator.get_next(),)
                    if input_iterator is not None else ())
        return self._legacy_run(fn, args=args)

    # -- TF 1.13's system set-up methods (removed in TF 1.14) -------------------

    def experimental_initialize(self):
        """Initialization before any computation.

        Graph mode: returns the ops to run (the TPU system initialization on a
        real TPU; on the emulated TPU, an op yielding the emulated topology).
        Eager: performs it and returns an empty list.
        """
        resolver = self.cluster_resolver
        if tf.executing_eagerly():
            resolver_lib.initialize_tpu_system(resolver)
            return []
        return [resolver_lib.initialize_system()]

    def experimental_finalize(self):
        """Shutdown after all computation (graph: ops; eager: done, ``[]``)."""
        if tf.executing_eagerly():
            resolver_lib.shutdown_tpu_system(self.cluster_resolver)
            return []
        return [resolver_lib.shutdown_system()]

hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
