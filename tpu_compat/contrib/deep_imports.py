"""The deep TF 1.15 import paths below ``tensorflow.contrib`` that are served: data only.

A TF 1.15 program may import ``tensorflow.contrib.tpu.python.tpu.tpu_config``
and its siblings instead of ``tf.contrib.tpu``; each row maps such a module's
names to the served contrib names. A new deep path is a row here (and its
survey entry in docs/contrib_survey.md); :mod:`tpu_compat.contrib.module_types`
builds the module objects from it.
"""

__all__ = ["DEEP_IMPORTS"]

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
    "tensorflow.contrib.tpu.python.tpu.async_checkpoint": {
        # The TPU reference trainers' (ResNet, MnasNet, EfficientNet main.py)
        # --async_checkpointing hook: TF 1.15's AsyncCheckpointSaverHook had
        # CheckpointSaverHook's arguments and wrote the same checkpoints from a
        # thread; here they are written in the step, as CheckpointSaverHook does.
        "AsyncCheckpointSaverHook": "tpu_compat.estimator.hooks:CheckpointSaverHook"},
    # `from tensorflow.contrib.framework.python.ops import arg_scope` (the TPU
    # MobileNet, Inception v2/v3/v4 trainers): TF 1.15's ops/__init__.py did
    # `from ...ops.arg_scope import *`, so the name is the function.
    "tensorflow.contrib.framework.python.ops": {
        name: ("framework", name) for name in (
            "arg_scope", "add_arg_scope", "has_arg_scope", "arg_scoped_arguments",
            "current_arg_scope", "variable", "model_variable")},
    "tensorflow.contrib.training.python.training.evaluation": {
        "checkpoints_iterator": ("training", "checkpoints_iterator")},
}
