"""TF 1.x's low-level TPU API (``tf.compat.v1.tpu``) on the emulated TPU.

TF 1.13-1.15 programs drive the TPU directly: ``tpu.replicate`` /
``rewrite`` / ``shard`` / ``batch_parallel`` build a replicated computation,
``cross_replica_sum`` and ``CrossShardOptimizer`` make the replicas meet, and
``outside_compilation`` puts host-side code (logging, summaries) beside it.
TF 2.21 still builds those graphs, but their ops (``TPUReplicatedInput``,
``CrossReplicaSum``, ...) have no CPU kernels, so the session fails.

On the emulated TPU a replicated computation is a ``call_for_each_replica``
of a ``MirroredStrategyV1`` whose extended is
:class:`~tpu_compat.runtime.emulated.EmulatedTPUExtended` (the same machinery
the compat.v1 TPUStrategy adapter uses):

* replica ``i`` is a thread building ``computation(*inputs[i])`` on core ``i``;
* ``cross_replica_sum`` is a ``merge_call`` where the replicas meet: each
  group is summed in replica order (exact, deterministic) and every member
  gets its group's sum;
* a variable created inside the computation is one ``MirroredVariable``
  (one logical variable, one copy per core, one checkpoint entry);
  ``CrossShardOptimizer`` sums the gradients across the shards once and each
  copy applies the same update, so the copies stay identical and the variable
  is updated once per step with the aggregated gradient;
* ``tpu_function.get_tpu_context().number_of_shards`` is set while a replica
  is built, as TF 1.15 did, in ``tpu.replicate`` and in any emulated
  strategy's replica context (``CrossShardOptimizer`` reads it).

Because ``cross_replica_sum`` and ``CrossShardOptimizer`` only need an
emulated replica context, they work the same inside ``tpu.replicate`` and
inside a compat.v1 TPUStrategy's ``experimental_run`` /
``call_for_each_replica``; TPUEstimator builds on exactly that.

On a real TPU every function here is TensorFlow's own, called unchanged
(``_native`` is the seam the contract tests replace).
"""

import contextlib
import threading
import types
import weakref

import tensorflow as tf
from tensorflow.python.distribute import distribute_lib
from tensorflow.python.distribute import mirrored_strategy
from tensorflow.python.distribute import values as values_lib
from tensorflow.python.framework import ops
from tensorflow.python.ops.losses import losses
from tensorflow.python.tpu import bfloat16 as native_bfloat16
from tensorflow.python.tpu import tpu as native_tpu
from tensorflow.python.tpu import tpu_name_util
from tensorflow.python.tpu import tpu_optimizer
from tensorflow.python.tpu import tpu_replication
from tensorflow.python.tpu.ops import tpu_ops
from tensorflow.python.training import optimizer as optimizer_lib

from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import emulated
from tpu_compat.runtime import fidelity
from tpu_compat.runtime import hooks
from tpu_compat.runtime import resolver as resolver_lib

__all__ = [
    "CrossShardOptimizer",
    "NotInReplicaContextError",
    "batch_parallel",
    "bfloat16_scope",
    "core",
    "cross_replica_sum",
    "emulated_replica_context",
    "initialize_system",
    "outside_compilation",
    "replicate",
    "replicate_strategy",
    "rewrite",
    "shard",
    "shutdown_system",
]

# TensorFlow's implementations, for the real-TPU path. Contract tests swap
# this namespace for recording stand-ins.
_native = types.SimpleNamespace(
    replicate=native_tpu.replicate,
    rewrite=native_tpu.rewrite,
    shard=native_tpu.shard,
    batch_parallel=native_tpu.batch_parallel,
    outside_compilation=tpu_replication.outside_compilation,
    cross_replica_sum=tpu_ops.cross_replica_sum,
    core=tpu_name_util.core,
    bfloat16_scope=native_bfloat16.bfloat16_scope,
)


class NotInReplicaContextError(ValueError):
    """A cross-replica TPU op was used outside any replicated computation."""


def _emulated():
    return backend_lib.get_backend().emulated


# -- the replica context -------------------------------------------------------

