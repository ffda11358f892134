"""``tf.estimator.tpu.TPUEstimator``: the model_fn Estimator, replicated over TPU cores.

``use_tpu=True`` runs training (and evaluation, unless ``eval_on_tpu=False``,
and prediction) on the TPU, or on the emulated TPU when there is none:
``input_fn`` is called as TF 1.15's input pipeline mode says, ``model_fn``
runs on every replica with ``params['batch_size']`` the per-replica batch,
and ``iterations_per_loop`` steps run per ``Session.run``
(:mod:`tpu_compat.estimator.tpu.programs`). ``use_tpu=False`` (and export)
runs the same ``model_fn`` on the CPU with the global batch, as BERT's
scripts do by default.
"""

import copy
import logging
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import tf_evaluation

from tpu_compat.estimator import _inputs, _sessions
from tpu_compat.estimator._spec import ModeKeys
from tpu_compat.estimator.estimator import Estimator
from tpu_compat.estimator.tpu import _quiet
from tpu_compat.estimator.tpu import config as config_lib
from tpu_compat.estimator.tpu import context as context_lib
from tpu_compat.estimator.tpu import programs
from tpu_compat.estimator.tpu import session_hooks
from tpu_compat.estimator.tpu.spec import TPUEstimatorSpec
from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["TPUEstimator"]

_log = logging.getLogger("tensorflow")
# TF 1.13-1.15 and tensorflow_estimator 2.x reserved these two only
# (tensorflow/estimator, branches r1.14/r1.15/r2.x,
# tensorflow_estimator/python/estimator/tpu/tpu_estimator.py:
# _RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]); 'use_tpu' was left out
# on purpose ("there are already models that make use of this key") and
# overwritten before model_fn ran (_add_item_to_params). TF 1.12 and earlier
# (tensorflow/tensorflow r1.12, tensorflow/contrib/tpu/python/tpu/
# tpu_estimator.py) reserved only 'batch_size'; 'context' stays reserved here,
# as the era of tf.compat.v1.estimator.tpu did, since nothing tells a TF 1.12
# program from a TF 1.13 one.
_RESERVED_PARAMS = ("batch_size", "context")


def _check_batch_size(name, value, required):
    if value is None:
        if required:
            raise ValueError(f"TPUEstimator: {name} cannot be None when use_tpu=True")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"TPUEstimator: {name} must be a positive int, given: {value!r}")
    return value


class _DeferredInput:
    """Stands for ``features`` until the TPU program calls ``input_fn`` itself."""

    def __init__(self, input_fn):
        self.input_fn = input_fn


