"""TPUEstimator's on-device programs, built over the strategy machinery.

One mechanism serves ``TPUStrategy``, ``tpu.replicate`` and TPUEstimator: the
replicas are those of the compat.v1 ``TPUStrategy`` adapter (on the emulated
TPU a ``MirroredStrategyV1`` whose extended is ``EmulatedTPUExtended``), and
``iterations_per_loop`` training steps run as one in-graph loop per
``Session.run``, the strategy's ``steps_per_run`` loop
(``_experimental_run_steps_on_iterator``).

What TF 1.15's TPUEstimator did with infeed and outfeed queues is done here
with host-side equivalents:

* **input**: a dataset's ``get_next()`` runs inside the loop, once per
  replica-batch as the input mode says, on the CPU of the host whose
  ``input_fn`` made it (each host of a pod feeds its own replicas);
  ``input_fn``s that return tensors
  (not a dataset) are fed through a host FIFO queue that a hook fills with
  one element per step before each loop, as TF's infeed thread did;
* **host calls** (``host_call``, ``eval_metrics``): each step's tensors,
  concatenated across replicas, go into a host FIFO queue (the outfeed); the
  host function is built once over the queue's ``dequeue()`` and a hook runs
  it once per on-device step after each loop.

The loss TF 1.15 reported (and logged) is replica 0's, of the last step of
the loop in training and the mean over the loop's steps in evaluation; so
is this one.
"""

import contextlib
import logging
import math

import tensorflow as tf
from tensorflow.python.distribute import distribute_utils
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.training import evaluation as tf_evaluation

from tpu_compat.estimator import _inputs
from tpu_compat.runtime import tpu_lowlevel
from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
from tpu_compat.estimator.tpu import context as context_lib
from tpu_compat.estimator.tpu._ordering import reads_before_updates
from tpu_compat.estimator.tpu.config import InputPipelineConfig
from tpu_compat.estimator.tpu.spec import (
    HostCall, HostCallHook, TPUEstimatorSpec, call_metric_fn, get_scaffold)

__all__ = ["build_program", "create_mirrored_global_step"]

_log = logging.getLogger("tensorflow")
_HOST = context_lib.HOST_DEVICE  # host-side queues and variables: this host (worker 0)
# Host queues are drained after every loop; this only bounds a runaway loop.
_QUEUE_CAPACITY = 1 << 30
ITERATIONS_VAR = "iterations_per_loop"


def create_mirrored_global_step(strategy):
    """The global step, mirrored over the replicas and updated once per step.

    ``ONLY_FIRST_REPLICA``: every replica's ``optimizer.minimize(...,
    global_step=...)`` or ``global_step.assign(global_step + 1)`` advances it
    by one per step, as on a TPU, where all replicas write the same value.
    """
    with strategy.scope(), tf.compat.v1.get_default_graph().name_scope(None):
        return tf.compat.v1.get_variable(
            tf.compat.v1.GraphKeys.GLOBAL_STEP, shape=[], dtype=tf.int64,
            initializer=tf.compat.v1.zeros_initializer(), trainable=False,
            use_resource=True, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                         tf.compat.v1.GraphKeys.GLOBAL_STEP])


class LoopState:
    """The number of on-device steps of the current and the next ``Session.run``."""

    def __init__(self, iterations):
        self.iterations = iterations


# -- the input pipeline ---------------------------------------------------------------

class _HostInfeed:
    """A host FIFO queue fed from tensors an ``input_fn`` returned (TF's infeed)."""

    def __init__(self, flat_tensors):
        self.queue = tf.queue.FIFOQueue(
            _QUEUE_CAPACITY, dtypes=[t.dtype for t in flat_tensors],
            shapes=[t.shape for t in flat_tensors], name="host_infeed")
        self.enqueue_op = self.queue.enqueue(flat_tensors)

    def dequeue(self):
        values = self.queue.dequeue()
        return values if isinstance(values, (list, tuple)) else [values]


class _InfeedHook(tf.compat.v1.train.SessionRunHook):
    """Enqueues one element per on-device step before each loop."""

    def __init__(self, enqueue_ops, loop_state):
        self._enqueue_ops = enqueue_ops
        self._state = loop_state

    def before_run(self, run_context):
        for _ in range(self._state.iterations):
            run_context.session.run(self._enqueue_ops)