def emulated_replica_context():
    """The current replica context if it belongs to an emulated TPU, else None.

    That is the replica context of ``tpu.replicate``/``rewrite``/``shard`` on
    the emulated TPU, and of a compat.v1 or TF2 TPUStrategy adapter's
    ``run``/``experimental_run``/``call_for_each_replica`` there.
    """
    if distribute_lib.in_cross_replica_context():
        return None
    context = distribute_lib.get_replica_context()
    if context is None or not distribute_lib.has_strategy():
        return None
    if isinstance(context.strategy.extended, emulated.EmulatedTPUExtended):
        return context
    return None


def _require_replica_context(api):
    context = emulated_replica_context()
    if context is None:
        raise NotInReplicaContextError(
            f"{api} must be called inside a replicated TPU computation "
            f"(tf.compat.v1.tpu.replicate, rewrite, shard or batch_parallel, or "
            f"a TPUStrategy's run/experimental_run); outside one, TF 1.15 built "
            f"a CrossReplicaSum op that failed at Session.run with 'No OpKernel "
            f"was registered to support Op CrossReplicaSum'")
    return context


def _check_group_assignment(group_assignment, num_replicas, argument="group_assignment"):
    """``group_assignment`` as a list of lists of ints, validated like TF 1.15."""
    if group_assignment is None:
        return [list(range(num_replicas))]
    if hasattr(group_assignment, "tolist"):  # a NumPy array
        group_assignment = group_assignment.tolist()
    if not (isinstance(group_assignment, (list, tuple)) and group_assignment and all(
            isinstance(group, (list, tuple)) for group in group_assignment)):
        raise ValueError(
            f"{argument} must be a list of lists of replica ids (shape "
            f"[num_groups, replicas_per_group]), got {group_assignment!r}")
    groups = [[int(i) for i in group] for group in group_assignment]
    members = sorted(i for group in groups for i in group)
    if members != list(range(num_replicas)):
        raise ValueError(
            f"{argument} must be a permutation of range({num_replicas}) (each of "
            f"the {num_replicas} replicas in exactly one group), got "
            f"{group_assignment!r}")
    if len({len(group) for group in groups}) != 1:
        raise ValueError(
            f"{argument}: every group must have the same size, got "
            f"{group_assignment!r}")
    return groups


def _group_sums(strategy, per_replica, groups):
    """Cross-replica context: each replica gets the sum of its group, in order."""
    local = strategy.experimental_local_results(per_replica)
    devices = strategy.extended.worker_devices
    results = [None] * len(local)
    for group in groups:
        with ops.device(devices[group[0]]):
            # Summed one by one in replica-id order: the same numbers on every
            # run and every group member, as the TPU's all-reduce gives.
            total = local[group[0]]
            for replica in group[1:]:
                total = total + local[replica]
        for replica in group:
            with ops.device(devices[replica]):
                results[replica] = tf.identity(total)
    return values_lib.PerReplica(tuple(results))


# The gradient of an all-reduce is the all-reduce of the gradient, as XLA
# differentiates CrossReplicaSum. The forward sum is an Identity whose gradient
# is overridden; the groups of each such op are kept here by graph (weakly: a
# graph's id can be reused once it is collected, as each Estimator call builds
# a new one) and op name.
_GRADIENT_NAME = "TPUCompatEmulatedCrossReplicaSum"
_gradient_groups = weakref.WeakKeyDictionary()
# How many emulated cross-replica sums were ever built (TPUEstimator checks that
# a training model_fn built one: TF 1.15 required CrossShardOptimizer).
_sums_built = 0


def sums_built():
    """How many emulated cross-replica sums this process has built so far."""
    return _sums_built


@ops.RegisterGradient(_GRADIENT_NAME)
def _cross_replica_sum_gradient(op, grad):
    context = emulated_replica_context()
    groups = _gradient_groups.get(op.graph, {}).get(op.name)
    if context is None or groups is None:
        return grad  # differentiated outside the replicas: nothing to meet
    return _merged_group_sum(context, grad, groups)


def _merged_group_sum(context, x, groups):
    def merge(strategy, per_replica):
        return _group_sums(strategy, per_replica, groups)
    return context.merge_call(merge, args=(x,))


def _emulated_cross_replica_sum(context, x, group_assignment, name):
    groups = _check_group_assignment(group_assignment, context.num_replicas_in_sync)
    with ops.name_scope(name, "CrossReplicaSum"):
        total = _merged_group_sum(context, tf.convert_to_tensor(x), groups)
        graph = ops.get_default_graph()
        with graph.gradient_override_map({"Identity": _GRADIENT_NAME}):
            result = tf.identity(total)
        _gradient_groups.setdefault(graph, {})[result.op.name] = groups
    global _sums_built
    _sums_built += 1
    return result


