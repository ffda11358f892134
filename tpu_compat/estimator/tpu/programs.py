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

import copy
import dataclasses
import logging
import math

import tensorflow as tf

from tpu_compat._tf_internals import distribute_utils
from tpu_compat._tf_internals import tf_evaluation

from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
from tpu_compat.estimator.tpu import context as context_lib
from tpu_compat.estimator.tpu import host_calls as host_calls_lib
from tpu_compat.estimator.tpu import replica_step as replica_lib
from tpu_compat.estimator.tpu import session_hooks
from tpu_compat.estimator.tpu._ordering import reads_before_updates, step_reads_before_writes
from tpu_compat.estimator.tpu.input_pipeline import InputPipeline
from tpu_compat.estimator.tpu.spec import HostCallHook, TPUEstimatorSpec, get_scaffold

__all__ = ["ProgramSettings", "build_program", "create_mirrored_global_step"]

_log = logging.getLogger("tensorflow")
_HOST = context_lib.HOST_DEVICE  # host-side variables: this host (worker 0)
ITERATIONS_VAR = "iterations_per_loop"


@dataclasses.dataclass(frozen=True)
class ProgramSettings:
    """What the TPU programs take from their TPUEstimator, fixed when it is built.

    TPUEstimator builds one in its constructor and passes it to every
    :func:`build_program`, so the programs read no attribute of the estimator.
    ``params`` and ``config`` are the estimator's own (never changed); each
    program takes deep copies of them, as ``Estimator.params`` and
    ``Estimator.config`` give.
    """
    ctx: context_lib.InternalContext  # batch sizes and input mode (its mode set per call)
    batch_axis: object                # TPUEstimator(batch_axis=...): None or per-tensor axes
    params: dict                      # the estimator's params, without the reserved keys
    config: object                    # the estimator's tf.estimator.tpu.RunConfig
    model_dir: str
    iterations_per_loop: int          # on-device steps per Session.run (parsed TPUConfig value)
    log_every_n_steps: object         # the RunConfig's log_step_count_steps: int or None

    @property
    def tpu_job_name(self):
        return self.config.tpu_config.tpu_job_name

    @property
    def host_call_every_n_steps(self):
        return self.config.tpu_config.experimental_host_call_every_n_steps

    @property
    def summary_dir(self):
        """Where the step-rate summaries go: model_dir, unless summaries are off."""
        return self.model_dir if self.config.save_summary_steps else None


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


def _host_variable(name, dtype):
    """A local (unsaved) variable on the host, outside any strategy's scope."""
    with tf.device(_HOST):
        return tf.compat.v1.get_variable(
            name, shape=[], dtype=dtype, initializer=tf.compat.v1.zeros_initializer(),
            trainable=False, use_resource=True,
            collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES])


def _iterations_variable():
    return _host_variable(ITERATIONS_VAR, tf.int32)


class _LoopInputs:
    """The ``iterator`` the strategy's multi-step loop reads from."""

    def __init__(self, pipeline):
        self._pipeline = pipeline

    def get_next(self):
        return distribute_utils.regroup(self._pipeline.next_per_replica())


def build_program(settings, strategy, wrapper, input_fn, mode, run_steps):
    """The EstimatorSpec that runs ``mode`` on the (emulated) TPU.

    Args:
      settings: the TPUEstimator's :class:`ProgramSettings`.
      strategy: the graph's replicated strategy.
      wrapper: calls the user's model_fn on a replica.
      input_fn: the user's input_fn.
      mode: a ModeKeys value.
      run_steps: TRAIN: ``(num_steps, last_step)``; EVAL: the eval steps.
    """
    ctx = settings.ctx
    builder = {ModeKeys.TRAIN: _build_train, ModeKeys.EVAL: _build_eval,
               ModeKeys.PREDICT: _build_predict}[mode]
    # Host-side loop state: plain local variables, created outside the
    # strategy's scope so that they are not mirrored.
    iterations = _iterations_variable()
    if mode == ModeKeys.EVAL:
        iterations = (iterations, _host_variable("tpu_eval_total_loss", tf.float32))
    pipeline = InputPipeline(ctx, input_fn, settings.batch_axis,
                             copy.deepcopy(settings.params), copy.deepcopy(settings.config))
    return builder(settings, ctx, strategy, wrapper, pipeline, run_steps, iterations)


