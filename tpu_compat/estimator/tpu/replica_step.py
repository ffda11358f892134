"""Calling ``model_fn`` on each replica of TPUEstimator's TPU programs.

What TF 1.15's ``tpu.shard`` set around the replicated ``model_fn``, the
checks TF 1.15 made of what it returned, and how per-replica values travel
between the strategy and the host.
"""

import contextlib
import logging

import tensorflow as tf

from tpu_compat._tf_internals import distribute_utils
from tpu_compat._tf_internals import values_lib

from tpu_compat.lowlevel import cross_replica, replication
from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
from tpu_compat.estimator.tpu.spec import TPUEstimatorSpec

__all__ = ["Captured", "check_cross_shard_optimizer", "check_spec", "cross_replica_sums",
           "drop_replica_summaries", "keep_replica_zero", "local_results",
           "own_gradients", "replica_scope", "replicate", "unpack"]

_log = logging.getLogger("tensorflow")


@contextlib.contextmanager
def replica_scope():
    """What TF 1.15's ``tpu.shard`` set around the replicated model_fn.

    Resource variables (a TPU computation cannot use reference variables, and
    only resource variables can be created inside the on-device loop), and
    variables that take the first replica's value when a replica assigns them
    (every replica computes the same value, as on a TPU; see
    ``lowlevel.replication.replica_variable_creator``). The shard count that
    ``CrossShardOptimizer`` reads is set by the emulated strategy's replicas.
    """
    scope = tf.compat.v1.get_variable_scope()
    saved = scope.use_resource
    scope.set_use_resource(True)
    try:
        with tf.variable_creator_scope(replication.replica_variable_creator):
            yield
    finally:
        scope.set_use_resource(saved)


def cross_replica_sums():
    """How many emulated cross-replica sums (CrossShardOptimizer's too) exist."""
    return cross_replica.sums_built()


def check_cross_shard_optimizer(before, num_replicas):
    """Whether training summed no gradients across replicas, as each era answered.

    TF 1.15 refused such training: ``_validate_tpu_training_graph`` raised
    "CrossShardOptimizer must be used for model training on TPUs" unless
    control flow v2 was on (tensorflow/estimator r1.15,
    tensorflow_estimator/python/estimator/tpu/tpu_estimator.py: ``if
    control_flow_util.ENABLE_CONTROL_FLOW_V2: return  # b/124241278``). A TF
    2.x program has control flow v2 on, so tensorflow_estimator 2.x (same
    file, r2.0-r2.15) skipped the check and trained: the TPU then applied
    each core's own gradient to that core's copy of the variables (see
    :func:`own_gradients` and :func:`keep_replica_zero`). The era is the
    program's control flow v2 flag, as TF's own code decided it.

    Returns True when the replicas trained on their own gradients (the caller
    then keeps replica 0's variables after each loop), False when the
    gradients were summed. Raises the TF 1.15 error for a TF 1.x program.
    """
    from tpu_compat.estimator.graphs import program_control_flow_v2  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    if not backend_lib.get_backend().emulated or cross_replica_sums() != before:
        return False
    if not program_control_flow_v2():
        raise ValueError(
            "CrossShardOptimizer must be used for model training on TPUs (as TF 1.15 "
            "required): in model_fn, wrap the optimizer with "
            "tf.compat.v1.tpu.CrossShardOptimizer(optimizer) when params['use_tpu'] "
            "is True, or sum the gradients with tf.compat.v1.tpu.cross_replica_sum")
    if num_replicas <= 1:
        return False  # one replica: its gradient is the whole batch's
    _log.warning(
        "TPUEstimator: model_fn trains without CrossShardOptimizer. As "
        "tensorflow_estimator 2.x did for a TF 2 program (control flow v2), this "
        "runs, with the numbers a TPU gave: each of the %d replicas applies only "
        "the gradient of its own 1/%d of the batch to its own copy of the "
        "variables, and after each loop of iterations_per_loop steps replica 0's "
        "copy is kept (the TPU wrote back replica 0's variables). The model learns "
        "from replica 0's share of each batch only; wrap the optimizer with "
        "tf.compat.v1.tpu.CrossShardOptimizer to train on the whole batch.",
        num_replicas, num_replicas)
    return True


