"""TF 2.0-2.3 Keras names that sit next to the strategy, given back on tf_keras.

TensorFlow 2.4 removed ``tf.keras.mixed_precision.experimental`` (the
documented TPU recipe ``set_policy(Policy('mixed_bfloat16'))``) and most of
``tf.keras.experimental``. ``install()`` adds them back to tf_keras's public
API modules (``tf.keras`` under ``TF_USE_LEGACY_KERAS=1``, ``tf.compat.v1.keras``
and ``import tf_keras``), served by tf_keras's own implementation with TF 2.3's
semantics. Each name's legacy-API record hooks the function or class
``__init__`` here that serves it (:mod:`tpu_compat.runtime.hooks`), so a use
warns once per call site at the user's line:

* ``mixed_precision.experimental``: ``Policy(name, loss_scale='auto')``,
  ``set_policy``, ``global_policy``, ``get_layer_policy`` and the experimental
  ``LossScaleOptimizer(optimizer, loss_scale)`` signature. A policy's dtypes
  are tf_keras's: ``mixed_bfloat16`` computes in bfloat16 and keeps variables
  in float32, as TF 2.3 did.
* ``keras.experimental``: ``export_saved_model`` / ``load_from_saved_model``
  (a Keras SavedModel written and read back by tf_keras), the learning-rate
  schedules that still exist (``CosineDecay``, ``CosineDecayRestarts``,
  ``LinearCosineDecay``, ``NoisyLinearCosineDecay``); the names tf_keras has
  no equivalent of (``PeepholeLSTMCell``, ``terminate_keras_multiprocessing_pools``)
  raise :class:`LegacyKerasAPIError` naming them when used.

Keras 3 (``TF_USE_LEGACY_KERAS=0``) is not patched: legacy Keras code needs
Keras 2 (see docs/keras.md).
"""

import importlib
import numbers
import os
import sys

import tensorflow as tf

from tpu_compat.runtime import hooks

from tpu_compat.keras import submodule_imports

__all__ = [
    "CosineDecay",
    "CosineDecayRestarts",
    "LegacyKerasAPIError",
    "LinearCosineDecay",
    "NoisyLinearCosineDecay",
    "PeepholeLSTMCell",
    "LossScaleOptimizer",
    "Policy",
    "export_saved_model",
    "get_layer_policy",
    "global_policy",
    "load_from_saved_model",
    "patch_tf_keras",
    "set_policy",
    "terminate_keras_multiprocessing_pools",
]


class LegacyKerasAPIError(AttributeError):
    """A TF 2.0-2.3 Keras name that tf_keras has no exact equivalent of."""


def _tf_keras():
    # pylint: disable=import-outside-toplevel
    import tf_keras
    return tf_keras


# -- tf.keras.mixed_precision.experimental ------------------------------------

_AUTO = "auto"


def _keras_policy_class():
    from tf_keras.src.mixed_precision import policy  # pylint: disable=import-outside-toplevel
    return policy.Policy


def _default_loss_scale(name):
    """TF 2.3's ``loss_scale='auto'``: dynamic loss scaling for float16 only."""
    return "dynamic" if name == "mixed_float16" else None


def _as_loss_scale(value):
    """TF 2.3's conversion of a ``loss_scale`` argument to a LossScale (or None)."""
    loss_scales = tf.compat.v1.mixed_precision
    if value is None or isinstance(value, loss_scales.LossScale):
        return value
    if value == "dynamic":
        return loss_scales.DynamicLossScale()
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return loss_scales.FixedLossScale(value)
    raise ValueError(
        f"loss_scale={value!r} is not valid; allowed values: 'auto', 'dynamic', "
        f"a positive number (a fixed loss scale), a "
        f"tf.compat.v1.mixed_precision.LossScale, or None")