def _static_batch_check(features, labels, what):
    for name, value in (("features", features), ("labels", labels)):
        for tensor in tf.nest.flatten(value):
            if isinstance(tensor, tf.Tensor) and not tensor.shape.is_fully_defined():
                raise ValueError(
                    f"input_fn: the {name} returned by input_fn must have static "
                    f"shapes on the TPU ({what}), but {tensor.name} has shape "
                    f"{tensor.shape}; batch with dataset.batch(params['batch_size'], "
                    f"drop_remainder=True)")


def _split(structure, count, batch_axis, what):
    """``structure``'s tensors split into ``count`` slices along their batch axis."""
    flat = tf.nest.flatten(structure)
    tensors = [t for t in flat if t is not None]  # labels may be None
    axes = list(batch_axis) if batch_axis is not None else [0] * len(tensors)
    if len(axes) != len(tensors):
        raise ValueError(f"TPUEstimator: batch_axis has {len(axes)} entries but "
                         f"input_fn returns {len(tensors)} tensors")
    axes = iter(axes)
    pieces = []
    for tensor in flat:
        if tensor is None:
            pieces.append([None] * count)
            continue
        axis = next(axes)
        size = tf.compat.dimension_value(tensor.shape[axis])
        if size is not None and size % count:
            raise ValueError(
                f"input_fn: the batch of {tensor.name} ({size}) does not split into "
                f"{count} replicas ({what})")
        pieces.append(tf.split(tensor, count, axis=axis))
    return [tf.nest.pack_sequence_as(structure, [p[i] for p in pieces])
            for i in range(count)]


def _on_host(device):
    """Places ops on a host's CPU by the backend's own device name.

    The names are the hosts the backend runs (``/job:worker/task:h`` on an
    emulated pod), so they are used as they are; ``tf.device`` maps the names
    a program writes (runtime/devices.py), which these are not.
    """
    return tf_ops.device(device)


class _Source:
    """What one ``input_fn`` call returned, and the host CPU it runs on."""

    def __init__(self, device, iterator=None, infeed=None, structure=None):
        self.device = device
        self.iterator = iterator
        self.infeed = infeed
        self.structure = structure


def _with_endless_padding(dataset, what):
    """``dataset``, then empty batches forever.

    On a pod each host predicts from its own ``input_fn``; one host's input
    may end before another's. TF 1.15 appended padded batches with stopping
    signals to each host's input (``_InputsWithStoppingSignals``); here a host
    whose input has ended feeds empty batches (padded to full ones, then
    dropped) until every host's input has ended.
    """
    def empty(spec):
        inner = spec.shape[1:]
        if not inner.is_fully_defined():
            raise ValueError(
                f"input_fn: TPUEstimator.predict on the TPU needs features with static "
                f"shapes apart from the batch dimension ({what}); a feature has shape "
                f"{spec.shape}")
        return tf.zeros([0] + inner.as_list(), spec.dtype)
    tail = tf.data.Dataset.from_tensors(
        tf.nest.map_structure(empty, dataset.element_spec)).repeat()
    return dataset.concatenate(tail)


