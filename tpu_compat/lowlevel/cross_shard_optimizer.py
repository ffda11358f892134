"""``CrossShardOptimizer`` on the emulated TPU: the gradients summed across the shards.

It sums every gradient over the shards (each group) with the emulated
``cross_replica_sum`` (:mod:`.cross_replica`), all of them at one meeting of
the replicas, and each copy of a mirrored variable applies the same sum.
"""

import tensorflow as tf

from tpu_compat._tf_internals import losses, optimizer_lib, tpu_optimizer
from tpu_compat.lowlevel import native
from tpu_compat.lowlevel.cross_replica import (
    NotInReplicaContextError, emulated_cross_replica_sums, emulated_replica_context)

__all__ = ["CrossShardOptimizer"]


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
        if not native.on_emulated_tpu():
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
        grads_and_vars = list(grads_and_vars)
        # TF 1.15 built one CrossReplicaSum per gradient (tpu_optimizer.py,
        # apply_gradients: ``tpu_ops.cross_replica_sum(grad, ...)`` in its
        # loop); here each is still its own sum, but the replicas meet once
        # for all of them.
        present = [i for i, (grad, _) in enumerate(grads_and_vars) if grad is not None]
        grads = [grads_and_vars[i][0] for i in present]
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]
        summed = list(grads_and_vars)
        if grads:
            for i, total in zip(present, emulated_cross_replica_sums(
                    context, grads, self._group_assignment)):
                summed[i] = (total, grads_and_vars[i][1])
        return _apply_summed(context, self._opt, summed, global_step, name)


def _apply_summed(context, opt, grads_and_vars, global_step, name):
    """Applies gradients already summed across the shards, without re-reducing.

    A ``tf.compat.v1.train.Optimizer`` under a distribution strategy would sum
    the replicas' gradients once more; here every replica applies the same
    summed gradient to its copy of each mirrored variable, so the copies stay
    identical. Custom optimizers that override ``apply_gradients`` (BERT's
    AdamWeightDecayOptimizer) assign their variables themselves; the
    variables created inside a replicated computation take the first
    replica's value on assignment (see ``replication.replica_variable_creator``).
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
