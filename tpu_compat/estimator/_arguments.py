"""The checks of what a user hands an Estimator, each with the error TF 1.15 raised.

``model_fn``'s signature, positive step counts, and session-run hooks: apart
from ``estimator.py`` so the class reads as the train/evaluate/predict/export flow.
"""

import tensorflow as tf

from tpu_compat.estimator import _inputs

__all__ = ["MODEL_FN_ARGS", "check_model_fn", "positive", "validate_user_hooks"]

MODEL_FN_ARGS = frozenset({"features", "labels", "mode", "params", "config"})


def check_model_fn(model_fn, params):
    if not callable(model_fn):
        raise ValueError(f"model_fn must be callable, given: {model_fn!r}")
    names = set(_inputs.fn_args(model_fn))
    if "features" not in names:
        raise ValueError(f"model_fn ({getattr(model_fn, '__name__', model_fn)!r}) must "
                         f"take a 'features' argument")
    unexpected = sorted(names - MODEL_FN_ARGS - {"self"})
    if unexpected:
        raise ValueError(f"model_fn ({getattr(model_fn, '__name__', model_fn)!r}) takes "
                         f"unexpected arguments {unexpected}; allowed: "
                         f"{sorted(MODEL_FN_ARGS)}")
    if params and "params" not in names:
        raise ValueError(f"model_fn ({getattr(model_fn, '__name__', model_fn)!r}) does "
                         f"not take a 'params' argument, but params={params!r} were "
                         f"given to the Estimator")


def positive(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, given: {value!r}")
    return value


def validate_user_hooks(hooks, argument):
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"{argument} must be SessionRunHook instances, given: "
                            f"{hook!r}")
    return hooks