def cross_replica_sum(x, group_assignment=None, name=None):
    """``tf.compat.v1.tpu.cross_replica_sum``: sum ``x`` over each replica group.

    Args:
      x: this replica's tensor.
      group_assignment: ``[num_groups, replicas_per_group]`` replica ids; each
        replica gets the sum over its group. None: one group of all replicas.
      name: optional name.
    """
    if not _emulated():
        return _native.cross_replica_sum(x, group_assignment, name=name)
    context = _require_replica_context("tf.compat.v1.tpu.cross_replica_sum")
    return _emulated_cross_replica_sum(context, x, group_assignment, name)


# -- CrossShardOptimizer ---------------------------------------------------------

def _overrides_apply_gradients(opt):
    return type(opt).apply_gradients is not optimizer_lib.Optimizer.apply_gradients


class CrossShardOptimizer(tpu_optimizer.CrossShardOptimizer):
    """``tf.compat.v1.tpu.CrossShardOptimizer``, also on the emulated TPU.

    Same constructor and checks as TensorFlow's (``opt`` must be a
    ``tf.compat.v1.train.Optimizer``, ``reduction`` MEAN or SUM). With MEAN the
    loss is scaled by ``1 / number_of_shards`` (by the group size with a
    ``group_assignment``) before the gradients are taken; ``apply_gradients``
    sums the gradients over the shards (each group) and applies the sum once.
    """

    def __init__(self, opt, reduction=losses.Reduction.MEAN,
                 name="CrossShardOptimizer", group_assignment=None):
        super().__init__(opt, reduction=reduction, name=name,
                         group_assignment=group_assignment)

    # compute_gradients is TensorFlow's own: it scales the loss by
    # number_of_shards, which every emulated replica sets, as TF 1.15 did.

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if not _emulated():
            return super().apply_gradients(grads_and_vars, global_step, name)
        context = emulated_replica_context()
        if context is None:
            raise NotInReplicaContextError(
                "CrossShardOptimizer.apply_gradients must run inside a replicated "
                "TPU computation (tf.compat.v1.tpu.replicate, rewrite or shard, "
                "or a TPUStrategy's run/experimental_run): it sums gradients "
                "across the TPU shards. TF 1.15 failed here at Session.run with "
                "'No OpKernel was registered to support Op CrossReplicaSum'. "
                "Outside a TPU computation use the wrapped optimizer directly.")
        summed = []
        for grad, var in grads_and_vars:
            if grad is None:
                summed.append((grad, var))
            else:
                if isinstance(grad, tf.IndexedSlices):
                    grad = tf.convert_to_tensor(grad)
                summed.append((_emulated_cross_replica_sum(
                    context, grad, self._group_assignment, None), var))
        return _apply_summed(context, self._opt, summed, global_step, name)


def _apply_summed(context, opt, grads_and_vars, global_step, name):
    """Applies gradients already summed across the shards, without re-reducing.

    A ``tf.compat.v1.train.Optimizer`` under a distribution strategy would sum
    the replicas' gradients once more; here every replica applies the same
    summed gradient to its copy of each mirrored variable, so the copies stay
    identical. Custom optimizers that override ``apply_gradients`` (BERT's
    AdamWeightDecayOptimizer) assign their variables themselves; the
    variables created inside a replicated computation take the first
    replica's value on assignment (see :func:`replica_variable_creator`).
    """
    if _overrides_apply_gradients(opt):
        return opt.apply_gradients(grads_and_vars, global_step, name)
    apply_op = opt.apply_gradients(grads_and_vars, global_step=None, name=name,
                                   skip_gradients_aggregation=True)
    if global_step is None:
        return apply_op
    with tf.control_dependencies([apply_op]):
        # One increment per step, however many replicas: merge_call runs once.
        increment = context.merge_call(
            lambda strategy: strategy.extended.update(
                global_step, lambda v: v.assign_add(1), group=True))
    # An Operation, as Optimizer.apply_gradients returns.
    return tf.group(apply_op, *[v for v in tf.nest.flatten(increment) if v is not None],
                    name=name)


# -- replicate / rewrite / shard / batch_parallel ----------------------------------

_strategies_lock = threading.Lock()
_strategies = {}