class InputPipeline:
    """Calls ``input_fn`` as TF 1.15 did for the mode, and feeds every replica.

    As tpu_estimator.py's ``_InputPipeline``: ``input_fn`` is called once per
    core (PER_SHARD_V1, training), once on host 0 (BROADCAST, and SLICED
    evaluation), else once per host (PER_HOST_V1/V2), each call under its
    host's CPU device with a ``TPUContext`` whose
    ``current_input_fn_deployment()`` names that host and invocation; each
    host's input feeds that host's replicas (numbered host by host).
    ``next_per_replica()`` (called inside the loop body) returns one
    ``(features, labels)`` per replica for one step.
    """

    def __init__(self, ctx, input_fn, batch_axis, params, config):
        self._ctx = ctx
        self._batch_axis = batch_axis
        self.hooks = []
        self.infeed_ops = []
        self._sources = []
        self._real_counts = None  # predict: real examples of each source this step
        self._end_check = None    # predict: raises OutOfRange once all inputs ended
        self._per_core = ctx.is_input_sharded_per_core()
        self._per_host_v2 = ctx.is_input_per_host_with_iterators()
        self._broadcast = ctx.is_input_broadcast_with_iterators()
        self._sliced = ctx.is_input_slice_broadcast_to_all_cores()
        invocations = self._invocations()
        for index, host in invocations:
            device = ctx.host_devices[host]
            call_params = dict(params)
            call_params["batch_size"] = ctx.batch_size_for_input_fn
            call_params["context"] = context_lib.TPUContext(
                ctx, input_device=device, invocation_index=index, host_id=host)
            available = {"params": call_params, "mode": ctx.mode, "config": config}
            scope = "input_fn" if len(invocations) == 1 else f"input_fn_{index}"
            with _on_host(device), tf.name_scope(scope):
                result = _inputs.call_with_known_args(input_fn, available,
                                                      required=("params",))
                self._add_source(result, device)

    def _invocations(self):
        """``(invocation index, host)`` of each ``input_fn`` call."""
        ctx = self._ctx
        if self._per_core:
            return [(replica, ctx.host_of_replica(replica))
                    for replica in range(ctx.num_replicas)]
        if self._broadcast:
            return [(0, 0)]
        return [(host, host) for host in range(ctx.num_hosts)]

    @property
    def _predict_batch_per_source(self):
        """Predict: the examples one source feeds per step (padded to it)."""
        batch = self._ctx.predict_batch_size
        return batch if self._broadcast else batch // self._ctx.num_hosts

    def _add_source(self, result, device):
        mode = self._ctx.mode
        if _inputs.is_dataset(result):
            if self._per_core:
                raise TypeError(
                    "input_fn returned a Dataset, which the per-core input pipeline "
                    "(TPUConfig(per_host_input_for_training=False)) does not support "
                    "(as in TF 1.15); return (features, labels) tensors, or use "
                    "per_host_input_for_training=True or InputPipelineConfig."
                    "PER_HOST_V2")
            dataset = result
            if mode == ModeKeys.PREDICT:
                if self._per_host_v2:
                    # Predictions do not depend on how examples are grouped
                    # into steps; read whole host batches so that a partial
                    # last step pads once.
                    dataset = dataset.unbatch().batch(self._predict_batch_per_source)
                dataset = _with_endless_padding(dataset, f"mode {mode!r}")
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
            self.hooks.append(_inputs.DatasetInitializerHook(iterator))
            self._sources.append(_Source(device, iterator=iterator))
            return
        if mode == ModeKeys.PREDICT:
            raise TypeError("input_fn must return a Dataset for TPUEstimator.predict "
                            "on the TPU, not features and labels (as in TF 1.15)")
        if self._per_host_v2:
            raise TypeError("input_fn must return a Dataset with "
                            "InputPipelineConfig.PER_HOST_V2 (as in TF 1.15)")
        features, labels = _inputs.split_features_and_labels(result)
        _static_batch_check(features, labels, f"mode {mode!r}")
        structure = (features, labels)
        infeed = _HostInfeed([t for t in tf.nest.flatten(structure) if t is not None])
        self._sources.append(_Source(device, infeed=infeed, structure=structure))
        self.infeed_ops.append(infeed.enqueue_op)

    def _next_from(self, source):
        if source.iterator is not None:
            return _inputs.split_features_and_labels(source.iterator.get_next())
        values = iter(source.infeed.dequeue())
        # Labels may be None: only tensors went through the queue.
        return tf.nest.pack_sequence_as(
            source.structure, [None if t is None else next(values)
                               for t in tf.nest.flatten(source.structure)])

    def next_per_replica(self):
        ctx = self._ctx
        if ctx.mode == ModeKeys.PREDICT:
            return self._next_for_predict()
        what = f"mode {ctx.mode!r}"
        if self._per_core:
            batches = []
            for source in self._sources:
                with _on_host(source.device):
                    batches.append(self._next_from(source))
            return batches
        if self._broadcast:
            with _on_host(self._sources[0].device):
                features, labels = self._next_from(self._sources[0])
                _static_batch_check(features, labels, what)
                if self._sliced:
                    return _split((features, labels), ctx.num_replicas,
                                  self._batch_axis, what)
            return [(features, labels)] * ctx.num_replicas
        batches = []
        for source in self._sources:  # one per host, in host order
            with _on_host(source.device):
                batches += (self._host_v2_batches(source) if self._per_host_v2
                            else self._host_v1_batches(source, what))
        return batches

    def _host_v2_batches(self, source):
        """PER_HOST_V2: the host's replica ``i`` gets its dataset's ``i``-th batch."""
        batches, previous = [], []
        for _ in range(self._ctx.num_of_replicas_per_host):
            with tf.control_dependencies(previous):
                batch = self._next_from(source)
            previous = [t for t in tf.nest.flatten(batch) if t is not None]
            batches.append(batch)
        for batch in batches:
            _static_batch_check(*batch, "PER_HOST_V2")
        return batches

    def _host_v1_batches(self, source, what):
        """PER_HOST_V1: the host's batch split across the host's replicas."""
        features, labels = self._next_from(source)
        _static_batch_check(features, labels, what)
        return _split((features, labels), self._ctx.num_of_replicas_per_host,
                      self._batch_axis, what)

    def _next_for_predict(self):
        ctx = self._ctx
        batch = self._predict_batch_per_source
        padded, self._real_counts = [], []
        for source in self._sources:
            with _on_host(source.device):
                features, labels = self._next_from(source)
                real = tf.shape(tf.nest.flatten(features)[0])[0]
                padded.append(_pad_to_batch(features, labels, batch))
            self._real_counts.append(real)
        with _on_host(self._sources[0].device):
            self._end_check = _end_of_input_when_all_empty(self._real_counts)
        if self._broadcast:
            features, labels = padded[0]
            if self._sliced:
                return _split((features, labels), ctx.num_replicas, self._batch_axis,
                              "predict")
            return [(features, labels)] * ctx.num_replicas
        per_replica = []
        for (features, labels), source in zip(padded, self._sources):
            with _on_host(source.device):
                per_replica += _split((features, labels), ctx.num_of_replicas_per_host,
                                      self._batch_axis, "predict")
        return per_replica

    def real_predictions(self, per_replica_values):
        """The predictions of real examples, in input order (padding dropped).

        Raises OutOfRange (ending ``predict``) once every input has ended.
        """
        with tf.control_dependencies([self._end_check]):
            if self._broadcast and not self._sliced:
                # Every replica predicted the same batch; TF 1.15 took replica 0's.
                return tf.identity(per_replica_values[0][:self._real_counts[0]])
            if self._broadcast:
                return tf.concat(per_replica_values, axis=0)[:self._real_counts[0]]
            per_host = self._ctx.num_of_replicas_per_host
            pieces = []
            for host, real in enumerate(self._real_counts):
                values = per_replica_values[host * per_host:(host + 1) * per_host]
                pieces.append(tf.concat(values, axis=0)[:real])
            return tf.concat(pieces, axis=0)


