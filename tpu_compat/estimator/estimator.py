"""``tf.estimator.Estimator``: the ``model_fn`` contract, on TF 2.21's graph machinery.

Every call builds a fresh ``tf.Graph`` (as TF 1.x's Estimator did, so it works
from eager TF 2 programs and from ``--tf1`` graph programs alike), calls
``input_fn`` and ``model_fn`` in it, and runs it with TensorFlow's own
``MonitoredTrainingSession`` / ``MonitoredSession`` and session-run hooks,
which TF 2.21 still ships under ``tf.compat.v1.train``. Checkpoints go to
``model_dir``; ``train`` resumes from the latest one.

Subclasses (``TPUEstimator``) change four things only: how ``input_fn`` is
called, how the global step is created, which step hooks ``steps``/
``max_steps`` become, and what wraps ``model_fn``.

This module is that flow (the class); beside it: ``graphs.py`` (the graph each
call builds), ``warm_start.py`` (``WarmStartSettings``), ``_arguments.py`` (the
checks of what the user passes), ``_results.py`` (the eval log and summaries,
predictions by key and example), ``_saved_model.py`` (the SavedModel export
writes), ``_checkpoints.py`` and ``_inputs.py``.
"""

import copy
import functools
import logging
import os
import tempfile

import tensorflow as tf

from tpu_compat._tf_internals import tf_evaluation
from tpu_compat._tf_internals import training_util

from tpu_compat.estimator import (
    _arguments, _checkpoints, _inputs, _results, _saved_model, distributed)
from tpu_compat.estimator._spec import EstimatorSpec, ModeKeys
# estimator_graph and program_control_flow_v2 stay importable from here.
from tpu_compat.estimator.graphs import estimator_graph, program_control_flow_v2  # noqa: F401
from tpu_compat.estimator.run_config import RunConfig
from tpu_compat.estimator.warm_start import WarmStartSettings, warm_start_settings
from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["Estimator", "WarmStartSettings"]

_log = logging.getLogger("tensorflow")

LOSS_METRIC_KEY = "loss"


def _default_session_config():
    return tf.compat.v1.ConfigProto(allow_soft_placement=True)


