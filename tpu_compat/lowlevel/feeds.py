"""TF 1.x's infeed and outfeed on the emulated TPU: per-core host<->device queues.

A TF 1.x program on a TPU feeds each core from the host and drains what each
core sends back (the ops of TF 1.x's tpu_ops.py: tensorflow/contrib/tpu/python/ops/
tpu_ops.py up to r1.12, tensorflow/python/tpu/ops/tpu_ops.py from r1.13, over
gen_tpu_ops; the pattern as the AI Platform template cloudml-samples
tpu/templates/tpu_rewrite/trainer_infeed_outfeed.py and the codelab
training-data-analyst quests/tpu/tpu_fundamentals.ipynb use it):

* on the host, ``infeed_enqueue_tuple(inputs, shapes, device_ordinal=k)``
  puts one tuple into core ``k``'s infeed, and
  ``outfeed_dequeue_tuple(dtypes, shapes, device_ordinal=k)`` takes one tuple
  from core ``k``'s outfeed, blocking until the core has sent it;
* in the replicated computation, ``infeed_dequeue_tuple(dtypes, shapes)``
  takes the next tuple from this core's infeed (blocking until the host has
  enqueued one) and ``outfeed_enqueue_tuple(inputs)`` sends a tuple to the
  host.

The emulated TPU keeps, per graph and per core ordinal, one infeed and one
outfeed ``FIFOQueue`` placed on the host CPU. Replica ``k`` (the ``k``-th core
of the emulated TPU) drains infeed ``k`` and fills outfeed ``k``. Both ends
agree on the tuple's dtypes and per-core shapes (the ops carry them as
attributes; the TPU program is compiled for the dequeue's shapes): the first
end built fixes them and the other end is checked against them, at
graph-construction time, with an error naming the argument.

Blocking is a TPU's: a dequeue waits until its queue has an element (use
``tf.compat.v1.RunOptions(timeout_in_ms=...)`` to bound a ``Session.run``),
and an enqueue waits when the queue holds :data:`CAPACITY` elements.
"""

import threading
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import ops
from tpu_compat.lowlevel import native
from tpu_compat.lowlevel.cross_replica import emulated_replica_context
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.fidelity import compile_checks

__all__ = ["CAPACITY", "SUPPORTED_INFEED_DTYPES", "infeed_dequeue", "infeed_dequeue_tuple", "infeed_enqueue",
           "infeed_enqueue_tuple", "outfeed_dequeue", "outfeed_dequeue_tuple",
           "outfeed_enqueue", "outfeed_enqueue_tuple"]

# How many tuples one core's infeed (or outfeed) holds before an enqueue waits.
CAPACITY = 1024

_HOST = "/job:localhost/replica:0/task:0/device:CPU:0"

# What a TPU's infeed carries. TF 1.x's tpu_ops.py (tensorflow/contrib/tpu/python/ops/
# tpu_ops.py up to r1.12, tensorflow/python/tpu/ops/tpu_ops.py from r1.13):
# infeed_dequeue(_tuple) refused any other dtype with a TypeError (a uint8 image or a
# string feature was the common mistake).
SUPPORTED_INFEED_DTYPES = (tf.bool, tf.int32, tf.int64, tf.bfloat16, tf.float32,
                           tf.complex64)
_lock = threading.Lock()
_queues = weakref.WeakKeyDictionary()  # graph -> {(kind, ordinal): _Feed}


class _Feed:
    """One core's infeed or outfeed: its queue and the tuple it carries."""

    def __init__(self, queue, dtypes, shapes, built_by):
        self.queue = queue
        self.dtypes = dtypes
        self.shapes = shapes
        self.built_by = built_by


def _num_cores():
    return len(backend_lib.get_backend().devices)


def _check_ordinal(api, device_ordinal):
    cores = _num_cores()
    if (isinstance(device_ordinal, bool) or not isinstance(device_ordinal, int)
            or not 0 <= device_ordinal < cores):
        raise ValueError(
            f"{api}: device_ordinal must be an int in [0, {cores}) (the core whose "
            f"queue the host op serves; the emulated TPU has {cores} cores), got "
            f"{device_ordinal!r}")
    return device_ordinal


def _as_dtypes(api, dtypes):
    if not isinstance(dtypes, (list, tuple)):
        raise TypeError(f"{api}: dtypes must be a list of tf.DType, got "
                        f"{type(dtypes).__name__}")
    try:
        return [tf.as_dtype(d) for d in dtypes]
    except TypeError as error:
        raise TypeError(f"{api}: dtypes: {error}") from None


def _as_shapes(api, shapes, count, argument="shapes"):
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(f"{api}: {argument} must be a list of shapes (one per tuple "
                        f"element), got {type(shapes).__name__}")
    if len(shapes) != count:
        raise ValueError(f"{api}: {argument} has {len(shapes)} shapes but the tuple "
                         f"has {count} elements")
    result = []
    for position, shape in enumerate(shapes):
        # TF 1.x turned each entry into a TensorShape (an int n is the shape [n]).
        shape = tf.TensorShape(shape)
        if not shape.is_fully_defined():
            raise ValueError(
                f"{api}: {argument}[{position}] is {shape}; a TPU feed needs fully "
                f"defined per-core shapes")
        result.append(shape)
    return result