@contextlib.contextmanager
def own_gradients(strategy):
    """Gradient sums the optimizer asks of the strategy give each replica its own.

    A TPU program had no strategy: a ``tf.compat.v1.train.Optimizer`` applied
    the gradient it was given, on each core, to that core's copy of the
    variables; only ``CrossShardOptimizer`` / ``cross_replica_sum`` summed
    across cores. On the emulated TPU the optimizer runs under a
    MirroredStrategy, whose ``_distributed_apply`` sums the replicas'
    gradients (``batch_reduce_to(SUM)``) before updating every copy. While
    the training step is built, that sum is the identity: each copy gets its
    own replica's gradient, as each TPU core did. ``CrossShardOptimizer``
    does not go through it (it sums with the emulated cross-replica sum).
    """
    extended = strategy.extended
    original = extended.batch_reduce_to

    def batch_reduce_to(reduce_op, value_destination_pairs, options=None):
        if tf.distribute.ReduceOp(reduce_op) == tf.distribute.ReduceOp.SUM:
            return [value for value, _ in value_destination_pairs]
        return original(reduce_op, value_destination_pairs, options)

    extended.batch_reduce_to = batch_reduce_to
    try:
        yield
    finally:
        del extended.batch_reduce_to


def keep_replica_zero(after):
    """After ``after`` (a loop), every copy of each variable takes replica 0's value.

    The TPU read each variable into every core before a loop and wrote back
    the first replica's value after it (tensorflow/tensorflow,
    tensorflow/core/tpu/graph_rewrite/distributed_tpu_rewrite_pass.cc,
    BuildExecuteNodes: "Feed the updated variable values from the first
    replica to the variable write nodes", ``if (replica == 0)``). Copies that
    trained on their own gradients (:func:`own_gradients`) meet here.
    """
    copies = []
    with tf.control_dependencies([after]):
        for variable in tf.compat.v1.global_variables():
            if not isinstance(variable, values_lib.DistributedVariable):
                continue
            components = list(variable.values)
            if len(components) < 2:
                continue
            with tf.device(components[0].device):
                value = components[0].read_value()
            for other in components[1:]:
                with tf.device(other.device):
                    copies.append(other.assign(value, read_value=False))
    return tf.group(after, *copies, name="keep_replica_0_variables")


class Captured:
    """What replica 0's model_fn returned besides tensors (hooks, scaffold_fn ...)."""

    def __init__(self):
        self.spec = None
        self.host_calls = []

    def capture(self, spec, host_calls):
        if self.spec is None:
            self.spec = spec
            self.host_calls = host_calls


def replicate(strategy, fn, per_replica_args):
    """Runs ``fn`` on every replica, replica ``i`` with ``per_replica_args[i]``."""
    args = distribute_utils.regroup(per_replica_args)
    backend = getattr(strategy, "tpu_compat_backend", None)
    if backend is not None and not backend.emulated:
        return strategy.run(fn, args=tuple(args))
    return strategy.extended.call_for_each_replica(fn, args=tuple(args))


def local_results(strategy, value):
    """``value``'s per-replica components, in replica order."""
    return list(strategy.experimental_local_results(value))


def drop_replica_summaries(before):
    """Summaries made inside the replicated step cannot be fetched from the host.

    TF 1.15 did not run them on a TPU either (summary ops are unsupported in a
    TPU computation); write summaries with ``host_call`` instead.
    """
    collection = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.SUMMARIES)
    if len(collection) > before:
        _log.warning("TPUEstimator: %d summary op(s) created inside model_fn are "
                     "ignored on the TPU, as in TF 1.15; use "
                     "TPUEstimatorSpec(host_call=...) to write summaries",
                     len(collection) - before)
        del collection[before:]


def check_spec(spec, mode, estimator_spec_ok):
    """``spec`` if the TPU can run it in ``mode`` (TF 1.15's rules), else a clear error."""
    if isinstance(spec, TPUEstimatorSpec):
        return spec
    if isinstance(spec, EstimatorSpec) and estimator_spec_ok:
        if spec.training_chief_hooks:
            raise ValueError("EstimatorSpec.training_chief_hooks are not supported in "
                             "TPUEstimator; pass the hooks via training_hooks")
        return spec
    what = {ModeKeys.EVAL: "evaluation", ModeKeys.PREDICT: "prediction"}.get(mode, mode)
    raise TypeError(
        f"model_fn returned {type(spec).__name__} in mode {mode!r}, but TPU {what} "
        f"needs a tf.estimator.tpu.TPUEstimatorSpec (metrics as eval_metrics="
        f"(metric_fn, tensors), not eval_metric_ops); return a TPUEstimatorSpec, "
        f"or set eval_on_tpu=False to evaluate on the CPU")


def unpack(features, labels, replicas):
    """The loop's (features, labels), distributed values, as one pair per replica."""
    per_replica = []
    for index in range(replicas):
        per_replica.append((_select(features, index), _select(labels, index)))
    return per_replica


def _select(structure, index):
    def pick(value):
        if isinstance(value, values_lib.DistributedValues):
            return value.values[index]
        return value
    return tf.nest.map_structure(pick, structure)
