"""``xla.replica_id()`` inside an emulated TPU replica: that replica's number.

TF r1.15 tensorflow/compiler/tf2xla/python/xla.py: ``replica_id =
gen_xla_ops.xla_replica_id``, an int32 scalar that XLA, compiling the replicated
computation for a TPU, sets to the replica's index. Contrastive pre-training
code reads it to place its own examples in a cross-replica concatenation and to
number its labels (SimCLR's TF 1 ``objective.py``, ``tpu_cross_replica_concat``
and ``add_contrastive_loss``, and its forks: 10 hits for ``xla.replica_id()`` in
the public code index, 2026-11-29).

The emulated TPU does not compile a replica's step with XLA. TensorFlow's
constant folding then evaluates the ``XlaReplicaId`` op on the CPU through XLA's
on-demand compiler, which has no device assignment, and the process dies of a
segmentation fault (TF 2.21: ``xla::DeviceAssignment::LogicalIdForDevice`` under
``ConstantFold``, seen running SimCLR's TF 1 ``run.py`` on 8 emulated cores).
So inside an emulated replica ``replica_id()`` is that replica's number as an
int32 constant, the value a TPU gave it; anywhere else it is TensorFlow's op.
"""

import functools

import tensorflow as tf

__all__ = ["emulated_replica_id"]


def emulated_replica_id(original):
    """``xla.replica_id``: the emulated replica's number inside one, else TensorFlow's op."""

    @functools.wraps(original)
    def replica_id(*args, **kwargs):
        from tpu_compat.lowlevel import cross_replica  # pylint: disable=import-outside-toplevel
        context = cross_replica.emulated_replica_context()
        if context is not None:
            replica = cross_replica._replica_number(context)  # pylint: disable=protected-access
            if replica >= 0:
                return tf.constant(replica, tf.int32, name=kwargs.get("name") or "replica_id")
        return original(*args, **kwargs)

    return replica_id