def _feed(api, kind, ordinal, dtypes, shapes, argument):
    """Core ``ordinal``'s ``kind`` queue in the default graph, built or checked."""
    with ops.init_scope():
        # The graph the queue lives in: the outer graph, also when a replica is
        # built in a while-loop body (control flow v2 builds a FuncGraph).
        graph = ops.get_default_graph()
    with _lock:
        feeds = _queues.setdefault(graph, {})
        existing = feeds.get((kind, ordinal))
        if existing is None:
            # Outside any loop, control dependency or replica name scope: the
            # queue lives on the host, one per core, for the whole graph.
            with ops.init_scope(), graph.as_default(), graph.name_scope(None), \
                    ops.device(_HOST):
                before = len(graph.get_operations())
                queue = tf.queue.FIFOQueue(
                    CAPACITY, dtypes, shapes=shapes,
                    name=f"tpu_compat_{kind}_core_{ordinal}")
                # The queue is the host's, even when a replica's dequeue built it.
                compile_checks.mark_host_ops(graph.get_operations()[before:])
            feeds[(kind, ordinal)] = _Feed(queue, dtypes, shapes, api)
            return queue
    if list(existing.dtypes) != list(dtypes):
        raise ValueError(
            f"{api}: dtypes {[d.name for d in dtypes]} differ from the "
            f"{[d.name for d in existing.dtypes]} that {existing.built_by} gave core "
            f"{ordinal}'s {kind}; both ends of a TPU feed carry the same tuple")
    if [s.as_list() for s in existing.shapes] != [s.as_list() for s in shapes]:
        raise ValueError(
            f"{api}: {argument} {[s.as_list() for s in shapes]} differ from the "
            f"{[s.as_list() for s in existing.shapes]} that {existing.built_by} "
            f"gave core {ordinal}'s {kind}; a TPU checks each element's per-core "
            f"shape")
    return existing.queue


def _replica_ordinal(api):
    """The core ordinal of the replica being built (a clear error outside one)."""
    context = emulated_replica_context()
    if context is None:
        raise ValueError(
            f"{api} must be called inside a replicated TPU computation "
            f"(tf.compat.v1.tpu.replicate, rewrite, shard or batch_parallel): it "
            f"reads or writes the queue of the core the replica runs on")
    replica = context._replica_id_in_sync_group  # pylint: disable=protected-access
    if not isinstance(replica, int):
        replica = tf.get_static_value(replica)
    device = context.strategy.extended.worker_devices[replica]
    devices = [tf.DeviceSpec.from_string(d).to_string()
               for d in backend_lib.get_backend().devices]
    canonical = tf.DeviceSpec.from_string(device).to_string()
    return devices.index(canonical) if canonical in devices else replica


def _graph_mode(api):
    if tf.executing_eagerly():
        raise RuntimeError(
            f"{api} builds a graph op (TF 1.x ran it in a tf.compat.v1.Session); "
            f"call it in graph mode (`tpu-compat run --tf1`, or inside "
            f"tf.Graph().as_default())")


# -- host side ----------------------------------------------------------------------

def infeed_enqueue_tuple(inputs, shapes, layouts=None, device_ordinal=-1, name=None):
    """``infeed_enqueue_tuple``: the host puts one tuple into core ``device_ordinal``'s infeed.

    ``shapes`` are the per-core shapes of ``inputs`` (they must match them).
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.infeed_enqueue_tuple(
            inputs=inputs, shapes=shapes, layouts=layouts or [],
            device_ordinal=device_ordinal, name=name)
    api = "infeed_enqueue_tuple"
    _graph_mode(api)
    del layouts  # the emulated core has no memory layout to choose
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{api}: inputs must be a list of tensors, got "
                        f"{type(inputs).__name__}")
    ordinal = _check_ordinal(api, device_ordinal)
    inputs = [tf.convert_to_tensor(x) for x in inputs]
    shapes = _as_shapes(api, shapes, len(inputs))
    for position, (x, shape) in enumerate(zip(inputs, shapes)):
        if not x.shape.is_compatible_with(shape):
            raise ValueError(
                f"{api}: inputs[{position}] has shape {x.shape} but shapes[{position}] "
                f"is {shape}")
    queue = _feed(api, "infeed", ordinal, [x.dtype for x in inputs], shapes, "shapes")
    with ops.device(_HOST):
        return queue.enqueue(inputs, name=name or "InfeedEnqueueTuple")


def infeed_enqueue(input, shape=None, layout=None, device_ordinal=-1, name=None):  # pylint: disable=redefined-builtin
    """``infeed_enqueue``: one tensor into core ``device_ordinal``'s infeed."""
    if not native.on_emulated_tpu():
        return native.NATIVE.infeed_enqueue(
            input=input, shape=[] if shape is None else shape, layout=layout or [],
            device_ordinal=device_ordinal, name=name)
    input = tf.convert_to_tensor(input)
    return infeed_enqueue_tuple([input], [input.shape if shape is None else shape],
                                device_ordinal=device_ordinal,
                                name=name or "InfeedEnqueue")