class _ReplicateStrategy(mirrored_strategy.MirroredStrategyV1):
    """The strategy behind ``tpu.replicate`` on a set of emulated cores."""

    def __init__(self, devices):  # pylint: disable=super-init-not-called
        distribute_lib.StrategyV1.__init__(
            self, emulated.EmulatedTPUExtended(self, devices))


def replicate_strategy(devices):
    """The (cached) emulated strategy that replicates over ``devices``.

    One per device set per process, so that variables created by one
    replicated computation are the same variables in the next (train and eval
    computations sharing variables through ``tf.compat.v1.get_variable``).
    """
    key = tuple(devices)
    with _strategies_lock:
        if key not in _strategies:
            _strategies[key] = _ReplicateStrategy(key)
        return _strategies[key]


def replica_variable_creator(next_creator, **kwargs):
    """Variables created in a replicated computation: one logical variable.

    MirroredStrategy refuses a plain ``assign`` to a mirrored variable in a
    replica context unless the variable says how to aggregate. In a TPU
    computation every replica computes the same new value, so the first
    replica's is the value (ONLY_FIRST_REPLICA); an explicit aggregation stays.
    """
    aggregation = kwargs.get("aggregation")
    synchronization = kwargs.get("synchronization")
    if (aggregation in (None, tf.VariableAggregation.NONE)
            and synchronization in (None, tf.VariableSynchronization.AUTO,
                                    tf.VariableSynchronization.ON_WRITE)):
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


def _check_inputs(inputs, maximum_shapes):
    if inputs is None:
        return [[]]
    if not isinstance(inputs, (list, tuple)) or any(
            not isinstance(replica, (list, tuple)) for replica in inputs):
        raise TypeError(
            f"inputs must be a list of lists/tuples (one list of inputs per "
            f"replica), got {type(inputs).__name__}"
            + ("" if not isinstance(inputs, (list, tuple)) else
               f" of {[type(r).__name__ for r in inputs]}"))
    inputs = [list(replica) for replica in inputs]
    for index, replica in enumerate(inputs[1:], start=1):
        try:
            tf.nest.assert_same_structure(inputs[0], replica)
        except (ValueError, TypeError) as error:
            raise ValueError(
                f"inputs: replica {index}'s inputs do not have the structure of "
                f"replica 0's ({error})") from None
    flat = [[tf.convert_to_tensor(t) if t is not None else None
             for t in tf.nest.flatten(replica)] for replica in inputs]
    for index, replica in enumerate(flat[1:], start=1):
        for position, (first, other) in enumerate(zip(flat[0], replica)):
            if first is None or other is None:
                continue
            if first.dtype != other.dtype:
                raise ValueError(
                    f"inputs: replica {index}'s input {position} has dtype "
                    f"{other.dtype.name} but replica 0's has {first.dtype.name}; "
                    f"every replica must get the same dtypes")
            if maximum_shapes is None and first.shape.is_fully_defined() and \
                    other.shape.is_fully_defined() and first.shape != other.shape:
                raise ValueError(
                    f"inputs: replica {index}'s input {position} has shape "
                    f"{other.shape} but replica 0's has {first.shape}; a TPU "
                    f"compiles one program for all replicas, so every replica "
                    f"must get the same shapes (pad them, or pass maximum_shapes)")
    return [tf.nest.pack_sequence_as(structure, replica)
            for structure, replica in zip(inputs, flat)]


def _devices_for(num_replicas, device_assignment, argument="inputs"):
    backend = backend_lib.get_backend()
    if device_assignment is not None:
        if device_assignment.num_replicas != num_replicas:
            raise ValueError(
                f"device_assignment has {device_assignment.num_replicas} "
                f"replica(s) but {argument} has {num_replicas}")
        return emulated.replica_devices(backend, device_assignment)
    cores = len(backend.devices)
    if num_replicas > cores:
        raise ValueError(
            f"{argument} asks for {num_replicas} replicas but the emulated TPU "
            f"has {cores} cores (set TPU_COMPAT_NUM_REPLICAS or "
            f"`tpu-compat run --replicas` to emulate more)")
    return backend.devices[:num_replicas]