def _end_of_input_when_all_empty(real_counts):
    """An op that raises OutOfRange (ends ``predict``) when no input has examples."""
    ended = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(0))
    return tf.compat.v1.cond(
        tf.add_n(real_counts) > 0, lambda: tf.constant(0, tf.int64), ended.get_next)


def _pad_to_batch(features, labels, batch):
    """Pads a partial last batch to ``batch`` examples (TF 1.15 did too)."""

    def pad(tensor):
        if tensor is None:
            return None
        missing = batch - tf.shape(tensor)[0]
        paddings = [[0, missing]] + [[0, 0]] * (tensor.shape.rank - 1)
        padded = tf.pad(tensor, paddings)
        padded.set_shape([batch] + tensor.shape.as_list()[1:])
        return padded

    return tf.nest.map_structure(pad, features), tf.nest.map_structure(pad, labels)


# -- calling model_fn on each replica ------------------------------------------------

@contextlib.contextmanager
def _replica_scope():
    """What TF 1.15's ``tpu.shard`` set around the replicated model_fn.

    Resource variables (a TPU computation cannot use reference variables, and
    only resource variables can be created inside the on-device loop), and
    variables that take the first replica's value when a replica assigns them
    (every replica computes the same value, as on a TPU; see
    ``tpu_lowlevel.replica_variable_creator``). The shard count that
    ``CrossShardOptimizer`` reads is set by the emulated strategy's replicas.
    """
    scope = tf.compat.v1.get_variable_scope()
    saved = scope.use_resource
    scope.set_use_resource(True)
    try:
        with tf.variable_creator_scope(tpu_lowlevel.replica_variable_creator):
            yield
    finally:
        scope.set_use_resource(saved)


def _cross_replica_sums():
    """How many emulated cross-replica sums (CrossShardOptimizer's too) exist."""
    return tpu_lowlevel.sums_built()


def _check_cross_shard_optimizer(before):
    """TF 1.15 refused TPU training whose gradients were not summed across shards.

    Without ``CrossShardOptimizer`` each replica would apply only its own
    gradient (on a TPU, the replicas' variables would drift apart); the
    emulated TPU would instead sum the replicas' gradients without the
    ``1 / shards`` scaling. Both are wrong numbers; TF 1.15 raised this error.
    """
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    if backend_lib.get_backend().emulated and _cross_replica_sums() == before:
        raise ValueError(
            "CrossShardOptimizer must be used for model training on TPUs (as TF 1.15 "
            "required): in model_fn, wrap the optimizer with "
            "tf.compat.v1.tpu.CrossShardOptimizer(optimizer) when params['use_tpu'] "
            "is True, or sum the gradients with tf.compat.v1.tpu.cross_replica_sum")