class Estimator:
    """``tf.estimator.Estimator(model_fn, model_dir, config, params, warm_start_from)``."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be a tf.estimator.RunConfig, given: "
                             f"{type(config).__name__}")
        _arguments.check_model_fn(model_fn, params)
        model_dir = os.fspath(model_dir) if model_dir is not None else None
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError(
                f"model_dir is set both in the constructor ({model_dir!r}) and in "
                f"RunConfig ({config.model_dir!r}) with different values")
        model_dir = model_dir or config.model_dir
        if not model_dir:
            model_dir = tempfile.mkdtemp()
            _log.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = warm_start_settings(warm_start_from)
        self._session_config = config.session_config or _default_session_config()

    # -- properties ---------------------------------------------------------------
    @property
    def model_dir(self):
        return self._model_dir

    @property
    def config(self):
        return copy.deepcopy(self._config)

    @property
    def params(self):
        return copy.deepcopy(self._params)

    @property
    def model_fn(self):
        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)
        return public_model_fn

    # -- checkpoints ---------------------------------------------------------------
    def latest_checkpoint(self):
        return _checkpoints.latest(self._model_dir)

    def _require_checkpoint(self):
        path = self.latest_checkpoint()
        if not path:
            raise ValueError(f"no checkpoint in model_dir {self._model_dir!r}; train "
                             f"the Estimator first")
        return path

    def get_variable_names(self):
        return [name for name, _ in tf.train.list_variables(self._require_checkpoint())]

    def get_variable_value(self, name):
        return tf.train.load_variable(self._require_checkpoint(), name)

    # -- what subclasses change ------------------------------------------------------
    def _create_global_step(self, graph, mode):
        del mode
        return training_util.create_global_step(graph)

    def _call_input_fn(self, input_fn, mode):
        """Calls ``input_fn`` (on the host CPU); returns what it returned."""
        if not callable(input_fn):
            raise ValueError(f"input_fn must be callable, given: {input_fn!r}")
        available = {"params": self.params, "mode": mode, "config": self.config}
        with tf.device("/device:CPU:0"):
            return _inputs.call_with_known_args(input_fn, available)

    def _features_and_labels(self, input_fn, mode):
        return _inputs.read_input(self._call_input_fn(input_fn, mode))

    def _call_model_fn(self, features, labels, mode, config):
        names = _inputs.fn_args(self._model_fn)
        kwargs = {}
        if "labels" in names:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns "
                             "labels")
        if "mode" in names:
            kwargs["mode"] = mode
        if "params" in names:
            kwargs["params"] = self.params
        if "config" in names:
            kwargs["config"] = config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn must return a tf.estimator.EstimatorSpec, "
                             f"given: {type(spec).__name__}")
        return spec

    def _convert_train_steps_to_hooks(self, steps, max_steps):
        if steps is None and max_steps is None:
            return []
        return [distributed.train_stop_hook(self._config.train_distribute, steps, max_steps)]

    def _convert_eval_steps_to_hooks(self, steps):
        if steps is None:
            return []
        return [distributed.eval_stop_hook(self._config.eval_distribute, steps)]

    def _train_logging_hooks(self, spec, global_step):
        steps = self._config.log_step_count_steps
        if not steps:
            return []
        return [tf.compat.v1.train.LoggingTensorHook(
            {"loss": spec.loss, "step": global_step}, every_n_iter=steps)]

    def _session_master(self, mode):
        return distributed.session_master(self._config, mode)

    # -- train ----------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None):
        """Trains for ``steps`` more steps, or up to global step ``max_steps``."""
        if steps is not None and max_steps is not None:
            raise ValueError("train: give steps or max_steps, not both")
        _arguments.positive("train: steps", steps)
        _arguments.positive("train: max_steps", max_steps)
        if max_steps is not None and _checkpoints.global_step_of(
                self._model_dir) >= max_steps:
            _log.info("Skipping training since max_steps has already saved.")
            return self
        hooks = list(_arguments.validate_user_hooks(hooks, "hooks"))
        hooks += self._convert_train_steps_to_hooks(steps, max_steps)
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        _log.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        if self._config.train_distribute is not None:
            with estimator_graph() as graph:  # TF 1.15's _actual_train_model_distributed
                spec, global_step, input_hooks = distributed.build_train(
                    self, self._config.train_distribute, input_fn, graph)
                return self._train_with_spec(spec, global_step, input_hooks + hooks,
                                             saving_listeners)
        with estimator_graph(self._config.tf_random_seed) as graph:
            global_step = self._create_global_step(graph, ModeKeys.TRAIN)
            training_util._get_or_create_global_step_read(graph)  # pylint: disable=protected-access
            features, labels, input_hooks = self._features_and_labels(
                input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            return self._train_with_spec(spec, global_step, input_hooks + hooks,
                                         saving_listeners)

    def _saver(self, scaffold):
        if scaffold.saver is not None:
            return scaffold.saver
        savers = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS)
        if savers:
            return savers[0]
        saver = tf.compat.v1.train.Saver(
            sharded=True, max_to_keep=self._config.keep_checkpoint_max,
            keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
            defer_build=True, save_relative_paths=True)
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS, saver)
        return saver

    def _checkpoint_hooks(self, spec, saving_listeners):
        config = self._config
        if any(isinstance(h, tf.compat.v1.train.CheckpointSaverHook)
               for h in spec.training_chief_hooks + spec.training_hooks):
            return []
        if not (config.save_checkpoints_secs or config.save_checkpoints_steps):
            return []
        return [tf.compat.v1.train.CheckpointSaverHook(
            self._model_dir, save_secs=config.save_checkpoints_secs,
            save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
            listeners=saving_listeners)]

    def _train_with_spec(self, spec, global_step, hooks, saving_listeners):
        if self._warm_start_settings is not None and not self.latest_checkpoint():
            _log.info("Warm-starting with WarmStartSettings: %s",
                      self._warm_start_settings)
            tf.compat.v1.train.warm_start(*self._warm_start_settings)
        summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
        if not any(s.op.name == LOSS_METRIC_KEY for s in summaries):
            tf.compat.v1.summary.scalar(LOSS_METRIC_KEY, spec.loss)
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, spec.loss)
        worker_hooks = list(hooks)
        worker_hooks.append(tf.compat.v1.train.NanTensorHook(spec.loss))
        worker_hooks += self._train_logging_hooks(spec, global_step)
        worker_hooks += list(spec.training_hooks)
        self._saver(spec.scaffold)
        if spec.scaffold.saver is None:
            _checkpoints.check_compatible(self._model_dir,
                                          tf.compat.v1.global_variables())
        chief_hooks = self._checkpoint_hooks(spec, saving_listeners)
        chief_hooks += list(spec.training_chief_hooks)
        loss = None
        with tf.compat.v1.train.MonitoredTrainingSession(
                master=self._session_master(ModeKeys.TRAIN), is_chief=True,
                checkpoint_dir=self._model_dir, scaffold=spec.scaffold,
                hooks=worker_hooks, chief_only_hooks=chief_hooks,
                save_checkpoint_secs=0,  # the CheckpointSaverHook above saves
                save_summaries_steps=self._config.save_summary_steps,
                config=distributed.session_config(self._config, ModeKeys.TRAIN,
                                                  self._session_config),
                log_step_count_steps=self._config.log_step_count_steps,
                max_wait_secs=self._config.session_creation_timeout_secs,
                save_graph_def=self._config.checkpoint_save_graph_def) as session:
            while not session.should_stop():
                _, loss = session.run([spec.train_op, spec.loss])
        return loss

    # -- evaluate -------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
                 name=None):
        """Evaluates on ``steps`` batches (or until input_fn is exhausted).

        Returns the metrics as a dict, with ``loss`` (the mean of the
        ``model_fn``'s loss) and ``global_step`` (of the evaluated checkpoint).
        """
        _arguments.positive("evaluate: steps", steps)
        hooks = list(_arguments.validate_user_hooks(hooks, "hooks"))
        hooks += self._convert_eval_steps_to_hooks(steps)
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            _log.info("Could not find trained model in model_dir: %s, running "
                      "initialization to evaluate.", self._model_dir)
        with estimator_graph(self._config.tf_random_seed) as graph:
            build = (self._build_eval_graph if self._config.eval_distribute is None
                     else functools.partial(distributed.build_eval, self,
                                            self._config.eval_distribute))
            (scaffold, update_ops, final_ops, input_hooks, evaluation_hooks,
             global_step) = build(input_fn, graph)
            final_ops[tf.compat.v1.GraphKeys.GLOBAL_STEP] = global_step
            if scaffold.saver is None and checkpoint_path:
                _checkpoints.check_compatible(
                    self._model_dir, tf.compat.v1.global_variables(),
                    argument="checkpoint_path" if checkpoint_path !=
                    self.latest_checkpoint() else "model_dir", path=checkpoint_path)
            results = tf_evaluation._evaluate_once(  # pylint: disable=protected-access
                checkpoint_path=checkpoint_path,
                master=self._session_master(ModeKeys.EVAL),
                scaffold=scaffold, eval_ops=update_ops, final_ops=final_ops,
                hooks=input_hooks + hooks + evaluation_hooks,
                config=distributed.session_config(self._config, ModeKeys.EVAL,
                                                  self._session_config))
        output_dir = os.path.join(self._model_dir,
                                  "eval" if not name else f"eval_{name}")
        _results.write_summaries(output_dir, results, results[tf.compat.v1.GraphKeys.GLOBAL_STEP],
                         checkpoint_path)
        return results

    def _build_eval_graph(self, input_fn, graph):
        """The evaluation graph without a strategy (returns what build_eval does)."""
        global_step = self._create_global_step(graph, ModeKeys.EVAL)
        features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.EVAL)
        spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
        metric_ops = distributed.with_loss_metric(
            spec.eval_metric_ops, lambda: tf.compat.v1.metrics.mean(spec.loss))
        update_ops = tf.group(*[update for _, update in metric_ops.values()])
        final_ops = {key: value for key, (value, _) in metric_ops.items()}
        return (spec.scaffold, update_ops, final_ops, input_hooks,
                list(spec.evaluation_hooks), global_step)

    # -- predict --------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions: one dict (or value) per example, or per batch."""
        hooks = list(_arguments.validate_user_hooks(hooks, "hooks"))
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            _log.info("Could not find trained model in model_dir: %s, running "
                      "initialization to predict.", self._model_dir)
        with estimator_graph(self._config.tf_random_seed) as graph:
            self._create_global_step(graph, ModeKeys.PREDICT)
            features, _, input_hooks = self._features_and_labels(
                input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            predictions = _results.select_keys(spec.predictions, predict_keys)
            creator = tf.compat.v1.train.ChiefSessionCreator(
                checkpoint_filename_with_path=checkpoint_path,
                master=self._session_master(ModeKeys.PREDICT),
                scaffold=spec.scaffold, config=self._session_config)
            with tf.compat.v1.train.MonitoredSession(
                    session_creator=creator,
                    hooks=input_hooks + hooks + list(spec.prediction_hooks)) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(values, dict):
                        yield from values
                    else:
                        for index in range(_results.batch_length(values)):
                            yield {key: value[index] for key, value in values.items()}

    # -- export ---------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Writes a SavedModel (tag ``serve``) for the latest checkpoint.

        Its ``serving_default`` signature maps ``serving_input_receiver_fn``'s
        receiver tensors to the ``model_fn``'s predictions (or its
        ``export_outputs``). ``tf.saved_model.load`` in TF 2.21 loads it.
        Returns the export directory, as bytes (as TF 1.15 did).
        """
        if experimental_mode != ModeKeys.PREDICT:
            raise ValueError(f"export_saved_model: experimental_mode="
                             f"{experimental_mode!r} is not supported; only "
                             f"{ModeKeys.PREDICT!r} (serving) is")
        if not callable(serving_input_receiver_fn):
            raise ValueError("export_saved_model: serving_input_receiver_fn must be "
                             "callable")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            raise ValueError(f"export_saved_model: couldn't find a trained model in "
                             f"model_dir {self._model_dir!r}; train first")

        def build_serving_model(graph):
            if self._config.tf_random_seed is not None:
                tf.compat.v1.set_random_seed(self._config.tf_random_seed)
            self._create_global_step(graph, ModeKeys.PREDICT)
            receiver = serving_input_receiver_fn()
            return receiver, self._call_model_fn_for_export(receiver.features, self.config)

        return _saved_model.write(export_dir_base, build_serving_model, checkpoint_path,
                                  self._session_config, as_text=as_text,
                                  assets_extra=assets_extra)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                          assets_extra=None, as_text=False, checkpoint_path=None,
                          strip_default_attrs=False):
        """TF 1.x name of :meth:`export_saved_model` (deprecated in TF 1.13)."""
        del strip_default_attrs  # always stripped: TF 2.21 loads either way
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                       assets_extra=assets_extra, as_text=as_text,
                                       checkpoint_path=checkpoint_path)

    def _call_model_fn_for_export(self, features, config):
        return self._call_model_fn(features, None, ModeKeys.PREDICT, config)


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
