"""``tpu.replicate`` / ``rewrite`` / ``shard`` / ``batch_parallel`` on the emulated TPU.

A replicated computation is a ``call_for_each_replica`` of a
``MirroredStrategyV1`` whose extended is
:class:`~tpu_compat.runtime.emulated.EmulatedTPUExtended` (the machinery the
compat.v1 TPUStrategy adapter uses): replica ``i`` is a thread building
``computation(*inputs[i])`` on core ``i``, and a variable created inside the
computation is one ``MirroredVariable`` (one logical variable, one copy per
core, one checkpoint entry). Outputs follow TF 1.15's rules.
"""

import threading

import tensorflow as tf

from tpu_compat._tf_internals import distribute_lib, mirrored_strategy, ops, values_lib
from tpu_compat.lowlevel import host
from tpu_compat.lowlevel import native
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import emulated

__all__ = ["batch_parallel", "replica_variable_creator", "replicate", "replicate_strategy",
           "rewrite", "shard"]


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
        with host.collecting_host_ops() as host_operations, \
                tf.variable_creator_scope(replica_variable_creator):
            outputs = computation(*replica_inputs)
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
    if not native.on_emulated_tpu():
        return native.NATIVE.replicate(
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
    if not native.on_emulated_tpu():
        return native.NATIVE.rewrite(computation, inputs, infeed_queue=infeed_queue,
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
    if not native.on_emulated_tpu():
        return native.NATIVE.shard(
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
    if not native.on_emulated_tpu():
        return native.NATIVE.batch_parallel(
            computation, inputs, num_shards=num_shards, infeed_queue=infeed_queue,
            device_assignment=device_assignment, name=name, xla_options=xla_options)
    _check_infeed(infeed_queue)
    return _emulated_shard(computation, inputs, num_shards, None, True, None,
                           device_assignment)
