"""A TPUEstimator program's driver in TF 2: ``tf.distribute.TPUStrategy`` and ``tf.function``.

``tpu-compat upgrade --estimator-to-tf2`` writes this file next to the program it
migrates and points the program's ``TPUEstimator``, ``RunConfig``, ``TPUConfig``,
``TPUEstimatorSpec`` and ``ModeKeys`` here; the program's ``model_fn`` and
``input_fn`` stay as they were. It imports neither tf.estimator nor tpu_compat:
only TensorFlow 2 and TensorFlow's own tool for TF1-style model code,
``track_tf1_style_variables`` (from tf_keras, as TF 2.21 ships it).

What each part of TPUEstimator becomes (tensorflow_estimator r1.15's
tpu_estimator.py and tpu_context.py are the behaviour kept):

* the TPU: ``TPUStrategy`` from the program's ``RunConfig(cluster=resolver)``;
  ``use_tpu=False`` runs on the default strategy (one device), as the CPU did.
* ``input_fn``: called through ``strategy.distribute_datasets_from_function`` with
  ``params['batch_size']`` as TPUEstimator gave it: global // replicas
  (PER_HOST_V2, per-shard), or the host's whole batch (PER_HOST_V1, the default of
  ``per_host_input_for_training=True``) split in order across the replicas.
* ``model_fn``: called inside ``strategy.run`` in a ``tf.function`` that runs
  ``iterations_per_loop`` steps; its ``tf.compat.v1.get_variable`` and
  ``tf.compat.v1.layers`` variables are kept by name across calls (TF 1 graph
  names, so ``model_dir`` checkpoints of the TPUEstimator program restore), its
  ``tf.compat.v1.train`` optimizer runs as TF 2's distribution code runs V1
  optimizers (gradients summed across replicas); ``CrossReplicaOptimizer`` is
  ``CrossShardOptimizer``'s mean (or sum).
* ``eval_metrics``: ``metric_fn`` on the host on the replicas' tensors
  concatenated, as TPUEstimator's outfeed gave them; ``evaluate`` logs
  ``Saving dict for global step N: ...`` and returns the dict.
* ``host_call``: ``fn`` on the host once per training step with that step's
  tensors of all replicas concatenated (read at the step's start values, as a
  TPU's one XLA computation read them); its summary writers kept and flushed.
* ``predict``: ``predict_batch_size`` examples a step, a partial last batch
  padded and the padding dropped; one dict per example, in input order.
* checkpoints: ``model.ckpt-N`` in ``model_dir`` with the TF 1 variable names.
"""

import contextlib
import inspect
import os
import sys
import threading
import time

import numpy as np
import tensorflow as tf
from absl import logging

__all__ = ["AsyncCheckpointSaverHook", "CrossReplicaOptimizer", "EstimatorSpec", "HParams",
           "InputPipelineConfig", "ModeKeys", "PredictOutput", "RunConfig",
           "ServingInputReceiver", "SessionRunArgs", "SessionRunHook", "TPUConfig",
           "TPUEstimatorSpec", "TPUStrategyEstimator", "all_summary_ops", "bfloat16_scope",
           "checkpoints_iterator", "cross_replica_sum", "image_rotate", "image_transform",
           "image_translate", "init_from_checkpoint", "layer_norm"]


def _track_tf1_style_variables():
    """TensorFlow's decorator for TF1-style model code in TF 2 (tf_keras's one
    when ``tf.compat.v1.keras`` is Keras 3, which dropped it)."""
    utils = getattr(getattr(tf.compat.v1, "keras", None), "utils", None)
    if utils is not None and hasattr(utils, "track_tf1_style_variables"):
        return utils.track_tf1_style_variables
    from tf_keras.api._v1.keras import utils as tf_keras_v1_utils  # pylint: disable=import-outside-toplevel
    return tf_keras_v1_utils.track_tf1_style_variables


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class InputPipelineConfig:
    """TPUConfig.per_host_input_for_training's values (TF 1.15's numbers)."""
    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5      # eval_training_input_configuration only (SimCLR's evaluation)


_DEFAULT = object()      # an argument not given (RunConfig's _USE_DEFAULT)


def _refuse(what, value, why):
    raise NotImplementedError(f"{what}={value!r} is not migrated: {why}")


class TPUConfig:
    def __init__(self, iterations_per_loop=2, num_shards=None, num_cores_per_replica=None,
                 per_host_input_for_training=True, tpu_job_name=None,
                 initial_infeed_sleep_secs=None, input_partition_dims=None,
                 eval_training_input_configuration=None,
                 experimental_host_call_every_n_steps=1):
        if num_cores_per_replica not in (None, 1):
            _refuse("TPUConfig.num_cores_per_replica", num_cores_per_replica,
                    "model parallelism needs a DeviceAssignment and tf.tpu.XLAOptions")
        if input_partition_dims is not None:
            _refuse("TPUConfig.input_partition_dims", input_partition_dims,
                    "spatial partitioning needs experimental_split_to_logical_devices")
        if per_host_input_for_training is True:
            per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
        elif per_host_input_for_training is False:
            per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
        if per_host_input_for_training == InputPipelineConfig.BROADCAST:
            _refuse("TPUConfig.per_host_input_for_training", "BROADCAST",
                    "every replica would need the same batch (strategy.run with the batch "
                    "as a plain tensor)")
        self.iterations_per_loop = iterations_per_loop
        self.num_shards = num_shards
        self.per_host_input_for_training = per_host_input_for_training
        if (isinstance(experimental_host_call_every_n_steps, bool) or not isinstance(
                experimental_host_call_every_n_steps, int)
                or experimental_host_call_every_n_steps < 1):
            raise ValueError(f"TPUConfig: experimental_host_call_every_n_steps must be a "
                             f"positive int, given: {experimental_host_call_every_n_steps!r}")
        self.experimental_host_call_every_n_steps = experimental_host_call_every_n_steps
        self.eval_training_input_configuration = eval_training_input_configuration


class RunConfig:
    """The RunConfig fields that change what a run computes or writes; the
    session, summary and logging ones are accepted and change nothing here."""

    def __init__(self, tpu_config=None, cluster=None, model_dir=None, master=None,
                 tf_random_seed=None, save_checkpoints_steps=None, keep_checkpoint_max=5,
                 save_checkpoints_secs=_DEFAULT, session_config=None, save_summary_steps=None,
                 log_step_count_steps=None, evaluation_master=None,
                 keep_checkpoint_every_n_hours=None, **unknown):
        if unknown:
            raise TypeError(f"RunConfig got arguments this migration does not know: "
                            f"{sorted(unknown)}")
        self.tpu_config = tpu_config or TPUConfig()
        self.cluster = cluster
        self.master = master
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        # Estimator's RunConfig (tensorflow_estimator r1.15 run_config.py): saves every
        # 600 s unless either is given; both given is an error.
        if save_checkpoints_secs is _DEFAULT:
            save_checkpoints_secs = 600 if save_checkpoints_steps is None else None
        if save_checkpoints_secs is not None and save_checkpoints_steps is not None:
            raise ValueError("RunConfig: can not provide both save_checkpoints_secs and "
                             "save_checkpoints_steps")
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.keep_checkpoint_max = keep_checkpoint_max
        self.log_step_count_steps = 100 if log_step_count_steps is None else log_step_count_steps
        del session_config, save_summary_steps
        del evaluation_master, keep_checkpoint_every_n_hours


class TPUEstimatorSpec:
    def __init__(self, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                 export_outputs=None, scaffold_fn=None, host_call=None, training_hooks=None,
                 evaluation_hooks=None, prediction_hooks=None):
        for name, value in (("prediction_hooks", prediction_hooks),):
            if value:
                _refuse(f"TPUEstimatorSpec.{name}", type(value).__name__,
                        "session hooks have no tf.function form (TF 2 makes no "
                        "Session.run calls)")
        if host_call is not None:
            _check_host_call("host_call", host_call)
        self.mode, self.predictions, self.loss, self.train_op = mode, predictions, loss, train_op
        self.eval_metrics, self.export_outputs, self.scaffold_fn = (
            eval_metrics, export_outputs, scaffold_fn)
        self.host_call = host_call
        self.training_hooks = list(training_hooks or [])
        self.evaluation_hooks = list(evaluation_hooks or [])


