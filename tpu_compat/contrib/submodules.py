"""What each ``tf.contrib`` submodule serves: one class per submodule, one property per name.

The table of tpu_compat's ``tf.contrib`` (see :mod:`tpu_compat.contrib`): each
property names the ``"module:attribute"`` it serves, and a legacy record's
``reads`` hook names the property (``tpu_compat.contrib:ContribTPU.replicate``),
so a new contrib name is a property here plus its record in legacy/records.py.
A class registers itself by ``SHORT_NAME`` with the machinery
(:mod:`tpu_compat.contrib.module_types`).
"""

from tpu_compat.contrib.module_types import ContribSubmodule, serves

__all__ = ["ContribCloud", "ContribClusterResolver", "ContribData", "ContribDistribute",
           "ContribFramework", "ContribGenTPUOps", "ContribLayers", "ContribRNN", "ContribSlim",
           "ContribSummary", "ContribTPU", "ContribTraining", "SLIM_LAYERS", "ARG_SCOPE_NAMES"]

_TPU = "tpu_compat.lowlevel"


class ContribTPU(ContribSubmodule):
    """``tf.contrib.tpu``: the low-level TPU API (tpu_compat.lowlevel)."""
    SHORT_NAME = "tpu"
    replicate = serves(f"{_TPU}:replicate")
    rewrite = serves(f"{_TPU}:rewrite")
    cross_replica_sum = serves(f"{_TPU}:cross_replica_sum")
    CrossShardOptimizer = serves(f"{_TPU}:CrossShardOptimizer")
    shard = serves(f"{_TPU}:shard")
    batch_parallel = serves(f"{_TPU}:batch_parallel")
    outside_compilation = serves(f"{_TPU}:outside_compilation")
    core = serves(f"{_TPU}:core")
    bfloat16_scope = serves(f"{_TPU}:bfloat16_scope")
    initialize_system = serves(f"{_TPU}:initialize_system")
    shutdown_system = serves(f"{_TPU}:shutdown_system")
    # The same class (TF 1.15: tensorflow/contrib/tpu/__init__.py re-exported
    # tensorflow.python.tpu.topology.Topology).
    Topology = serves("tensorflow.python.tpu.topology:Topology")
    # TF 1.x's infeed/outfeed and training loop (issue 22; lowlevel/feeds.py, loops.py).
    infeed_enqueue_tuple = serves(f"{_TPU}:infeed_enqueue_tuple")
    infeed_enqueue = serves(f"{_TPU}:infeed_enqueue")
    infeed_dequeue_tuple = serves(f"{_TPU}:infeed_dequeue_tuple")
    infeed_dequeue = serves(f"{_TPU}:infeed_dequeue")
    outfeed_enqueue_tuple = serves(f"{_TPU}:outfeed_enqueue_tuple")
    outfeed_enqueue = serves(f"{_TPU}:outfeed_enqueue")
    outfeed_dequeue_tuple = serves(f"{_TPU}:outfeed_dequeue_tuple")
    outfeed_dequeue = serves(f"{_TPU}:outfeed_dequeue")
    repeat = serves(f"{_TPU}:repeat")
    while_loop = serves(f"{_TPU}:while_loop")
    # The TF 1.9-1.13 Keras TPU API (tpu_compat.keras.tpu_model).
    keras_to_tpu_model = serves("tpu_compat.keras.tpu_model:keras_to_tpu_model")
    TPUDistributionStrategy = serves(
        "tpu_compat.keras.tpu_model:TPUDistributionStrategy")


class ContribGenTPUOps(ContribSubmodule):
    """``tensorflow.contrib.tpu.ops.gen_tpu_ops``: the feed ops by their deep import path.

    The TPU fundamentals codelab (training-data-analyst quests/tpu/tpu_fundamentals.ipynb)
    imports the host ops from here; the same functions as ``tf.contrib.tpu``'s.
    """
    SHORT_NAME = "tpu.ops.gen_tpu_ops"
    infeed_enqueue_tuple = serves(f"{_TPU}:infeed_enqueue_tuple")
    infeed_enqueue = serves(f"{_TPU}:infeed_enqueue")
    infeed_dequeue_tuple = serves(f"{_TPU}:infeed_dequeue_tuple")
    infeed_dequeue = serves(f"{_TPU}:infeed_dequeue")
    outfeed_enqueue_tuple = serves(f"{_TPU}:outfeed_enqueue_tuple")
    outfeed_enqueue = serves(f"{_TPU}:outfeed_enqueue")
    outfeed_dequeue_tuple = serves(f"{_TPU}:outfeed_dequeue_tuple")
    outfeed_dequeue = serves(f"{_TPU}:outfeed_dequeue")


