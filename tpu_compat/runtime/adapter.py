"""What every TPU-strategy adapter shares.

An adapter is a public class (``CompatTPUStrategy``, ``CompatTPUStrategyV1``,
...) with the legacy constructor signature and the legacy methods. Calling it
builds an instance of a concrete class that mixes the adapter into the native
strategy the backend needs:

* real TPU: the adapter over TensorFlow's ``TPUStrategyV2`` / ``TPUStrategyV1``;
* emulated: the adapter over ``MirroredStrategy`` / ``MirroredStrategyV1``
  whose extended is :class:`~tpu_compat.runtime.emulated.EmulatedTPUExtended`.

So an adapter *is* a ``tf.distribute.Strategy``: ``scope()``, variables,
checkpoints, Keras and ``tf.distribute.get_strategy()`` all see one object,
and every modern method is TensorFlow's own. Nothing above the backend knows
which hardware it runs on.
"""

import functools
import threading
import weakref

import numpy as np
import tensorflow as tf

from tpu_compat._tf_internals import def_function, tf_data_distribute
from tpu_compat.runtime import autograph_rules
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import hooks
from tpu_compat.runtime import resolver as resolver_lib
from tpu_compat.runtime import strict

__all__ = ["CompatStrategyMixin", "MISSING", "concrete_class"]


class _Missing:
    def __repr__(self):
        return "<not given>"


MISSING = _Missing()

_concrete_lock = threading.Lock()
_concrete_classes = {}


def concrete_class(adapter_cls, native_cls):
    """The class mixing ``adapter_cls`` into ``native_cls`` (built once)."""
    key = (adapter_cls, native_cls)
    with _concrete_lock:
        if key not in _concrete_classes:
            name = f"{adapter_cls.__name__}On{native_cls.__name__}"
            _concrete_classes[key] = type(name, (adapter_cls, native_cls), {
                "__module__": adapter_cls.__module__,
                "__doc__": adapter_cls.__doc__,
                "_tpu_compat_concrete": True,
                # The native strategy whose __init__ builds a real-TPU
                # instance; contract tests substitute a stand-in here.
                "_tpu_compat_native": native_cls,
            })
        return _concrete_classes[key]


def static_batch_size(dataset):
    """The leading dimension every element of ``dataset`` has, if static."""
    sizes = set()
    for spec in tf.nest.flatten(dataset.element_spec):
        shape = getattr(spec, "shape", None)
        if shape is None or shape.rank in (None, 0):
            return None
        sizes.add(tf.compat.dimension_value(shape[0]))
    sizes.discard(None)
    return sizes.pop() if len(sizes) == 1 else None


def _graph_batch_size(dataset):
    """The batch size of the last ``batch()`` before ``dataset``, read statically.

    Follows the chain of unary datasets (map, prefetch, ...) back to the batch
    dataset and reads its constant batch size: what TF's ``ComputeBatchSize``
    op computes when run.
    """
    static = static_batch_size(dataset)
    if static is not None:
        return static
    while dataset is not None:
        batch_size = getattr(dataset, "_batch_size", None)
        if batch_size is not None:
            value = tf.get_static_value(batch_size)
            return int(value) if value is not None else None
        # DatasetV1Adapter (graph-mode datasets) wraps the real one.
        dataset = getattr(dataset, "_input_dataset", None) or getattr(
            dataset, "_dataset", None)
    return None


def global_batch_size(dataset, replicas):
    """The batch size of ``dataset``'s batching op, or None if unknown.

    Raises the ValueError TF 1.x gave (TF 2.21 fails with an opaque
    IndexError) when an unbatched dataset is to be split across replicas.
    """
    if not tf.executing_eagerly():
        # compute_batch_size is a dataset op; in a graph it has no value yet.
        return _graph_batch_size(dataset)
    try:
        size = int(tf_data_distribute.compute_batch_size(dataset))
    except IndexError:  # scalar elements: nothing to split
        if replicas > 1:
            raise ValueError(
                f"experimental_distribute_dataset: the dataset is not batched, so "
                f"it cannot be split across {replicas} replicas; call "
                f"dataset.batch(global_batch_size) on it first") from None
        return None
    except Exception:  # pylint: disable=broad-except
        return None  # leave it to TensorFlow's own distribution code
    # -1 only means "not known statically" (e.g. Keras's batches of a NumPy
    # array with a partial last batch): TensorFlow's own code splits those.
    return size if size > 0 else None