class EstimatorSpec(TPUEstimatorSpec):
    """tf.estimator.EstimatorSpec returned by a TPUEstimator's model_fn (tensorflow/tpu's
    resnet_main.py in PREDICT, for its CPU export). TPUEstimator took it on the CPU, in
    export and in TPU training, and refused it in TPU evaluation and prediction
    (tensorflow_estimator r1.15 tpu_estimator.py: _verify_estimator_spec,
    eval_step, predict_step): the driver does the same (``_call_model_fn``)."""

    def __init__(self, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                 export_outputs=None, training_chief_hooks=None, training_hooks=None,
                 scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if training_chief_hooks:
            raise ValueError("training_chief_hooks returned by EstimatorSpec is not supported "
                             "in TPUEstimator. If you want to pass training hooks, please "
                             "pass via training_hooks.")
        if eval_metric_ops:
            _refuse("EstimatorSpec.eval_metric_ops", sorted(eval_metric_ops),
                    "metric update ops run in a TF 1 session; return "
                    "TPUEstimatorSpec(eval_metrics=(metric_fn, tensors))")
        if scaffold is not None:
            logging.warning("EstimatorSpec.Scaffold is ignored by TPU train/eval. "
                            "Please use TPUEstimatorSpec.")
        super().__init__(mode, predictions=predictions, loss=loss, train_op=train_op,
                         export_outputs=export_outputs, training_hooks=training_hooks,
                         evaluation_hooks=evaluation_hooks, prediction_hooks=prediction_hooks)


# A program's own hook classes subclass these (tf.estimator's were the same classes).
SessionRunHook = tf.compat.v1.train.SessionRunHook
SessionRunArgs = tf.compat.v1.train.SessionRunArgs


class _EagerSession:
    """The ``session`` a hook gets: its ``run`` reads the driver's variables (the global
    step) and eager values; a tensor of model_fn's graph has no value outside the
    driver's tf.function, and is refused by name."""

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        del options, run_metadata
        if feed_dict:
            _refuse("SessionRunHook session.run feed_dict", sorted(map(str, feed_dict)),
                    "the driver's variables are read as they are")

        def value(fetch):
            if isinstance(fetch, tf.Variable) or (
                    isinstance(fetch, tf.Tensor) and hasattr(fetch, "numpy")):
                return fetch.numpy()
            raise NotImplementedError(
                f"SessionRunHook fetch {fetch!r} is not migrated: a tensor of model_fn's "
                f"graph has no value outside the driver's tf.function (host_call gives "
                f"model_fn's tensors to the host each step)")
        return tf.nest.map_structure(value, fetches)


class _LoopHooks:
    """SessionRunHooks as TPUEstimator ran them (tensorflow_estimator r1.15
    tpu_estimator.py: the host's Session.run is one loop of iterations_per_loop
    training steps, or the whole evaluation; one step with ``use_tpu=False``;
    MonitoredSession, TF 1.15 monitored_session.py): ``begin`` and
    ``after_create_session`` once, ``before_run``/``after_run`` around each run
    (fetches read after it), ``request_stop`` ends training or evaluation after
    that run, ``end`` once. ``tf.compat.v1.train.get_global_step()`` in a hook is
    the driver's."""

    def __init__(self, hooks, global_step):
        self.hooks, self._global_step = list(hooks), global_step
        self._session = _EagerSession()

    @contextlib.contextmanager
    def _global_step_collection(self):
        steps = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_STEP)
        saved, steps[:] = list(steps), [self._global_step]
        try:
            yield
        finally:
            steps[:] = saved

    def begin(self):
        with self._global_step_collection():
            for hook in self.hooks:
                hook.begin()
            for hook in self.hooks:
                hook.after_create_session(self._session, None)

    @contextlib.contextmanager
    def around_loop(self):
        """Yields the run context; True from ``stop_requested`` after the loop."""
        context = tf.compat.v1.train.SessionRunContext(
            tf.compat.v1.train.SessionRunArgs(None), self._session)
        with self._global_step_collection():
            requests = [hook.before_run(context) for hook in self.hooks]
        yield context
        with self._global_step_collection():
            for hook, request in zip(self.hooks, requests):
                results = (self._session.run(request.fetches)
                           if request is not None and request.fetches is not None else None)
                hook.after_run(context, tf.compat.v1.train.SessionRunValues(results, None, None))

    def end(self):
        with self._global_step_collection():
            for hook in self.hooks:
                hook.end(self._session)


class AsyncCheckpointSaverHook:
    """tf.contrib.tpu's AsyncCheckpointSaverHook (TF 1.15
    tensorflow/contrib/tpu/python/tpu/async_checkpoint.py): a CheckpointSaverHook
    whose ``model.ckpt-N`` writes ran in a thread. Given to ``train`` (or as a
    training hook) it sets the driver's own saving: every ``save_steps`` steps or
    ``save_secs`` seconds, asked after each loop, none at step 0, the last step
    always. Estimator added no saver of its own when a CheckpointSaverHook was
    among the hooks (tensorflow_estimator r1.15 estimator.py,
    _train_with_estimator_spec), so this schedule replaces RunConfig's. The driver
    writes each checkpoint in the step, so none is skipped while an earlier
    one is still being written (the thread's only other effect)."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        # SecondOrStepTimer's rule (TF 1.15 basic_session_run_hooks.py).
        if (save_secs is None) == (save_steps is None):
            raise ValueError(f"AsyncCheckpointSaverHook: exactly one of save_secs and "
                             f"save_steps must be given, got save_secs={save_secs!r}, "
                             f"save_steps={save_steps!r}")
        for name, value in (("saver", saver), ("scaffold", scaffold)):
            if value is not None:
                _refuse(f"AsyncCheckpointSaverHook.{name}", value,
                        "the driver saves its variables by their TF 1 names itself")
        if listeners:
            _refuse("AsyncCheckpointSaverHook.listeners", listeners,
                    "CheckpointSaverListeners run around the Saver of a TF 1 session")
        if checkpoint_basename != "model.ckpt":
            _refuse("AsyncCheckpointSaverHook.checkpoint_basename", checkpoint_basename,
                    "the driver restores model.ckpt-N from model_dir")
        self.checkpoint_dir = checkpoint_dir
        self.save_secs, self.save_steps = save_secs, save_steps

    def schedule(self, model_dir):
        """(save every N steps, save every N seconds) for a run in ``model_dir``."""
        if os.path.abspath(self.checkpoint_dir) != os.path.abspath(model_dir):
            _refuse("AsyncCheckpointSaverHook.checkpoint_dir", self.checkpoint_dir,
                    f"the driver saves and restores model_dir ({model_dir!r})")
        return self.save_steps, self.save_secs


def _checkpoint_schedule(hooks, config, model_dir):
    """(hooks left, save every N steps, every N seconds): an AsyncCheckpointSaverHook's
    schedule when one is among ``hooks``, else RunConfig's."""
    savers = [hook for hook in hooks if isinstance(hook, AsyncCheckpointSaverHook)]
    if len(savers) > 1:
        _refuse("TPUEstimator.train hooks", savers, "one checkpoint saver writes model_dir")
    rest = [hook for hook in hooks if not isinstance(hook, AsyncCheckpointSaverHook)]
    if savers:
        return (rest, *savers[0].schedule(model_dir))
    return rest, config.save_checkpoints_steps, config.save_checkpoints_secs


# contrib.training's evaluation.checkpoints_iterator (a TPU trainer's eval mode, waiting
# for each new checkpoint): the same function TF 1.15 kept in core (checkpoint_utils.py).
checkpoints_iterator = tf.compat.v1.train.checkpoints_iterator

# tf.contrib.image's projective transforms (TF 1.15 tensorflow/contrib/image/python/ops/
# image_ops.py: transform, rotate, translate), as AutoAugment (tensorflow/tpu's
# autoaugment.py) calls them: the same ImageProjectiveTransformV2 kernel, whose TF 2
# fill_mode default (CONSTANT, 0) is contrib's zero fill.
def _as_4d(images):
    """(the images as a batch, the rank given): contrib's rank 2 (HW), 3 (HWC), 4 (NHWC)."""
    images = tf.convert_to_tensor(images)
    rank = images.shape.rank
    if rank not in (2, 3, 4):
        raise TypeError(f"contrib.image: images must have rank 2, 3 or 4, given rank {rank}")
    return {2: lambda: images[None, :, :, None], 3: lambda: images[None],
            4: lambda: images}[rank](), rank


def image_transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
    """contrib.image.transform: each output pixel (x, y) reads the input at
    ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1."""
    del name
    batch, rank = _as_4d(images)
    transforms = tf.convert_to_tensor(transforms, tf.float32)
    if transforms.shape.rank == 1:
        transforms = transforms[None]
    if output_shape is None:
        output_shape = tf.shape(batch)[1:3]
    output = tf.raw_ops.ImageProjectiveTransformV2(
        images=batch, transforms=transforms,
        output_shape=tf.convert_to_tensor(output_shape, tf.int32),
        interpolation=interpolation.upper())
    if rank == 2:
        return output[0, :, :, 0]
    return output[0] if rank == 3 else output


