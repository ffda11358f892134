"""``tf.estimator.export``: serving input receivers and export outputs.

A ``serving_input_receiver_fn`` returns a :class:`ServingInputReceiver`: the
placeholders a SavedModel's signature takes (``receiver_tensors``) and the
``features`` the ``model_fn`` sees. The export-output classes are TensorFlow's
own (``tensorflow.python.saved_model.model_utils``), which TF 2.21 still ships.
"""

import collections

import tensorflow as tf

from tpu_compat._tf_internals import export_output_lib as _export_output

from tpu_compat.runtime import hooks as _table_hooks

__all__ = [
    "ClassificationOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
    "ServingInputReceiver", "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
]

ExportOutput = _export_output.ExportOutput
ClassificationOutput = _export_output.ClassificationOutput
RegressionOutput = _export_output.RegressionOutput


class PredictOutput(_export_output.PredictOutput):
    """``tf.estimator.export.PredictOutput``: a dict of named output tensors."""

    def __init__(self, outputs):
        super().__init__(outputs)


SINGLE_FEATURE_KEY = "feature"
SINGLE_RECEIVER_KEY = "input"


def _is_tensorish(value):
    return isinstance(value, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor))


def _as_tensor_dict(value, default_key, field):
    if value is None:
        raise ValueError(f"ServingInputReceiver: {field} must be given")
    if not isinstance(value, dict):
        value = {default_key: value}
    for key, tensor in value.items():
        if not isinstance(key, str):
            raise ValueError(f"ServingInputReceiver: {field} keys must be strings, "
                             f"given: {key!r}")
        if not _is_tensorish(tensor):
            raise ValueError(f"ServingInputReceiver: {field}[{key!r}] must be a "
                             f"Tensor or SparseTensor, given: {tensor!r}")
    return value


_RECEIVER_FIELDS = ("features", "receiver_tensors", "receiver_tensors_alternatives")


def _alternatives(alternatives):
    if alternatives is None:
        return None
    if not isinstance(alternatives, dict):
        raise ValueError("ServingInputReceiver: receiver_tensors_alternatives must "
                         f"be a dict, given: {alternatives!r}")
    return {name: _as_tensor_dict(tensors, SINGLE_RECEIVER_KEY,
                                  f"receiver_tensors_alternatives[{name!r}]")
            for name, tensors in alternatives.items()}


class ServingInputReceiver(collections.namedtuple("ServingInputReceiver",
                                                  _RECEIVER_FIELDS)):
    """Features for the ``model_fn`` and the tensors a serving request feeds."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _as_tensor_dict(features, SINGLE_FEATURE_KEY, "features")
        receiver_tensors = _as_tensor_dict(receiver_tensors, SINGLE_RECEIVER_KEY,
                                           "receiver_tensors")
        return super().__new__(cls, features, receiver_tensors,
                               _alternatives(receiver_tensors_alternatives))


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", _RECEIVER_FIELDS)):
    """Like ServingInputReceiver, but the ``model_fn`` gets one Tensor as features."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if not _is_tensorish(features):
            raise ValueError("TensorServingInputReceiver: features must be a single "
                             f"Tensor or SparseTensor, given: {features!r}")
        receiver_tensors = _as_tensor_dict(receiver_tensors, SINGLE_RECEIVER_KEY,
                                           "receiver_tensors")
        return super().__new__(cls, features, receiver_tensors,
                               _alternatives(receiver_tensors_alternatives))


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn whose signature takes ``features`` as raw tensors.

    Args:
      features: a dict of name to ``Tensor`` (or ``TensorSpec``); each gets a
        placeholder of its dtype and shape, with the batch dimension
        ``default_batch_size``.
      default_batch_size: the batch dimension of the placeholders (None: any).
    """
    if not isinstance(features, dict) or not features:
        raise ValueError("build_raw_serving_input_receiver_fn: features must be a "
                         f"non-empty dict of name to Tensor, given: {features!r}")

    def serving_input_receiver_fn():
        receiver_tensors = {}
        for name, template in features.items():
            shape = tf.TensorShape(template.shape)
            shape = tf.TensorShape([default_batch_size]).concatenate(shape[1:]) \
                if shape.rank else shape
            receiver_tensors[name] = tf.compat.v1.placeholder(
                dtype=template.dtype, shape=shape, name=name)
        return ServingInputReceiver(dict(receiver_tensors), receiver_tensors)

    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn whose signature takes serialized ``tf.Example`` protos.

    Args:
      feature_spec: a dict of name to ``tf.io.FixedLenFeature`` /
        ``VarLenFeature`` ..., as ``tf.io.parse_example`` takes.
      default_batch_size: how many examples a request holds (None: any).
    """
    if not isinstance(feature_spec, dict) or not feature_spec:
        raise ValueError("build_parsing_serving_input_receiver_fn: feature_spec must "
                         f"be a non-empty dict, given: {feature_spec!r}")

    def serving_input_receiver_fn():
        serialized = tf.compat.v1.placeholder(
            dtype=tf.string, shape=[default_batch_size], name="input_example_tensor")
        features = tf.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
