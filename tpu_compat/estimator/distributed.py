"""``Estimator`` with ``RunConfig(train_distribute=..., eval_distribute=...)``: TF 1.14/1.15's path.

The era's code is tensorflow/estimator r1.15 (r1.14 is the same but for
``unwrap``), ``tensorflow_estimator/python/estimator/estimator.py``:
``_actual_train_model_distributed``, ``_call_model_fn_eval_distributed``,
``_get_iterator_from_input_fn``, ``_combine_distributed_scaffold``,
``_get_loss_reduce_op_for_reporting``, ``_verify_and_create_loss_metric``,
``_extract_metric_update_ops``. What it did, and so what this module does:

* **input** (``_get_iterator_from_input_fn``): ``strategy.make_input_fn_iterator(
  lambda input_context: input_fn(...))``, one call per input worker (one here).
  Its dataset is not split: TF 1.15's ``InputFunctionIterator`` hands it to a
  ``MultiDeviceIterator`` (tensorflow r1.15, tensorflow/python/distribute/
  input_lib.py, ``_SingleWorkerDatasetIterator``), which gives each replica
  whole elements in turn. So **the input_fn's batch is per replica**; a step
  trains on ``replicas x batch`` examples, replica *i* reading the *i*-th
  batch of the step (the ResNet Estimator of tensorflow/tpu's
  ``distribution_strategy/`` said so in its flags: "Per core batch size").
* **model_fn** runs on every replica (``extended.call_for_each_replica``), under
  ``strategy.scope()`` and ``strategy._scale_loss_for_estimator_enabled()``.
  In that scope a ``tf.compat.v1.train.Optimizer`` scales each replica's loss
  by ``1/replicas`` unless the last ``tf.losses`` reduction was ``SUM``
  (tensorflow r1.15, tensorflow/python/training/optimizer.py ``_scale_loss``
  and tensorflow/python/distribute/distribute_lib.py ``get_loss_reduction``;
  TF 2.21 keeps both), and the strategy **sums the replicas' gradients**: the
  update is the gradient of the mean loss over the global batch.
* **the reported loss** (what ``train`` logs and returns, what the
  Estimator's ``LoggingTensorHook``, ``NanTensorHook`` and the ``loss``
  summary see) is ``strategy.reduce(op, replica losses)``, ``op`` the
  optimizer's reduction when it scaled the loss (``MEAN``), else ``SUM``
  (``_get_loss_reduce_op_for_reporting``). The model_fn's own
  ``training_hooks`` (and chief hooks, ``evaluation_hooks``) are replica 0's,
  so a hook built on the model_fn's loss sees replica 0's loss.
* **global_step** is created in the strategy's scope: a mirrored variable
  with ``ONLY_FIRST_REPLICA`` aggregation, advanced once per step.
* **TPU strategies** (TF 1.15 tested the class name for ``TPUStrategy``) run the
  step in the strategy's ``experimental_run_steps_on_iterator`` loop,
  ``steps_per_run`` steps per ``Session.run``, driven by the steps-per-run
  variable and TF's ``_MultiStepStopAtStepHook`` /
  ``_MultiStepStopAfterNEvalsHook``. Here a TPU strategy the program built
  is tpu_compat's adapter, whose replicas are the emulated TPU's cores; it
  is the same strategy object (``call_for_each_replica``, the multi-step
  loop, the reductions) that ``TPUStrategy`` programs and TPUEstimator use.
  Its ``model_fn`` was traced once on a TPU, so replicas 1..N-1 are quiet
  (their logs and prints dropped), as TPUEstimator's are.
* **evaluation** builds the graph in the strategy's scope; the metrics of
  ``tf.compat.v1.metrics`` keep their totals in ``SUM``-aggregated
  sync-on-read variables, so **each metric is computed over all replicas'
  examples**; ``loss`` is ``metrics.mean`` of each replica's loss, so the mean
  of the replicas' (equally sized) batch losses over all steps.
* ``predict`` and export ignore the strategies (TF 1.15 too).
"""

import contextlib

import tensorflow as tf

from tpu_compat._tf_internals import (
    basic_session_run_hooks, distribute_utils, tf_evaluation, training_util)
from tpu_compat.estimator import _inputs, _sessions
from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["build_eval", "build_train", "check_strategy", "eval_stop_hook",
           "is_tpu_strategy", "session_config", "session_master", "steps_per_run",
           "train_stop_hook", "with_loss_metric"]

LOSS_METRIC_KEY = "loss"