class _Captured:
    """What replica 0's model_fn returned besides tensors (hooks, scaffold_fn ...)."""

    def __init__(self):
        self.spec = None
        self.host_calls = []

    def capture(self, spec, host_calls):
        if self.spec is None:
            self.spec = spec
            self.host_calls = host_calls


def _replicate(strategy, fn, per_replica_args):
    """Runs ``fn`` on every replica, replica ``i`` with ``per_replica_args[i]``."""
    args = distribute_utils.regroup(per_replica_args)
    backend = getattr(strategy, "tpu_compat_backend", None)
    if backend is not None and not backend.emulated:
        return strategy.run(fn, args=tuple(args))
    return strategy.extended.call_for_each_replica(fn, args=tuple(args))


def _local(strategy, value):
    return list(strategy.experimental_local_results(value))


def _drop_replica_summaries(before):
    """Summaries made inside the replicated step cannot be fetched from the host.

    TF 1.15 did not run them on a TPU either (summary ops are unsupported in a
    TPU computation); write summaries with ``host_call`` instead.
    """
    collection = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.SUMMARIES)
    if len(collection) > before:
        _log.warning("TPUEstimator: %d summary op(s) created inside model_fn are "
                     "ignored on the TPU, as in TF 1.15; use "
                     "TPUEstimatorSpec(host_call=...) to write summaries",
                     len(collection) - before)
        del collection[before:]


class _HostCallQueue:
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
                _QUEUE_CAPACITY, dtypes=[t.dtype for t in flat],
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


def _host_calls_of(spec, mode):
    calls = []
    if mode == ModeKeys.EVAL and spec.eval_metrics is not None:
        calls.append(HostCall.parse("eval_metrics", spec.eval_metrics))
    if spec.host_call is not None:
        calls.append(HostCall.parse("host_call", spec.host_call))
    return calls


def _check_spec(spec, mode, estimator_spec_ok):
    if isinstance(spec, TPUEstimatorSpec):
        return spec
    if isinstance(spec, EstimatorSpec) and estimator_spec_ok:
        if spec.training_chief_hooks:
            raise ValueError("EstimatorSpec.training_chief_hooks are not supported in "
                             "TPUEstimator; pass the hooks via training_hooks")
        return spec
    what = {ModeKeys.EVAL: "evaluation", ModeKeys.PREDICT: "prediction"}.get(mode, mode)
    raise TypeError(
        f"model_fn returned {type(spec).__name__} in mode {mode!r}, but TPU {what} "
        f"needs a tf.estimator.tpu.TPUEstimatorSpec (metrics as eval_metrics="
        f"(metric_fn, tensors), not eval_metric_ops); return a TPUEstimatorSpec, "
        f"or set eval_on_tpu=False to evaluate on the CPU")


# -- the programs --------------------------------------------------------------------

class _StopAtStepHook(tf.compat.v1.train.SessionRunHook):
    """Sets each loop's step count so that training ends exactly at the last step.

    ``iterations_per_loop`` steps per ``Session.run``; the last loop runs only
    the steps that remain (TF 1.15: 4, 4, 2 for 10 steps and 4 per loop).
    """

    def __init__(self, iterations_per_loop, state, iterations_var, num_steps=None,
                 last_step=None):
        self._per_loop = iterations_per_loop
        self._state = state
        self._iterations_var = iterations_var
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()
        self._setter = _Setter(self._iterations_var)

    def _set_next(self, session, global_step):
        count = max(1, min(self._per_loop, self._last_step - global_step))
        self._setter.set(session, count)
        self._state.iterations = count

    def after_create_session(self, session, coord):
        del coord
        global_step = int(session.run(self._global_step))
        if self._last_step is None:
            self._last_step = global_step + self._num_steps
        self._set_next(session, global_step)

    def after_run(self, run_context, run_values):
        del run_values
        global_step = int(run_context.session.run(self._global_step))
        if global_step >= self._last_step:
            run_context.request_stop()
        else:
            self._set_next(run_context.session, global_step)


class _Setter:
    """Sets a host variable from Python (an assign fed by a placeholder)."""

    def __init__(self, variable):
        self._value = tf.compat.v1.placeholder(variable.dtype, [])
        self._assign = variable.assign(self._value)

    def set(self, session, value):
        session.run(self._assign, {self._value: value})