def _run_loop(strategy, step_fn, pipeline, iterations, initial):
    """The strategy's multi-step loop of exactly ``iterations`` steps; host functions
    are built outside its scope.

    Not the strategy's ``_experimental_run_steps_on_iterator``: with
    iterations_per_loop=1 (the strategy's steps_per_run) that runs ONE step
    whatever ``iterations`` says (TPUStrategy's quirk), and evaluation, which
    runs all its steps in one loop, then evaluated one batch and its host
    calls waited for the other steps' outfeed forever (BERT's run_classifier
    with --iterations_per_loop=1: 8 eval steps, 1 run).
    """
    extended = strategy.extended
    run = getattr(extended, "_run_exact_steps_on_iterator", None)
    if run is None:  # a real TPU's TPUExtended
        run = extended._experimental_run_steps_on_iterator  # pylint: disable=protected-access
    with strategy.scope():
        return run(step_fn, _LoopInputs(pipeline), iterations, initial_loop_values=initial)


def _build_train(settings, ctx, strategy, wrapper, pipeline, run_steps, iterations):
    replicas = ctx.num_replicas
    per_loop = settings.iterations_per_loop
    state = session_hooks.LoopState(per_loop)
    captured = replica_lib.Captured()
    host_queue = []
    summaries_before = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))

    def replica_step(features, labels):
        with replica_lib.replica_scope():
            spec = replica_lib.check_spec(wrapper(features, labels, ModeKeys.TRAIN),
                               ModeKeys.TRAIN, estimator_spec_ok=True)
        host_calls = host_calls_lib.host_calls_of(spec, ModeKeys.TRAIN) if isinstance(
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
        loss, outputs = replica_lib.replicate(strategy, replica_step, replica_lib.unpack(features, labels,
                                                                   replicas))
        # One XLA program per step on a TPU: reads see the step's starting values.
        step_reads_before_writes(replica_lib.local_results(strategy, loss))
        loop_ctx.set_last_step_output("loss", loss)
        if captured.host_calls:
            queue = host_calls_lib.queue_from(ctx, strategy, captured.host_calls, outputs)
            host_queue.append(queue)
            return queue.enqueue_op
        return tf.no_op()

    sums_before = replica_lib.cross_replica_sums()
    with replica_lib.own_gradients(strategy):
        loop = _run_loop(strategy, step_fn, pipeline, iterations,
                         {"loss": [tf.constant(0.0)] * replicas})
    run_op = loop.run_op
    if replica_lib.check_cross_shard_optimizer(sums_before, replicas):
        run_op = replica_lib.keep_replica_zero(run_op)
    replica_lib.drop_replica_summaries(summaries_before)
    loss = replica_lib.local_results(strategy, loop.last_step_outputs["loss"])[0]
    spec = captured.spec
    scaffold = get_scaffold(getattr(spec, "scaffold_fn", None))
    if isinstance(spec, EstimatorSpec) and spec.scaffold is not None and (
            spec.scaffold.init_fn or spec.scaffold.saver):
        _log.warning("EstimatorSpec.scaffold is ignored by TPU training; use "
                     "TPUEstimatorSpec(scaffold_fn=...)")
    global_step = tf.compat.v1.train.get_global_step()
    with tf.control_dependencies([run_op]):
        loss = tf.identity(loss, name="loss")
        step_after = tf.identity(global_step.read_value())
    num_steps, last_step = run_steps
    hooks = session_hooks.system_hooks(settings.tpu_job_name) + list(pipeline.hooks)
    hooks.append(session_hooks.StopAtStepHook(per_loop, state, iterations, num_steps, last_step))
    if pipeline.infeed_ops:
        hooks.append(session_hooks.InfeedHook(pipeline.infeed_ops, state))
    if host_queue:
        host_ops = host_calls_lib.host_ops(host_queue[0])
        hooks.append(HostCallHook(
            after_run_ops=host_ops["host_call"], runs_per_step=lambda: state.iterations,
            every_n=settings.host_call_every_n_steps,
            skip_op=host_queue[0].skip_op(), queued_op=host_queue[0].queue.size()))
    log_steps = settings.log_every_n_steps
    if log_steps:
        every_loops = int(math.ceil(log_steps / per_loop))
        hooks.append(tf.compat.v1.train.LoggingTensorHook(
            {"loss": loss, "step": step_after}, every_n_iter=every_loops))
        hooks.append(session_hooks.ExamplesPerSecondHook(
            ctx.global_batch_size, every_n_steps=log_steps,
            output_dir=settings.summary_dir, steps_per_run=per_loop))
    hooks += list(spec.training_hooks)
    return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss,
                         train_op=tf.group(run_op, name="tpu_train_loop"),
                         training_hooks=hooks, scaffold=scaffold)