def check_strategy(name, value):
    """``value`` if it is a ``tf.distribute`` strategy (or None), else a clear error."""
    if value is None or isinstance(value, tf.distribute.Strategy) or isinstance(
            value, tf.compat.v1.distribute.Strategy):
        return value
    raise ValueError(
        f"RunConfig: {name} must be a tf.distribute.Strategy (for example "
        f"tf.distribute.experimental.TPUStrategy(resolver) or "
        f"tf.distribute.MirroredStrategy()) or None, given: {type(value).__name__} "
        f"{value!r}")


def is_tpu_strategy(strategy):
    """Whether ``strategy`` is a TPU strategy, which TF 1.15 ran in its multi-step loop.

    TF 1.15 tested ``strategy.__class__.__name__.startswith('TPUStrategy')``;
    tpu_compat's TPUStrategy adapters are named ``Compat...TPUStrategy...``.
    """
    from tpu_compat.runtime.adapter import CompatStrategyMixin  # pylint: disable=import-outside-toplevel
    return (isinstance(strategy, CompatStrategyMixin)
            or type(strategy).__name__.startswith("TPUStrategy"))


def steps_per_run(strategy):
    """The strategy's steps per ``Session.run`` (TF 1.15 read it from ``extended``)."""
    if strategy is None:
        return 1
    return getattr(strategy.extended, "steps_per_run", 1) or 1


def _strategy_of(config, mode):
    return {ModeKeys.TRAIN: config.train_distribute,
            ModeKeys.EVAL: config.eval_distribute}.get(mode)  # predict: none (TF 1.15)


def session_master(config, mode):
    """The master of ``mode``'s sessions: with a strategy, where its replicas are
    (the emulated TPU in this process or on an emulated pod, see _sessions)."""
    if _strategy_of(config, mode) is None:
        return config.master
    return _sessions.emulated_master(default=config.master)


def session_config(config, mode, session_config_proto):
    """The sessions' ConfigProto: with a strategy, seeing every emulated device."""
    if _strategy_of(config, mode) is None:
        return session_config_proto
    return _sessions.with_emulated_devices(session_config_proto)


def train_stop_hook(strategy, steps, max_steps):
    """The hook that stops training at ``steps``/``max_steps``.

    A TPU strategy's loop runs steps_per_run steps per Session.run; TF 1.15's
    ``Estimator._convert_train_steps_to_hooks`` then took TF's
    ``_MultiStepStopAtStepHook``, which shortens the last loop to stop exactly.
    """
    per_run = steps_per_run(strategy)
    if per_run > 1:
        return basic_session_run_hooks._MultiStepStopAtStepHook(  # pylint: disable=protected-access
            steps, max_steps, per_run)
    return tf.compat.v1.train.StopAtStepHook(num_steps=steps, last_step=max_steps)


def eval_stop_hook(strategy, steps):
    """The hook that stops evaluation after ``steps`` (TF 1.15's
    ``_convert_eval_steps_to_hooks``: multi-step with a TPU strategy's loop)."""
    per_run = steps_per_run(strategy)
    if per_run > 1:
        return tf_evaluation._MultiStepStopAfterNEvalsHook(  # pylint: disable=protected-access
            num_evals=steps, steps_per_run=per_run)
    return tf_evaluation._StopAfterNEvalsHook(num_evals=steps)  # pylint: disable=protected-access


@contextlib.contextmanager
def _loss_scaling(strategy):
    """The flag by which a v1 optimizer scales each replica's loss (see the module doc)."""
    scale = getattr(strategy, "_scale_loss_for_estimator_enabled", contextlib.nullcontext)
    with scale():
        yield


def _loss_reduce_op():
    """TF 1.15's ``_get_loss_reduce_op_for_reporting``: the optimizer's reduction
    when it scaled the loss (``MEAN`` unless the loss was a ``SUM``), else ``SUM``."""
    if getattr(tf.compat.v1.get_default_graph(), "_is_loss_scaled_by_optimizer", False):
        return distribute_utils.get_loss_reduction()
    return tf.distribute.ReduceOp.SUM


def _quiet_replicas(strategy):
    """A TPU traced model_fn once: replicas 1..N-1 of a TPU strategy are quiet."""
    from tpu_compat.estimator.tpu import _quiet  # pylint: disable=import-outside-toplevel
    if is_tpu_strategy(strategy):
        return _quiet.first_replica_speaks(), _quiet.quiet_replica
    return contextlib.nullcontext(), contextlib.nullcontext