def image_rotate(images, angles, interpolation="NEAREST", name=None):
    """contrib.image.rotate: counterclockwise by ``angles`` (radians) about the center."""
    del name
    batch, _ = _as_4d(images)
    height = tf.cast(tf.shape(batch)[1], tf.float32)[None]
    width = tf.cast(tf.shape(batch)[2], tf.float32)[None]
    angles = tf.convert_to_tensor(angles, tf.float32)
    angles = angles[None] if angles.shape.rank == 0 else angles
    cos, sin = tf.cos(angles), tf.sin(angles)
    x_offset = ((width - 1) - (cos * (width - 1) - sin * (height - 1))) / 2.0
    y_offset = ((height - 1) - (sin * (width - 1) + cos * (height - 1))) / 2.0
    transforms = tf.concat([cos[:, None], -sin[:, None], x_offset[:, None], sin[:, None],
                            cos[:, None], y_offset[:, None],
                            tf.zeros((tf.shape(angles)[0], 2), tf.float32)], axis=1)
    return image_transform(images, transforms, interpolation=interpolation)


def image_translate(images, translations, interpolation="NEAREST", name=None):
    """contrib.image.translate: by ``translations`` [dx, dy] pixels."""
    del name
    translations = tf.convert_to_tensor(translations, tf.float32)
    translations = translations[None] if translations.shape.rank == 1 else translations
    count = tf.shape(translations)[0]
    ones, zeros = tf.ones((count, 1), tf.float32), tf.zeros((count, 1), tf.float32)
    transforms = tf.concat([ones, zeros, -translations[:, 0, None], zeros, ones,
                            -translations[:, 1, None], zeros, zeros], axis=1)
    return image_transform(images, transforms, interpolation=interpolation)


class HParams:
    """tf.contrib.training.HParams as AutoAugment uses it (keyword values read as
    attributes; ``values()``, ``get``); its parsing and protos are not migrated."""

    def __init__(self, hparam_def=None, model_structure=None, **values):
        if hparam_def is not None or model_structure is not None:
            _refuse("HParams.hparam_def/model_structure", hparam_def or model_structure,
                    "use a dict, dataclass or absl flags")
        self.__dict__.update(values)

    def values(self):
        return dict(self.__dict__)

    def get(self, key, default=None):
        return self.__dict__.get(key, default)


# contrib.summary's all_summary_ops (a host_call's return): TF 1.15's summary_ops_v2 had
# it as the graph's summary ops, None when eager, as all_v2_summary_ops is.
all_summary_ops = tf.compat.v1.summary.all_v2_summary_ops


class ServingInputReceiver:
    """``tf.estimator.export.ServingInputReceiver`` (export.py, TF 1.15): a single
    Tensor is wrapped as ``{'feature': t}`` for model_fn and ``{'input': t}`` for the
    signature, as there."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        if receiver_tensors_alternatives:
            _refuse("ServingInputReceiver.receiver_tensors_alternatives",
                    sorted(receiver_tensors_alternatives), "one signature input set is exported")
        self.features = features if isinstance(features, dict) else {"feature": features}
        self.receiver_tensors = (receiver_tensors if isinstance(receiver_tensors, dict)
                                 else {"input": receiver_tensors})


class PredictOutput:
    """``tf.estimator.export.PredictOutput``: a predict signature of these outputs
    (a single Tensor is ``{'output': t}``, as export_output.py, TF 1.15)."""

    def __init__(self, outputs):
        self.outputs = outputs if isinstance(outputs, dict) else {"output": outputs}

    def signature_def(self, receiver_tensors):
        return tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


class CrossReplicaOptimizer(tf.compat.v1.train.Optimizer):
    """``CrossShardOptimizer`` under a tf.distribute strategy: the replicas' gradients
    averaged (``reduction`` MEAN, its default) or summed, then ``optimizer``'s update.

    TF 2's V1-optimizer code all-reduces gradients with SUM in ``apply_gradients``
    and scales the loss only for tf.estimator; so the mean is the loss scaled by
    1/replicas here, as tpu_optimizer.py (TF 1.15) scaled it.
    """

    def __init__(self, optimizer, reduction=tf.compat.v1.losses.Reduction.MEAN,
                 name="CrossShardOptimizer", group_assignment=None):
        if group_assignment is not None:
            _refuse("CrossShardOptimizer.group_assignment", group_assignment,
                    "sub-groups of replicas need tf.distribute's all-reduce by groups")
        if reduction not in (tf.compat.v1.losses.Reduction.MEAN,
                             tf.compat.v1.losses.Reduction.SUM):
            raise ValueError(f"CrossShardOptimizer reduction={reduction!r}: expected "
                             f"Reduction.MEAN or Reduction.SUM")
        super().__init__(use_locking=False, name=name)
        self._optimizer, self._reduction = optimizer, reduction

    def compute_gradients(self, loss, var_list=None, **kwargs):
        replicas = tf.distribute.get_replica_context().num_replicas_in_sync
        if self._reduction == tf.compat.v1.losses.Reduction.MEAN and replicas > 1:
            scale = 1.0 / replicas
            loss = (lambda: loss() * scale) if callable(loss) else loss * scale
        return self._optimizer.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if type(self._optimizer).apply_gradients is tf.compat.v1.train.Optimizer.apply_gradients:
            # TF's own apply_gradients sums the replicas' gradients (merge_call).
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        # An optimizer that overrides apply_gradients (BERT's AdamWeightDecayOptimizer)
        # updates in each replica with what it is given: the replicas' gradients
        # summed here first, dense, as CrossShardOptimizer.apply_gradients's
        # cross_replica_sum gave them (tpu_optimizer.py, TF 1.15).
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        context = tf.distribute.get_replica_context()
        grads = [tf.convert_to_tensor(g) for g, _ in grads_and_vars]
        if context is not None and context.num_replicas_in_sync > 1:
            grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        return self._optimizer.apply_gradients(
            list(zip(grads, [v for _, v in grads_and_vars])), global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._optimizer.variables()


def _variable_scope_store():
    # TF's variable-scope module (not public), reached through its public function.
    module = sys.modules[tf.compat.v1.get_variable_scope.__module__]
    return module.get_variable_scope_store()


_EQUALITY = {"depth": 0, "saved": None}
_EQUALITY_LOCK = threading.Lock()


@contextlib.contextmanager
def _tf1_tensor_equality():
    """TF 1's ``==`` and hashing of tensors and variables (by identity) while model_fn
    runs, as a TF 1.15 program had them (ops.py r1.15: ``Tensor._USE_EQUALITY =
    tf2.enabled()``): EfficientNet's and MnasNet's ``list(set(tf.trainable_variables()
    + ...))`` (efficientnet/utils.py get_ema_vars) needs hashable variables. TF keeps
    the switch per process, so it is on while any replica's model_fn runs (the
    strategy's replica threads interleave at merge_call) and restored after."""
    with _EQUALITY_LOCK:
        if _EQUALITY["depth"] == 0:
            _EQUALITY["saved"] = tf.Tensor._USE_EQUALITY  # pylint: disable=protected-access
            tf.compat.v1.disable_tensor_equality()
        _EQUALITY["depth"] += 1
    try:
        yield
    finally:
        with _EQUALITY_LOCK:
            _EQUALITY["depth"] -= 1
            if _EQUALITY["depth"] == 0 and _EQUALITY["saved"]:
                tf.compat.v1.enable_tensor_equality()