def outfeed_dequeue_tuple(dtypes, shapes, device_ordinal=-1, name=None):
    """``outfeed_dequeue_tuple``: the host takes one tuple from core ``device_ordinal``'s outfeed.

    Blocks until the core has sent one.
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.outfeed_dequeue_tuple(
            dtypes=dtypes, shapes=shapes, device_ordinal=device_ordinal, name=name)
    api = "outfeed_dequeue_tuple"
    _graph_mode(api)
    ordinal = _check_ordinal(api, device_ordinal)
    dtypes = _as_dtypes(api, dtypes)
    shapes = _as_shapes(api, shapes, len(dtypes))
    queue = _feed(api, "outfeed", ordinal, dtypes, shapes, "shapes")
    with ops.device(_HOST):
        values = queue.dequeue(name=name or "OutfeedDequeueTuple")
    return list(values) if isinstance(values, (list, tuple)) else [values]


def outfeed_dequeue(dtype, shape, device_ordinal=-1, name=None):
    """``outfeed_dequeue``: one tensor from core ``device_ordinal``'s outfeed."""
    if not native.on_emulated_tpu():
        return native.NATIVE.outfeed_dequeue(
            dtype=dtype, shape=shape, device_ordinal=device_ordinal, name=name)
    return outfeed_dequeue_tuple([dtype], [shape], device_ordinal=device_ordinal,
                                 name=name or "OutfeedDequeue")[0]


# -- device side --------------------------------------------------------------------

def infeed_dequeue_tuple(dtypes, shapes, name=None):
    """``infeed_dequeue_tuple``: this core takes its next tuple from its infeed.

    ``shapes`` are per-core shapes; blocks until the host has enqueued a tuple.
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.infeed_dequeue_tuple(dtypes=dtypes, shapes=shapes, name=name)
    api = "infeed_dequeue_tuple"
    _graph_mode(api)
    dtypes = _as_dtypes(api, dtypes)
    for dtype in dtypes:
        if dtype not in SUPPORTED_INFEED_DTYPES:
            raise TypeError(
                f"{api}: dtypes: {dtype.name} is not a supported TPU infeed type; "
                f"supported: {', '.join(d.name for d in SUPPORTED_INFEED_DTYPES)} "
                f"(cast it in the input pipeline)")
    shapes = _as_shapes(api, shapes, len(dtypes))
    ordinal = _replica_ordinal(api)
    queue = _feed(api, "infeed", ordinal, dtypes, shapes, "shapes")
    values = queue.dequeue(name=name or "InfeedDequeueTuple")
    # The emulated InfeedDequeueTuple: an op a TPU compiles (fidelity passes it).
    compile_checks.mark_host_ops([_op_of(values)])
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    for value, shape in zip(values, shapes):
        value.set_shape(shape)
    return values


def infeed_dequeue(dtype, shape, name=None):
    """``infeed_dequeue``: this core takes its next tensor from its infeed."""
    if not native.on_emulated_tpu():
        return native.NATIVE.infeed_dequeue(dtype=dtype, shape=shape, name=name)
    return infeed_dequeue_tuple([dtype], [shape], name=name or "InfeedDequeue")[0]


def outfeed_enqueue_tuple(inputs, name=None):
    """``outfeed_enqueue_tuple``: this core sends a tuple to the host; an Operation."""
    if not native.on_emulated_tpu():
        return native.NATIVE.outfeed_enqueue_tuple(inputs=inputs, name=name)
    api = "outfeed_enqueue_tuple"
    _graph_mode(api)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{api}: inputs must be a list or tuple of tensors, got "
                        f"{type(inputs).__name__}")
    ordinal = _replica_ordinal(api)
    inputs = [tf.convert_to_tensor(x) for x in inputs]
    shapes = _as_shapes(api, [x.shape for x in inputs], len(inputs), "inputs' shapes")
    queue = _feed(api, "outfeed", ordinal, [x.dtype for x in inputs], shapes,
                  "inputs' shapes")
    enqueue = queue.enqueue(inputs, name=name or "OutfeedEnqueueTuple")
    compile_checks.mark_host_ops([enqueue])  # the emulated OutfeedEnqueueTuple: compiled on a TPU
    return enqueue


def _op_of(values):
    first = values[0] if isinstance(values, (list, tuple)) else values
    return first.op


def outfeed_enqueue(input, name=None):  # pylint: disable=redefined-builtin
    """``outfeed_enqueue``: this core sends one tensor to the host; an Operation."""
    if not native.on_emulated_tpu():
        return native.NATIVE.outfeed_enqueue(input=input, name=name)
    return outfeed_enqueue_tuple([input], name=name or "OutfeedEnqueue")