class TPUEstimator(Estimator):
    """``tf.compat.v1.estimator.tpu.TPUEstimator`` (TF 1.15 signature)."""

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
                 use_tpu=True, train_batch_size=None, eval_batch_size=None,
                 predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
                 export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
                 embedding_config_spec=None, export_saved_model_api_version=None):
        if config is None or not isinstance(config, config_lib.RunConfig):
            raise ValueError("TPUEstimator: config must be a tf.estimator.tpu.RunConfig "
                             f"(with a TPUConfig), given: {type(config).__name__}")
        reserved = [key for key in _RESERVED_PARAMS if params is not None and key in params]
        if reserved:
            raise ValueError(f"TPUEstimator: params must not contain {reserved}: "
                             f"{list(_RESERVED_PARAMS)} are reserved keys (TPUEstimator "
                             f"sets them), given: {sorted(params)}")
        if config.train_distribute is not None or config.eval_distribute is not None:
            raise ValueError(
                "TPUEstimator: RunConfig train_distribute/eval_distribute are not "
                "used by TPUEstimator, which replicates model_fn over the TPU itself; "
                "pass the strategy to tf.estimator.Estimator instead, or leave "
                "them None")
        if embedding_config_spec is not None:
            raise ValueError("TPUEstimator: embedding_config_spec (TPU embeddings) is "
                             "not supported by tpu_compat")
        if model_fn is None or "params" not in _inputs.fn_args(model_fn):
            raise ValueError(f"TPUEstimator: model_fn ({getattr(model_fn, '__name__', model_fn)!r}) "
                             f"must take a 'params' argument: TPUEstimator passes the "
                             f"batch size as params['batch_size']")
        _check_batch_size("train_batch_size", train_batch_size, required=use_tpu)
        _check_batch_size("eval_batch_size", eval_batch_size, required=False)
        _check_batch_size("predict_batch_size", predict_batch_size, required=False)
        if (use_tpu and config.tpu_config.per_host_input_for_training
                == config_lib.InputPipelineConfig.PER_SHARD_V1
                and config.tpu_config.num_cores_per_replica):
            raise ValueError("TPUEstimator: model parallelism (num_cores_per_replica) "
                             "needs per-host input; set per_host_input_for_training")
        self._user_model_fn = model_fn
        per_loop = config_lib.parse_iterations_per_loop(
            config.tpu_config.iterations_per_loop)
        self._iterations_per_loop = per_loop.value
        # TF 1.15 logged loss and step/sec itself, every ceil(N / per_loop) loops.
        self._log_every_n_steps = config.log_step_count_steps
        super().__init__(model_fn=self._call_user_model_fn_placeholder,
                         model_dir=model_dir,
                         config=config.replace(log_step_count_steps=None),
                         params=params, warm_start_from=warm_start_from)
        self._batch_axis = batch_axis
        self._export_to_tpu = export_to_tpu
        self._export_to_cpu = export_to_cpu
        self._ctx = context_lib.InternalContext(
            self._config, train_batch_size, eval_batch_size, predict_batch_size,
            use_tpu, eval_on_tpu, self._num_replicas, self._host_devices)
        # Everything the TPU programs read of this estimator, built once.
        self._program_settings = programs.ProgramSettings(
            ctx=self._ctx, batch_axis=batch_axis, params=self._params, config=self._config,
            model_dir=self.model_dir, iterations_per_loop=self._iterations_per_loop,
            log_every_n_steps=self._log_every_n_steps)
        self._strategies = weakref.WeakKeyDictionary()  # graph -> strategy
        self._run_steps = None

    @staticmethod
    def _call_user_model_fn_placeholder(features, labels, mode, params, config):
        # The base class validates the model_fn it is given; ours is called
        # through _call_model_fn below, which knows the TPU context.
        raise AssertionError("internal: TPUEstimator calls model_fn itself")

    # -- the sessions' config ----------------------------------------------------
    @property
    def _session_config(self):
        """The program's session config, seeing every emulated core (see _sessions)."""
        return _sessions.with_emulated_devices(self._program_session_config)

    @_session_config.setter
    def _session_config(self, config):
        self._program_session_config = config

    # -- the TPU --------------------------------------------------------------------
    def _num_replicas(self):
        from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
        chosen = backend_lib.get_backend()
        if chosen.emulated:
            return chosen.num_replicas
        return self._strategy().num_replicas_in_sync

    def _host_devices(self):
        """Each host's CPU device, in task order: where its ``input_fn`` runs.

        tpu_estimator.py calls ``input_fn`` once per host (per core, once
        for BROADCAST) under ``ctx.tpu_host_placement_function(host_id)``, so
        each host's input pipeline feeds its own cores. An emulated pod's
        hosts are its worker processes (``/job:worker/task:h``); a real TPU
        is driven as one host here (its input runs on this host's CPU).
        """
        from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
        from tpu_compat.runtime import emulated  # pylint: disable=import-outside-toplevel
        chosen = backend_lib.get_backend()
        if not chosen.emulated:
            return (context_lib.HOST_DEVICE,)
        return tuple(host for host, _ in emulated.group_by_host(chosen.devices))

    def _strategy(self, graph=None):
        """The replicated strategy of ``graph`` (one per graph, built on first use)."""
        graph = graph or tf.compat.v1.get_default_graph()
        strategy = self._strategies.get(graph)
        if strategy is None:
            from tpu_compat.runtime import strategy_v1  # pylint: disable=import-outside-toplevel
            with graph.as_default():
                strategy = strategy_v1.CompatTPUStrategyV1(
                    self._config.cluster, steps_per_run=self._iterations_per_loop)
            self._strategies[graph] = strategy
        return strategy

    def _session_master(self, mode):
        # tpu_estimator.py ran every session on the RunConfig's master; on the
        # emulated TPU that is where the backend put it (see _sessions).
        return _sessions.emulated_master(
            default=self._config.evaluation_master if mode == ModeKeys.EVAL
            else self._config.master)

    # -- the Estimator hooks ------------------------------------------------------
    def _create_global_step(self, graph, mode):
        with self._ctx.with_mode(mode) as ctx:
            if ctx.is_running_on_cpu():
                # tpu_estimator.py's _create_global_step made it a resource
                # variable on the CPU too, also in TF 1.x graphs (whose default
                # is a reference variable): host_call then reads the step's own
                # value (see _ordering), not whatever an in-place update left.
                with graph.as_default(), graph.name_scope(None):
                    return tf.compat.v1.get_variable(
                        tf.compat.v1.GraphKeys.GLOBAL_STEP, shape=[], dtype=tf.int64,
                        initializer=tf.compat.v1.zeros_initializer(), trainable=False,
                        use_resource=True,
                        collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                                     tf.compat.v1.GraphKeys.GLOBAL_STEP])
            return programs.create_mirrored_global_step(self._strategy(graph))

    def _features_and_labels(self, input_fn, mode):
        with self._ctx.with_mode(mode) as ctx:
            if not callable(input_fn):
                raise ValueError(f"input_fn must be callable, given: {input_fn!r}")
            if ctx.is_running_on_cpu():
                params = self.params
                if ctx.global_batch_size is not None:
                    params["batch_size"] = ctx.batch_size_for_input_fn
                available = {"params": params, "mode": mode, "config": self.config}
                with tf.device("/device:CPU:0"):
                    result = _inputs.call_with_known_args(input_fn, available,
                                                          required=("params",))
                return _inputs.read_input(result)
            ctx.validate()
            return _DeferredInput(input_fn), None, []

    def _convert_train_steps_to_hooks(self, steps, max_steps):
        with self._ctx.with_mode(ModeKeys.TRAIN) as ctx:
            if ctx.is_running_on_cpu():
                return super()._convert_train_steps_to_hooks(steps, max_steps)
        if steps is None and max_steps is None:
            raise ValueError("TPUEstimator.train on the TPU needs steps or max_steps "
                             "(both cannot be None)")
        self._run_steps = (steps, max_steps)
        return []

    def _convert_eval_steps_to_hooks(self, steps):
        with self._ctx.with_mode(ModeKeys.EVAL) as ctx:
            if ctx.is_running_on_cpu():
                return super()._convert_eval_steps_to_hooks(steps)
        if steps is None:
            raise ValueError("TPUEstimator.evaluate on the TPU needs steps (it cannot "
                             "be None, as in TF 1.15)")
        self._run_steps = steps
        # The loop runs all `steps` in one Session.run, which advances the
        # eval step by `steps` (see programs.build_program).
        return [tf_evaluation._StopAfterNEvalsHook(num_evals=steps)]  # pylint: disable=protected-access

    def _train_logging_hooks(self, spec, global_step):
        del spec, global_step
        return []  # TF 1.15's TPUEstimator added its own (see _call_model_fn)

    def _checkpoint_hooks(self, spec, saving_listeners):
        hooks = super()._checkpoint_hooks(spec, saving_listeners)
        with self._ctx.with_mode(ModeKeys.TRAIN) as ctx:
            if not ctx.is_running_on_cpu():
                for hook in hooks:
                    # Checks the step once per loop, as TF 1.15's TPUEstimator.
                    hook._set_steps_per_run(self._iterations_per_loop)  # pylint: disable=protected-access
        return hooks

    def _call_model_fn(self, features, labels, mode, config):
        with self._ctx.with_mode(mode) as ctx:
            return self._model_fn_in_mode(ctx, features, labels, mode, config)

    def _call_model_fn_for_export(self, features, config):
        with self._ctx.with_mode(ModeKeys.PREDICT, is_export_mode=True) as ctx:
            return self._model_fn_in_mode(ctx, features, None, ModeKeys.PREDICT, config)

    def _model_fn_in_mode(self, ctx, features, labels, mode, config):
        if ctx.is_running_on_cpu():
            _log.info("Running %s on CPU", mode)
            spec = self._call_user_model_fn(ctx, features, labels, mode, config)
            if isinstance(spec, TPUEstimatorSpec):
                spec = spec.as_estimator_spec()
            if mode == ModeKeys.TRAIN and self._log_every_n_steps:
                spec = spec._replace(training_hooks=spec.training_hooks + (
                    tf.compat.v1.train.LoggingTensorHook(
                        {"loss": spec.loss,
                         "step": tf.compat.v1.train.get_global_step()},
                        every_n_iter=self._log_every_n_steps),
                    session_hooks.ExamplesPerSecondHook(
                        ctx.global_batch_size, every_n_steps=self._log_every_n_steps,
                        output_dir=self.model_dir, steps_per_run=1)))
            return spec
        if not isinstance(features, _DeferredInput):
            raise ValueError("internal: the TPU program needs the input_fn")

        def on_replica(replica_features, replica_labels, replica_mode):
            with _quiet.quiet_replica():
                return self._call_user_model_fn(ctx, replica_features, replica_labels,
                                                replica_mode, config)

        with _quiet.first_replica_speaks():
            return programs.build_program(self._program_settings, self._strategy(),
                                          on_replica, features.input_fn, mode,
                                          self._run_steps)

    def _call_user_model_fn(self, ctx, features, labels, mode, config):
        """Calls the user's model_fn with TF 1.15's params for ``ctx``."""
        model_fn = self._user_model_fn
        names = _inputs.fn_args(model_fn)
        params = copy.deepcopy(self._params)
        batch_size = None if ctx.is_export_mode else ctx.batch_size_for_model_fn
        if batch_size is not None:
            params["batch_size"] = batch_size
        params["use_tpu"] = not ctx.is_running_on_cpu()
        if not ctx.is_running_on_cpu():
            params["context"] = context_lib.TPUContext(ctx, call_from_input_fn=False)
        kwargs = {"params": params}
        if "labels" in names:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels")
        if "mode" in names:
            kwargs["mode"] = mode
        if "config" in names:
            kwargs["config"] = copy.deepcopy(config)
        return model_fn(features=features, **kwargs)


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
