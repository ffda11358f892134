"""The machinery of tpu_compat's ``tensorflow.contrib``: its module objects and their errors.

A contrib submodule is an instance of its own class (a subclass of
:class:`ContribSubmodule`, in :mod:`tpu_compat.contrib.submodules`) whose names
are properties (:func:`serves`); the class registers itself here by its
``SHORT_NAME``. A deep TF 1.15 import path (:mod:`tpu_compat.contrib.deep_imports`)
is a :class:`_DeepModule`. A module or name not served raises
:class:`ContribNotProvidedError` with :func:`not_provided_message`. Apart from
the tables so that adding a name (a property) or a deep path (a row) touches data
only; :mod:`tpu_compat.contrib` re-exports the public names.
"""

import importlib
import sys
import types

from tpu_compat.contrib.deep_imports import DEEP_IMPORTS

__all__ = ["ContribNotProvidedError", "ContribSubmodule", "ESTIMATOR_MODULE",
           "ESTIMATOR_NAMES", "contrib_module", "deep_module", "deep_paths", "load",
           "not_provided_message", "served_names", "serves", "submodule"]

# short name -> submodule class, filled as the classes are defined (submodules.py):
# the tf.contrib modules, and the served import paths below one of them.
_MODULES = {}
_DEEP_MODULES = {}


class ContribNotProvidedError(AttributeError):
    """A ``tf.contrib`` module or name that tpu_compat does not provide."""


# Modules left out on purpose, with the reason and the way on (the survey's
# numbers are in docs/contrib_survey.md).
NOT_SERVED_REASONS = {
    "tf.contrib.slim.nets": (
        "slim's model zoo (the Inception, ResNet, VGG, MobileNet ... network "
        "definitions) is model code, not TPU API, and one surveyed TPU program imports "
        "it (tensorflow/tpu's experimental inception_v3.py); the same networks are in "
        "the tf-slim package (pip install tf-slim; from tf_slim.nets import inception, "
        "with tf_slim's own arg_scope) or, for Inception v3, "
        "tf.keras.applications.InceptionV3"),
}


def not_provided_message(dotted):
    """The one error text for a ``tf.contrib`` module or name tpu_compat does not serve."""
    reason = next((text for module, text in NOT_SERVED_REASONS.items()
                   if dotted == module or dotted.startswith(module + ".")), None)
    if reason is not None:
        return f"{dotted} is not provided: {reason}."
    return (f"{dotted} is not provided: TensorFlow 2 removed tf.contrib, and "
            f"tpu_compat gives back only the TPU names and the few helpers with "
            f"an exact TF 1.15 equivalent ({', '.join(f'tf.contrib.{m}' for m in sorted(_MODULES))}). "
            f"See docs/migration.md for where {dotted} went.")


# The TPUEstimator family lives in tpu_compat.estimator (its own issue); a
# name listed there as ``CONTRIB_TPU_NAMES`` (or any of these) is served from
# it, warning as that module's table records say.
ESTIMATOR_MODULE = "tpu_compat.estimator.tpu"
ESTIMATOR_NAMES = ("TPUEstimator", "TPUEstimatorSpec", "RunConfig", "TPUConfig",
                   "InputPipelineConfig")


def load(target):
    """The object a ``"module:attribute.path"`` target names (importing the module)."""
    module_name, attribute = target.split(":")
    value = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def serves(target):
    """A contrib name: a property reading ``target`` (``"module:attribute"``)
    when the program reads the name (its record's ``reads`` hook warns then)."""
    return property(lambda self: load(target), doc=f"Served from {target}.")


def _estimator_name(name):
    """``tf.contrib.tpu.<name>`` from tpu_compat.estimator, or None."""
    try:
        estimator = importlib.import_module(ESTIMATOR_MODULE)
    except ImportError:
        return None
    names = getattr(estimator, "CONTRIB_TPU_NAMES", ESTIMATOR_NAMES)
    if name in names and hasattr(estimator, name):
        return getattr(estimator, name)
    return None