class ContribDistribute(ContribSubmodule):
    """``tf.contrib.distribute``: the compat.v1 TPUStrategy (steps_per_run)."""
    SHORT_NAME = "distribute"
    TPUStrategy = serves("tpu_compat.runtime.strategy_v1:CompatTPUStrategyV1")
    # TF 1.13/1.14's Colab bring-up; the emulation-aware function (a no-op
    # returning the emulated Topology without a TPU), as tf.tpu.experimental's.
    initialize_tpu_system = serves("tpu_compat.runtime.resolver:initialize_tpu_system")
    # TF 1.x programs used the V1 API (make_dataset_iterator, ...).
    OneDeviceStrategy = serves(
        "tensorflow.python.distribute.one_device_strategy:OneDeviceStrategyV1")


class ContribClusterResolver(ContribSubmodule):
    """``tf.contrib.cluster_resolver``."""
    SHORT_NAME = "cluster_resolver"
    TPUClusterResolver = serves("tpu_compat.runtime.resolver:TPUClusterResolver")
    TFConfigClusterResolver = serves(
        "tensorflow.python.distribute.cluster_resolver.tfconfig_cluster_resolver:"
        "TFConfigClusterResolver")


class ContribData(ContribSubmodule):
    """``tf.contrib.data``: tf.data.experimental's functions, the same since TF 1.13."""
    SHORT_NAME = "data"
    map_and_batch = serves(
        "tensorflow.python.data.experimental.ops.batching:map_and_batch")
    parallel_interleave = serves(
        "tensorflow.python.data.experimental.ops.interleave_ops:parallel_interleave")
    shuffle_and_repeat = serves(
        "tensorflow.python.data.experimental.ops.shuffle_ops:shuffle_and_repeat")
    AUTOTUNE = serves("tensorflow.python.data.ops.dataset_ops:AUTOTUNE")  # -1, as in TF 1.13+
    # contrib's was the deprecated alias of the v1 function (TF 1.15:
    # tensorflow/contrib/data/python/ops/readers.py).
    make_csv_dataset = serves(
        "tensorflow.python.data.experimental.ops.readers:make_csv_dataset_v1")
    batch_and_drop_remainder = serves("tpu_compat.contrib._helpers:batch_and_drop_remainder")


# TF-Slim (issue 34; docs/contrib_survey.md, "TF-Slim and arg_scope"): tpu_compat's
# own implementation of the era's layers (contrib/_slim.py) and arg_scope
# (contrib/_arg_scope.py). TF 1.15's tf.contrib.slim and tf.contrib.layers served
# the same functions (contrib/slim/__init__.py imported contrib.layers' names), so
# an arg_scope set through one spelling applies to the other.
_SLIM = "tpu_compat.contrib._slim"
_ARG_SCOPE = "tpu_compat.contrib._arg_scope"
# name -> the function of contrib/_slim.py serving it as tf.contrib.slim.<name>
# and tf.contrib.layers.<name>.
SLIM_LAYERS = ("avg_pool2d", "batch_norm", "conv2d", "convolution2d", "dropout", "flatten",
               "fully_connected", "max_pool2d", "repeat", "separable_conv2d",
               "separable_convolution2d", "softmax", "stack", "variance_scaling_initializer")
ARG_SCOPE_NAMES = ("arg_scope", "add_arg_scope", "has_arg_scope", "arg_scoped_arguments",
                   "current_arg_scope")


class ContribLayers(ContribSubmodule):
    """``tf.contrib.layers``: contrib's variable names, so checkpoints load."""
    SHORT_NAME = "layers"
    layer_norm = serves("tpu_compat.contrib._layers:layer_norm")
    xavier_initializer = serves("tpu_compat.contrib._layers:xavier_initializer")
    l2_regularizer = serves("tpu_compat.contrib._helpers:l2_regularizer")
    locals().update({name: serves(f"{_SLIM}:{name}") for name in SLIM_LAYERS})


