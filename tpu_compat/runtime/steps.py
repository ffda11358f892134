"""``steps_per_run``: N training steps per host round trip, as TF 1.15 ran them.

TF 1.15's TPU strategy put the step function in a host-side ``while_loop``
so that one ``Session.run`` executed N steps. In graph mode we build the same
loop (TensorFlow's own ``MirroredExtended`` loop is exactly that). In eager
mode TensorFlow 2.21 runs that ``while_loop`` op by op from Python (measured:
23x slower than a ``tf.function`` loop), so the loop is traced once into a
``tf.function`` and every later call with the same step function and iterator
is one host call that runs N steps, however large N is.
"""

import threading
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import input_lib

__all__ = ["run_steps_on_iterator"]


class _TracedLoop:
    """One traced multi-step loop for a (step function, iterator) pair."""

    def __init__(self, build_loop, fn, iterator, initial_loop_values):
        self.traced_ctx = None

        def multi_step(iterations):
            ctx = build_loop(fn, iterator, iterations, initial_loop_values)
            # Python-side results (non-tensor outputs, which outputs were
            # reduced) are only known at trace time: keep that context.
            self.traced_ctx = ctx
            return ctx.last_step_outputs

        self.function = tf.function(multi_step, autograph=False)


_cache_lock = threading.Lock()
# fn -> {iterator id -> _TracedLoop}. Weak on fn so that a discarded step
# function frees its traced graph.
_loops = weakref.WeakKeyDictionary()


def _traced_loop(build_loop, fn, iterator, initial_loop_values):
    try:
        per_fn = _loops.setdefault(fn, {})
    except TypeError:  # fn cannot be weakly referenced: no caching
        return _TracedLoop(build_loop, fn, iterator, initial_loop_values)
    with _cache_lock:
        loop = per_fn.get(id(iterator))
        if loop is None:
            loop = _TracedLoop(build_loop, fn, iterator, initial_loop_values)
            per_fn[id(iterator)] = loop
        return loop


def run_steps_on_iterator(build_loop, fn, iterator, iterations,
                          initial_loop_values=None):
    """Runs ``fn(ctx, inputs)`` ``iterations`` times per call.

    Args:
      build_loop: ``(fn, iterator, iterations, initial_loop_values) ->
        MultiStepContext`` that builds the in-graph loop (TensorFlow's
        ``_experimental_run_steps_on_iterator`` of the strategy's extended).
      fn: the step function, ``fn(ctx, inputs)``.
      iterator: an input iterator with ``get_next()``.
      iterations: a Python int, tensor or variable.
      initial_loop_values: the structure of ``ctx.last_step_outputs``.

    Returns:
      A ``MultiStepContext``. In graph mode (and inside ``tf.function``) its
      ``run_op`` runs all the steps; eagerly the steps have already run,
      ``run_op`` is None (as in TensorFlow) and ``last_step_outputs`` hold
      values.
    """
    if not tf.executing_eagerly():
        return build_loop(fn, iterator, iterations, initial_loop_values)
    loop = _traced_loop(build_loop, fn, iterator, initial_loop_values)
    # A tensor argument: changing N between calls does not retrace.
    outputs = loop.function(tf.constant(iterations, dtype=tf.int32)
                            if isinstance(iterations, int) else iterations)
    ctx = input_lib.MultiStepContext()
    traced = loop.traced_ctx
    for name, value in traced.non_tensor_outputs.items():
        ctx.set_non_tensor_output(name, value)
    ctx._last_step_outputs_reduce_ops = dict(  # pylint: disable=protected-access
        traced._last_step_outputs_reduce_ops)  # pylint: disable=protected-access
    ctx._set_last_step_outputs(outputs)  # pylint: disable=protected-access
    ctx.run_op = None
    return ctx
