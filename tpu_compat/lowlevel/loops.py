"""``tpu.repeat`` / ``tpu.while_loop`` (TF 1.x's training loop) on the emulated TPU.

TF 1.x training_loop.py (tensorflow/contrib/tpu/python/tpu/training_loop.py up to
r1.12, tensorflow/python/tpu/training_loop.py from r1.13): ``while_loop(condition, body,
inputs)`` builds an on-device loop whose ``body`` returns the new loop-carried
tensors followed by operations (the train op, an outfeed enqueue), which run
every iteration; ``repeat(n, body, inputs)`` is that loop with a counter, and
returns the final loop values, or an Operation when there are none.
Programs put it inside the replicated computation:
``batch_parallel(lambda: tpu.repeat(steps, step), num_shards=8)``, each
iteration taking one tuple from the infeed.

On the emulated TPU a replica is a thread of ``call_for_each_replica`` and the
replicas meet (``CrossShardOptimizer``, ``cross_replica_sum``) in
``merge_call``; a graph's while-loop context is one per graph, so the replicas
cannot each build their own loop. The loop is therefore built once, where the
replicas meet: the replicas reach ``repeat`` together, and one while loop runs
``body`` on every replica each iteration (a ``call_for_each_replica`` inside
the loop). Each replica gets its own loop values back, and the loop runs
``n`` steps of every replica, as ``n`` steps of the TPU program do.
"""

import tensorflow as tf

from tpu_compat._tf_internals import values_lib
from tpu_compat._tf_internals import training_loop as native_training_loop
from tpu_compat.lowlevel import native
from tpu_compat.lowlevel.cross_replica import emulated_replica_context

__all__ = ["repeat", "while_loop"]


def _as_list(values):
    if values is None:
        return []
    if isinstance(values, (list, tuple)):
        return list(values)
    return [values]


def _split_body_outputs(outputs, input_dtypes):
    """training_loop.py's body rule: tensors (the inputs' dtypes), then operations."""
    arity = len(input_dtypes)
    outputs = _as_list(outputs)
    tensors, operations = [], []
    for value in outputs:
        if isinstance(value, tf.Operation):
            operations.append(value)
        elif operations:
            raise ValueError("body: tensors must come before operations, as in "
                             "TF 1.15's tpu.while_loop")
        else:
            tensors.append(tf.convert_to_tensor(value))
    if len(tensors) != arity:
        raise TypeError(
            f"body: the loop carries {arity} tensor(s) but the body returned "
            f"{len(tensors)}; return the new value of each input, then operations")
    output_dtypes = [t.dtype for t in tensors]
    if output_dtypes != list(input_dtypes):
        raise TypeError(
            f"body: the loop carries {[d.name for d in input_dtypes]} but the body "
            f"returned {[d.name for d in output_dtypes]} (TF 1.x: 'Mismatch between "
            f"input types and output types for training loop body')")
    return tensors, operations


def _replica_step(body, input_dtypes):
    """One iteration on one replica: ``body(*values)`` -> (new values, done op)."""
    from tpu_compat.lowlevel import host, replication  # pylint: disable=import-outside-toplevel

    def step(values):
        with host.collecting_host_ops() as host_ops, \
                tf.variable_creator_scope(replication.replica_variable_creator):
            tensors, operations = _split_body_outputs(body(*values), input_dtypes)
        done = tf.group(*(operations + host_ops + [t.op for t in tensors]))
        return tuple(tensors), done

    return step


