"""The emulated TPU: a ``MirroredExtended`` that answers like ``TPUExtended``.

Replicas are the backend's devices (logical CPUs or local GPUs), so variables
created in ``scope()`` are mirrored, ``run`` executes once per replica and
distributed datasets split each global batch across replicas exactly as on a
TPU slice. On top of Mirrored it adds what TPU code reads from
``strategy.extended``: ``steps_per_run``, ``num_hosts``,
``num_replicas_per_host``, the logical-device layout of a device assignment,
and TF 1.15's multi-step loop (:mod:`tpu_compat.runtime.steps`).

Its class name deliberately does not start with ``TPUStrategy``/``TPUExtended``:
Keras picks TPU-only code paths by class-name prefix, and those paths need the
TPU runtime.
"""

import functools
import weakref

from tpu_compat._tf_internals import (
    cross_device_ops_lib, def_function, device_util, mirrored_strategy, numpy_dataset,
    ops, tpu_function)
from tpu_compat._tf_internals import framework_device as tf_device
from tpu_compat.runtime import hooks, steps, strict
from tpu_compat.fidelity import compile_checks, numerics_ops, tpu_semantics

__all__ = ["EmulatedTPUExtended", "group_by_host", "replica_devices"]


def replica_devices(backend, device_assignment=None):
    """The device each replica runs on.

    Without a device assignment every emulated core is a replica. With one,
    replica ``r`` runs on the device of its logical core 0 (its other logical
    cores exist only as annotations on the emulated TPU).
    """
    if device_assignment is None:
        return backend.devices
    ordinals = [int(device_assignment.tpu_ordinal(replica, 0))
                for replica in range(device_assignment.num_replicas)]
    for ordinal in ordinals:
        if ordinal >= len(backend.devices):
            raise ValueError(
                f"device_assignment places a replica on core {ordinal}, but the "
                f"emulated TPU has {len(backend.devices)} cores")
    return tuple(backend.devices[ordinal] for ordinal in ordinals)


def group_by_host(devices):
    """``((host CPU device, (its replica devices...)), ...)`` in task order."""
    hosts = {}
    for device in devices:
        spec = tf_device.DeviceSpec.from_string(device)
        host = device_util.canonicalize(
            f"/job:{spec.job or 'localhost'}/replica:{spec.replica or 0}"
            f"/task:{spec.task or 0}/device:CPU:0")
        hosts.setdefault(host, []).append(device)
    return tuple((host, tuple(host_devices)) for host, host_devices in hosts.items())


def _check_datasets_on_their_hosts(distributed):
    """On a pod, each host reads its own dataset: one pinned elsewhere cannot be read.

    dataset_fn runs under each host's device scope; a ``tf.device(...)``
    inside it (a single-host habit: ``'/job:worker/replica:0/task:0/device:CPU:0'``)
    puts every host's dataset on one host, and a dataset cannot be sent to
    another process: TensorFlow's input pipeline would fail at ``iter()``
    with "could not parse rpc response [Op:GetOptions]". Said here instead.
    """
    datasets = getattr(distributed, "_datasets", None) or ()
    workers = distributed._input_workers.worker_devices  # pylint: disable=protected-access
    for pipeline, (dataset, worker) in enumerate(zip(datasets, workers)):
        device = getattr(dataset._variant_tensor, "device", "")  # pylint: disable=protected-access
        if not device:
            continue
        built, host = (tf_device.DeviceSpec.from_string(name) for name in (device, worker))
        if (built.job, built.task or 0) != (host.job, host.task or 0):
            raise ValueError(
                f"dataset_fn built the dataset of input pipeline {pipeline} on "
                f"{device}, but that pipeline is host {host.task or 0}'s "
                f"({worker}): on a TPU pod every host reads its own dataset and "
                f"a dataset cannot be sent to another host. dataset_fn is "
                f"already called under each host's device scope: remove the "
                f"tf.device(...) around the dataset in dataset_fn")


def _with_number_of_shards(fn, number_of_shards):
    @functools.wraps(fn)
    def replica_fn(*args, **kwargs):
        context = tpu_function.get_tpu_context()
        previous = context.number_of_shards
        context.set_number_of_shards(number_of_shards)
        try:
            return fn(*args, **kwargs)
        finally:
            context.set_number_of_shards(previous)
    return replica_fn


# Checks of a graph once every replica of a step has been built in it,
# registered by the modules that need them (lowlevel/cross_replica: every
# replica's gradient of each cross-replica sum met the others'), so this module
# imports none of them.
_BUILT_CHECKS = []


