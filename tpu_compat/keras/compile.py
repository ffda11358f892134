"""Keras ``compile`` under the TPU adapters: steps per host call, and Keras 3's limits.

A model compiled in an adapter's scope with ``extended.steps_per_run = N > 1`` and
no ``steps_per_execution`` of its own runs N steps per host call, as TF 1.15's TPU
loop did; ``compile(experimental_steps_per_execution=N)`` (TF 2.2-2.3) is TF 2.4's
``steps_per_execution=N`` (TPC016 warns through its hook). Under Keras 3, what it
cannot do on the emulated TPU is refused here with :class:`Keras3LimitationError`.
The strategy questions both compile paths and the graph-mode loops
(:mod:`~tpu_compat.keras.graph_mode`) ask are here too.
:mod:`tpu_compat.keras.routes` installs these wrappers; see docs/keras.md.
"""

import functools
import inspect

import tensorflow as tf

from tpu_compat.runtime.adapter import CompatStrategyMixin

__all__ = ["Keras3LimitationError", "LEGACY_KERAS_ADVICE", "adapter_steps_per_run",
           "graph_mode", "is_emulated_adapter", "keras3_compile",
           "keras3_refusal", "steps_per_execution_arguments", "tf_keras_compile"]

LEGACY_KERAS_ADVICE = (
    "Legacy TPU code was written for Keras 2: set TF_USE_LEGACY_KERAS=1 before "
    "TensorFlow is imported (`tpu-compat run` does so when tf-keras is "
    "installed; pip install tf-keras)")

_MISSING = object()


class Keras3LimitationError(RuntimeError):
    """Keras 3 cannot run this legacy Keras program on the emulated TPU."""


# -- which strategies ----------------------------------------------------------

def adapter_steps_per_run(strategy):
    """``extended.steps_per_run`` of a tpu_compat adapter; 1 for anything else."""
    if not isinstance(strategy, CompatStrategyMixin):
        return 1
    return getattr(strategy.extended, "steps_per_run", 1) or 1


def is_emulated_adapter(strategy):
    return (isinstance(strategy, CompatStrategyMixin)
            and strategy.tpu_compat_backend.emulated)


# Set on the strategy keras_to_tpu_model (TF 1.13's keras_support) trains with:
# keras/tpu_model.py sets it, keras/graph_mode.py reads it.
KERAS_SUPPORT_MARK = "_tpu_compat_keras_support"


def graph_mode():
    return not tf.compat.v1.executing_eagerly_outside_functions()


# -- compile: steps_per_execution ---------------------------------------------

def _positional_index(function, parameter):
    """Index of ``parameter`` among ``function``'s arguments after ``self``."""
    names = list(inspect.signature(function).parameters)
    return names.index(parameter) - 1


def steps_per_execution_arguments(strategy, args, kwargs, index,
                                   translate_steps_per_run):
    """``kwargs`` with TF 2.2's name and TF 1.15's ``steps_per_run`` translated.

    Returns ``(kwargs, origin)``: origin says where a ``steps_per_execution``
    not written by the user came from (for error messages), or None.
    """
    kwargs = dict(kwargs)
    given = len(args) > index or kwargs.get("steps_per_execution") is not None
    legacy = kwargs.pop("experimental_steps_per_execution", _MISSING)
    if legacy is not _MISSING:
        # TPC016 warns through its hook on compile (legacy_api, hooks).
        if not given:
            kwargs["steps_per_execution"] = legacy
            return kwargs, "experimental_steps_per_execution"
    if not given and translate_steps_per_run:
        steps_per_run = adapter_steps_per_run(strategy)
        if steps_per_run > 1:
            kwargs["steps_per_execution"] = steps_per_run
            return kwargs, "the strategy's steps_per_run"
    return kwargs, None


def tf_keras_compile(original):
    index = _positional_index(original, "steps_per_execution")

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # pylint: disable=redefined-builtin
        kwargs, _ = steps_per_execution_arguments(
            self.distribute_strategy, args, kwargs, index,
            translate_steps_per_run=True)
        return original(self, *args, **kwargs)

    compile.__tpu_compat_added__ = True
    return compile


_KERAS3_MULTI_STEP = (
    "Keras 3's multi-step loop can fail inside the graph under a "
    "MirroredStrategy, which is what emulates the TPU (INVALID_ARGUMENT: You "
    "must feed a value for placeholder tensor)")


def keras3_refusal(strategy, steps_per_execution, origin):
    """Why Keras 3 cannot run this program on the emulated TPU, or None."""
    if not is_emulated_adapter(strategy):
        return None
    if graph_mode():
        return ("Keras 3 has no TF 1.x graph mode (the program disabled eager "
                "execution or v2 behavior)")
    steps_per_run = adapter_steps_per_run(strategy)
    if steps_per_run > 1:
        return (f"the strategy's steps_per_run={steps_per_run} asks for several "
                f"steps per host call, and {_KERAS3_MULTI_STEP}")
    if isinstance(steps_per_execution, int) and steps_per_execution > 1:
        source = f" (from {origin})" if origin else ""
        return (f"steps_per_execution={steps_per_execution}{source} asks for "
                f"several steps per host call, and {_KERAS3_MULTI_STEP}")
    return None


def keras3_compile(original):
    index = _positional_index(original, "steps_per_execution")

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # pylint: disable=redefined-builtin
        strategy = getattr(self, "distribute_strategy", None)
        if strategy is None:
            strategy = tf.distribute.get_strategy()
        kwargs, origin = steps_per_execution_arguments(
            strategy, args, kwargs, index, translate_steps_per_run=False)
        steps = args[index] if len(args) > index else kwargs.get(
            "steps_per_execution", 1)
        reason = keras3_refusal(strategy, steps, origin)
        if reason is not None:
            raise Keras3LimitationError(
                f"Keras 3 cannot run this model on the emulated TPU: {reason}. "
                f"{LEGACY_KERAS_ADVICE}.")
        return original(self, *args, **kwargs)

    compile.__tpu_compat_added__ = True
    return compile
