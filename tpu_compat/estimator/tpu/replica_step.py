"""Calling ``model_fn`` on each replica of TPUEstimator's TPU programs.

What TF 1.15's ``tpu.shard`` set around the replicated ``model_fn``, the
checks TF 1.15 made of what it returned, and how per-replica values travel
between the strategy and the host.
"""

import contextlib
import logging

import tensorflow as tf
from tensorflow.python.distribute import distribute_utils

from tpu_compat.lowlevel import cross_replica, replication
from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
from tpu_compat.estimator.tpu.spec import TPUEstimatorSpec

__all__ = ["Captured", "check_cross_shard_optimizer", "check_spec", "cross_replica_sums",
           "drop_replica_summaries", "local_results", "replica_scope", "replicate",
           "unpack"]

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


def check_cross_shard_optimizer(before):
    """TF 1.15 refused TPU training whose gradients were not summed across shards.

    Without ``CrossShardOptimizer`` each replica would apply only its own
    gradient (on a TPU, the replicas' variables would drift apart); the
    emulated TPU would instead sum the replicas' gradients without the
    ``1 / shards`` scaling. Both are wrong numbers; TF 1.15 raised this error.
    """
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    if backend_lib.get_backend().emulated and cross_replica_sums() == before:
        raise ValueError(
            "CrossShardOptimizer must be used for model training on TPUs (as TF 1.15 "
            "required): in model_fn, wrap the optimizer with "
            "tf.compat.v1.tpu.CrossShardOptimizer(optimizer) when params['use_tpu'] "
            "is True, or sum the gradients with tf.compat.v1.tpu.cross_replica_sum")


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
    from tensorflow.python.distribute import values as values_lib  # pylint: disable=import-outside-toplevel

    def pick(value):
        if isinstance(value, values_lib.DistributedValues):
            return value.values[index]
        return value
    return tf.nest.map_structure(pick, structure)