def _make_iterator(estimator, strategy, input_fn, mode):
    """``strategy.make_input_fn_iterator`` over ``input_fn`` (its batch: per replica)."""
    if not callable(input_fn):
        raise ValueError(f"input_fn must be callable, given: {input_fn!r}")

    def dataset_fn(input_context):
        available = {"params": estimator.params, "mode": mode,
                     "config": estimator.config, "input_context": input_context}
        with tf.device("/device:CPU:0"):
            result = _inputs.call_with_known_args(input_fn, available)
        if not _inputs.is_dataset(result):
            raise ValueError(
                f"input_fn must return a tf.data.Dataset when the Estimator has a "
                f"distribution strategy (RunConfig train_distribute/eval_distribute), "
                f"as in TF 1.15; it returned {type(result).__name__}")
        return result

    iterator = strategy.make_input_fn_iterator(dataset_fn)
    return iterator, [_DistributedIteratorInitializerHook(iterator)]


class _DistributedIteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Initializes a distributed iterator once the session exists (TF 1.15's
    ``estimator_util.DistributedIteratorInitializerHook``)."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        # TF 1.15 called initialize(); TF 2.21 deprecates it for this property.
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        del coord
        session.run(self._initializer)


def _call_on_replicas(estimator, strategy, inputs, mode):
    """model_fn on every replica; the regrouped (per-replica) EstimatorSpec."""
    features, labels = _inputs.split_features_and_labels(inputs)
    speaks, quiet = _quiet_replicas(strategy)

    def on_replica(replica_features, replica_labels):
        with quiet():
            return estimator._call_model_fn(replica_features, replica_labels, mode,  # pylint: disable=protected-access
                                            estimator.config)

    with speaks:
        return strategy.extended.call_for_each_replica(on_replica, args=(features, labels))


def _first_replica(strategy, value):
    return strategy.experimental_local_results(value)[0]


def _group(strategy, value):
    """``strategy.group``: one op running every replica's ``value``."""
    return tf.group(*tf.nest.flatten(strategy.experimental_local_results(value)))


def _first_replica_hooks(strategy, hooks):
    return [_first_replica(strategy, hook) for hook in hooks]


def _combine_scaffold(strategy, grouped_scaffold):
    """TF 1.15's ``_combine_distributed_scaffold``: one Scaffold for all replicas.

    Ops are grouped over the replicas, ``ready_op``s concatenated; ``init_fn``
    and ``saver`` are replica 0's (every replica's saver saves the same
    mirrored variables). Fields no replica set are left to the Scaffold's
    defaults.
    """
    scaffolds = list(strategy.experimental_local_results(grouped_scaffold))

    def grouped(field):
        ops = [getattr(s, field) for s in scaffolds if getattr(s, field) is not None]
        return tf.group(*ops) if ops else None

    def concatenated(field):
        values = [getattr(s, field) for s in scaffolds if getattr(s, field) is not None]
        if not values:
            return None
        return values[0] if len(values) == 1 else tf.concat(values, 0)

    feeds = {}
    for scaffold in scaffolds:
        feeds.update(scaffold.init_feed_dict or {})
    init_fns = [s._user_init_fn for s in scaffolds if s._user_init_fn is not None]  # pylint: disable=protected-access
    savers = [s.saver for s in scaffolds if s.saver is not None]
    return tf.compat.v1.train.Scaffold(
        init_op=grouped("init_op"), init_feed_dict=feeds or None,
        init_fn=init_fns[0] if init_fns else None,
        ready_op=concatenated("ready_op"),
        ready_for_local_init_op=concatenated("ready_for_local_init_op"),
        local_init_op=grouped("local_init_op"), summary_op=grouped("summary_op"),
        saver=savers[0] if savers else None)


def _steps_per_run_variable():
    # TF 1.15 made it before entering the strategy's scope: a host variable
    # driving the loop, not a mirrored one.
    return basic_session_run_hooks.get_or_create_steps_per_run_variable()


def build_train(estimator, strategy, input_fn, graph):
    """The training graph under ``strategy``: ``(EstimatorSpec, global_step, input_hooks)``.

    The spec's loss is the reduced loss, its train_op runs every replica's.
    """
    tpu = is_tpu_strategy(strategy)
    steps_variable = _steps_per_run_variable() if tpu else None
    with strategy.scope(), _loss_scaling(strategy):
        if estimator.config.tf_random_seed is not None:
            tf.compat.v1.set_random_seed(estimator.config.tf_random_seed)
        iterator, input_hooks = _make_iterator(estimator, strategy, input_fn, ModeKeys.TRAIN)
        global_step = estimator._create_global_step(graph, ModeKeys.TRAIN)  # pylint: disable=protected-access
        # Read in the main thread, not in a replica's (TF 1.15 did the same).
        graph.add_to_collection(training_util.GLOBAL_STEP_READ_KEY,
                                strategy.extended.read_var(global_step))
        if tpu:
            def step_fn(ctx, inputs):
                spec = _call_on_replicas(estimator, strategy, inputs, ModeKeys.TRAIN)
                ctx.set_last_step_output(name="loss", output=spec.loss,
                                         reduce_op=_loss_reduce_op())
                ctx.set_non_tensor_output(name="estimator_spec", output=spec)
                # TPUExtended's loop ran the replicated computation as one op.
                return _group(strategy, spec.train_op)

            loop = strategy.extended.experimental_run_steps_on_iterator(
                step_fn, iterator, iterations=steps_variable,
                initial_loop_values={"loss": tf.constant(1e7)})
            train_op = loop.run_op
            loss = loop.last_step_outputs["loss"]
            grouped = loop.non_tensor_outputs["estimator_spec"]
        else:
            grouped = _call_on_replicas(estimator, strategy, iterator.get_next(),
                                        ModeKeys.TRAIN)
            loss = strategy.reduce(_loss_reduce_op(), grouped.loss, axis=None)
            train_op = grouped.train_op
        spec = EstimatorSpec(
            mode=ModeKeys.TRAIN, loss=loss, train_op=_group(strategy, train_op),
            training_hooks=_first_replica_hooks(strategy, grouped.training_hooks),
            training_chief_hooks=_first_replica_hooks(strategy,
                                                      grouped.training_chief_hooks),
            scaffold=_combine_scaffold(strategy, grouped.scaffold))
    return spec, global_step, input_hooks