def _split_outputs(outputs):
    """TF 1.15's output rules: tensors first, then operations (control deps)."""
    if outputs is None:
        return [], []
    if isinstance(outputs, (tf.Operation, tf.Tensor, tf.Variable)) or not isinstance(
            outputs, (list, tuple)):
        outputs = [outputs]
    tensors, operations = [], []
    for value in outputs:
        if isinstance(value, tf.Operation):
            operations.append(value)
        elif operations:
            raise ValueError(
                "computation outputs: tensors must come before operations, as "
                "in TF 1.15's tpu.replicate")
        else:
            tensors.append(value)
    return tensors, operations


def _replica_computation(computation):
    """Builds one replica: ``computation(*inputs)``, split into TF 1.15's outputs.

    Returns ``(tensors, done, structure)``: the output tensors, one operation
    that runs the replica's operations (train ops) and host-side ops, and the
    nested structure of the outputs when it is not a flat list.
    """

    def build(replica_inputs):
        _host_ops.pending = []
        try:
            with tf.variable_creator_scope(replica_variable_creator):
                outputs = computation(*replica_inputs)
            host_operations = _host_ops.pending
        finally:
            _host_ops.pending = None
        packed_structure = None
        if isinstance(outputs, dict) or (
                isinstance(outputs, (list, tuple)) and any(
                    isinstance(v, (list, tuple, dict)) for v in outputs)):
            packed_structure = outputs  # TF 2.x: nested outputs keep their structure
            outputs = tf.nest.flatten(outputs)
        tensors, operations = _split_outputs(outputs)
        tensors = [tf.convert_to_tensor(t) for t in tensors]
        done = tf.group(*(operations + host_operations + [t.op for t in tensors]))
        return tuple(tensors), done, packed_structure

    return build


def _emulated_replicate(computation, inputs, device_assignment, maximum_shapes,
                        argument="inputs"):
    inputs = _check_inputs(inputs, maximum_shapes)
    if not inputs:
        return []
    devices = _devices_for(len(inputs), device_assignment, argument)
    strategy = replicate_strategy(devices)
    per_replica = values_lib.PerReplica(tuple(tuple(r) for r in inputs))
    with strategy.scope():
        tensors, done, structure = strategy.extended.call_for_each_replica(
            _replica_computation(computation), args=(per_replica,))
    local = strategy.experimental_local_results
    # A TPU runs the whole replicated computation whatever is fetched: every
    # output waits for every replica's operations (train ops update each
    # core's copy of the variables; host ops run for each core).
    everything = tf.group(*local(done))
    per_output = [local(t) for t in tensors]
    if not per_output:
        return [everything] * len(devices)
    results = []
    for replica, device in enumerate(devices):
        with ops.device(device), tf.control_dependencies([everything]):
            outputs = [tf.identity(values[replica]) for values in per_output]
        if structure is not None:
            structure_i = (local(structure)[replica]
                           if isinstance(structure, values_lib.DistributedValues)
                           else structure)
            outputs = tf.nest.pack_sequence_as(structure_i, outputs)
        results.append(outputs)
    return results


def _check_infeed(infeed_queue):
    if infeed_queue is not None:
        raise ValueError(
            "infeed_queue is not supported on the emulated TPU (there is no "
            "infeed); pass the per-replica tensors through `inputs` instead")


def replicate(computation, inputs=None, infeed_queue=None, device_assignment=None,
              name=None, maximum_shapes=None, padding_spec=None, xla_options=None):
    """``tf.compat.v1.tpu.replicate``: one ``computation`` per replica.

    Returns one list of outputs per replica (``[replica][output]``), as TF 1.15
    did; a computation with only operations gives one operation per replica.
    """
    if not _emulated():
        return _native.replicate(
            computation, inputs, infeed_queue=infeed_queue,
            device_assignment=device_assignment, name=name,
            maximum_shapes=maximum_shapes, padding_spec=padding_spec,
            xla_options=xla_options)
    del name, padding_spec, xla_options  # nothing to compile on the emulated TPU
    _check_infeed(infeed_queue)
    return _emulated_replicate(computation, inputs, device_assignment, maximum_shapes)


def rewrite(computation, inputs=None, infeed_queue=None, device_assignment=None,
            name=None, xla_options=None):
    """``tf.compat.v1.tpu.rewrite``: ``computation`` on one TPU core."""
    if not _emulated():
        return _native.rewrite(computation, inputs, infeed_queue=infeed_queue,
                               device_assignment=device_assignment, name=name,
                               xla_options=xla_options)
    _check_infeed(infeed_queue)
    if inputs is not None and not isinstance(inputs, (list, tuple)):
        raise TypeError(f"inputs must be a list of tensors or None, got "
                        f"{type(inputs).__name__}")
    return _emulated_replicate(
        computation, None if inputs is None else [list(inputs)],
        device_assignment, None)[0]


