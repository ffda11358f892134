"""``from tensorflow.python.estimator[.X] import Y``: TF 1.x's deep Estimator paths.

TF 1.x programs imported the Estimator from its implementation modules
(``from tensorflow.python.estimator.estimator import Estimator``, the TPU
reference trainers' ``_load_global_step_from_checkpoint_dir``; counts in
docs/contrib_survey.md). TF 2.21 has no ``tensorflow.python.estimator``; the
import router's row serves these modules, built from :data:`PYTHON_ESTIMATOR`
(data: a new path is a row), over tpu_compat's Estimator. Only the program's
own ``from ... import`` statements are served (the router checks whose they
are); a name not in a row is an ImportError naming it.
"""

import importlib
import types

__all__ = ["PYTHON_ESTIMATOR", "import_route", "load_global_step_from_checkpoint_dir"]

_PREFIX = "tensorflow.python.estimator"
_ESTIMATOR = "tpu_compat.estimator"

# module path -> {name: "module:attribute"}: what TF 1.15's module of that
# path defined (tensorflow_estimator r1.15, python/estimator/estimator.py,
# model_fn.py, run_config.py), served by tpu_compat's implementation.
PYTHON_ESTIMATOR = {
    "tensorflow.python.estimator.estimator": {
        "Estimator": f"{_ESTIMATOR}:Estimator",
        "WarmStartSettings": f"{_ESTIMATOR}:WarmStartSettings",
        "_load_global_step_from_checkpoint_dir":
            f"{__name__}:load_global_step_from_checkpoint_dir",
    },
    "tensorflow.python.estimator.model_fn": {
        "EstimatorSpec": f"{_ESTIMATOR}:EstimatorSpec",
        "ModeKeys": f"{_ESTIMATOR}:ModeKeys",
    },
    "tensorflow.python.estimator.run_config": {
        "RunConfig": f"{_ESTIMATOR}:RunConfig",
    },
}


def load_global_step_from_checkpoint_dir(checkpoint_dir):
    """The global step of the latest checkpoint in ``checkpoint_dir``; 0 without one.

    As TF 1.15's ``estimator._load_global_step_from_checkpoint_dir``, which the
    TPU reference trainers call to resume their train/eval loop.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest is None:
        return 0
    reader = tf.train.load_checkpoint(latest)
    key = tf.compat.v1.GraphKeys.GLOBAL_STEP
    if not reader.has_tensor(key):
        return 0
    return int(reader.get_tensor(key))


class _ServedModule(types.ModuleType):
    """One ``tensorflow.python.estimator`` module: its row's names, loaded on use."""

    def __getattr__(self, name):
        if self.__name__ == _PREFIX:
            path = f"{_PREFIX}.{name}"
            if path in PYTHON_ESTIMATOR:
                return _module(path)
        target = PYTHON_ESTIMATOR.get(self.__name__, {}).get(name)
        if target is None:
            raise AttributeError(
                f"{self.__name__}.{name} is not served by tpu_compat (TF 2.16 removed "
                f"tensorflow.python.estimator); served: "
                f"{sorted(PYTHON_ESTIMATOR.get(self.__name__, PYTHON_ESTIMATOR))}")
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


_MODULES = {}


def _module(path):
    if path not in _MODULES:
        _MODULES[path] = _ServedModule(path)
    return _MODULES[path]


def import_route(changes):
    """The import router's ``tensorflow.python.estimator`` route (changes nothing)."""
    del changes
    return _route


def _route(next_import, name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
    if not fromlist or not (name == _PREFIX or name in PYTHON_ESTIMATOR):
        return next_import(name, globals, locals, fromlist, level)
    module = _module(name)
    for item in fromlist:
        if item != "*":
            try:
                getattr(module, item)
            except AttributeError as error:
                raise ImportError(str(error), name=name) from None
    return module
