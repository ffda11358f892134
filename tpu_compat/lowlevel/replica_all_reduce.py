"""``ReplicaContext.all_reduce`` on the emulated TPU: its gradient without a graph walk.

TF 2 TPU programs reduce across replicas inside the replica function with
``tf.distribute.get_replica_context().all_reduce`` (SimCLR's global batch norm
through ``SyncBatchNormalization``, its ``tpu_cross_replica_concat``). On the
emulated TPU (a MirroredStrategy underneath) that is TensorFlow's own
``ReplicaContextBase.all_reduce``: a ``merge_call`` wrapped in
``tf.custom_gradient``. In a ``tf.function`` the graph-mode custom_gradient
looks for variables between the wrapped function's inputs and outputs
(custom_gradient._get_dependent_variables, a backward walk from the outputs
that stops only at the inputs). The merge_call's output depends on every
replica's input, so each all-reduce walks back through the other replicas'
whole graphs: the trace costs grow with the square of the network's depth
(times the replicas). Measured (docs/performance.md): the first 2-step loop of
an 8-replica custom loop with 5 synchronized batch norms took 250 s.

Here the merge_call runs first and its results enter the custom gradient as
inputs too, so the walk stops at once. The gradient is TensorFlow's: the same
all-reduce of the upstream gradients, to this replica's inputs only (TF r2.3
tensorflow/python/distribute/distribute_lib.py, ``ReplicaContext.all_reduce``'s
``grad_wrapper``; XLA's CrossReplicaSum gradient is the same sum). Outside the
emulated TPU, eagerly, with IndexedSlices and without merge_call, TensorFlow's
own method runs unchanged.
"""

import functools

import tensorflow as tf

from tpu_compat.runtime import emulated

__all__ = ["emulated_all_reduce", "patch_all_reduce"]


def _on_emulated_tpu(context):
    strategy = getattr(context, "_strategy", None)
    return strategy is not None and isinstance(strategy.extended, emulated.EmulatedTPUExtended)


def _fast_path_applies(context, flat):
    if tf.executing_eagerly() or not _on_emulated_tpu(context):
        return False
    if any(isinstance(value, tf.IndexedSlices) for value in flat):
        return False  # TensorFlow's own path (no gradient there either)
    return context._strategy.extended._use_merge_call()  # pylint: disable=protected-access


def emulated_all_reduce(original):
    """``ReplicaContextBase.all_reduce``, with the walk-free gradient on the emulated TPU."""

    @functools.wraps(original)
    def all_reduce(self, reduce_op, value, options=None):
        flat = tf.nest.flatten(value)
        if not _fast_path_applies(self, flat):
            return original(self, reduce_op, value, options)
        if isinstance(reduce_op, str):
            reduce_op = tf.distribute.ReduceOp(reduce_op.upper())
        if options is None:
            options = tf.distribute.experimental.CommunicationOptions()
        inputs = [tf.convert_to_tensor(x) for x in flat]

        def batch_all_reduce(strategy, *per_replica):
            # Destinations as TensorFlow's all_reduce gives them: each value's device.
            return strategy.extended.batch_reduce_to(
                reduce_op, [(v, v) for v in per_replica], options)

        reduced = self.merge_call(batch_all_reduce, args=tuple(inputs))
        count = len(inputs)

        @tf.custom_gradient
        def reduced_with_gradient(*inputs_and_reduced):
            def gradient(*upstream):
                summed = self.all_reduce(reduce_op, list(upstream))
                return tuple(summed) + (None,) * count  # nothing to the merge_call's outputs
            return [tf.identity(y) for y in inputs_and_reduced[count:]], gradient

        return tf.nest.pack_sequence_as(value, reduced_with_gradient(*inputs, *reduced))

    return all_reduce


def patch_all_reduce(changes):
    """Replaces ``ReplicaContextBase.all_reduce`` through ``changes`` (undone by uninstall)."""
    from tpu_compat._tf_internals import distribute_lib  # pylint: disable=import-outside-toplevel
    base = distribute_lib.ReplicaContextBase
    changes.replace(base, "all_reduce", emulated_all_reduce(base.all_reduce))