class _TF1Variables(tf.Module):
    """The variables ``model_fn`` (or ``metric_fn``) creates, kept across calls as one
    TF 1 graph kept them: ``get_variable`` and layers by name (the decorator), other
    creations (an optimizer's ``beta1_power``, a metric's ``total``) by their name and
    order within one call. The trainable ones, in creation order, are what
    ``tf.compat.v1.trainable_variables()`` answers while ``model_fn`` runs, so
    ``optimizer.minimize(loss)`` finds them as it found the graph's."""

    def __init__(self, name, global_step=None):
        super().__init__(name=name)
        self.global_step = global_step
        self.in_order = []          # every variable, in creation order
        self._by_name = {}          # (name, n-th creation of that name in one call)
        self._outside = []          # created in init_scope (optimizer slots), recorded
        self._outside_by_name = {}  # (name, n-th in one call): the same, reused
        self._outside_seen = {}

    @contextlib.contextmanager
    def recording(self):
        """Keeps the variables created outside ``model_fn``'s own graph: an optimizer's
        slots (``hidden/kernel/Momentum``) and accumulators, made in ``init_scope``
        where ``__call__``'s scope is not, or in a merge_call on the strategy's own
        thread (AdamOptimizer's ``beta1_power``). A later trace (the loop's) gets the
        same variables back by name and order, as the TF 1 graph had them once."""
        distributed = tf.distribute.has_strategy()

        def record(next_creator, **kwargs):
            name = str(kwargs.get("name") or "Variable")
            key = (name, self._outside_seen.get(name, 0))
            if key in self._outside_by_name:
                self._outside_seen[name] = key[1] + 1
                return self._outside_by_name[key]
            variable = next_creator(**kwargs)
            # Under a strategy this creator also sees each replica's copy; the
            # strategy's variable (all copies) is the one kept.
            if not distributed or isinstance(variable, tf.distribute.DistributedValues):
                self._outside.append(variable)
                self._outside_by_name[key] = variable
                self._outside_seen[name] = key[1] + 1
            return variable

        with tf.variable_creator_scope(record):
            yield

    def all_variables(self):
        """global_step, model_fn's variables, then the others recorded, one per name."""
        found, names = [], set()
        for variable in ([self.global_step] if self.global_step is not None else []) + (
                self.in_order + self._outside):
            name = variable.name.split(":")[0]
            if name not in names:
                names.add(name)
                found.append(variable)
        return found

    @tf.autograph.experimental.do_not_convert
    @_track_tf1_style_variables()
    def __call__(self, function, *args):
        # Each call is a fresh TF 1 graph for model_fn: `tf.layers.Dense(name="hidden")`
        # opens scope `hidden` again, not `hidden_1` (the scope counts live in the
        # outer graph's collections, which every tf.function graph shares).
        _variable_scope_store().close_variable_subscopes(None)
        seen = {}
        self._outside_seen.clear()      # every replica's call starts before its merge_call

        def keep_once(next_creator, **kwargs):
            name = kwargs.get("name") or "Variable"
            key = (str(name), seen.get(name, 0))
            seen[name] = key[1] + 1
            if key in self._by_name:
                return self._by_name[key]
            variable = next_creator(**kwargs)
            self._by_name[key] = variable
            self.in_order.append(variable)
            if variable.trainable:
                trainable.append(variable)
            return variable

        trainable = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
        steps = tf.compat.v1.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_STEP)
        saved = list(trainable), list(steps)
        trainable[:] = [v for v in self.in_order if v.trainable]
        steps[:] = [self.global_step] if self.global_step is not None else []
        try:
            with tf.variable_creator_scope(keep_once), _tf1_tensor_equality():
                return function(*args)
        finally:
            trainable[:], steps[:] = saved


_WARM_START_RECORDERS = []


@contextlib.contextmanager
def _recording_warm_starts(requests):
    _WARM_START_RECORDERS.append(requests)
    try:
        yield
    finally:
        _WARM_START_RECORDERS.pop()


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """``tf.compat.v1.train.init_from_checkpoint`` for a migrated ``model_fn`` or
    ``scaffold_fn``: the named variables start from the checkpoint when the run
    restores no ``model_dir`` checkpoint. (TF's own sets a graph initializer,
    which eager TF 2 variables never run.) The mapping is TF's: checkpoint name
    to a variable or its name, or ``'scope/'`` to ``'scope/'``."""
    if not _WARM_START_RECORDERS:
        raise RuntimeError("init_from_checkpoint: call it in model_fn or scaffold_fn, where "
                           "TPUStrategyEstimator applies it before the first step")
    if isinstance(assignment_map, dict):
        assignment_map = list(assignment_map.items())
    request = (os.fspath(ckpt_dir_or_file), [
        (key, value if isinstance(value, str) else _checkpoint_name(value))
        for key, value in assignment_map])
    if request not in _WARM_START_RECORDERS[-1]:     # model_fn is traced per replica
        _WARM_START_RECORDERS[-1].append(request)


def _checkpoint_step(checkpoint):
    """The checkpoint's ``global_step``; 0 without one, as Estimator's
    _load_global_step_from_checkpoint_dir (tensorflow_estimator r1.15)."""
    reader = tf.train.load_checkpoint(checkpoint)
    return int(reader.get_tensor("global_step")) if reader.has_tensor("global_step") else 0


def _warm_start(checkpoint, assignment_map, by_name):
    """Assigns the checkpoint's tensors to the variables ``assignment_map`` names
    (checkpoint_utils._init_from_checkpoint's rules, TF 1.15), every replica's copy."""
    if tf.io.gfile.isdir(checkpoint):
        checkpoint = tf.train.latest_checkpoint(checkpoint)
    reader = tf.train.load_checkpoint(checkpoint)
    shapes = reader.get_variable_to_shape_map()
    pairs = []
    for tensor_name, variable_name in sorted(assignment_map):
        if variable_name in by_name:
            pairs.append((tensor_name, variable_name))
            continue
        if not tensor_name.endswith("/"):
            raise ValueError(f"init_from_checkpoint: no variable {variable_name!r} for "
                             f"{tensor_name!r} of {checkpoint} (the model's: {sorted(by_name)})")
        scope = variable_name.rstrip("/")   # 'scope/': 'other_scope/' maps every variable
        for name in sorted(by_name):
            if not scope or name.startswith(scope + "/"):
                rest = name[len(scope):].lstrip("/")
                pairs.append(((tensor_name if tensor_name != "/" else "") + rest, name))
    for tensor_name, variable_name in pairs:
        variable = by_name[variable_name]
        if tensor_name not in shapes:
            raise ValueError(f"init_from_checkpoint: tensor {tensor_name!r} is not in "
                             f"{checkpoint}")
        if not variable.shape.is_compatible_with(shapes[tensor_name]):
            raise ValueError(f"init_from_checkpoint: variable {variable_name!r} "
                             f"{variable.shape} does not match {tensor_name!r} "
                             f"{shapes[tensor_name]} of {checkpoint}")
        variable.assign(reader.get_tensor(tensor_name))
    logging.info("Warm-started %d variables from %s", len(pairs), checkpoint)


_SCAFFOLD_PARTS = ("init_op", "init_feed_dict", "init_fn", "ready_op",
                   "ready_for_local_init_op", "local_init_op", "summary_op", "saver")


def _check_scaffold(scaffold):
    """A Scaffold beyond ``tf.compat.v1.train.Scaffold()`` ran session code."""
    if scaffold is None:
        return
    for part in _SCAFFOLD_PARTS:
        if getattr(scaffold, part, None) is not None:
            _refuse(f"Scaffold.{part}", type(getattr(scaffold, part)).__name__,
                    "it ran in a TF 1 session; only init_from_checkpoint warm starts "
                    "are migrated")


_STRATEGIES = {}


def _strategy_for(config, use_tpu):
    if not use_tpu:
        return tf.distribute.get_strategy()
    resolver = config.cluster or tf.distribute.cluster_resolver.TPUClusterResolver(
        config.master or "")
    if id(resolver) not in _STRATEGIES:   # the TPU system is initialized once
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        _STRATEGIES[id(resolver)] = (resolver, tf.distribute.TPUStrategy(resolver))
    return _STRATEGIES[id(resolver)][1]


def _checkpoint_name(variable):
    return variable.name.split(":")[0]


def _features_and_labels(batch):
    if isinstance(batch, tuple) and len(batch) == 2:
        return batch
    return batch, None



def _input_dataset(input_fn, params):
    """input_fn's dataset. An input_fn may also return its batch as tensors, TF 1's
    ``(features, labels)`` of ``make_one_shot_iterator(dataset).get_next()`` (SimCLR's
    data.py), which TPUEstimator re-ran each step: here input_fn is built once in a TF 1
    graph (``wrap_function``) and each call of it is the next batch, until the
    iterator ends."""
    first = input_fn(params)
    if isinstance(first, tf.data.Dataset):
        return first
    try:
        graph_fn = tf.compat.v1.wrap_function(lambda: input_fn(params), [])
    except ValueError as error:
        if "Cannot capture a stateful node" not in str(error):
            raise
        # TF 2's shuffle and random ops hold a seed generator, which a TF 1 one-shot
        # iterator cannot capture by value (TF 1.15's graph datasets had none).
        raise ValueError(
            "input_fn returned its batch as tensors of make_one_shot_iterator(dataset)."
            "get_next(), and its dataset holds a stateful op (a shuffle or random map): "
            "in TF 2 such an iterator cannot be built; return the dataset itself from "
            f"input_fn (TensorFlow said: {str(error).split(':', 1)[0]})") from error
    spec = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), first)

    def batches():
        while True:
            try:
                yield graph_fn()
            except tf.errors.OutOfRangeError:
                return

    return tf.data.Dataset.from_generator(batches, output_signature=spec)