def after_replicas_built(check):
    """Registers ``check(graph)``, run each time the replicas of a step are built."""
    if check not in _BUILT_CHECKS:
        _BUILT_CHECKS.append(check)


def _run_built_checks(graph):
    for check in _BUILT_CHECKS:
        check(graph)


class EmulatedTPUExtended(mirrored_strategy.MirroredExtended):
    """Extended API of an emulated TPU strategy."""

    def __init__(self, container_strategy, devices, cluster_resolver=None,
                 device_assignment=None, steps_per_run=1):
        # Reduce on one device, not with collective ops: sums are exact and in
        # replica order, and several strategies in one process (common in
        # legacy programs and notebooks) cannot collide on the collective
        # instance keys that every MirroredStrategy numbers from the same base.
        # On a pod too, by measurement (benchmarks/bench_pod.py --alternatives,
        # docs/performance.md): TF's CollectiveAllReduce over the pod's devices,
        # MultiWorkerMirroredStrategy's RING all-reduce, took 3.2 times as long
        # per loop step, and summing within each host first was slower too.
        hosts = group_by_host(devices)
        # MirroredExtended refuses devices of several workers in eager mode
        # (its in-graph multi-worker path is gone), so it is built on the
        # first host and then given the pod's layout, as TPUExtended has it.
        super().__init__(container_strategy, devices=list(hosts[0][1]),
                         cross_device_ops=cross_device_ops_lib.ReductionToOneDevice())
        if len(hosts) > 1:
            self._use_pod_layout(hosts)
        self.steps_per_run = steps_per_run
        self._device_assignment = device_assignment
        # StrategyBase.cluster_resolver reads `_cluster_resolver`; TF's own
        # TPUExtended uses `_tpu_cluster_resolver`. Keep both spellings.
        self._cluster_resolver = cluster_resolver
        self._tpu_cluster_resolver = cluster_resolver
        self.experimental_enable_get_next_as_optional = True

    def _use_pod_layout(self, hosts):
        # One input worker per host: datasets and dataset_fn run on each
        # host's CPU with InputContext(num_input_pipelines=H,
        # input_pipeline_id=h), as TPUExtended builds its input workers.
        self._devices = tuple(device for _, host_devices in hosts
                              for device in host_devices)
        self._input_workers_devices = tuple(hosts)
        self._host_input_device = numpy_dataset.SingleDevice(hosts[0][0])
        # Unplaced ops in scope() go to host 0, the pod's master: its CPU, a
        # full device name (as TF's connect makes the master's CPU:0 the
        # default). A task without a device type is stripped to the malformed
        # "/device::0" when TF copies a graph-mode dataset to each host.
        self._default_device = hosts[0][0]

    # -- strict mode: what TPUExtended checks and MirroredExtended does not ----

    @property
    def _require_static_shapes(self):
        # TPUExtended sets it (Keras's TF1 loop then drops partial batches).
        return self._mirrored_require_static_shapes or strict.enabled()

    @_require_static_shapes.setter
    def _require_static_shapes(self, value):
        self._mirrored_require_static_shapes = value

    def _experimental_distribute_dataset(self, dataset, options):
        if strict.enabled():
            strict.check_distribute_dataset_options(options)
            strict.check_dataset_spec(dataset.element_spec, options)
        return super()._experimental_distribute_dataset(dataset, options)

    def _distribute_datasets_from_function(self, dataset_fn, options):
        checked = strict.enabled()
        if checked:
            strict.check_datasets_from_function_options(options)
        distributed = super()._distribute_datasets_from_function(dataset_fn, options)
        if self.num_hosts > 1:
            _check_datasets_on_their_hosts(distributed)
        if checked:  # as on a TPU, only once dataset_fn has run
            strict.check_dataset_spec(distributed.element_spec, options)
        return distributed

    def _input_workers_with_options(self, options=None):
        # TF 2.21's MirroredExtended keeps the per-replica input workers of a
        # PER_REPLICA call for every later dataset, so each replica would then
        # read the whole of every dataset. The emulated TPU restores them.
        saved = self._input_workers_devices
        try:
            return super()._input_workers_with_options(options)
        finally:
            self._input_workers_devices = saved

    def _call_for_each_replica(self, fn, args, kwargs):
        # A TPU replica is built with number_of_shards set (TF 1.15's
        # tpu.replicate did it; CrossShardOptimizer and cross_replica_sum read
        # it). The context is thread-local, so it is set in each replica's
        # thread. tf.function step functions are left as they are: Mirrored
        # re-wraps those and traces their Python function per replica.
        if not isinstance(fn, def_function.Function):
            fn = numerics_ops.replica_step(
                _with_number_of_shards(fn, self._num_replicas_in_sync))
        result = self._call_for_each_replica_checked(fn, args, kwargs)
        _run_built_checks(ops.get_default_graph())
        return result

    def _call_for_each_replica_checked(self, fn, args, kwargs):
        if not compile_checks.enabled():
            return super()._call_for_each_replica(fn, args, kwargs)
        if ops.executing_eagerly_outside_functions() and not ops.inside_function():
            if isinstance(fn, def_function.Function) and not fn._jit_compile:  # pylint: disable=protected-access
                return self._checked_trace(fn)(*args, **kwargs)
            # A plain function reaching here eagerly runs op by op (the
            # adapters trace theirs first); nothing is compiled.
            return super()._call_for_each_replica(fn, args, kwargs)
        return self._checked_call(fn, args, kwargs)

    def _checked_call(self, fn, args, kwargs):
        """Fidelity tpu: the ops every replica (and its merge_calls) created are
        checked as the TPU compiler would, before any step runs, and linted for
        what a TPU computes differently (fidelity/tpu_semantics.py)."""
        graph = ops.get_default_graph()
        before = len(graph.get_operations())
        result = super()._call_for_each_replica(fn, args, kwargs)
        _run_built_checks(graph)  # also when traced by _checked_trace
        created = graph.get_operations()[before:]
        tpu_semantics.check_ops(created, graph)  # warnings: what a TPU computes differently
        compile_checks.check_ops(created, graph)
        return result

    def _checked_trace(self, function):
        """An eager ``run`` of a ``tf.function``, traced with its replicas checked.

        A TPU traces it into one compiled program (TF 2.x ``TPUExtended.
        _tpu_function_creator`` wraps every eager run in a ``tf.function``).
        MirroredStrategy traces it too, but in a clone of ``function`` whose
        replicas it builds itself (mirrored_run.call_for_each_replica), out of
        this hook's sight. This clone does the same through the check; cached
        per function as Mirrored's is, so later calls reuse the trace.
        """
        cache = self.__dict__.setdefault("_fidelity_traces", weakref.WeakKeyDictionary())
        traced = cache.get(function)
        if traced is None:
            python_function = function.python_function

            def checked_replicas(*args, **kwargs):
                return self._checked_call(numerics_ops.replica_step(python_function),
                                          args, kwargs)

            traced = function._clone(python_function=checked_replicas)  # pylint: disable=protected-access
            cache[function] = traced
        return traced

    @property
    def input_host_devices(self):
        """Each host's input device (its CPU), in task order."""
        return tuple(host for host, _ in self._input_workers_devices)

    @property
    def num_hosts(self):
        return len(self._input_workers_devices)

    @property
    def num_replicas_per_host(self):
        return self._num_replicas_in_sync // self.num_hosts

    @property
    def num_logical_devices_per_replica(self):
        if self._device_assignment is None:
            return 1
        return self._device_assignment.num_cores_per_replica

    @property
    def device_assignment(self):
        return self._device_assignment

    def experimental_run_steps_on_iterator(self, fn, iterator, iterations=1,
                                           initial_loop_values=None):
        """TF 1.x multi-step loop: ``iterations`` steps per host call."""
        if not callable(fn):
            raise TypeError(f"experimental_run_steps_on_iterator: fn must be "
                            f"callable, got {type(fn).__name__}")
        with self._container_strategy().scope():
            return self._experimental_run_steps_on_iterator(
                fn, iterator, iterations, initial_loop_values)

    def _experimental_run_steps_on_iterator(self, fn, iterator, iterations,
                                            initial_loop_values=None):
        # TF 1.15's TPU loop ignored `iterations` when steps_per_run was 1;
        # the emulated TPU keeps that quirk so programs behave as on a TPU.
        if self.steps_per_run == 1:
            iterations = 1
        return self._run_exact_steps_on_iterator(fn, iterator, iterations, initial_loop_values)

    def _run_exact_steps_on_iterator(self, fn, iterator, iterations, initial_loop_values=None):
        """The multi-step loop of exactly ``iterations`` steps, whatever ``steps_per_run`` is.

        TPUEstimator's own loop: TF 1.15's TPUEstimator did not run through
        TPUStrategy (tensorflow_estimator r1.15, tpu_estimator.py: its
        ``training_loop.repeat(iterations_per_loop_var, ...)``), so the
        strategy's steps_per_run == 1 quirk above is not its behaviour; its
        evaluation runs all ``steps`` in one loop even with iterations_per_loop=1.
        """
        return steps.run_steps_on_iterator(
            super()._experimental_run_steps_on_iterator, fn, iterator,
            iterations, initial_loop_values)

hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