class ContribSlim(ContribSubmodule):
    """``tf.contrib.slim``: the layers, arg_scope, initializers and variables TPU
    programs used (tpu_compat's own implementation of TF 1.15's)."""
    SHORT_NAME = "slim"
    locals().update({name: serves(f"{_SLIM}:{name}") for name in SLIM_LAYERS})
    locals().update({name: serves(f"{_ARG_SCOPE}:{name}") for name in ARG_SCOPE_NAMES})
    xavier_initializer = serves("tpu_compat.contrib._layers:xavier_initializer")
    l2_regularizer = serves("tpu_compat.contrib._helpers:l2_regularizer")
    variable = serves(f"{_SLIM}:variable")
    model_variable = serves(f"{_SLIM}:model_variable")


class ContribTraining(ContribSubmodule):
    """``tf.contrib.training``."""
    SHORT_NAME = "training"
    HParams = serves("tpu_compat.contrib._hparams:HParams")
    # contrib re-exported the core function (TF 1.15: tensorflow/contrib/
    # training/python/training/evaluation.py imports it from
    # tensorflow.python.training.checkpoint_utils).
    checkpoints_iterator = serves(
        "tensorflow.python.training.checkpoint_utils:checkpoints_iterator")


# TF 1.15's tf.contrib.summary: tensorflow/contrib/summary/summary.py imports
# each name from tensorflow.python.ops.summary_ops_v2, which TF 2.21 still
# ships with the same signatures; `all_summary_ops` was its
# `all_v2_summary_ops`.
_SUMMARY = "tensorflow.python.ops.summary_ops_v2"


class ContribSummary(ContribSubmodule):
    """``tf.contrib.summary``: TF 1.15's re-export of summary_ops_v2."""
    SHORT_NAME = "summary"
    create_file_writer = serves(f"{_SUMMARY}:create_file_writer")
    scalar = serves(f"{_SUMMARY}:scalar")
    always_record_summaries = serves(f"{_SUMMARY}:always_record_summaries")
    all_summary_ops = serves(f"{_SUMMARY}:all_v2_summary_ops")
    record_summaries_every_n_global_steps = serves(
        f"{_SUMMARY}:record_summaries_every_n_global_steps")
    never_record_summaries = serves(f"{_SUMMARY}:never_record_summaries")
    should_record_summaries = serves(f"{_SUMMARY}:should_record_summaries")
    histogram = serves(f"{_SUMMARY}:histogram")
    image = serves(f"{_SUMMARY}:image")
    flush = serves(f"{_SUMMARY}:flush")
    initialize = serves(f"{_SUMMARY}:initialize")


class ContribFramework(ContribSubmodule):
    """``tf.contrib.framework``: the names that were the core ones."""
    SHORT_NAME = "framework"
    nest = serves("tensorflow:nest")
    list_variables = serves("tensorflow.python.training.checkpoint_utils:list_variables")
    load_checkpoint = serves("tensorflow.python.training.checkpoint_utils:load_checkpoint")
    # TF 1.15's framework re-exported arg_scope and the variables helpers
    # (contrib/framework/python/ops/arg_scope.py, variables.py).
    locals().update({name: serves(f"{_ARG_SCOPE}:{name}") for name in ARG_SCOPE_NAMES})
    variable = serves(f"{_SLIM}:variable")
    model_variable = serves(f"{_SLIM}:model_variable")


# TF 1.15's tensorflow/contrib/rnn/__init__.py re-exported the core cells of
# tensorflow/python/ops/rnn_cell_impl.py; TF 2 moved them, unchanged, to Keras
# 2's legacy_cells (what tf.compat.v1.nn.rnn_cell is under Keras 2; Keras 3
# has none), and static_rnn stayed in tensorflow/python/ops/rnn.py.
_LEGACY_CELLS = "tf_keras.src.layers.rnn.legacy_cells"


class ContribRNN(ContribSubmodule):
    """``tf.contrib.rnn``: the core cells it re-exported (tf.compat.v1.nn.rnn_cell)."""
    SHORT_NAME = "rnn"
    BasicLSTMCell = serves(f"{_LEGACY_CELLS}:BasicLSTMCell")
    MultiRNNCell = serves(f"{_LEGACY_CELLS}:MultiRNNCell")
    static_rnn = serves("tensorflow.python.ops.rnn:static_rnn")


class ContribCloud(ContribSubmodule):
    """``tf.contrib.cloud``: GCS configuration, with nothing to send (see _helpers)."""
    SHORT_NAME = "cloud"
    configure_gcs = serves("tpu_compat.contrib._helpers:configure_gcs")
    BlockCacheParams = serves("tpu_compat.contrib._helpers:BlockCacheParams")