def _replica_batches(input_fn, params, pipeline, replicas, global_batch):
    """The dataset function for ``distribute_datasets_from_function``: per replica
    batches in the order TPUEstimator fed the replicas (replica i gets the i-th)."""
    per_replica = global_batch // replicas

    def dataset_fn(context):
        del context  # one host: the function is called once
        if pipeline == InputPipelineConfig.PER_HOST_V2:
            return _input_dataset(input_fn, dict(params, batch_size=per_replica))
        if pipeline == InputPipelineConfig.PER_SHARD_V1:
            # TF 1.15 called input_fn once per shard, each with the shard's batch;
            # the shards' datasets are taken in turn, one batch each.
            datasets = [_input_dataset(input_fn, dict(params, batch_size=per_replica))
                        for _ in range(replicas)]
            if replicas == 1:
                return datasets[0]
            return tf.data.Dataset.choose_from_datasets(
                datasets, tf.data.Dataset.range(replicas).repeat())
        # PER_HOST_V1: the host's whole batch, split in order along the batch axis.
        dataset = _input_dataset(input_fn, dict(params, batch_size=global_batch))
        return dataset.rebatch(per_replica) if replicas > 1 else dataset

    return dataset_fn


def _predict_batches(input_fn, params, pipeline, replicas, global_batch):
    """``(per-replica batches, real examples)`` of each predict step, padded with
    zeros to ``global_batch``: input_fn's batches as they come (PER_HOST_V1, given
    the whole batch), or its examples regrouped into whole batches (PER_HOST_V2, as
    TPUEstimator's unbatch; given the per-replica batch)."""
    per_replica = global_batch // replicas
    if pipeline == InputPipelineConfig.PER_HOST_V2:
        dataset = input_fn(dict(params, batch_size=per_replica))
        dataset = dataset.unbatch().batch(global_batch)
    else:
        dataset = input_fn(dict(params, batch_size=global_batch))
    for element in dataset:
        real = int(tf.shape(tf.nest.flatten(element)[0])[0])
        if real > global_batch:
            raise ValueError(f"input_fn: a predict batch of {real} examples is larger "
                             f"than predict_batch_size={global_batch}")

        def pad(tensor):
            paddings = [[0, global_batch - real]] + [[0, 0]] * (tensor.shape.rank - 1)
            return tf.pad(tensor, paddings)

        padded = tf.nest.map_structure(pad, element)
        yield [tf.nest.map_structure(lambda t: t[i * per_replica:(i + 1) * per_replica],
                                     padded) for i in range(replicas)], real