class Policy(_keras_policy_class()):
    """``tf.keras.mixed_precision.experimental.Policy`` (TF 2.1-2.3).

    tf_keras's ``Policy`` plus TF 2.3's ``loss_scale`` argument and property.
    Serialized as a plain ``Policy`` (its name), so saved models load anywhere.
    """

    def __init__(self, name, loss_scale=_AUTO):
        super().__init__(name)
        self._loss_scale = _as_loss_scale(
            _default_loss_scale(name) if loss_scale == _AUTO else loss_scale)

    @property
    def loss_scale(self):
        """The ``LossScale`` a ``Model.compile`` of TF 2.3 wrapped optimizers with."""
        return self._loss_scale

    def get_config(self):
        return {"name": self.name}


# The legacy Policy object set_policy() was given, and the tf_keras policy it
# became: global_policy() returns the former while the latter is in force.
_legacy_global = (None, None)


def set_policy(policy):
    """``tf.keras.mixed_precision.experimental.set_policy`` (TF 2.1-2.3)."""
    global _legacy_global
    mixed_precision = _tf_keras().mixed_precision
    if policy is None:
        mixed_precision.set_global_policy(None)
        _legacy_global = (None, None)
        return
    name = policy if isinstance(policy, str) else getattr(policy, "name", None)
    if not isinstance(name, str):
        raise TypeError(
            f"set_policy: policy must be a policy name (e.g. 'mixed_bfloat16'), a "
            f"tf.keras.mixed_precision.experimental.Policy or None, got "
            f"{type(policy).__name__}")
    # Layers keep the global policy object: a plain tf_keras Policy serializes
    # like every other model's, so models saved here load without tpu_compat.
    native = _keras_policy_class()(name)
    mixed_precision.set_global_policy(native)
    _legacy_global = (policy if isinstance(policy, Policy) else None, native)


def global_policy():
    """``tf.keras.mixed_precision.experimental.global_policy`` (TF 2.1-2.3)."""
    current = _tf_keras().mixed_precision.global_policy()
    legacy, native = _legacy_global
    if legacy is not None and current is native:
        return legacy
    return _policy_without_warning(current.name)


def _policy_without_warning(name):
    policy = Policy.__new__(Policy)
    _keras_policy_class().__init__(policy, name)
    policy._loss_scale = _as_loss_scale(_default_loss_scale(name))  # pylint: disable=protected-access
    return policy


def get_layer_policy(layer):
    """``tf.keras.mixed_precision.experimental.get_layer_policy`` (TF 2.3)."""
    policy = getattr(layer, "dtype_policy", None)
    if policy is None:
        raise ValueError(
            f"get_layer_policy: layer must be a tf.keras.layers.Layer, got "
            f"{type(layer).__name__}")
    return policy


def _loss_scale_arguments(loss_scale):
    """Modern ``(dynamic, initial_scale, dynamic_growth_steps)`` for TF 2.3's ``loss_scale``."""
    loss_scales = tf.compat.v1.mixed_precision
    if isinstance(loss_scale, str) and loss_scale == "dynamic":
        return True, None, None
    if isinstance(loss_scale, numbers.Real) and not isinstance(loss_scale, bool):
        if loss_scale <= 0:
            raise ValueError(f"loss_scale={loss_scale!r} is not valid; a fixed loss "
                             f"scale must be positive")
        return False, float(loss_scale), None
    if isinstance(loss_scale, loss_scales.FixedLossScale):
        return False, float(loss_scale.get_config()["loss_scale_value"]), None
    if isinstance(loss_scale, loss_scales.DynamicLossScale):
        if loss_scale.multiplier != 2:
            raise ValueError(
                f"LossScaleOptimizer: a DynamicLossScale with multiplier="
                f"{loss_scale.multiplier} has no tf_keras equivalent (tf_keras "
                f"always multiplies by 2); use multiplier=2")
        return True, float(loss_scale.initial_loss_scale), int(loss_scale.increment_period)
    raise ValueError(
        f"LossScaleOptimizer: loss_scale={loss_scale!r} is not valid; allowed "
        f"values: 'dynamic', a positive number (a fixed loss scale), a "
        f"tf.compat.v1.mixed_precision.FixedLossScale or DynamicLossScale")