def with_loss_metric(eval_metric_ops, make_loss_metric):
    """``eval_metric_ops`` and ``loss``: the Estimator's mean of the loss (TF 1.15's
    ``_verify_and_create_loss_metric``, which refused a metric of that name)."""
    metric_ops = dict(eval_metric_ops)
    if LOSS_METRIC_KEY in metric_ops:
        raise ValueError("model_fn: a metric named 'loss' is not allowed; the "
                         "Estimator reports the mean loss under that name")
    metric_ops[LOSS_METRIC_KEY] = make_loss_metric()
    return metric_ops


def _metric_ops_of(strategy, grouped, what):
    """TF 1.15's ``_verify_and_create_loss_metric`` + ``_extract_metric_update_ops``.

    ``(update_op, {name: value})``: each metric's value (one tensor, aggregated
    over the replicas) and one op running every replica's update.
    """
    metric_ops = with_loss_metric(
        grouped.eval_metric_ops, lambda: strategy.extended.call_for_each_replica(
            tf.compat.v1.metrics.mean, args=(grouped.loss,)))
    values, updates = {}, []
    for name, (value, update) in sorted(metric_ops.items()):
        if isinstance(value, tf.distribute.DistributedValues):
            raise ValueError(
                f"{what}[{name!r}] has a value per replica: under a distribution "
                f"strategy a metric must aggregate across replicas, as the "
                f"tf.compat.v1.metrics functions do (their totals are summed over "
                f"the replicas)")
        values[name] = value
        updates.append(_group(strategy, update))
    return tf.group(*updates), values


def build_eval(estimator, strategy, input_fn, graph):
    """The evaluation graph under ``strategy``.

    Returns ``(scaffold, update_op, final_ops, input_hooks, evaluation_hooks,
    global_step)``; ``final_ops`` holds each metric and ``loss``.
    """
    tpu = is_tpu_strategy(strategy)
    steps_variable = _steps_per_run_variable() if tpu else None
    with strategy.scope():
        if estimator.config.tf_random_seed is not None:
            tf.compat.v1.set_random_seed(estimator.config.tf_random_seed)
        global_step = estimator._create_global_step(graph, ModeKeys.EVAL)  # pylint: disable=protected-access
        iterator, input_hooks = _make_iterator(estimator, strategy, input_fn, ModeKeys.EVAL)
        what = "EstimatorSpec.eval_metric_ops"
        if tpu:
            def step_fn(ctx, inputs):
                spec = _call_on_replicas(estimator, strategy, inputs, ModeKeys.EVAL)
                update_op, values = _metric_ops_of(strategy, spec, what)
                ctx.set_non_tensor_output(name="estimator_spec", output=spec)
                ctx.set_non_tensor_output(name="eval_dict", output=values)
                return update_op

            loop = strategy.extended.experimental_run_steps_on_iterator(
                step_fn, iterator, iterations=steps_variable)
            update_op = loop.run_op
            values = loop.non_tensor_outputs["eval_dict"]
            grouped = loop.non_tensor_outputs["estimator_spec"]
        else:
            grouped = _call_on_replicas(estimator, strategy, iterator.get_next(),
                                        ModeKeys.EVAL)
            update_op, values = _metric_ops_of(strategy, grouped, what)
        scaffold = _combine_scaffold(strategy, grouped.scaffold)
        evaluation_hooks = _first_replica_hooks(strategy, grouped.evaluation_hooks)
    return scaffold, update_op, values, input_hooks, evaluation_hooks, global_step


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