class TPUStrategyEstimator:
    """TPUEstimator's interface (``train``, ``evaluate``, ``predict``,
    ``get_variable_names``, ``get_variable_value``, ``latest_checkpoint``) over
    ``tf.distribute.TPUStrategy`` in eager TF 2."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, use_tpu=True,
                 train_batch_size=None, eval_batch_size=None, predict_batch_size=None,
                 batch_axis=None, eval_on_tpu=True, export_to_tpu=True,
                 export_to_cpu=True, warm_start_from=None, embedding_config_spec=None,
                 export_saved_model_api_version=None):
        del export_to_tpu, export_to_cpu, export_saved_model_api_version
        if batch_axis is not None:
            _refuse("TPUEstimator.batch_axis", batch_axis,
                    "inputs are split along axis 0 by distribute_datasets_from_function")
        if warm_start_from is not None:
            _refuse("TPUEstimator.warm_start_from", warm_start_from,
                    "restore the pretrained variables with tf.train.Checkpoint or "
                    "tf.compat.v1.train.init_from_checkpoint before training")
        if embedding_config_spec is not None:
            _refuse("TPUEstimator.embedding_config_spec", "EmbeddingConfigSpec",
                    "TPU embeddings need tf.tpu.experimental.embedding.TPUEmbedding")
        params = dict(params or {})
        for reserved in ("batch_size", "context"):
            if reserved in params:
                raise ValueError(f"TPUEstimator: params must not contain {reserved!r} "
                                 f"(TPUEstimator sets it)")
        self.config = config or RunConfig()
        self.model_dir = model_dir or self.config.model_dir
        if not self.model_dir:
            raise ValueError("TPUEstimator: model_dir is needed (RunConfig(model_dir=...) "
                             "or model_dir=...): checkpoints and eval results go there")
        self._model_fn, self._params = model_fn, params
        self._use_tpu = use_tpu
        self._eval_on_tpu = eval_on_tpu
        self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                             ModeKeys.EVAL: eval_batch_size,
                             ModeKeys.PREDICT: predict_batch_size}
        self._strategy = None
        self._state = None
        self._warm_starts = []      # [(checkpoint, assignment map)] model_fn asked for

    # -- the strategy, the variables, the checkpoint -----------------------------

    @property
    def strategy(self):
        if self._strategy is None:
            self._strategy = _strategy_for(self.config, self._use_tpu)
        return self._strategy

    def _replicas(self, mode):
        if mode == ModeKeys.EVAL and not self._eval_on_tpu:
            return 1
        return self.strategy.num_replicas_in_sync

    def _state_for_run(self):
        """The model's variables (global_step first) and their checkpoint, created
        once; every mode's model_fn call reuses them by name."""
        if self._state is None:
            with self.strategy.scope():
                global_step = tf.Variable(
                    0, dtype=tf.int64, trainable=False, name="global_step",
                    aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            self._state = _TF1Variables("model", global_step)
        return self._state

    def _saver(self):
        """A name-based ``tf.compat.v1.train.Saver``: the TF 1 names (``hidden/kernel``,
        ``global_step``) the TPUEstimator program wrote, so either program reads the
        other's ``model_dir``. It saves replica 0's copy of each variable (all copies
        are equal, as on a TPU); ``_restore`` assigns every copy."""
        variables = {_checkpoint_name(v): self.strategy.experimental_local_results(v)[0]
                     for v in self._state.all_variables()}
        return tf.compat.v1.train.Saver(var_list=variables, sharded=False,
                                        max_to_keep=self.config.keep_checkpoint_max,
                                        save_relative_paths=True)

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.model_dir)

    def get_variable_names(self):
        return [name for name, _ in tf.train.list_variables(self.latest_checkpoint())]

    def get_variable_value(self, name):
        return tf.train.load_checkpoint(self.latest_checkpoint()).get_tensor(name)

    # -- one replica's step ----------------------------------------------------

    def _call_model_fn(self, features, labels, mode, replicas):
        params = dict(self._params, batch_size=self._batch_sizes[mode] // replicas,
                      use_tpu=self._use_tpu)
        arguments = inspect.signature(self._model_fn).parameters
        kwargs = {}
        if "mode" in arguments:
            kwargs["mode"] = mode
        if "params" in arguments:
            kwargs["params"] = params
        if "config" in arguments:
            kwargs["config"] = self.config
        if "labels" in arguments:
            kwargs["labels"] = labels
        with _recording_warm_starts(self._warm_starts):
            spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, TPUEstimatorSpec):
            raise TypeError(f"model_fn must return a TPUEstimatorSpec in mode {mode!r}, "
                            f"given: {type(spec).__name__}")
        if isinstance(spec, EstimatorSpec) and self._use_tpu and mode != ModeKeys.TRAIN:
            what = "evaluation" if mode == ModeKeys.EVAL else "prediction"
            raise RuntimeError(f"estimator_spec used by TPU {what} must have type "
                               f"`TPUEstimatorSpec`. Got {type(spec)}")
        if spec.scaffold_fn is not None:
            # TPUEstimator called scaffold_fn on the host after model_fn; its
            # init_from_checkpoint calls (this module's) are recorded, not run.
            with _recording_warm_starts(self._warm_starts):
                _check_scaffold(spec.scaffold_fn())
        return spec

    def _dataset(self, input_fn, mode, replicas):
        global_batch = self._batch_sizes[mode]
        if global_batch is None or global_batch % replicas:
            raise ValueError(f"TPUEstimator: {mode}_batch_size={global_batch!r} must be a "
                             f"multiple of the number of replicas ({replicas})")
        pipeline = self.config.tpu_config.per_host_input_for_training
        if mode != ModeKeys.TRAIN:
            pipeline = InputPipelineConfig.PER_HOST_V1 if pipeline in (
                InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.PER_SHARD_V1) else pipeline
        if mode == ModeKeys.EVAL and (self.config.tpu_config.eval_training_input_configuration
                                      == InputPipelineConfig.SLICED):
            # SLICED: input_fn once on host 0 with the whole eval batch, each replica a
            # slice in order; this driver's one host makes that PER_HOST_V1's split.
            pipeline = InputPipelineConfig.PER_HOST_V1
        params = dict(self._params, use_tpu=self._use_tpu)
        dataset_fn = _replica_batches(input_fn, params, pipeline, replicas, global_batch)
        if replicas == 1 and mode == ModeKeys.EVAL and not self._eval_on_tpu:
            return dataset_fn(None)
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    # -- train -------------------------------------------------------------------

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        if saving_listeners:
            _refuse("TPUEstimator.train saving_listeners", saving_listeners,
                    "CheckpointSaverListeners run around the Saver of a TF 1 session")
        if (steps is None) == (max_steps is None):
            raise ValueError("TPUEstimator.train needs exactly one of steps and max_steps")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"TPUEstimator.train max_steps must be > 0, got {max_steps}")
        # Estimator.train returned at once, before input_fn, when model_dir's checkpoint
        # had reached max_steps (tensorflow_estimator r1.15 estimator.py, train): a
        # program re-run on its finished model_dir goes straight to evaluate.
        latest = self.latest_checkpoint() if max_steps is not None else None
        if latest and max_steps <= _checkpoint_step(latest):
            logging.info("Skipping training since max_steps has already saved.")
            return self
        strategy, replicas = self.strategy, self._replicas(ModeKeys.TRAIN)
        state = self._state_for_run()
        iterator = iter(self._dataset(input_fn, ModeKeys.TRAIN, replicas))
        host = _HostCallRunner(self.config.tpu_config.experimental_host_call_every_n_steps)

        def replica_step(batch):
            features, labels = _features_and_labels(batch)
            # The step's start values of the variables, for host_call (below).
            starts = _start_values(state.all_variables()) if host.active else {}
            spec = state(self._call_model_fn, features, labels, ModeKeys.TRAIN, replicas)
            if not spec_hooks:      # the first call's: model_fn is traced per replica
                spec_hooks.append(spec.training_hooks)
            host_tensors = host.tensors(spec.host_call, starts)
            with tf.control_dependencies([spec.train_op]):
                return tf.identity(tf.cast(spec.loss, tf.float32)), host_tensors

        spec_hooks = []
        build = tf.function(lambda batch: strategy.run(replica_step, args=(batch,)))
        with strategy.scope(), state.recording():   # creates the variables, runs nothing
            build.get_concrete_function(iterator.element_spec)
        given = list(hooks or []) + spec_hooks[0]
        program_hooks, save_every, save_secs = _checkpoint_schedule(
            given, self.config, self.model_dir)
        hooks = _LoopHooks(program_hooks, state.global_step)
        saver = self._saver()
        self._restore_or_warm_start()

        @tf.function
        def loop(iterator, iterations):
            loss = tf.constant(0.0)
            local = strategy.experimental_local_results
            # TPUEstimator's outfeed: each step's host_call tensors of all replicas,
            # concatenated in replica order along dim 0, queued for the host.
            queues = [tf.TensorArray(dtype, size=iterations) for dtype in host.dtypes]
            for i in tf.range(iterations):
                per_replica, host_tensors = strategy.run(replica_step, args=(next(iterator),))
                # TPUEstimator reported replica 0's loss of the loop's last step.
                loss = local(per_replica)[0]
                queues = [queue.write(i, tf.concat(local(tensor), axis=0))
                          for queue, tensor in zip(queues, host_tensors)]
            return loss, [queue.stack() for queue in queues]

        step = int(state.global_step.numpy())
        last = max_steps if max_steps is not None else step + steps
        per_loop = self.config.tpu_config.iterations_per_loop
        if given and not self._use_tpu:
            # TPUEstimator on the CPU ran each step as its own Session.run (its
            # _convert_train_steps_to_hooks), so hooks saw every step.
            per_loop = 1
        log_every = self.config.log_step_count_steps
        log_loops = -(-log_every // per_loop) if log_every else 0
        # save_secs: CheckpointSaverHook's SecondOrStepTimer, asked after each
        # Session.run, which under TPUEstimator is one loop of iterations_per_loop
        # steps (basic_session_run_hooks.py, TF 1.15).
        saved_at, saved_time = step, time.monotonic()
        loops = 0
        hooks.begin()
        while step < last:
            iterations = min(per_loop, last - step)
            # The program's hooks, then the logging and the saving, as Estimator
            # ordered its hooks after the program's (estimator.py, r1.15).
            with hooks.around_loop() as run_context, strategy.scope(), state.recording():
                loss, queued = loop(iterator, tf.constant(iterations))   # 1st call traces again
            host.run(queued, iterations)
            step = int(state.global_step.numpy())
            if log_loops and loops % log_loops == 0:
                logging.info("loss = %s, step = %d", loss.numpy(), step)
            loops += 1
            if (save_every and step - saved_at >= save_every) or (
                    save_secs and step != saved_at
                    and time.monotonic() - saved_time >= save_secs):
                self._save(saver, step)
                saved_at, saved_time = step, time.monotonic()
            if run_context.stop_requested:
                break
        hooks.end()
        if saved_at != step:
            self._save(saver, step)
        host.close()
        logging.info("Loss for final step: %s.", loss.numpy())
        return self

    def _restore_or_warm_start(self, path=None):
        """The model_dir's checkpoint; without one, the variables model_fn or
        scaffold_fn named in init_from_checkpoint start from their checkpoints,
        the rest from their initializers, as a TF 1 Scaffold's init_op did only
        when no checkpoint was restored (monitored_session.py, TF 1.15)."""
        path = path or self.latest_checkpoint()
        if path:
            self._restore(path)
            return
        by_name = {_checkpoint_name(v): v for v in self._state.all_variables()}
        for checkpoint, assignment_map in self._warm_starts:
            _warm_start(checkpoint, assignment_map, by_name)

    def _restore(self, path=None):
        """Restores ``path`` (default: the latest checkpoint in model_dir) by name,
        every replica's copy; a variable the checkpoint lacks is a clear error."""
        path = path or self.latest_checkpoint()
        if not path:
            return
        reader = tf.train.load_checkpoint(path)
        saved = reader.get_variable_to_shape_map()
        variables = self._state.all_variables()
        missing = [_checkpoint_name(v) for v in variables if _checkpoint_name(v) not in saved]
        if missing:
            raise ValueError(f"checkpoint {path!r} does not hold the variables {missing} "
                             f"that this model_fn creates (it holds {sorted(saved)})")
        for variable in variables:
            variable.assign(reader.get_tensor(_checkpoint_name(variable)))
        logging.info("Restoring parameters from %s", path)

    def _save(self, saver, step):
        os.makedirs(self.model_dir, exist_ok=True)
        prefix = os.path.join(self.model_dir, "model.ckpt")
        path = saver.save(None, prefix, global_step=step)
        logging.info("Saving checkpoints for %d into %s.", step, path)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """TPUEstimator.predict on the TPU (tensorflow_estimator r1.15 tpu_estimator.py,
        _InputsWithStoppingSignals and _PaddingSignals): each step takes the next
        ``predict_batch_size`` examples, pads a partial last batch with zeros, splits
        it in order across the replicas, and yields the real examples' predictions
        in input order (one dict per example, or per step)."""
        if hooks:
            _refuse("TPUEstimator.predict hooks", hooks,
                    "SessionRunHooks run around Session.run calls, which TF 2 does not make")
        strategy, replicas = self.strategy, self._replicas(ModeKeys.PREDICT)
        batch = self._batch_sizes[ModeKeys.PREDICT]
        if batch is None or batch % replicas:
            raise ValueError(f"TPUEstimator: predict_batch_size={batch!r} must be a "
                             f"multiple of the number of replicas ({replicas})")
        state = self._state_for_run()
        iterator = iter(_predict_batches(input_fn, dict(self._params, use_tpu=self._use_tpu),
                                         self.config.tpu_config.per_host_input_for_training,
                                         replicas, batch))

        def replica_step(batch_in):
            features, labels = _features_and_labels(batch_in)
            spec = state(self._call_model_fn, features, labels, ModeKeys.PREDICT, replicas)
            if not isinstance(spec.predictions, dict):
                raise TypeError(f"TPUEstimatorSpec.predictions must be a dict of Tensors "
                                f"on the TPU, given: {type(spec.predictions).__name__}")
            keys = predict_keys or sorted(spec.predictions)
            unknown = sorted(set(keys) - set(spec.predictions))
            if unknown:
                raise ValueError(f"predict_keys {unknown} are not in the predictions "
                                 f"({sorted(spec.predictions)})")
            return {key: tf.identity(spec.predictions[key]) for key in keys}

        @tf.function
        def step(per_replica):
            local = strategy.experimental_local_results
            outputs = strategy.run(replica_step, args=(per_replica,))
            return tf.nest.map_structure(lambda t: tf.concat(local(t), axis=0), outputs)

        first = next(iterator, None)
        if first is None:
            return
        distribute = lambda b: strategy.experimental_distribute_values_from_function(
            lambda context: b[context.replica_id_in_sync_group])
        with strategy.scope(), state.recording():   # creates the variables, runs nothing
            step.get_concrete_function(distribute(first[0]))
        self._restore_or_warm_start(checkpoint_path)
        pending = first
        while pending is not None:
            per_replica, real = pending
            values = {key: value.numpy()[:real] for key, value in
                      step(distribute(per_replica)).items()}
            if not yield_single_examples:
                yield values
            else:
                for index in range(real):
                    yield {key: value[index] for key, value in values.items()}
            pending = next(iterator, None)

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Estimator's export (tensorflow_estimator r1.15 estimator.py
        ``_export_all_saved_models``, with TPUEstimator's CPU graph: ``params['use_tpu']``
        False, ``batch_size`` the predict batch, tpu_estimator.py ``_augment_model_fn``):
        a TF 1 graph of ``serving_input_receiver_fn``'s placeholders and ``model_fn`` in
        PREDICT mode, the checkpoint's variables, a SavedModel in
        ``export_dir_base/<timestamp>`` with tag ``serve`` whose signatures are
        ``export_outputs`` (default: ``serving_default``, the predictions). TF 2's
        ``tf.saved_model.load`` loads it. Not written: the TPU graph (tags serve, tpu)
        of ``export_to_tpu``, which only a TPU serves."""
        if assets_extra:
            _refuse("TPUEstimator.export_saved_model assets_extra", assets_extra,
                    "copy the files into the SavedModel's assets.extra directory")
        if experimental_mode != ModeKeys.PREDICT:
            _refuse("TPUEstimator.export_saved_model experimental_mode", experimental_mode,
                    "only the PREDICT graph (serving) is exported")
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if not checkpoint:
            raise ValueError(f"Couldn't find trained model at {self.model_dir}.")
        export_dir = os.path.join(os.fsdecode(export_dir_base), str(int(time.time())))
        with tf.Graph().as_default() as graph:
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, ServingInputReceiver):
                raise TypeError(f"serving_input_receiver_fn must return a ServingInputReceiver, "
                                f"given: {type(receiver).__name__}")
            spec = self._call_model_fn_for_export(receiver.features)
            outputs = spec.export_outputs or {"serving_default": PredictOutput(spec.predictions)}
            signatures = {key: output.signature_def(receiver.receiver_tensors)
                          for key, output in outputs.items()}
            with tf.compat.v1.Session(graph=graph) as session:
                tf.compat.v1.train.Saver().restore(session, checkpoint)
                session.run(tf.compat.v1.tables_initializer())
                builder = tf.compat.v1.saved_model.Builder(export_dir)
                builder.add_meta_graph_and_variables(
                    session, [tf.saved_model.SERVING], signature_def_map=signatures,
                    main_op=tf.compat.v1.tables_initializer(), strip_default_attrs=True)
                builder.save(as_text)
        logging.info("Exported a SavedModel to %s", export_dir)
        return export_dir.encode()

    export_savedmodel = export_saved_model

    def _call_model_fn_for_export(self, features):
        params = dict(self._params, use_tpu=False)
        if self._batch_sizes[ModeKeys.PREDICT] is not None:
            params["batch_size"] = self._batch_sizes[ModeKeys.PREDICT]
        arguments = inspect.signature(self._model_fn).parameters
        kwargs = {key: value for key, value in (
            ("mode", ModeKeys.PREDICT), ("params", params), ("config", self.config),
            ("labels", None)) if key in arguments}
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, TPUEstimatorSpec):
            raise TypeError(f"model_fn must return a TPUEstimatorSpec in mode 'infer', "
                            f"given: {type(spec).__name__}")
        return spec

    # -- evaluate ----------------------------------------------------------------

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        if steps is None:
            raise ValueError("TPUEstimator.evaluate on the TPU needs steps (as in TF 1.15)")
        strategy, replicas = self.strategy, self._replicas(ModeKeys.EVAL)
        state = self._state_for_run()
        iterator = iter(self._dataset(input_fn, ModeKeys.EVAL, replicas))
        metric_fns = []

        def replica_step(batch):
            features, labels = _features_and_labels(batch)
            spec = state(self._call_model_fn, features, labels, ModeKeys.EVAL, replicas)
            if spec.host_call is not None:
                _refuse("TPUEstimatorSpec.host_call", "in mode 'eval'",
                        "the migration runs host_call in training only")
            if not metric_fns:
                metric_fns.append(spec.eval_metrics)
                spec_hooks.extend(spec.evaluation_hooks)
            tensors = _metric_tensors(spec.eval_metrics)
            return tf.cast(spec.loss, tf.float32), tensors

        @tf.function
        def step(iterator):
            loss, tensors = strategy.run(replica_step, args=(next(iterator),))
            local = strategy.experimental_local_results
            # TPUEstimator's outfeed: each tensor of all replicas, concatenated in
            # replica order along the batch axis, for metric_fn on the host.
            return local(loss)[0], tf.nest.map_structure(
                lambda t: tf.concat(local(t), axis=0), tensors)

        spec_hooks = []
        with strategy.scope(), state.recording():   # creates the variables, runs nothing
            step.get_concrete_function(iterator)
        self._restore_or_warm_start(checkpoint_path)
        # The hooks: on the TPU the whole evaluation was one Session.run of `steps`
        # iterations (tpu_estimator.py r1.15, _SetEvalIterationsHook); on the CPU, one a step.
        hooks = _LoopHooks(list(hooks or []) + spec_hooks, state.global_step)
        per_run = steps if self._use_tpu and self._eval_on_tpu else 1
        total_loss, metrics, done = 0.0, None, 0
        hooks.begin()
        while done < steps:
            with hooks.around_loop() as run_context:
                for _ in range(per_run):
                    loss, tensors = step(iterator)
                    total_loss += float(loss)
                    done += 1
                    if metric_fns[0] is not None:
                        if metrics is None:
                            metrics = _HostMetrics(metric_fns[0][0], tensors)
                        metrics.update(tensors)
            if run_context.stop_requested:
                break
        hooks.end()
        results = metrics.values() if metrics is not None else {}
        results["loss"] = np.float32(total_loss / done)
        results["global_step"] = np.int64(state.global_step.numpy())
        logging.info("Saving dict for global step %d: %s", results["global_step"],
                     ", ".join(f"{key} = {str(value)}" for key, value in sorted(results.items())))
        return results


def _metric_tensors(eval_metrics):
    if eval_metrics is None:
        return ()
    _, tensors = eval_metrics
    return dict(tensors) if isinstance(tensors, dict) else tuple(tensors)


class _HostMetrics:
    """``metric_fn`` as TPUEstimator ran it on the host: one TF 1 graph (a
    ``wrap_function``) whose update ops run once per step on that step's
    tensors and whose values are read once at the end."""

    def __init__(self, metric_fn, example):
        specs = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), example)
        built = {}

        def graph(*flat):
            tensors = tf.nest.pack_sequence_as(specs, list(flat))
            result = (metric_fn(**tensors) if isinstance(tensors, dict)
                      else metric_fn(*tensors))
            if not isinstance(result, dict):
                raise TypeError(f"eval_metrics: metric_fn must return a dict of "
                                f"(value, update_op) pairs, given: {type(result).__name__}")
            built["names"] = sorted(result)
            return [result[name][0] for name in built["names"]], [
                result[name][1] for name in built["names"]]

        flat_specs = tf.nest.flatten(specs)
        wrapped = tf.compat.v1.wrap_function(graph, flat_specs)
        inputs = wrapped.inputs[:len(flat_specs)]
        values, updates = wrapped.structured_outputs
        self._names = built["names"]
        self._update = wrapped.prune(inputs, updates)
        self._values = wrapped.prune([], values)

    def update(self, tensors):
        self._update(*tf.nest.flatten(tensors))

    def values(self):
        return {name: value.numpy() for name, value in zip(self._names, self._values())}


# -- host_call -------------------------------------------------------------------

def _check_host_call(name, host_call):
    if not isinstance(host_call, (tuple, list)) or len(host_call) != 2:
        raise ValueError(f"TPUEstimatorSpec.{name} must be a (fn, tensors) pair, "
                         f"given: {host_call!r}")
    if not callable(host_call[0]):
        raise TypeError(f"TPUEstimatorSpec.{name}[0] must be callable, given: "
                        f"{host_call[0]!r}")
    if not isinstance(host_call[1], (tuple, list, dict)):
        raise ValueError(f"TPUEstimatorSpec.{name}[1] must be a list, tuple or dict of "
                         f"tensors, given: {host_call[1]!r}")


def _handle_op(tensor):
    """The op behind a resource handle (through Identity): one per variable copy."""
    op = tensor.op
    while op.type == "Identity" and op.inputs:
        op = op.inputs[0].op
    return op


def _start_values(variables):
    """{handle op: this replica's read of the variable}, made before ``model_fn``
    runs, so before the step's updates."""
    starts = {}
    for variable in variables:
        value = tf.identity(variable)
        read = value.op
        while read.type != "ReadVariableOp" and read.inputs:
            read = read.inputs[0].op
        if read.type == "ReadVariableOp":
            starts[_handle_op(read.inputs[0])] = read.outputs[0]
    return starts


def _read_start_values(tensors, starts):
    """Points every variable read behind ``tensors`` at the step's start value.

    On a TPU the step is one XLA computation whose variable reads see the values
    the step started with, so ResNet's ``tf.reshape(global_step, [1])``, written
    after ``optimizer.minimize``, gave host_call the step's own global step
    (0, 1, ...). A tf.function orders that read after the update instead; the
    read's consumers take the start-of-step read here (tensorflow_estimator r1.15
    tpu_estimator.py, _OutfeedHostCall: the tensors are outfed from the step)."""
    seen, pending = set(), [t.op for t in tensors]
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        for index, tensor in enumerate(op.inputs):
            source = tensor.op
            start = starts.get(_handle_op(source.inputs[0])) if (
                source.type == "ReadVariableOp") else None
            if start is not None and start is not tensor and start.dtype == tensor.dtype:
                op._update_input(index, start)  # pylint: disable=protected-access
            else:
                pending.append(source)


class _HostCallRunner:
    """``host_call`` as TPUEstimator ran it: ``fn`` on the host once per step (every
    ``experimental_host_call_every_n_steps``-th step of a loop) with that step's
    tensors of all replicas concatenated along dim 0; its summary writer created
    once (a tf.function traced once) and flushed at the end of ``train``."""

    def __init__(self, every_n):
        self._every_n = every_n
        self._call = None           # (fn, keys or None), set when model_fn gives one
        self._function = None
        self._writers = []
        self.dtypes = []

    @property
    def active(self):
        return self._call is not None

    def tensors(self, host_call, starts):
        """The step's host_call tensors, flat (``[]`` without host_call)."""
        if host_call is None:
            return []
        fn, tensors = host_call
        keys = sorted(tensors) if isinstance(tensors, dict) else None
        flat = [tf.convert_to_tensor(tensors[k]) for k in keys] if keys else [
            tf.convert_to_tensor(t) for t in tensors]
        for name, tensor in zip(keys or range(len(flat)), flat):
            if tensor.shape.rank == 0:
                raise ValueError(f"TPUEstimatorSpec.host_call: tensor {name!r} is a scalar; "
                                 f"host_call tensors need a batch dimension to be "
                                 f"concatenated across replicas (tf.reshape(t, [1]))")
        if starts:
            _read_start_values(flat, starts)
        self._call, self.dtypes = (fn, keys), [t.dtype for t in flat]
        return flat

    def run(self, queued, iterations):
        if self._call is None:
            return
        fn, keys = self._call
        if self._function is None:
            def host(*flat):
                if keys is None:
                    fn(*flat)
                else:
                    fn(**dict(zip(keys, flat)))
            with _keeping_summary_writers(self._writers):
                self._function = tf.function(host).get_concrete_function(
                    *[tf.TensorSpec(t.shape[1:], t.dtype) for t in queued])
        # n > 1: the loop's steps 0, n, 2n, ... ("the step number within the current
        # training loop", tensorflow_estimator r1.15 tpu_estimator.py,
        # _OutfeedHostCall.create_enqueue_op).
        for step in range(iterations):
            if step % self._every_n == 0:
                self._function(*[t[step] for t in queued])

    def close(self):
        """Flushes and closes the host function's summary writers, as TPUEstimator's
        host-call hook flushed them at the end of ``train``."""
        for writer in self._writers:
            writer.close()
        self._writers, self._function = [], None


@contextlib.contextmanager
def _keeping_summary_writers(kept):
    """Keeps the summary writers a host function creates while it is traced.

    ``tf.summary.create_file_writer`` in a tf.function makes its writer once, at
    trace time (in ``init_scope``), and the function only captures its handle: the
    writer object, which owns the resource, is dropped when the host function's
    ``with`` ends, and the next call finds no writer. A TF 1 graph (TPUEstimator's)
    kept it for the session's life; here ``kept`` does, until ``close``."""
    writer_class = sys.modules[tf.summary.create_file_writer.__module__]._ResourceSummaryWriter  # pylint: disable=protected-access
    original = writer_class.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        kept.append(self)

    writer_class.__init__ = keep
    try:
        yield
    finally:
        writer_class.__init__ = original


def cross_replica_sum(x, group_assignment=None, name=None):
    """``tf.tpu.cross_replica_sum`` (TF 1.15 tensorflow/python/tpu/ops/tpu_ops.py) in the
    replica step: ``x`` summed over all replicas, or over the replica's group of
    ``group_assignment`` (a list of equal-sized lists of replica ids), through the TF 2
    replica context's ``all_reduce``. A group's sum is the all-reduce of each replica's
    ``x`` placed in its group's row (zeros elsewhere), so its additions are the group's."""
    del name
    context = tf.distribute.get_replica_context()
    if group_assignment is None:
        return context.all_reduce(tf.distribute.ReduceOp.SUM, x)
    groups = [list(group) for group in group_assignment]
    replicas = context.num_replicas_in_sync
    if sorted(r for group in groups for r in group) != list(range(replicas)) or (
            len({len(group) for group in groups}) != 1):
        raise ValueError(f"cross_replica_sum: group_assignment {groups} must split replicas "
                         f"0..{replicas - 1} into groups of one size")
    group_of = [0] * replicas
    for index, group in enumerate(groups):
        for replica in group:
            group_of[replica] = index
    mine = tf.gather(tf.constant(group_of), context.replica_id_in_sync_group)
    x = tf.convert_to_tensor(x)
    rows = tf.scatter_nd([[mine]], [x], tf.concat([[len(groups)], tf.shape(x)], axis=0))
    return tf.gather(context.all_reduce(tf.distribute.ReduceOp.SUM, rows), mine)


@contextlib.contextmanager
def bfloat16_scope(name=None):
    """``tf.compat.v1.tpu.bfloat16_scope`` of TF 1.15 (tensorflow/python/tpu/bfloat16.py):
    a variable scope whose getter stores a variable requested as bfloat16 as float32
    and reads it cast to bfloat16, so the model computes in bfloat16 and its
    checkpoint holds the float32 variables under the same names."""

    # TF calls a custom getter with the next one as keyword `getter`.
    def custom_getter(getter, *args, **kwargs):
        cast = kwargs.get("dtype") == tf.bfloat16
        if cast:
            kwargs["dtype"] = tf.float32
        variable = getter(*args, **kwargs)
        # Batch norm assigns to what the getter returns: its float32 variables stay
        # variables (only bfloat16 requests are cast), as in TF's getter.
        return tf.cast(variable, tf.bfloat16) if cast else variable

    with tf.compat.v1.variable_scope(name or "", custom_getter=custom_getter) as scope:
        yield scope


def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """``tf.contrib.layers.layer_norm`` of TF 1.15 (contrib/layers/python/layers/layers.py):
    ``LayerNorm/beta`` and ``LayerNorm/gamma`` by get_variable, so a TPUEstimator
    checkpoint restores (Keras' LayerNormalization names them otherwise), moments over
    ``begin_norm_axis:`` and TF 1.15's variance epsilon 1e-12."""
    v1 = tf.compat.v1
    if variables_collections or outputs_collections:
        _refuse("layer_norm collections", variables_collections or outputs_collections,
                "TF 2 keeps no graph collections")
    with v1.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse):
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.rank
        norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
        params_axis = begin_params_axis + rank if begin_params_axis < 0 else begin_params_axis
        if not (0 <= norm_axis < rank and 0 <= params_axis < rank):
            raise ValueError(f"layer_norm: begin_norm_axis={begin_norm_axis} and "
                             f"begin_params_axis={begin_params_axis} must be < rank {rank}")
        shape = inputs.shape[params_axis:]
        dtype = inputs.dtype.base_dtype
        beta = v1.get_variable("beta", shape=shape, dtype=dtype, trainable=trainable,
                               initializer=v1.zeros_initializer()) if center else None
        gamma = v1.get_variable("gamma", shape=shape, dtype=dtype, trainable=trainable,
                                initializer=v1.ones_initializer()) if scale else None
        mean, variance = tf.nn.moments(inputs, list(range(norm_axis, rank)), keepdims=True)
        outputs = tf.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                            variance_epsilon=1e-12)
        outputs.set_shape(inputs.shape)
        return activation_fn(outputs) if activation_fn is not None else outputs