def LossScaleOptimizer(optimizer, loss_scale):  # pylint: disable=invalid-name
    """``tf.keras.mixed_precision.experimental.LossScaleOptimizer(opt, loss_scale)``.

    TF 2.1-2.3's signature, built as tf_keras's ``LossScaleOptimizer(opt,
    dynamic, initial_scale, dynamic_growth_steps)`` with the same schedule:
    ``'dynamic'`` starts at 2**15 and doubles after 2,000 finite steps.
    """
    dynamic, initial_scale, growth_steps = _loss_scale_arguments(loss_scale)
    return _tf_keras().mixed_precision.LossScaleOptimizer(
        optimizer, dynamic=dynamic, initial_scale=initial_scale,
        dynamic_growth_steps=growth_steps)


# -- tf.keras.experimental ---------------------------------------------------

def _check_export_directory(path):
    # TF 2.0's SavedModel builder refused to write into a non-empty directory.
    if os.path.isdir(path) and os.listdir(path):
        raise AssertionError(
            f"Export directory already exists, and isn't empty. Please choose a "
            f"different export directory, or delete all the contents of the "
            f"specified directory: {path}")


def _write_as_text(path):
    """Rewrites ``path``'s saved_model.pb as saved_model.pbtxt (``as_text=True``)."""
    # pylint: disable=import-outside-toplevel
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2
    binary = os.path.join(path, "saved_model.pb")
    saved_model = saved_model_pb2.SavedModel()
    with open(binary, "rb") as handle:
        saved_model.ParseFromString(handle.read())
    text = os.path.join(path, "saved_model.pbtxt")
    with open(text + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text_format.MessageToString(saved_model))
    os.replace(text + ".tmp", text)
    os.remove(binary)


def export_saved_model(model, saved_model_path, custom_objects=None,
                       as_text=False, input_signature=None, serving_only=False):
    """``tf.keras.experimental.export_saved_model`` (TF 1.14-2.0, removed in 2.1+).

    Writes a Keras SavedModel that :func:`load_from_saved_model` (and
    ``tf.keras.models.load_model``) reads back: the model, its weights, and,
    unless ``serving_only``, its optimizer. ``input_signature`` fixes the
    serving signature, ``as_text`` writes ``saved_model.pbtxt``.
    """
    saved_model_path = os.fspath(saved_model_path)
    _check_export_directory(saved_model_path)
    signatures = None
    if input_signature is not None:
        signature = list(input_signature) if isinstance(
            input_signature, (list, tuple)) else [input_signature]
        serve = tf.function(lambda *inputs: model(
            inputs[0] if len(inputs) == 1 else list(inputs), training=False))
        signatures = serve.get_concrete_function(*signature)
    with _tf_keras().utils.custom_object_scope(custom_objects or {}):
        _tf_keras().models.save_model(
            model, saved_model_path, save_format="tf",
            include_optimizer=not serving_only, signatures=signatures)
    if as_text:
        _write_as_text(saved_model_path)


def load_from_saved_model(saved_model_path, custom_objects=None):
    """``tf.keras.experimental.load_from_saved_model``: the model, uncompiled, as TF 2.0 gave it."""
    return _tf_keras().models.load_model(
        os.fspath(saved_model_path), custom_objects=custom_objects, compile=False)


def _schedule_class(native):
    """``native`` under its TF 2.0-2.3 ``tf.keras.experimental`` name.

    Its own ``__init__`` is the hook target of the name's record (a use warns
    when the schedule is built). Same class name, so a serialized schedule
    deserializes as the native one.
    """

    def __init__(self, *args, **kwargs):
        native.__init__(self, *args, **kwargs)

    return type(native.__name__, (native,), {
        "__init__": __init__, "__module__": __name__, "__doc__": native.__doc__,
        "__qualname__": native.__name__})


def _native_schedules():
    from tf_keras.src.optimizers.schedules import learning_rate_schedule  # pylint: disable=import-outside-toplevel
    return learning_rate_schedule