def _check_num_shards(num_shards):
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards <= 0:
        raise ValueError(f"num_shards must be a positive integer, got {num_shards!r}")
    cores = len(backend_lib.get_backend().devices)
    if num_shards > cores:
        raise ValueError(
            f"num_shards={num_shards} is larger than the {cores} cores of the "
            f"emulated TPU (set TPU_COMPAT_NUM_REPLICAS or `tpu-compat run "
            f"--replicas` to emulate more)")


def _emulated_shard(computation, inputs, num_shards, input_shard_axes,
                    outputs_from_all_shards, output_shard_axes, device_assignment):
    _check_num_shards(num_shards)
    inputs = [] if inputs is None else inputs
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"inputs must be a list of tensors or None, got "
                        f"{type(inputs).__name__}")
    inputs = [tf.convert_to_tensor(x) for x in inputs]
    if input_shard_axes is None:
        input_shard_axes = [0] * len(inputs)
    if len(input_shard_axes) != len(inputs):
        raise ValueError(
            f"input_shard_axes must have one axis per input: {len(inputs)} "
            f"inputs, {len(input_shard_axes)} input_shard_axes")
    for position, (x, axis) in enumerate(zip(inputs, input_shard_axes)):
        size = tf.compat.dimension_value(x.shape[axis]) if x.shape.rank else None
        if x.shape.rank is not None and x.shape.rank == 0:
            raise ValueError(f"inputs[{position}] is a scalar; shard needs at least "
                             f"rank-1 inputs to split")
        if size is not None and size % num_shards:
            raise ValueError(
                f"inputs[{position}] has size {size} along axis {axis}, which is "
                f"not a multiple of num_shards={num_shards}")
    split = [tf.split(x, num_shards, axis=axis) for x, axis in zip(inputs, input_shard_axes)]
    per_shard = [list(shard) for shard in zip(*split)] if inputs else [[]] * num_shards
    outputs = _emulated_replicate(computation, per_shard, device_assignment, None,
                                  argument="num_shards")
    if outputs and isinstance(outputs[0], tf.Operation):
        return [outputs[0]]
    num_outputs = len(outputs[0])
    if output_shard_axes is None:
        output_shard_axes = [0] * num_outputs
    if len(output_shard_axes) != num_outputs:
        raise ValueError(
            f"output_shard_axes must have one axis per output: {num_outputs} "
            f"outputs, {len(output_shard_axes)} output_shard_axes")
    if isinstance(outputs_from_all_shards, bool):
        outputs_from_all_shards = [outputs_from_all_shards] * num_outputs
    if len(outputs_from_all_shards) != num_outputs:
        raise ValueError(
            f"outputs_from_all_shards must have one entry per output: "
            f"{num_outputs} outputs, {len(outputs_from_all_shards)} entries")
    results = []
    for axis, all_shards, per_shard_values in zip(
            output_shard_axes, outputs_from_all_shards, zip(*outputs)):
        if not all_shards:
            results.append(per_shard_values[0])
        elif per_shard_values[0].shape.rank == 0:
            results.append(tf.stack(list(per_shard_values)))
        else:
            results.append(tf.concat(list(per_shard_values), axis=axis))
    return results


def shard(computation, inputs=None, num_shards=1, input_shard_axes=None,
          outputs_from_all_shards=True, output_shard_axes=None, infeed_queue=None,
          device_assignment=None, name=None, xla_options=None):
    """``tf.compat.v1.tpu.shard``: split inputs, run per shard, concatenate."""
    if not _emulated():
        return _native.shard(
            computation, inputs, num_shards=num_shards,
            input_shard_axes=input_shard_axes,
            outputs_from_all_shards=outputs_from_all_shards,
            output_shard_axes=output_shard_axes, infeed_queue=infeed_queue,
            device_assignment=device_assignment, name=name, xla_options=xla_options)
    _check_infeed(infeed_queue)
    return _emulated_shard(computation, inputs, num_shards, input_shard_axes,
                           outputs_from_all_shards, output_shard_axes,
                           device_assignment)