class _SetIterationsHook(tf.compat.v1.train.SessionRunHook):
    """Evaluation: all ``steps`` run in one loop (one Session.run), as in TF 1.15."""

    def __init__(self, count, state, iterations_var):
        self._count = count
        self._state = state
        self._iterations_var = iterations_var

    def begin(self):
        self._setter = _Setter(self._iterations_var)

    def after_create_session(self, session, coord):
        del coord
        self._setter.set(session, self._count)
        self._state.iterations = self._count


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
    """Logs and records ``global_step/sec`` and ``examples/sec`` (TF 1.15 TPU logging)."""

    def __init__(self, batch_size, every_n_steps, output_dir, steps_per_run):
        super().__init__(every_n_steps=every_n_steps, output_dir=output_dir)
        self._batch_size = batch_size
        self._set_steps_per_run(steps_per_run)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        steps_per_sec = elapsed_steps / elapsed_time
        examples_per_sec = self._batch_size * steps_per_sec
        if self._summary_writer is not None:
            summary = tf.compat.v1.Summary(value=[
                tf.compat.v1.Summary.Value(tag="global_step/sec",
                                           simple_value=steps_per_sec),
                tf.compat.v1.Summary.Value(tag="examples/sec",
                                           simple_value=examples_per_sec)])
            self._summary_writer.add_summary(summary, global_step)
        _log.info("global_step/sec: %g", steps_per_sec)
        _log.info("examples/sec: %g", examples_per_sec)


def _host_variable(name, dtype):
    """A local (unsaved) variable on the host, outside any strategy's scope."""
    with tf.device(_HOST):
        return tf.compat.v1.get_variable(
            name, shape=[], dtype=dtype, initializer=tf.compat.v1.zeros_initializer(),
            trainable=False, use_resource=True,
            collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES])


class TPUSystemInitHook(tf.compat.v1.train.SessionRunHook):
    """Real TPU only: initializes the TPU system in each new session (TF 1.15's
    TPUEstimator ran ``tpu.initialize_system()`` when its session started)."""

    def __init__(self, job=None):
        self._job = job

    def begin(self):
        from tensorflow.python.tpu import tpu as native_tpu  # pylint: disable=import-outside-toplevel
        self._init_op = native_tpu.initialize_system(job=self._job)

    def after_create_session(self, session, coord):
        del coord
        session.run(self._init_op)


def _system_hooks(estimator):
    """The TPU-system hooks of a real TPU run (none on the emulated TPU)."""
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    if backend_lib.get_backend().emulated:
        return []
    return [TPUSystemInitHook(job=estimator.config.tpu_config.tpu_job_name)]


def _iterations_variable():
    return _host_variable(ITERATIONS_VAR, tf.int32)


class _LoopInputs:
    """The ``iterator`` the strategy's multi-step loop reads from."""

    def __init__(self, pipeline):
        self._pipeline = pipeline

    def get_next(self):
        return distribute_utils.regroup(self._pipeline.next_per_replica())


def build_program(estimator, strategy, wrapper, input_fn, mode, run_steps):
    """The EstimatorSpec that runs ``mode`` on the (emulated) TPU.

    Args:
      estimator: the TPUEstimator (its context, params, config, model_dir).
      strategy: the graph's replicated strategy.
      wrapper: calls the user's model_fn on a replica.
      input_fn: the user's input_fn.
      mode: a ModeKeys value.
      run_steps: TRAIN: ``(num_steps, last_step)``; EVAL: the eval steps.
    """
    ctx = estimator._ctx  # pylint: disable=protected-access
    builder = {ModeKeys.TRAIN: _build_train, ModeKeys.EVAL: _build_eval,
               ModeKeys.PREDICT: _build_predict}[mode]
    # Host-side loop state: plain local variables, created outside the
    # strategy's scope so that they are not mirrored.
    iterations = _iterations_variable()
    if mode == ModeKeys.EVAL:
        iterations = (iterations, _host_variable("tpu_eval_total_loss", tf.float32))
    pipeline = InputPipeline(ctx, input_fn, estimator._batch_axis,  # pylint: disable=protected-access
                             estimator.params, estimator.config)
    return builder(estimator, ctx, strategy, wrapper, pipeline, run_steps, iterations)


def _run_loop(strategy, step_fn, pipeline, iterations, initial):
    """The strategy's multi-step loop; host functions are built outside its scope."""
    with strategy.scope():
        return strategy.extended._experimental_run_steps_on_iterator(  # pylint: disable=protected-access
            step_fn, _LoopInputs(pipeline), iterations, initial_loop_values=initial)


