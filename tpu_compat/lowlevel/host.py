"""Host-side code, cores, bfloat16 and the TPU system of ``tf.compat.v1.tpu``.

``outside_compilation`` puts host-side code (logging, summaries) beside a
replicated computation; ``core``, ``bfloat16_scope``, ``initialize_system`` and
``shutdown_system`` answer as a TPU's would.
"""

import contextlib
import threading

import tensorflow as tf

from tpu_compat._tf_internals import ops
from tpu_compat.lowlevel import native
from tpu_compat.lowlevel.cross_replica import emulated_replica_context
from tpu_compat.fidelity import compile_checks, numerics
from tpu_compat.runtime import resolver as resolver_lib

__all__ = ["bfloat16_scope", "collecting_host_ops", "core", "initialize_system",
           "outside_compilation", "shutdown_system"]


def _host_device():
    """The emulated TPU's host: the CPU every core's host computation runs on."""
    return "/job:localhost/replica:0/task:0/device:CPU:0"


# Host-side operations an outside_compilation created in the replica being
# built (per thread: each replica is built in its own thread).
_host_ops = threading.local()


def _stateful_ops_created(graph, before):
    return [op for op in graph.get_operations()[before:] if op._is_stateful]  # pylint: disable=protected-access


@contextlib.contextmanager
def collecting_host_ops():
    """Collects the stateful host ops ``outside_compilation`` creates while a
    replica is built in this thread; yields the list they are added to."""
    _host_ops.pending = []
    try:
        yield _host_ops.pending
    finally:
        _host_ops.pending = None


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
    if not native.on_emulated_tpu():
        return native.NATIVE.outside_compilation(computation, *args, **kwargs)
    with numerics.on_host():  # host ops: a TPU's precision does not apply
        return _outside_compilation(computation, *args, **kwargs)


def _outside_compilation(computation, *args, **kwargs):
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
        compile_checks.mark_host_ops(graph.get_operations()[before:])
        return result
    before = len(graph.get_operations())
    with ops.device(_host_device()):
        result = computation(*args, **kwargs)
    pending.extend(_stateful_ops_created(graph, before))
    compile_checks.mark_host_ops(graph.get_operations()[before:])  # host ops: not compiled
    return result


def core(num):
    """``tf.compat.v1.tpu.core``: the device of logical core ``num`` of a replica.

    On the emulated TPU a replica is one device, so the name is empty (``with
    tf.device(tpu.core(i))`` keeps the replica's device).
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.core(num)
    if isinstance(num, bool) or not isinstance(num, int) or num < 0:
        raise ValueError(f"num must be a non-negative int (a logical core of the "
                         f"replica), got {num!r}")
    return ""


@contextlib.contextmanager
def bfloat16_scope(name=None):
    """``tf.compat.v1.tpu.bfloat16_scope``: TensorFlow's own (CPU has bfloat16)."""
    with native.NATIVE.bfloat16_scope(name) as scope:
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