def batch_parallel(computation, inputs=None, num_shards=1, infeed_queue=None,
                   device_assignment=None, name=None, xla_options=None):
    """``tf.compat.v1.tpu.batch_parallel``: ``shard`` along the batch dimension."""
    if not _emulated():
        return _native.batch_parallel(
            computation, inputs, num_shards=num_shards, infeed_queue=infeed_queue,
            device_assignment=device_assignment, name=name, xla_options=xla_options)
    _check_infeed(infeed_queue)
    return _emulated_shard(computation, inputs, num_shards, None, True, None,
                           device_assignment)


# -- host-side code, cores, bfloat16 -----------------------------------------------

def _host_device():
    """The emulated TPU's host: the CPU every core's host computation runs on."""
    return "/job:localhost/replica:0/task:0/device:CPU:0"


# Host-side operations an outside_compilation created in the replica being
# built (per thread: each replica is built in its own thread).
_host_ops = threading.local()


def _stateful_ops_created(graph, before):
    return [op for op in graph.get_operations()[before:] if op._is_stateful]  # pylint: disable=protected-access


def outside_compilation(computation, *args, **kwargs):
    """``tf.compat.v1.tpu.outside_compilation``: ``computation`` on the host.

    Inside a replicated computation each replica runs ``computation`` once per
    step on the host CPU (a TPU runs each replica's outside-compilation
    cluster on its host), whether or not its outputs are used: a TPU executes
    the whole replicated computation, so its stateful host ops (logging,
    summaries, counters) become control dependencies of the replica's
    outputs. Outside a replicated computation it is simply called, as in
    TF 1.15.
    """
    if not _emulated():
        return _native.outside_compilation(computation, *args, **kwargs)
    pending = getattr(_host_ops, "pending", None)
    graph = ops.get_default_graph()
    if tf.executing_eagerly() or not hasattr(graph, "get_operations"):
        if emulated_replica_context() is None or pending is None:
            return computation(*args, **kwargs)
        with ops.device(_host_device()):
            return computation(*args, **kwargs)
    if emulated_replica_context() is None or pending is None:
        # A strategy step (not tpu.replicate): host ops, exempt from the
        # fidelity check as on a TPU.
        before = len(graph.get_operations())
        result = computation(*args, **kwargs)
        fidelity.mark_host_ops(graph.get_operations()[before:])
        return result
    before = len(graph.get_operations())
    with ops.device(_host_device()):
        result = computation(*args, **kwargs)
    pending.extend(_stateful_ops_created(graph, before))
    fidelity.mark_host_ops(graph.get_operations()[before:])  # host ops: not compiled
    return result


def core(num):
    """``tf.compat.v1.tpu.core``: the device of logical core ``num`` of a replica.

    On the emulated TPU a replica is one device, so the name is empty (``with
    tf.device(tpu.core(i))`` keeps the replica's device).
    """
    if not _emulated():
        return _native.core(num)
    if isinstance(num, bool) or not isinstance(num, int) or num < 0:
        raise ValueError(f"num must be a non-negative int (a logical core of the "
                         f"replica), got {num!r}")
    return ""


@contextlib.contextmanager
def bfloat16_scope(name=None):
    """``tf.compat.v1.tpu.bfloat16_scope``: TensorFlow's own (CPU has bfloat16)."""
    with _native.bfloat16_scope(name) as scope:
        yield scope


def initialize_system(embedding_config=None, job=None,
                      compilation_failure_closes_chips=True,
                      tpu_cancellation_closes_chips=None):
    """``tf.compat.v1.tpu.initialize_system``: an op run once in the session.

    On the emulated TPU it evaluates to the serialized emulated topology, as
    the real op evaluates to the TPU's (see :mod:`tpu_compat.runtime.resolver`).
    """
    return resolver_lib.initialize_system(
        embedding_config=embedding_config, job=job,
        compilation_failure_closes_chips=compilation_failure_closes_chips,
        tpu_cancellation_closes_chips=tpu_cancellation_closes_chips)


def shutdown_system(job=None):
    """``tf.compat.v1.tpu.shutdown_system``: a no-op op on the emulated TPU."""
    return resolver_lib.shutdown_system(job=job)


# The tf.compat.v1.tpu names install() routes here (tpu_compat.patching.namespaces).
ROUTED_NAMES = ("CrossShardOptimizer", "batch_parallel", "bfloat16_scope", "core",
                "cross_replica_sum", "initialize_system", "outside_compilation",
                "replicate", "rewrite", "shard", "shutdown_system")


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