def _build_train(estimator, ctx, strategy, wrapper, pipeline, run_steps, iterations):
    replicas = ctx.num_replicas
    per_loop = estimator._iterations_per_loop  # pylint: disable=protected-access
    state = LoopState(per_loop)
    captured = _Captured()
    host_queue = []
    summaries_before = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))

    def replica_step(features, labels):
        with _replica_scope():
            spec = _check_spec(wrapper(features, labels, ModeKeys.TRAIN),
                               ModeKeys.TRAIN, estimator_spec_ok=True)
        host_calls = _host_calls_of(spec, ModeKeys.TRAIN) if isinstance(
            spec, TPUEstimatorSpec) else []
        captured.capture(spec, host_calls)
        if spec.train_op is not None:
            reads_before_updates([t for call in host_calls for t in call.tensors],
                                 spec.train_op)
        with tf.control_dependencies([spec.train_op]):
            loss = tf.cast(tf.identity(spec.loss), tf.float32)
            outputs = [tf.identity(t) for call in host_calls for t in call.tensors]
        return loss, outputs

    def step_fn(loop_ctx, inputs):
        features, labels = inputs
        loss, outputs = _replicate(strategy, replica_step, _unpack(features, labels,
                                                                   replicas))
        loop_ctx.set_last_step_output("loss", loss)
        if captured.host_calls:
            queue = _queue_from(ctx, strategy, captured.host_calls, outputs)
            host_queue.append(queue)
            return queue.enqueue_op
        return tf.no_op()

    sums_before = _cross_replica_sums()
    loop = _run_loop(strategy, step_fn, pipeline, iterations,
                     {"loss": [tf.constant(0.0)] * replicas})
    _check_cross_shard_optimizer(sums_before)
    _drop_replica_summaries(summaries_before)
    loss = _local(strategy, loop.last_step_outputs["loss"])[0]
    spec = captured.spec
    scaffold = get_scaffold(getattr(spec, "scaffold_fn", None))
    if isinstance(spec, EstimatorSpec) and spec.scaffold is not None and (
            spec.scaffold.init_fn or spec.scaffold.saver):
        _log.warning("EstimatorSpec.scaffold is ignored by TPU training; use "
                     "TPUEstimatorSpec(scaffold_fn=...)")
    global_step = tf.compat.v1.train.get_global_step()
    with tf.control_dependencies([loop.run_op]):
        loss = tf.identity(loss, name="loss")
        step_after = tf.identity(global_step.read_value())
    num_steps, last_step = run_steps
    hooks = _system_hooks(estimator) + list(pipeline.hooks)
    hooks.append(_StopAtStepHook(per_loop, state, iterations, num_steps, last_step))
    if pipeline.infeed_ops:
        hooks.append(_InfeedHook(pipeline.infeed_ops, state))
    if host_queue:
        host_ops = _host_ops(host_queue[0])
        hooks.append(HostCallHook(
            after_run_ops=host_ops["host_call"], runs_per_step=lambda: state.iterations,
            every_n=estimator.config.tpu_config.experimental_host_call_every_n_steps,
            skip_op=host_queue[0].skip_op()))
    log_steps = estimator._log_every_n_steps  # pylint: disable=protected-access
    if log_steps:
        every_loops = int(math.ceil(log_steps / per_loop))
        hooks.append(tf.compat.v1.train.LoggingTensorHook(
            {"loss": loss, "step": step_after}, every_n_iter=every_loops))
        hooks.append(ExamplesPerSecondHook(
            ctx.global_batch_size, every_n_steps=log_steps,
            output_dir=estimator.model_dir if estimator.config.save_summary_steps
            else None, steps_per_run=per_loop))
    hooks += list(spec.training_hooks)
    return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss,
                         train_op=tf.group(loop.run_op, name="tpu_train_loop"),
                         training_hooks=hooks, scaffold=scaffold)


def _unpack(features, labels, replicas):
    per_replica = []
    for index in range(replicas):
        per_replica.append((_select(features, index), _select(labels, index)))
    return per_replica


def _select(structure, index):
    from tensorflow.python.distribute import values as values_lib  # pylint: disable=import-outside-toplevel

    def pick(value):
        if isinstance(value, values_lib.DistributedValues):
            return value.values[index]
        return value
    return tf.nest.map_structure(pick, structure)


def _queue_from(ctx, strategy, host_calls, outputs):
    per_replica = [list(values) for values in zip(*[_local(strategy, o) for o in outputs])]
    # BROADCAST: every replica saw the same batch; TF 1.15 took replica 0's.
    return _HostCallQueue(host_calls, per_replica,
                          broadcast=ctx.input_mode == InputPipelineConfig.BROADCAST)


def _host_ops(queue):
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


