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
* ``training.HParams``;
* the names the survey of TPU programs found with an exact TF 2.21 equivalent
  (docs/contrib_survey.md): ``data.AUTOTUNE`` / ``make_csv_dataset``,
  ``summary.*`` (TF 1.15's re-export of ``summary_ops_v2``), ``keras`` (the
  program's compat.v1 ``tf.keras``), ``distribute.initialize_tpu_system`` /
  ``OneDeviceStrategy``, ``training.checkpoints_iterator``,
  ``framework.nest`` / ``list_variables`` / ``load_checkpoint``, ``rnn``'s
  core cells, ``cluster_resolver.TFConfigClusterResolver``, ``tpu.Topology``;
  and three with code (:mod:`tpu_compat.contrib._helpers`):
  ``data.batch_and_drop_remainder``, ``layers.l2_regularizer``,
  ``cloud.configure_gcs``;
* the deep TPU import paths of TF 1.15 (``tensorflow.contrib.tpu.python.tpu.
  tpu_config``, ...: :data:`DEEP_IMPORTS`), aliases of the names above.

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

__all__ = ["ContribCloud", "ContribClusterResolver", "ContribData", "ContribDistribute",
           "ContribFramework", "ContribGenTPUOps", "ContribLayers", "ContribNotProvidedError",
           "ContribRNN", "ContribSummary", "ContribTPU", "ContribTraining", "DEEP_IMPORTS",
           "contrib_module", "deep_module", "deep_paths", "not_provided_message", "served_names",
           "submodule"]


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
    value = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


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
    # The same class (TF 1.15: tensorflow/contrib/tpu/__init__.py re-exported
    # tensorflow.python.tpu.topology.Topology).
    Topology = _serves("tensorflow.python.tpu.topology:Topology")
    # TF 1.x's infeed/outfeed and training loop (issue 22; lowlevel/feeds.py, loops.py).
    infeed_enqueue_tuple = _serves(f"{_TPU}:infeed_enqueue_tuple")
    infeed_enqueue = _serves(f"{_TPU}:infeed_enqueue")
    infeed_dequeue_tuple = _serves(f"{_TPU}:infeed_dequeue_tuple")
    infeed_dequeue = _serves(f"{_TPU}:infeed_dequeue")
    outfeed_enqueue_tuple = _serves(f"{_TPU}:outfeed_enqueue_tuple")
    outfeed_enqueue = _serves(f"{_TPU}:outfeed_enqueue")
    outfeed_dequeue_tuple = _serves(f"{_TPU}:outfeed_dequeue_tuple")
    outfeed_dequeue = _serves(f"{_TPU}:outfeed_dequeue")
    repeat = _serves(f"{_TPU}:repeat")
    while_loop = _serves(f"{_TPU}:while_loop")
    # The TF 1.9-1.13 Keras TPU API (tpu_compat.runtime.keras_tpu_model).
    keras_to_tpu_model = _serves("tpu_compat.runtime.keras_tpu_model:keras_to_tpu_model")
    TPUDistributionStrategy = _serves(
        "tpu_compat.runtime.keras_tpu_model:TPUDistributionStrategy")


class ContribGenTPUOps(_ContribSubmodule):
    """``tensorflow.contrib.tpu.ops.gen_tpu_ops``: the feed ops by their deep import path.

    The TPU fundamentals codelab (training-data-analyst quests/tpu/tpu_fundamentals.ipynb)
    imports the host ops from here; the same functions as ``tf.contrib.tpu``'s.
    """
    SHORT_NAME = "tpu.ops.gen_tpu_ops"
    infeed_enqueue_tuple = _serves(f"{_TPU}:infeed_enqueue_tuple")
    infeed_enqueue = _serves(f"{_TPU}:infeed_enqueue")
    infeed_dequeue_tuple = _serves(f"{_TPU}:infeed_dequeue_tuple")
    infeed_dequeue = _serves(f"{_TPU}:infeed_dequeue")
    outfeed_enqueue_tuple = _serves(f"{_TPU}:outfeed_enqueue_tuple")
    outfeed_enqueue = _serves(f"{_TPU}:outfeed_enqueue")
    outfeed_dequeue_tuple = _serves(f"{_TPU}:outfeed_dequeue_tuple")
    outfeed_dequeue = _serves(f"{_TPU}:outfeed_dequeue")


class ContribDistribute(_ContribSubmodule):
    """``tf.contrib.distribute``: the compat.v1 TPUStrategy (steps_per_run)."""
    SHORT_NAME = "distribute"
    TPUStrategy = _serves("tpu_compat.runtime.strategy_v1:CompatTPUStrategyV1")
    # TF 1.13/1.14's Colab bring-up; the emulation-aware function (a no-op
    # returning the emulated Topology without a TPU), as tf.tpu.experimental's.
    initialize_tpu_system = _serves("tpu_compat.runtime.resolver:initialize_tpu_system")
    # TF 1.x programs used the V1 API (make_dataset_iterator, ...).
    OneDeviceStrategy = _serves(
        "tensorflow.python.distribute.one_device_strategy:OneDeviceStrategyV1")


class ContribClusterResolver(_ContribSubmodule):
    """``tf.contrib.cluster_resolver``."""
    SHORT_NAME = "cluster_resolver"
    TPUClusterResolver = _serves("tpu_compat.runtime.resolver:TPUClusterResolver")
    TFConfigClusterResolver = _serves(
        "tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver:"
        "TFConfigClusterResolver")


class ContribData(_ContribSubmodule):
    """``tf.contrib.data``: tf.data.experimental's functions, the same since TF 1.13."""
    SHORT_NAME = "data"
    map_and_batch = _serves(
        "tensorflow.python.data.experimental.ops.batching:map_and_batch")
    parallel_interleave = _serves(
        "tensorflow.python.data.experimental.ops.interleave_ops:parallel_interleave")
    shuffle_and_repeat = _serves(
        "tensorflow.python.data.experimental.ops.shuffle_ops:shuffle_and_repeat")
    AUTOTUNE = _serves("tensorflow.python.data.ops.dataset_ops:AUTOTUNE")  # -1, as in TF 1.13+
    # contrib's was the deprecated alias of the v1 function (TF 1.15:
    # tensorflow/contrib/data/python/ops/readers.py).
    make_csv_dataset = _serves(
        "tensorflow.python.data.experimental.ops.readers:make_csv_dataset_v1")
    batch_and_drop_remainder = _serves("tpu_compat.contrib._helpers:batch_and_drop_remainder")


class ContribLayers(_ContribSubmodule):
    """``tf.contrib.layers``: contrib's variable names, so checkpoints load."""
    SHORT_NAME = "layers"
    layer_norm = _serves("tpu_compat.contrib._layers:layer_norm")
    xavier_initializer = _serves("tpu_compat.contrib._layers:xavier_initializer")
    l2_regularizer = _serves("tpu_compat.contrib._helpers:l2_regularizer")


class ContribTraining(_ContribSubmodule):
    """``tf.contrib.training``."""
    SHORT_NAME = "training"
    HParams = _serves("tpu_compat.contrib._hparams:HParams")
    # contrib re-exported the core function (TF 1.15: tensorflow/contrib/
    # training/python/training/evaluation.py imports it from
    # tensorflow.python.training.checkpoint_utils).
    checkpoints_iterator = _serves(
        "tensorflow.python.training.checkpoint_utils:checkpoints_iterator")


# TF 1.15's tf.contrib.summary: tensorflow/contrib/summary/summary.py imports
# each name from tensorflow.python.ops.summary_ops_v2, which TF 2.21 still
# ships with the same signatures; `all_summary_ops` was its
# `all_v2_summary_ops`.
_SUMMARY = "tensorflow.python.ops.summary_ops_v2"


class ContribSummary(_ContribSubmodule):
    """``tf.contrib.summary``: TF 1.15's re-export of summary_ops_v2."""
    SHORT_NAME = "summary"
    create_file_writer = _serves(f"{_SUMMARY}:create_file_writer")
    scalar = _serves(f"{_SUMMARY}:scalar")
    always_record_summaries = _serves(f"{_SUMMARY}:always_record_summaries")
    all_summary_ops = _serves(f"{_SUMMARY}:all_v2_summary_ops")
    record_summaries_every_n_global_steps = _serves(
        f"{_SUMMARY}:record_summaries_every_n_global_steps")
    never_record_summaries = _serves(f"{_SUMMARY}:never_record_summaries")
    should_record_summaries = _serves(f"{_SUMMARY}:should_record_summaries")
    histogram = _serves(f"{_SUMMARY}:histogram")
    image = _serves(f"{_SUMMARY}:image")
    flush = _serves(f"{_SUMMARY}:flush")
    initialize = _serves(f"{_SUMMARY}:initialize")


class ContribFramework(_ContribSubmodule):
    """``tf.contrib.framework``: the names that were the core ones."""
    SHORT_NAME = "framework"
    nest = _serves("tensorflow:nest")
    list_variables = _serves("tensorflow.python.training.checkpoint_utils:list_variables")
    load_checkpoint = _serves("tensorflow.python.training.checkpoint_utils:load_checkpoint")


# TF 1.15's tensorflow/contrib/rnn/__init__.py re-exported the core cells of
# tensorflow/python/ops/rnn_cell_impl.py; TF 2 moved them, unchanged, to Keras
# 2's legacy_cells (what tf.compat.v1.nn.rnn_cell is under Keras 2; Keras 3
# has none), and static_rnn stayed in tensorflow/python/ops/rnn.py.
_LEGACY_CELLS = "tf_keras.src.layers.rnn.legacy_cells"


class ContribRNN(_ContribSubmodule):
    """``tf.contrib.rnn``: the core cells it re-exported (tf.compat.v1.nn.rnn_cell)."""
    SHORT_NAME = "rnn"
    BasicLSTMCell = _serves(f"{_LEGACY_CELLS}:BasicLSTMCell")
    MultiRNNCell = _serves(f"{_LEGACY_CELLS}:MultiRNNCell")
    static_rnn = _serves("tensorflow.python.ops.rnn:static_rnn")


class ContribCloud(_ContribSubmodule):
    """``tf.contrib.cloud``: GCS configuration, with nothing to send (see _helpers)."""
    SHORT_NAME = "cloud"
    configure_gcs = _serves("tpu_compat.contrib._helpers:configure_gcs")
    BlockCacheParams = _serves("tpu_compat.contrib._helpers:BlockCacheParams")


_MODULES = {cls.SHORT_NAME: cls for cls in (
    ContribTPU, ContribDistribute, ContribClusterResolver, ContribData, ContribLayers,
    ContribTraining, ContribSummary, ContribFramework, ContribRNN, ContribCloud)}


# Deep import paths of TF 1.15 programs (docs/contrib_survey.md, "Deep import
# paths"): in TF 1.15 each of these modules re-exported tensorflow.python.tpu's
# (e.g. tensorflow/contrib/tpu/python/tpu/tpu_config.py was
# `from tensorflow.python.tpu.tpu_config import *`), so its names are the
# served tf.contrib names. A value is (contrib submodule, name) or a
# "module:attribute" target. Other names below tensorflow.contrib keep the
# clear error.
DEEP_IMPORTS = {
    "tensorflow.contrib.tpu.python.tpu.tpu_config": {
        name: ("tpu", name) for name in ("RunConfig", "TPUConfig", "InputPipelineConfig")},
    "tensorflow.contrib.tpu.python.tpu.tpu_estimator": {
        name: ("tpu", name) for name in ("TPUEstimator", "TPUEstimatorSpec")},
    "tensorflow.contrib.tpu.python.tpu.tpu_optimizer": {
        "CrossShardOptimizer": ("tpu", "CrossShardOptimizer")},
    "tensorflow.contrib.tpu.python.tpu.tpu_function": {
        # TF's own: tpu_compat's replicated steps set its number_of_shards.
        "get_tpu_context": "tensorflow.python.tpu.tpu_function:get_tpu_context"},
    "tensorflow.contrib.tpu.python.tpu.bfloat16": {
        "bfloat16_scope": ("tpu", "bfloat16_scope")},
    "tensorflow.contrib.tpu.python.tpu.tpu": {
        name: ("tpu", name) for name in (
            "initialize_system", "shutdown_system", "core", "outside_compilation",
            "rewrite", "replicate", "shard", "batch_parallel")},
    "tensorflow.contrib.tpu.python.ops.tpu_ops": {
        "cross_replica_sum": ("tpu", "cross_replica_sum")},
    "tensorflow.contrib.training.python.training.evaluation": {
        "checkpoints_iterator": ("training", "checkpoints_iterator")},
}


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
        return _load(value)

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
        self.__doc__ = __doc__
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
    keras = _serves("tensorflow:compat.v1.keras")


# Import paths below a contrib module that programs use (docs/contrib_survey.md).
_DEEP_MODULES = {cls.SHORT_NAME: cls for cls in (ContribGenTPUOps,)}

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


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