def _emulated_loop(context, condition, body, inputs):
    """The loop built once where the replicas meet; this replica's final values."""
    arity = len(inputs)
    input_dtypes = [x.dtype for x in inputs]

    def merge(strategy, per_replica_inputs):
        replicas = strategy.num_replicas_in_sync
        per_value = []
        for value in per_replica_inputs:
            value = strategy.experimental_local_results(value)
            per_value.append(list(value) * replicas if len(value) == 1 else list(value))
        local = [[per_value[k][r] for k in range(arity)] for r in range(replicas)]
        flat = [t for values in local for t in values]

        def unflatten(flat_values):
            return [list(flat_values[r * arity:(r + 1) * arity]) for r in range(replicas)]

        def loop_condition(*flat_values):
            # A TPU runs one program: the replicas agree on the loop's trip
            # count; the first replica's values decide it.
            return condition(*unflatten(flat_values)[0])

        def loop_body(*flat_values):
            per_replica = values_lib.PerReplica(tuple(tuple(v) for v in unflatten(flat_values)))
            tensors, done = strategy.extended.call_for_each_replica(
                _replica_step(body, input_dtypes), args=(per_replica,))
            done = strategy.experimental_local_results(done)
            per_output = [strategy.experimental_local_results(t) for t in tensors]
            with tf.control_dependencies(done):
                new = [tf.identity(per_output[k][r])
                       for r in range(replicas) for k in range(arity)]
                if not new:
                    return [tf.constant(0)]
            return new

        carried = flat if flat else [tf.constant(0)]
        if not flat:
            # No loop values: TF 1.x carried a dummy 0 and returned it.
            finished = tf.compat.v1.while_loop(
                lambda _: condition(), lambda _: loop_body(), carried,
                parallel_iterations=1)
            return _as_list(finished)[0]
        finished = tf.compat.v1.while_loop(loop_condition, loop_body, carried,
                                           parallel_iterations=1)
        finished = _as_list(finished)
        return values_lib.PerReplica(tuple(tuple(finished[r * arity:(r + 1) * arity])
                                           for r in range(replicas)))

    result = context.merge_call(merge, args=(tuple(inputs),))
    if isinstance(result, tf.Tensor):
        return result
    # TF 1.x's control_flow_ops.while_loop unpacked a single loop value.
    return result[0] if arity == 1 else list(result)


def _check_callable(api, argument, fn):
    if not callable(fn):
        raise TypeError(f"{api}: {argument} must be a callable, got {type(fn).__name__}")


def while_loop(condition, body, inputs=None, infeed_queue=None, name=None):
    """``tpu.while_loop``: an on-device loop (TF 1.x training_loop.while_loop).

    Returns the final loop-carried values (a list), or a dummy scalar 0 whose
    op runs the loop when it carries none, as TF 1.x did.
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.while_loop(condition, body, inputs=inputs,
                                        infeed_queue=infeed_queue, name=name)
    del name  # deprecated in TF 1.15 too
    _check_callable("tpu.while_loop", "condition", condition)
    _check_callable("tpu.while_loop", "body", body)
    context = emulated_replica_context()
    if infeed_queue is not None:
        raise ValueError(
            "tpu.while_loop: infeed_queue (a tf.contrib.tpu.InfeedQueue) is not "
            "supported on the emulated TPU; dequeue in the body with "
            "tf.contrib.tpu.infeed_dequeue_tuple(dtypes, shapes) instead")
    inputs = [tf.convert_to_tensor(x) for x in _as_list(inputs)]
    if context is None:
        # Outside a replicated computation: TensorFlow's own graph loop.
        return native_training_loop.while_loop(condition, body, inputs=inputs)
    return _emulated_loop(context, condition, body, inputs)


def repeat(n, body, inputs=None, infeed_queue=None, name=None):
    """``tpu.repeat``: ``body`` ``n`` times on the device (TF 1.x training_loop.repeat).

    Returns the final values of ``inputs``, or an Operation when ``inputs`` is
    None, as TF 1.15 did.
    """
    if not native.on_emulated_tpu():
        return native.NATIVE.repeat(n, body, inputs=inputs, infeed_queue=infeed_queue,
                                    name=name)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        if not isinstance(n, tf.Tensor):
            raise ValueError(f"tpu.repeat: n must be a non-negative int (the number of "
                             f"iterations), got {n!r}")
    _check_callable("tpu.repeat", "body", body)

    def counted_body(i, *values):
        return [i + 1] + _as_list(body(*values))

    carried = [tf.constant(0)] + _as_list(inputs)
    outputs = while_loop(lambda i, *_: i < n, counted_body, inputs=carried,
                         infeed_queue=infeed_queue)
    outputs = _as_list(outputs)
    if len(outputs) == 1:
        return outputs[0].op if isinstance(outputs[0], tf.Tensor) else outputs[0]
    return outputs[1:]
