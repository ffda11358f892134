"""``ModeKeys`` and ``EstimatorSpec``: what a ``model_fn`` returns, validated as TF 1.15 did.

The validation matters more than the container: legacy ``model_fn``s are
debugged through these messages, so each names the field and what it needs.
"""

import collections

import tensorflow as tf

from tpu_compat._tf_internals import export_output_lib
from tpu_compat._tf_internals import mode_keys

from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["EstimatorSpec", "ModeKeys", "check_metric_ops", "validate_hooks"]

# TF 1.x's tf.estimator.ModeKeys: TRAIN='train', EVAL='eval', PREDICT='infer'.
ModeKeys = mode_keys.EstimatorModeKeys
MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)

_Hook = tf.compat.v1.train.SessionRunHook


def _is_tensor(value):
    return isinstance(value, (tf.Tensor, tf.Variable)) or tf.is_tensor(value)


def _check_tensor(value, name):
    if not _is_tensor(value):
        raise TypeError(f"EstimatorSpec: {name} must be a Tensor, given: {value!r}")
    return tf.convert_to_tensor(value)


def validate_hooks(hooks, field):
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, _Hook):
            raise TypeError(
                f"{field} must be SessionRunHook instances, given: {hook!r}")
    return hooks


def check_metric_ops(metric_ops, source):
    """Validates ``{name: (value, update_op)}``; ``source`` names who produced it.

    Each value must be a ``(metric_tensor, update_op)`` pair, as every
    ``tf.compat.v1.metrics.*`` function returns (or a Keras ``Metric``, whose
    result and update are taken, as TF 1.15 did).
    """
    if metric_ops is None:
        return {}
    if not isinstance(metric_ops, dict):
        raise TypeError(
            f"{source} must be a dict of metric name to (metric_tensor, update_op) "
            f"pairs, given: {type(metric_ops).__name__} {metric_ops!r}")
    checked = {}
    for name, value in metric_ops.items():
        if hasattr(value, "result") and hasattr(value, "updates"):  # a Keras Metric
            updates = value.updates
            update_op = tf.group(*updates) if updates else tf.no_op()
            checked[name] = (value.result(), update_op)
            continue
        if (not isinstance(value, (tuple, list)) or len(value) != 2
                or not all(_is_tensor(v) or isinstance(v, tf.Operation) for v in value)):
            raise TypeError(
                f"{source}[{name!r}] must be a (metric_tensor, update_op) pair such "
                f"as tf.compat.v1.metrics.accuracy(labels, predictions) returns; "
                f"given: {value!r}")
        checked[name] = tuple(value)
    return checked


def _check_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError(f"EstimatorSpec: missing loss (required in mode {mode!r}).")
        return None
    loss = _check_tensor(loss, "loss")
    elements = loss.shape.num_elements()
    if elements not in (None, 1):
        raise ValueError(f"EstimatorSpec: loss must be a scalar, given: {loss}")
    if loss.shape.rank != 0:
        loss = tf.reshape(loss, [])
    return loss


def _check_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("EstimatorSpec: missing predictions (required in mode "
                             "'infer').")
        return {}
    if isinstance(predictions, dict):
        return {key: _check_tensor(value, f"predictions[{key!r}]")
                for key, value in predictions.items()}
    return _check_tensor(predictions, "predictions")


def _check_export_outputs(export_outputs):
    if export_outputs is None:
        return None
    if not isinstance(export_outputs, dict):
        raise TypeError(f"EstimatorSpec: export_outputs must be a dict, given: "
                        f"{export_outputs!r}")
    for key, value in export_outputs.items():
        if not isinstance(value, export_output_lib.ExportOutput):
            raise TypeError(
                f"EstimatorSpec: export_outputs[{key!r}] must be an ExportOutput "
                f"(tf.estimator.export.PredictOutput, ...), given: {value!r}")
    return dict(export_outputs)


_FIELDS = ("mode", "predictions", "loss", "train_op", "eval_metric_ops",
           "export_outputs", "training_chief_hooks", "training_hooks", "scaffold",
           "evaluation_hooks", "prediction_hooks")


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """``tf.estimator.EstimatorSpec``: the ops and objects a ``model_fn`` returns.

    TRAIN needs ``loss`` and ``train_op``, EVAL needs ``loss``, PREDICT needs
    ``predictions``; every other field is optional in every mode.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None,
                eval_metric_ops=None, export_outputs=None, training_chief_hooks=None,
                training_hooks=None, scaffold=None, evaluation_hooks=None,
                prediction_hooks=None):
        if mode not in MODES:
            raise ValueError(f"EstimatorSpec: mode must be one of {list(MODES)} "
                             f"(tf.estimator.ModeKeys), given: {mode!r}")
        if train_op is None and mode == ModeKeys.TRAIN:
            raise ValueError("EstimatorSpec: missing train_op (required in mode "
                             "'train').")
        if train_op is not None and not (isinstance(train_op, tf.Operation)
                                         or _is_tensor(train_op)):
            raise TypeError(f"EstimatorSpec: train_op must be an Operation or a "
                            f"Tensor, given: {train_op!r}")
        if scaffold is not None and not isinstance(scaffold, tf.compat.v1.train.Scaffold):
            raise TypeError(f"EstimatorSpec: scaffold must be a "
                            f"tf.compat.v1.train.Scaffold, given: {scaffold!r}")
        return super().__new__(
            cls, mode=mode,
            predictions=_check_predictions(predictions, mode),
            loss=_check_loss(loss, mode),
            train_op=train_op,
            eval_metric_ops=check_metric_ops(eval_metric_ops,
                                             "EstimatorSpec.eval_metric_ops"),
            export_outputs=_check_export_outputs(export_outputs),
            training_chief_hooks=validate_hooks(training_chief_hooks,
                                                "EstimatorSpec.training_chief_hooks"),
            training_hooks=validate_hooks(training_hooks, "EstimatorSpec.training_hooks"),
            scaffold=scaffold or tf.compat.v1.train.Scaffold(),
            evaluation_hooks=validate_hooks(evaluation_hooks,
                                            "EstimatorSpec.evaluation_hooks"),
            prediction_hooks=validate_hooks(prediction_hooks,
                                            "EstimatorSpec.prediction_hooks"))

    def _replace(self, **kwargs):
        if "mode" in kwargs and kwargs["mode"] != self.mode:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        fields = self._asdict()
        fields.update(kwargs)
        return EstimatorSpec(**fields)


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
