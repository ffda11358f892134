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
(``native.NATIVE`` is the seam the contract tests replace).

The modules, by job: :mod:`.replication` (replicate, rewrite, shard,
batch_parallel), :mod:`.cross_replica` (cross_replica_sum,
the replica context), :mod:`.cross_shard_optimizer`, :mod:`.host`
(outside_compilation, core, bfloat16_scope, the TPU system) and
:mod:`.feeds` (per-core infeed/outfeed queues), :mod:`.loops`
(repeat, while_loop) and :mod:`.native` (TensorFlow's own functions, and which of the two runs). This
package is where ``install()`` routes ``tf.compat.v1.tpu`` and ``tf.contrib.tpu``
to, and where the table's hooks (TPC040-TPC050) sit.
"""

from tpu_compat.lowlevel.cross_replica import (
    NotInReplicaContextError, cross_replica_sum, emulated_replica_context)
from tpu_compat.lowlevel.cross_shard_optimizer import CrossShardOptimizer
from tpu_compat.lowlevel.feeds import (
    infeed_dequeue, infeed_dequeue_tuple, infeed_enqueue, infeed_enqueue_tuple,
    outfeed_dequeue, outfeed_dequeue_tuple, outfeed_enqueue, outfeed_enqueue_tuple)
from tpu_compat.lowlevel.host import (
    bfloat16_scope, core, initialize_system, outside_compilation, shutdown_system)
from tpu_compat.lowlevel.loops import repeat, while_loop
from tpu_compat.lowlevel.replication import (
    batch_parallel, replicate, replicate_strategy, rewrite, shard)
from tpu_compat.runtime import hooks

__all__ = [
    "CrossShardOptimizer",
    "NotInReplicaContextError",
    "batch_parallel",
    "bfloat16_scope",
    "core",
    "cross_replica_sum",
    "emulated_replica_context",
    "infeed_dequeue",
    "infeed_dequeue_tuple",
    "infeed_enqueue",
    "infeed_enqueue_tuple",
    "initialize_system",
    "outfeed_dequeue",
    "outfeed_dequeue_tuple",
    "outfeed_enqueue",
    "outfeed_enqueue_tuple",
    "outside_compilation",
    "repeat",
    "replicate",
    "replicate_strategy",
    "rewrite",
    "shard",
    "shutdown_system",
    "while_loop",
]


# The tf.compat.v1.tpu names install() routes here (tpu_compat.patching.namespaces).
ROUTED_NAMES = ("CrossShardOptimizer", "batch_parallel", "bfloat16_scope", "core",
                "cross_replica_sum", "initialize_system", "outside_compilation",
                "replicate", "rewrite", "shard", "shutdown_system")


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
