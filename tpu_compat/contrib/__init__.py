"""``tensorflow.contrib`` for TF 1.12-1.14 TPU programs: the names with exact equivalents.

TensorFlow 2 has no ``tf.contrib``. TPU programs of that era spell the TPU
API (``tf.contrib.tpu``, ``tf.contrib.distribute.TPUStrategy``,
``tf.contrib.cluster_resolver``) and a few input and layer helpers through
it, and fail at the first import. This package gives them module objects
named ``tensorflow.contrib`` and ``tensorflow.contrib.<module>`` holding:

* ``tpu``: the low-level TPU API (:mod:`tpu_compat.lowlevel`), the TF 1.9-1.13
  Keras TPU API (``keras_to_tpu_model``, ``TPUDistributionStrategy``),
  and the TPUEstimator family from ``tpu_compat.estimator`` when present;
* ``distribute.TPUStrategy``: the compat.v1 TPUStrategy (``steps_per_run``);
* ``cluster_resolver.TPUClusterResolver``;
* ``data.map_and_batch`` / ``parallel_interleave`` / ``shuffle_and_repeat``:
  ``tf.data.experimental``'s, the same functions since TF 1.13;
* ``layers.layer_norm`` (contrib's variable names, so checkpoints load) and
  ``layers.xavier_initializer``;
* ``training.HParams``.

Each submodule is an instance of its own class (:class:`ContribTPU`, ...)
whose names are properties; a record's ``reads`` hook names the property
(``tpu_compat.contrib:ContribTPU.replicate``), so reading a name warns once
per call site at the user's line (:mod:`tpu_compat.runtime.hooks`). Any other
``tf.contrib`` module or name raises one error that names it.

The objects are not put in ``sys.modules``: the import router's contrib route
(:mod:`tpu_compat.contrib.imports`) serves them to the program's own code only,
so TensorFlow and other libraries that probe for ``tensorflow.contrib`` still
see TF 2's answer.
"""

import importlib
import types

from tpu_compat.runtime import hooks

__all__ = ["ContribClusterResolver", "ContribData", "ContribDistribute", "ContribLayers",
           "ContribNotProvidedError", "ContribTPU", "ContribTraining", "contrib_module",
           "not_provided_message", "served_names", "submodule"]


class ContribNotProvidedError(AttributeError):
    """A ``tf.contrib`` module or name that tpu_compat does not provide."""


def not_provided_message(dotted):
    """The one error text for a ``tf.contrib`` module or name tpu_compat does not serve."""
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


def _load(target):
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def _serves(target):
    """A contrib name: a property reading ``target`` (``"module:attribute"``)
    when the program reads the name (its record's ``reads`` hook warns then)."""
    return property(lambda self: _load(target), doc=f"Served from {target}.")


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


class _ContribSubmodule(types.ModuleType):
    """``tensorflow.contrib.<SHORT_NAME>``: its names are the subclass's properties."""

    SHORT_NAME = None

    def __init__(self):
        super().__init__(f"tensorflow.contrib.{self.SHORT_NAME}")
        self.__doc__ = f"tpu_compat's tf.contrib.{self.SHORT_NAME} (see tpu_compat.contrib)."

    def __getattr__(self, name):
        # Only names that are not properties get here.
        if name.startswith("__"):
            raise AttributeError(name)
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


_TPU = "tpu_compat.lowlevel"


class ContribTPU(_ContribSubmodule):
    """``tf.contrib.tpu``: the low-level TPU API (tpu_compat.lowlevel)."""
    SHORT_NAME = "tpu"
    replicate = _serves(f"{_TPU}:replicate")
    rewrite = _serves(f"{_TPU}:rewrite")
    cross_replica_sum = _serves(f"{_TPU}:cross_replica_sum")
    CrossShardOptimizer = _serves(f"{_TPU}:CrossShardOptimizer")
    shard = _serves(f"{_TPU}:shard")
    batch_parallel = _serves(f"{_TPU}:batch_parallel")
    outside_compilation = _serves(f"{_TPU}:outside_compilation")
    core = _serves(f"{_TPU}:core")
    bfloat16_scope = _serves(f"{_TPU}:bfloat16_scope")
    initialize_system = _serves(f"{_TPU}:initialize_system")
    shutdown_system = _serves(f"{_TPU}:shutdown_system")
    # The TF 1.9-1.13 Keras TPU API (tpu_compat.runtime.keras_tpu_model).
    keras_to_tpu_model = _serves("tpu_compat.runtime.keras_tpu_model:keras_to_tpu_model")
    TPUDistributionStrategy = _serves(
        "tpu_compat.runtime.keras_tpu_model:TPUDistributionStrategy")


class ContribDistribute(_ContribSubmodule):
    """``tf.contrib.distribute``: the compat.v1 TPUStrategy (steps_per_run)."""
    SHORT_NAME = "distribute"
    TPUStrategy = _serves("tpu_compat.runtime.strategy_v1:CompatTPUStrategyV1")


class ContribClusterResolver(_ContribSubmodule):
    """``tf.contrib.cluster_resolver``."""
    SHORT_NAME = "cluster_resolver"
    TPUClusterResolver = _serves("tpu_compat.runtime.resolver:TPUClusterResolver")


class ContribData(_ContribSubmodule):
    """``tf.contrib.data``: tf.data.experimental's functions, the same since TF 1.13."""
    SHORT_NAME = "data"
    map_and_batch = _serves(
        "tensorflow.python.data.experimental.ops.batching:map_and_batch")
    parallel_interleave = _serves(
        "tensorflow.python.data.experimental.ops.interleave_ops:parallel_interleave")
    shuffle_and_repeat = _serves(
        "tensorflow.python.data.experimental.ops.shuffle_ops:shuffle_and_repeat")


class ContribLayers(_ContribSubmodule):
    """``tf.contrib.layers``: contrib's variable names, so checkpoints load."""
    SHORT_NAME = "layers"
    layer_norm = _serves("tpu_compat.contrib._layers:layer_norm")
    xavier_initializer = _serves("tpu_compat.contrib._layers:xavier_initializer")


class ContribTraining(_ContribSubmodule):
    """``tf.contrib.training``."""
    SHORT_NAME = "training"
    HParams = _serves("tpu_compat.contrib._hparams:HParams")


_MODULES = {cls.SHORT_NAME: cls for cls in (
    ContribTPU, ContribDistribute, ContribClusterResolver, ContribData, ContribLayers,
    ContribTraining)}


class _ContribModule(types.ModuleType):
    """``tensorflow.contrib``: its submodules, or an error naming the missing one."""

    def __init__(self):
        super().__init__("tensorflow.contrib")
        self.__doc__ = __doc__
        self.__path__ = []  # a package, so `import tensorflow.contrib.x` is legal

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return submodule(name)

    def __dir__(self):
        return sorted(_MODULES)


_submodules = {}
_contrib = None


def contrib_module():
    """The ``tensorflow.contrib`` module object (one per process)."""
    global _contrib
    if _contrib is None:
        _contrib = _ContribModule()
    return _contrib


def submodule(short_name):
    """``tensorflow.contrib.<short_name>``; ContribNotProvidedError if not provided."""
    if short_name not in _MODULES:
        raise ContribNotProvidedError(not_provided_message(f"tf.contrib.{short_name}"))
    if short_name not in _submodules:
        module = _MODULES[short_name]()
        module.__loader__ = None
        _submodules[short_name] = module
    return _submodules[short_name]


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