def _build_eval(settings, ctx, strategy, wrapper, pipeline, steps, host_vars):
    replicas = ctx.num_replicas
    iterations, total_loss = host_vars
    state = session_hooks.LoopState(steps)
    captured = replica_lib.Captured()
    host_queue = []
    summaries_before = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))

    def replica_step(features, labels):
        with replica_lib.replica_scope():
            spec = replica_lib.check_spec(wrapper(features, labels, ModeKeys.EVAL), ModeKeys.EVAL,
                               estimator_spec_ok=False)
        host_calls = host_calls_lib.host_calls_of(spec, ModeKeys.EVAL)
        captured.capture(spec, host_calls)
        loss = tf.cast(spec.loss, tf.float32)
        return loss, [tf.identity(t) for call in host_calls for t in call.tensors]

    def step_fn(loop_ctx, inputs):
        features, labels = inputs
        loss, outputs = replica_lib.replicate(strategy, replica_step, replica_lib.unpack(features, labels,
                                                                   replicas))
        loop_ctx.set_last_step_output("loss", loss)
        ops = [total_loss.assign_add(replica_lib.local_results(strategy, loss)[0])]
        if captured.host_calls:
            queue = host_calls_lib.queue_from(ctx, strategy, captured.host_calls, outputs)
            host_queue.append(queue)
            ops.append(queue.enqueue_op)
        return tf.group(*ops)

    loop = _run_loop(strategy, step_fn, pipeline, iterations,
                     {"loss": [tf.constant(0.0)] * replicas})
    replica_lib.drop_replica_summaries(summaries_before)
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
    hooks = session_hooks.system_hooks(settings.tpu_job_name) + list(pipeline.hooks)
    hooks.append(session_hooks.SetIterationsHook(steps, state, iterations))
    if pipeline.infeed_ops:
        hooks.append(session_hooks.InfeedHook(pipeline.infeed_ops, state))
    if host_queue:
        host_ops = host_calls_lib.host_ops(host_queue[0])
        metrics = host_ops.get("eval_metrics", {})
        updates = [update for _, update in metrics.values()]
        metric_ops = {name: (value, loop_done) for name, (value, _) in metrics.items()}
        after = updates + ([host_ops["host_call"]] if "host_call" in host_ops else [])
        hooks.append(HostCallHook(after_run_ops=after,
                                  runs_per_step=lambda: state.iterations,
                                  queued_op=host_queue[0].queue.size()))
    else:
        with tf.control_dependencies([loop_done]):
            mean_loss = tf.identity(mean_loss)
    hooks += list(spec.evaluation_hooks)
    return EstimatorSpec(mode=ModeKeys.EVAL, loss=mean_loss, eval_metric_ops=metric_ops,
                         evaluation_hooks=hooks, scaffold=scaffold)


def _build_predict(settings, ctx, strategy, wrapper, pipeline, run_steps, iterations):
    del run_steps, iterations
    captured = replica_lib.Captured()

    def replica_step(features, labels):
        with replica_lib.replica_scope():
            spec = replica_lib.check_spec(wrapper(features, labels, ModeKeys.PREDICT),
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
        predictions = replica_lib.replicate(strategy, replica_step, per_replica_inputs)
    spec = captured.spec
    scaffold = get_scaffold(spec.scaffold_fn)
    with tf.device(_HOST):
        merged = {key: pipeline.real_predictions(replica_lib.local_results(strategy, value))
                  for key, value in predictions.items()}
    hooks = (session_hooks.system_hooks(settings.tpu_job_name) + list(pipeline.hooks)
             + list(spec.prediction_hooks))
    return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=merged,
                         prediction_hooks=hooks, scaffold=scaffold)