class ContribSubmodule(types.ModuleType):
    """``tensorflow.contrib.<SHORT_NAME>``: its names are the subclass's properties."""

    SHORT_NAME = None

    def __init_subclass__(cls, **kwargs):
        # Each submodule class registers itself: a dotted SHORT_NAME is a served
        # import path below a contrib module (``tpu.ops.gen_tpu_ops``).
        super().__init_subclass__(**kwargs)
        registry = _DEEP_MODULES if "." in cls.SHORT_NAME else _MODULES
        registry[cls.SHORT_NAME] = cls

    def __init__(self):
        super().__init__(f"tensorflow.contrib.{self.SHORT_NAME}")
        self.__doc__ = f"tpu_compat's tf.contrib.{self.SHORT_NAME} (see tpu_compat.contrib)."

    def __getattr__(self, name):
        # Only names that are not properties get here.
        if name.startswith("__"):
            raise AttributeError(name)
        deep = deep_module(f"{self.__name__}.{name}")
        if deep is not None:  # tf.contrib.tpu.python...: what `import a.b.c as d` reads
            return deep
        if self.SHORT_NAME == "tpu":
            found = _estimator_name(name)
            if found is not None:
                return found
            if name in ESTIMATOR_NAMES:
                raise ContribNotProvidedError(
                    f"tf.contrib.tpu.{name} needs tpu_compat's TPUEstimator "
                    f"({ESTIMATOR_MODULE}), which this installation does not have")
        raise ContribNotProvidedError(not_provided_message(f"tf.contrib.{self.SHORT_NAME}.{name}"))

    def __dir__(self):
        names = set(served_names(type(self)))
        if self.SHORT_NAME == "tpu":
            names.update(ESTIMATOR_NAMES)
        return sorted(names)


def served_names(submodule_class):
    """The names a contrib submodule class serves (its properties)."""
    return tuple(name for name, value in vars(submodule_class).items()
                 if isinstance(value, property))


class _DeepModule(types.ModuleType):
    """A deep contrib module (or a package above one): its names, or one clear error."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self.__loader__ = None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        deep = deep_module(f"{self.__name__}.{name}")
        if deep is not None:
            return deep
        value = DEEP_IMPORTS.get(self.__name__, {}).get(name)
        if value is None:
            raise ContribNotProvidedError(not_provided_message(
                f"{self.__name__.replace('tensorflow.', 'tf.', 1)}.{name}"))
        if isinstance(value, tuple):
            short_name, attribute = value
            return getattr(submodule(short_name), attribute)
        return load(value)

    def __dir__(self):
        names = set(DEEP_IMPORTS.get(self.__name__, ()))
        names.update(path[len(self.__name__) + 1:].split(".")[0] for path in DEEP_IMPORTS
                     if path.startswith(self.__name__ + "."))
        return sorted(names)


_deep_modules = {}


def deep_module(dotted):
    """The module object for a deep contrib path (a module of DEEP_IMPORTS or a
    package above one, below ``tensorflow.contrib.X``), or None."""
    if dotted.count(".") < 3 or not any(
            path == dotted or path.startswith(dotted + ".") for path in DEEP_IMPORTS):
        return None
    if dotted not in _deep_modules:
        _deep_modules[dotted] = _DeepModule(dotted)
    return _deep_modules[dotted]


class _ContribModule(types.ModuleType):
    """``tensorflow.contrib``: its submodules, or an error naming the missing one."""

    def __init__(self):
        super().__init__("tensorflow.contrib")
        # tf.contrib's docstring is the package's (its parent is imported first).
        self.__doc__ = sys.modules["tpu_compat.contrib"].__doc__
        self.__path__ = []  # a package, so `import tensorflow.contrib.x` is legal

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return submodule(name)

    def __dir__(self):
        return sorted(set(_MODULES) | set(served_names(type(self))))

    # The TF 1.4-1.14 alias of tf.keras: under tpu_compat the program's
    # compat.v1 tf.keras (tf_keras, Keras 2). TF 1.14: tensorflow/contrib/
    # keras/__init__.py re-exported tensorflow/contrib/keras/api/keras, the
    # tf.keras API of that release.
    keras = serves("tensorflow:compat.v1.keras")



_submodules = {}
_contrib = None


def contrib_module():
    """The ``tensorflow.contrib`` module object (one per process)."""
    global _contrib
    if _contrib is None:
        _contrib = _ContribModule()
    return _contrib


def deep_paths():
    """The import paths below a contrib module that are served (``tpu.ops.gen_tpu_ops``)."""
    return tuple(_DEEP_MODULES)


def submodule(short_name):
    """``tensorflow.contrib.<short_name>``; ContribNotProvidedError if not provided.

    ``short_name`` may be a served deep path (``tpu.ops.gen_tpu_ops``).
    """
    if short_name in served_names(_ContribModule):  # tf.contrib.keras
        return getattr(contrib_module(), short_name)
    if short_name in _DEEP_MODULES:
        if short_name not in _submodules:
            _submodules[short_name] = _DEEP_MODULES[short_name]()
            _submodules[short_name].__loader__ = None
        return _submodules[short_name]
    if short_name not in _MODULES:
        raise ContribNotProvidedError(not_provided_message(f"tf.contrib.{short_name}"))
    if short_name not in _submodules:
        module = _MODULES[short_name]()
        module.__loader__ = None
        _submodules[short_name] = module
    return _submodules[short_name]
