"""TPUEstimator's host calls (``host_call``, ``eval_metrics``): TF's outfeed, on the host.

Each step's tensors, concatenated across replicas, go into a host FIFO queue
(the outfeed); the host function is built once over the queue's
``dequeue()`` and ``spec.HostCallHook`` runs it once per on-device step after
each loop.
"""

import tensorflow as tf

from tpu_compat.estimator._spec import ModeKeys
from tpu_compat.estimator.tpu import context as context_lib
from tpu_compat.estimator.tpu import replica_step
from tpu_compat.estimator.tpu.config import InputPipelineConfig
from tpu_compat.estimator.tpu.input_pipeline import QUEUE_CAPACITY
from tpu_compat.estimator.tpu.spec import HostCall, call_metric_fn

__all__ = ["HostCallQueue", "host_calls_of", "host_ops", "queue_from"]

_HOST = context_lib.HOST_DEVICE  # the host queue: this host (worker 0)


class HostCallQueue:
    """One step's host-call tensors from all replicas, concatenated (TF's outfeed)."""

    def __init__(self, host_calls, per_replica_tensors, broadcast):
        self.host_calls = host_calls
        flat = []
        for position in range(len(per_replica_tensors[0])):
            values = [replica[position] for replica in per_replica_tensors]
            if values[0].shape.rank == 0:
                raise ValueError(
                    "TPUEstimatorSpec host_call/eval_metrics tensors must keep the "
                    "batch dimension (rank >= 1, concatenated across replicas); got a "
                    f"scalar {values[0].name}; reshape it with tf.reshape(x, [1])")
            flat.append(values[0] if broadcast else tf.concat(values, axis=0))
        with tf.device(_HOST):
            self.queue = tf.queue.FIFOQueue(
                QUEUE_CAPACITY, dtypes=[t.dtype for t in flat],
                shapes=[t.shape for t in flat], name="host_call_queue")
            self.enqueue_op = self.queue.enqueue(flat) if flat else tf.no_op()

    def skip_op(self):
        """Dequeues one step without running the host functions."""
        with tf.device(_HOST):
            return tf.group(self.queue.dequeue())

    def dequeue_by_name(self):
        """``{name: tensors}`` for one step, from one dequeue."""
        with tf.device(_HOST):
            values = self.queue.dequeue()
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        result, start = {}, 0
        for call in self.host_calls:
            result[call.name] = values[start:start + len(call.tensors)]
            start += len(call.tensors)
        return result


def host_calls_of(spec, mode):
    """The spec's host calls for ``mode``, in the order their tensors are queued."""
    calls = []
    if mode == ModeKeys.EVAL and spec.eval_metrics is not None:
        calls.append(HostCall.parse("eval_metrics", spec.eval_metrics))
    if spec.host_call is not None:
        calls.append(HostCall.parse("host_call", spec.host_call))
    return calls


def queue_from(ctx, strategy, host_calls, outputs):
    """The outfeed of one step: each replica's host-call ``outputs``, queued on the host."""
    per_replica = [list(values) for values in zip(*[replica_step.local_results(strategy, o) for o in outputs])]
    # BROADCAST: every replica saw the same batch; TF 1.15 took replica 0's.
    return HostCallQueue(host_calls, per_replica,
                          broadcast=ctx.input_mode == InputPipelineConfig.BROADCAST)


def host_ops(queue):
    """The host functions over one dequeued step, by host-call name."""
    by_name = queue.dequeue_by_name()
    ops = {}
    with tf.device(_HOST):
        for call in queue.host_calls:
            if call.name == "eval_metrics":
                ops[call.name] = call_metric_fn(call, by_name[call.name])
            else:
                ops[call.name] = call.call(by_name[call.name])
    return ops
