"""The seam between TensorFlow's low-level TPU API and the emulated one.

On a real TPU every ``tf.compat.v1.tpu`` function of this package calls
TensorFlow's own, unchanged, through :data:`NATIVE`; contract tests swap that
namespace for recording stand-ins. On the emulated TPU (see
:func:`on_emulated_tpu`) the package builds the computation itself.
"""

import types

from tpu_compat._tf_internals import (
    native_bfloat16, native_tpu, tpu_name_util, tpu_ops, tpu_replication, training_loop)
from tpu_compat.runtime import backend as backend_lib

__all__ = ["NATIVE", "on_emulated_tpu"]

# TensorFlow's implementations, for the real-TPU path. Read at call time
# (``native.NATIVE.replicate``), so that a swapped namespace takes effect.
NATIVE = types.SimpleNamespace(
    replicate=native_tpu.replicate,
    rewrite=native_tpu.rewrite,
    shard=native_tpu.shard,
    batch_parallel=native_tpu.batch_parallel,
    outside_compilation=tpu_replication.outside_compilation,
    cross_replica_sum=tpu_ops.cross_replica_sum,
    core=tpu_name_util.core,
    bfloat16_scope=native_bfloat16.bfloat16_scope,
    infeed_enqueue_tuple=tpu_ops.infeed_enqueue_tuple,
    infeed_enqueue=tpu_ops.infeed_enqueue,
    infeed_dequeue_tuple=tpu_ops.infeed_dequeue_tuple,
    infeed_dequeue=tpu_ops.infeed_dequeue,
    outfeed_enqueue_tuple=tpu_ops.outfeed_enqueue_tuple,
    outfeed_enqueue=tpu_ops.outfeed_enqueue,
    outfeed_dequeue_tuple=tpu_ops.outfeed_dequeue_tuple,
    outfeed_dequeue=tpu_ops.outfeed_dequeue,
    repeat=training_loop.repeat,
    while_loop=training_loop.while_loop,
)


def on_emulated_tpu():
    """Whether the backend is the emulated TPU (else TensorFlow's own API runs)."""
    return backend_lib.get_backend().emulated