def _is_tf_function(fn):
    return isinstance(fn, def_function.Function) or hasattr(
        fn, "get_concrete_function")


def _as_tf_function(fn):
    """The ``tf.function`` that ``fn`` runs, or None.

    ``fn`` is a ``tf.function``, an object whose ``__call__`` is one, or
    TensorFlow's ``functools.partial`` of either (variables bound by name).
    MirroredStrategy traces the body of a ``tf.function`` once for all
    replicas; called per replica instead, a ``merge_call`` inside it (as in
    ``optimizer.apply_gradients``) fails, where a TPU runs it.
    """
    if isinstance(fn, def_function.Function):
        return fn
    call = getattr(fn, "__call__", None)
    if isinstance(call, def_function.Function):
        return call
    if isinstance(fn, functools.partial):
        inner = _as_tf_function(fn.func)
        if inner is not None:
            return tf.function(functools.partial(
                inner.python_function, *fn.args, **fn.keywords))
    return None


class CompatStrategyMixin:
    """Methods shared by all adapters; the native strategy comes later in the MRO.

    Subclasses set ``_native_classes = (emulated_native, tpu_native)`` and
    implement ``_init_emulated`` / ``_init_tpu``.
    """

    _native_classes = None  # (emulated base, real-TPU base), set by subclasses

    def __new__(cls, *args, **kwargs):
        del args, kwargs  # consumed by __init__
        if getattr(cls, "_tpu_compat_concrete", False):
            return object.__new__(cls)
        # Without install() nothing else keeps autograph out of our methods.
        autograph_rules.ensure_excluded()
        emulated_base, tpu_base = cls._native_classes()
        backend = backend_lib.get_backend()
        native = emulated_base if backend.emulated else tpu_base
        return object.__new__(concrete_class(cls, native))

    # -- construction helpers -------------------------------------------------

    @staticmethod
    def _resolve(tpu_cluster_resolver):
        """The resolver to use: the given one, or TF's default ``TPUClusterResolver('')``."""
        if tpu_cluster_resolver is None:
            return resolver_lib.TPUClusterResolver("")
        return tpu_cluster_resolver

    @staticmethod
    def _check_device_assignment(device_assignment, argument_name):
        if device_assignment is not None and not isinstance(
                device_assignment, tf.tpu.experimental.DeviceAssignment):
            raise TypeError(
                f"{argument_name} must be a tf.tpu.experimental.DeviceAssignment "
                f"or None, got {type(device_assignment).__name__}")

    @property
    def tpu_compat_backend(self):
        """The :class:`~tpu_compat.runtime.backend.Backend` this strategy runs on."""
        return self._tpu_compat_backend

    # -- run: TF 1.15/2.0 TPU semantics for plain Python functions -------------

    def run(self, fn, args=(), kwargs=None, options=None):
        """``Strategy.run``; eagerly, a plain Python ``fn`` is traced once.

        TF 1.15/2.0 TPU strategies wrapped a plain step function in a cached
        ``tf.function`` when called eagerly; TF 2.21's TPU strategy raises
        ``NotImplementedError`` instead. Adapters restore the old behaviour on
        both backends, so eager legacy code gets TPU (traced) semantics; in
        strict mode (:mod:`tpu_compat.runtime.strict`) ``run`` is TF 2.21's.
        """
        if strict.enabled():
            return self._strict_run(fn, args, kwargs, options)
        return self._legacy_run(fn, args, kwargs, options)

    def _legacy_run(self, fn, args=(), kwargs=None, options=None):
        """``run`` as the TF 1.15/2.0 entry points had it, in every mode."""
        if not callable(fn):
            raise TypeError(
                f"run: fn must be callable, got {type(fn).__name__}")
        args = () if args is None else args
        if not isinstance(args, (tuple, list)):
            args = (args,)  # TF 2.0-era code passed a single value
        if _is_tf_function(fn):
            return super().run(fn, args=tuple(args), kwargs=kwargs, options=options)
        if tf.executing_eagerly():
            return self._traced_run(fn)(tuple(args), kwargs or {}, options)
        return super().run(self._wrap_emulated_outputs(fn), args=tuple(args),
                           kwargs=kwargs, options=options)

    def _strict_run(self, fn, args, kwargs, options):
        """TF 2.21's ``TPUStrategy.run``: its checks, then one traced replica step."""
        if not self._tpu_compat_backend.emulated:
            return super().run(fn, args=args, kwargs=kwargs, options=options)
        fn, args, kwargs, options = strict.prepare_run(fn, args, kwargs, options)
        if tf.executing_eagerly():
            # A TPU traces every eager run (of a tf.function) into one program.
            traced = _as_tf_function(fn)
            if traced is not None:
                return super().run(traced, args=args, kwargs=kwargs, options=options)
            return self._traced_run(fn)(args, kwargs, options)  # a ConcreteFunction
        return super().run(self._wrap_emulated_outputs(fn), args=args,
                           kwargs=kwargs, options=options)

    def _traced_run(self, fn):
        cache = self.__dict__.setdefault("_tpu_compat_traced_runs",
                                         weakref.WeakKeyDictionary())
        key = getattr(fn, "__func__", fn)  # bound methods are made anew each time
        owner = getattr(fn, "__self__", None)
        try:
            per_owner = cache.setdefault(key, {})
        except TypeError:
            per_owner = {}
        traced = per_owner.get(id(owner))
        if traced is None:
            native_run = super().run

            def replicated(args, kwargs, options):
                return native_run(self._wrap_emulated_outputs(fn), args=args,
                                  kwargs=kwargs, options=options)

            traced = tf.function(replicated)
            per_owner[id(owner)] = traced
        return traced

    def _wrap_emulated_outputs(self, fn):
        """On a TPU, every replica's outputs are tensors; make the emulator agree.

        MirroredStrategy regroups identical Python values from all replicas
        into one value, so ``run(lambda v: v * 2, ...)`` on an int would give
        one result instead of one per replica.
        """
        if not self._tpu_compat_backend.emulated:
            return fn

        def with_tensor_outputs(*args, **kwargs):
            outputs = fn(*args, **kwargs)
            return tf.nest.map_structure(
                lambda v: tf.convert_to_tensor(v)
                if isinstance(v, (int, float, np.number, np.ndarray))
                and not isinstance(v, bool) else v, outputs)

        return with_tensor_outputs

    # -- input: TF 2.0's split of a global batch --------------------------------

    def experimental_distribute_dataset(self, dataset, options=None):
        """Splits each global batch across the replicas, as TF 2.0-2.3 did.

        TF 2.0-2.3 (and the seed documentation) split a global batch of B into
        per-replica batches of B / n in order, so a last partial batch of 6 on
        2 replicas with B = 8 is ``[4, 2]``; TF 2.21 splits it ``[3, 3]``. On the
        emulated TPU, eagerly and with default options, legacy programs get the
        legacy split. A dataset with no batch cannot be split at all. In
        strict mode the split is TF 2.21's.
        """
        replicas = self.num_replicas_in_sync
        if (not self._tpu_compat_backend.emulated or options is not None
                or replicas == 1 or not tf.executing_eagerly()
                or strict.enabled()):  # TF 2.21's split, as on a TPU
            return super().experimental_distribute_dataset(dataset, options=options)
        global_batch = global_batch_size(dataset, replicas)
        if global_batch is None or global_batch % replicas:
            return super().experimental_distribute_dataset(dataset, options=options)
        per_replica = global_batch // replicas
        static = static_batch_size(dataset) == global_batch
        hosts = self.extended.input_host_devices
        if static and len(hosts) == 1:
            # Every batch is full: the legacy split and TF 2.21's are the same
            # (replica r gets rows [r*B/n, (r+1)*B/n) of each global batch, with
            # the same static shapes), so TensorFlow's own pipeline is used, as
            # a native MirroredStrategy's fit uses it: its rebatch is followed
            # by a prefetch of one element per replica, which the per-replica
            # pipeline below has not (issue #32: Keras fit with steps_per_run
            # ran at 0.90-0.94x of native steps_per_execution).
            return super().experimental_distribute_dataset(dataset, options=options)
        if len(hosts) > 1:
            # An emulated pod: the dataset was made in this process (the
            # chief) and a dataset cannot be sent to another process, so each
            # host gets a copy rebuilt from its graph, as TF's input_lib does.
            on_host = tf_data_distribute.replicate(dataset, hosts)

        def per_replica_batches(input_context):
            if len(hosts) == 1:  # one input pipeline: replicas take turns
                return dataset.rebatch(per_replica, drop_remainder=static)
            # A pod's TPUExtended cut each global batch into per-replica
            # batches and then auto-sharded them by data over the hosts (the
            # shard comes after the rebatch), so host h takes every H-th
            # per-replica batch: its replica j gets per-replica batch h + H*j
            # of each global batch. TF 2.21's own pod split orders them so too.
            host = input_context.input_pipeline_id
            return on_host[hosts[host]].rebatch(per_replica, drop_remainder=static).shard(
                input_context.num_input_pipelines, host)

        return self.distribute_datasets_from_function(per_replica_batches)

    # -- methods TensorFlow removed from tf.distribute.Strategy ----------------
    # Each warns through its record's hook (legacy_api), not by itself.

    def experimental_run_v2(self, fn, args=(), kwargs=None):
        """TF 2.0-2.3 name of :meth:`run` (removed in TF 2.4)."""
        return self._legacy_run(fn, args=args, kwargs=kwargs)

    def reduce(self, reduce_op, value, axis=MISSING):
        """``Strategy.reduce``; a legacy call without ``axis`` means ``axis=None``."""
        if axis is MISSING:
            axis = None
        return super().reduce(reduce_op, value, axis=axis)

    def experimental_make_numpy_dataset(self, numpy_input, session=None):
        """Removed in TF 2.4: a ``tf.data.Dataset`` of ``numpy_input``'s rows."""
        if session is not None or not tf.executing_eagerly():
            # compat.v1 strategies still implement the graph-mode variant
            # (a variable fed once from the session).
            return self.extended.experimental_make_numpy_dataset(
                numpy_input, session=session)
        return tf.data.Dataset.from_tensor_slices(numpy_input)

    def experimental_distribute_datasets_from_function(self, dataset_fn,
                                                       options=None):
        """Deprecated alias of ``distribute_datasets_from_function``."""
        return self.distribute_datasets_from_function(dataset_fn, options=options)

    def unwrap(self, value):
        """TF 1.x name of :meth:`experimental_local_results`."""
        return self.experimental_local_results(value)

    def experimental_distribute_values_from_function(self, value_fn):
        """``tf.distribute.Strategy`` API; also given to compat.v1 adapters."""
        return self.extended._experimental_distribute_values_from_function(  # pylint: disable=protected-access
            value_fn)

    # -- the emulated strategy's session needs to see every emulated core -----

    def update_config_proto(self, config_proto):
        updated = super().update_config_proto(config_proto)
        backend = self._tpu_compat_backend
        if backend.emulated:
            # A Session created with an explicit ConfigProto sees only CPU:0
            # unless device_count says otherwise (graph mode gotcha).
            kind = backend.kind.upper()
            if updated.device_count.get(kind, 0) < len(backend.devices):
                updated.device_count[kind] = len(backend.devices)
        return updated

    # -- logical-device annotations (model parallelism) ------------------------

    def _logical_devices_per_replica(self):
        if self._tpu_compat_backend.emulated:
            return self.extended.num_logical_devices_per_replica
        return self.extended._tpu_devices.shape[1]  # pylint: disable=protected-access

hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