# pylint: disable=invalid-name
CosineDecay = _schedule_class(_native_schedules().CosineDecay)
CosineDecayRestarts = _schedule_class(_native_schedules().CosineDecayRestarts)
LinearCosineDecay = _schedule_class(_native_schedules().LinearCosineDecay)
NoisyLinearCosineDecay = _schedule_class(_native_schedules().NoisyLinearCosineDecay)
# pylint: enable=invalid-name
_SCHEDULE_NAMES = ("CosineDecay", "CosineDecayRestarts", "LinearCosineDecay",
                   "NoisyLinearCosineDecay")


# TF 2.0-2.3 names with no exact tf_keras equivalent: using one raises an
# error naming it (after its record's hook warned at the user's line).

def _no_equivalent(name, advice):
    from tpu_compat import legacy_api  # pylint: disable=import-outside-toplevel
    rule = legacy_api.by_name(name, legacy_api.KIND_SYMBOL)[0].rule
    return LegacyKerasAPIError(
        f"tf.keras.experimental.{name} (TF 2.0-2.3) has no exact equivalent in "
        f"tf_keras: {advice}. [{rule}]")


class PeepholeLSTMCell:
    """``tf.keras.experimental.PeepholeLSTMCell``: tf_keras has no equivalent."""

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise _no_equivalent(
            "PeepholeLSTMCell", "tf_keras has no LSTM cell with peephole connections; "
            "tf.keras.layers.LSTMCell is the closest (different numbers)")


def terminate_keras_multiprocessing_pools(*args, **kwargs):
    """``tf.keras.experimental.terminate_keras_multiprocessing_pools``: no equivalent."""
    del args, kwargs
    raise _no_equivalent("terminate_keras_multiprocessing_pools",
                         "tf_keras manages its worker pools itself; remove the call")


_WITHOUT_EQUIVALENT = ("PeepholeLSTMCell", "terminate_keras_multiprocessing_pools")


def _mixed_precision_experimental_module():
    module = type(sys)("tf_keras.mixed_precision.experimental",
                       "tf.keras.mixed_precision.experimental of TF 2.1-2.3 "
                       "(tpu_compat.keras.era)")
    for name in ("Policy", "set_policy", "global_policy", "get_layer_policy",
                 "LossScaleOptimizer"):
        setattr(module, name, globals()[name])
    return module


# tf_keras's public API modules that TF 2.0-2.3 programs reach as tf.keras.*
_API_ROOTS = ("tf_keras", "tf_keras.api._v2.keras", "tf_keras.api._v1.keras")

def _add_era_names(state, mixed_precision, experimental):
    state.add(mixed_precision, "experimental", MIXED_PRECISION_EXPERIMENTAL)
    state.add(experimental, "export_saved_model", export_saved_model)
    state.add(experimental, "load_from_saved_model", load_from_saved_model)
    for name in _SCHEDULE_NAMES + _WITHOUT_EQUIVALENT:
        state.add(experimental, name, globals()[name])


def patch_tf_keras(state, router):
    """Adds the TF 2.0-2.3 names to tf_keras's API modules through ``state``, and has
    ``router`` serve ``tensorflow.keras.X`` import statements the patched modules."""
    for root in _API_ROOTS:
        try:
            mixed_precision = importlib.import_module(root + ".mixed_precision")
            experimental = importlib.import_module(root + ".experimental")
        except ImportError:
            continue
        _add_era_names(state, mixed_precision, experimental)
    # the router's ALIASES rows made by "era names": mixed_precision, experimental,
    # mixed_precision.experimental (MIXED_PRECISION_EXPERIMENTAL below)
    copies = submodule_imports.serve(router, "era names")
    if copies:
        _add_era_names(state, *copies)


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)

# Built after the hooks are on, so that it holds the instrumented functions.
MIXED_PRECISION_EXPERIMENTAL = _mixed_precision_experimental_module()