def _build_eval(estimator, ctx, strategy, wrapper, pipeline, steps, host_vars):
    replicas = ctx.num_replicas
    iterations, total_loss = host_vars
    state = LoopState(steps)
    captured = _Captured()
    host_queue = []
    summaries_before = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))

    def replica_step(features, labels):
        with _replica_scope():
            spec = _check_spec(wrapper(features, labels, ModeKeys.EVAL), ModeKeys.EVAL,
                               estimator_spec_ok=False)
        host_calls = _host_calls_of(spec, ModeKeys.EVAL)
        captured.capture(spec, host_calls)
        loss = tf.cast(spec.loss, tf.float32)
        return loss, [tf.identity(t) for call in host_calls for t in call.tensors]

    def step_fn(loop_ctx, inputs):
        features, labels = inputs
        loss, outputs = _replicate(strategy, replica_step, _unpack(features, labels,
                                                                   replicas))
        loop_ctx.set_last_step_output("loss", loss)
        ops = [total_loss.assign_add(_local(strategy, loss)[0])]
        if captured.host_calls:
            queue = _queue_from(ctx, strategy, captured.host_calls, outputs)
            host_queue.append(queue)
            ops.append(queue.enqueue_op)
        return tf.group(*ops)

    loop = _run_loop(strategy, step_fn, pipeline, iterations,
                     {"loss": [tf.constant(0.0)] * replicas})
    _drop_replica_summaries(summaries_before)
    spec = captured.spec
    scaffold = get_scaffold(spec.scaffold_fn)
    with tf.control_dependencies([loop.run_op]):
        mean_loss = total_loss.read_value() / tf.cast(iterations, tf.float32)
        eval_step = tf_evaluation._get_or_create_eval_step()  # pylint: disable=protected-access
        # _evaluate_once counts one eval per Session.run; the loop ran `steps`.
        advance = eval_step.assign_add(tf.cast(iterations - 1, eval_step.dtype))
    with tf.control_dependencies([mean_loss, advance]):
        loop_done = tf.no_op(name="tpu_eval_loop_done")
    metric_ops = {}
    hooks = _system_hooks(estimator) + list(pipeline.hooks)
    hooks.append(_SetIterationsHook(steps, state, iterations))
    if pipeline.infeed_ops:
        hooks.append(_InfeedHook(pipeline.infeed_ops, state))
    if host_queue:
        host_ops = _host_ops(host_queue[0])
        metrics = host_ops.get("eval_metrics", {})
        updates = [update for _, update in metrics.values()]
        metric_ops = {name: (value, loop_done) for name, (value, _) in metrics.items()}
        after = updates + ([host_ops["host_call"]] if "host_call" in host_ops else [])
        hooks.append(HostCallHook(after_run_ops=after,
                                  runs_per_step=lambda: state.iterations))
    else:
        with tf.control_dependencies([loop_done]):
            mean_loss = tf.identity(mean_loss)
    hooks += list(spec.evaluation_hooks)
    return EstimatorSpec(mode=ModeKeys.EVAL, loss=mean_loss, eval_metric_ops=metric_ops,
                         evaluation_hooks=hooks, scaffold=scaffold)


def _build_predict(estimator, ctx, strategy, wrapper, pipeline, run_steps, iterations):
    del run_steps, iterations
    captured = _Captured()

    def replica_step(features, labels):
        with _replica_scope():
            spec = _check_spec(wrapper(features, labels, ModeKeys.PREDICT),
                               ModeKeys.PREDICT, estimator_spec_ok=False)
        if not isinstance(spec.predictions, dict):
            raise TypeError("TPUEstimatorSpec.predictions must be a dict of Tensors "
                            "on the TPU (as in TF 1.15), given: "
                            f"{type(spec.predictions).__name__}")
        for key, tensor in spec.predictions.items():
            if tf.compat.dimension_value(tensor.shape[0]) is None:
                raise ValueError(f"TPUEstimatorSpec.predictions[{key!r}] has a dynamic "
                                 f"batch dimension; the TPU needs static shapes")
        captured.capture(spec, [])
        return {key: tf.identity(value) for key, value in spec.predictions.items()}

    per_replica_inputs = pipeline.next_per_replica()
    with strategy.scope():
        predictions = _replicate(strategy, replica_step, per_replica_inputs)
    spec = captured.spec
    scaffold = get_scaffold(spec.scaffold_fn)
    with tf.device(_HOST):
        merged = {key: pipeline.real_predictions(_local(strategy, value))
                  for key, value in predictions.items()}
    hooks = (_system_hooks(estimator) + list(pipeline.hooks)
             + list(spec.prediction_hooks))
    return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=merged,
                         prediction_hooks=hooks, scaffold=scaffold)
