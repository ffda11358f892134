"""The records of the legacy-API table: one :class:`LegacyAPI` per legacy symbol,
method, argument or attribute (the schema: :mod:`tpu_compat.legacy.schema`).

This is data, and long because the table is: add an API here once and the
warning, the documentation row, the scan rule and (when the record has a
``rewrite``) the rewrite follow. Rule ids are stable: never renumber, only
append. A record cannot be built without a hook: an API that truly cannot be
seen at run time says why with :func:`not_observable`.
"""

from tpu_compat.legacy.schema import (KIND_ARGUMENT, KIND_ATTRIBUTE, KIND_METHOD, KIND_SYMBOL,
                                      LegacyAPI, add_keyword, calls, imports, not_observable, omits, passes,
                                      reads, rename_keyword, rename_method,
                                      replace_call, replace_module, replace_symbol)
# Issue 35's TPUStrategy-era rewrite kinds.
from tpu_compat.legacy.schema import (call_to_method, drop_import, graph_loop, keras_tpu_scope,
                                      tf2_strategy, version_compare)

__all__ = ["RECORDS", "get", "by_name"]


_V1_TPU = "tensorflow.python.distribute.tpu_strategy"
_DIST_LIB = "tensorflow.python.distribute.distribute_lib"

# Hook targets: tpu_compat's adapters, and TensorFlow's own classes (for the
# native strategies legacy programs fall back to, and for a real TPU, whose
# strategy and extended are TensorFlow's).
_ADAPTER = "tpu_compat.runtime.adapter:CompatStrategyMixin"
_NATIVE = "tpu_compat.runtime.native_methods"
_V1 = "tpu_compat.runtime.strategy_v1:CompatTPUStrategyV1"
_V2_EXPERIMENTAL = "tpu_compat.runtime.strategy_v2:CompatExperimentalTPUStrategy"
_BY_ERA = "tpu_compat.runtime.strategy_by_era:_ByEraMeta.__call__"
_EMULATED = "tpu_compat.runtime.emulated:EmulatedTPUExtended"
_TF_BASE = f"{_DIST_LIB}:StrategyBase"
_TF_V1 = f"{_DIST_LIB}:StrategyV1"
_TF_EXTENDED_V1 = f"{_DIST_LIB}:StrategyExtendedV1"
_KERAS_ERA = "tpu_compat.keras.era"
_DEVICES = "tpu_compat.runtime.devices"
_LOW_LEVEL = "tpu_compat.lowlevel"
_CONTRIB = "tpu_compat.contrib"  # its submodules' classes: a name warns when read
# tf.estimator (TPC070-TPC089). The probes name the removed package.
_ESTIMATOR_ERAS = ("1.15", "2.0", "2.1", "2.2", "2.3")
_ESTIMATOR = "tensorflow_estimator.python.estimator.estimator"
_MODEL_FN = "tensorflow_estimator.python.estimator.model_fn"
_RUN_CONFIG = "tensorflow_estimator.python.estimator.run_config"
_TRAINING = "tensorflow_estimator.python.estimator.training"
_EXPORT = "tensorflow_estimator.python.estimator.export.export_lib"
_TPU_ESTIMATOR = "tensorflow_estimator.python.estimator.tpu.tpu_estimator"
_TPU_CONFIG = "tensorflow_estimator.python.estimator.tpu.tpu_config"
# Hook targets: tpu_compat.estimator serves the removed package.
_EST = "tpu_compat.estimator"
_EST_TPU = "tpu_compat.estimator.tpu"
_TPU_ESTIMATOR_MIGRATION = (
        "tf.distribute.TPUStrategy with a custom training loop (a tf.function running "
        "iterations_per_loop steps of strategy.run), or Keras Model.fit under the "
        "strategy with compile(steps_per_execution=iterations_per_loop)")
# The canned estimators of TF 1.15's tf.estimator (tpu_compat.estimator serves
# each as a function that raises; the hooks are on those functions).
_CANNED = ("BaselineClassifier", "BaselineEstimator", "BaselineRegressor",
           "BoostedTreesClassifier", "BoostedTreesEstimator", "BoostedTreesRegressor",
           "DNNClassifier", "DNNEstimator", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor", "DNNRegressor",
           "LinearClassifier", "LinearEstimator", "LinearRegressor")
# The session-run hooks (and their helpers) tf.estimator re-exported from
# tf.compat.v1.train: programs subclass or pass them, so a read of the name warns.
_SESSION_RUN_HOOKS = (
        "CheckpointSaverHook", "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook",
        "GlobalStepWaiterHook", "LoggingTensorHook", "NanLossDuringTrainingError",
        "NanTensorHook", "ProfilerHook", "SecondOrStepTimer", "SessionRunArgs",
        "SessionRunContext", "SessionRunHook", "SessionRunValues", "StepCounterHook",
        "StopAtStepHook", "SummarySaverHook")

RECORDS = (
        LegacyAPI(
                rule="TPC001", api="Strategy.experimental_run_v2",
                kind=KIND_METHOD, name="experimental_run_v2",
                hook=calls(f"{_ADAPTER}.experimental_run_v2", f"{_NATIVE}:experimental_run_v2"),
                eras=("1.15", "2.0", "2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="strategy.run(fn, args=..., kwargs=...)",
                rewrite=rename_method("run"),
                note="Renamed to run in TF 2.2 with the same arguments.",
                probe=(_DIST_LIB, "Strategy.experimental_run_v2")),
        LegacyAPI(
                rule="TPC002", api="Strategy.reduce without axis",
                kind=KIND_METHOD, name="reduce",
                hook=omits("axis", f"{_ADAPTER}.reduce", f"{_NATIVE}:reduce"),
                eras=("1.15",), removed_in="2.0",
                replacement="strategy.reduce(reduce_op, value, axis=None)",
                rewrite=add_keyword("axis", "None"),
                note="TF 2 made axis required; axis=None keeps the TF 1.15 meaning "
                          "(reduce across replicas only).",
                probe=None),
        LegacyAPI(
                rule="TPC003",
                api="Strategy.experimental_distribute_datasets_from_function",
                kind=KIND_METHOD, name="experimental_distribute_datasets_from_function",
                hook=calls(f"{_ADAPTER}.experimental_distribute_datasets_from_function",
                           f"{_TF_BASE}.experimental_distribute_datasets_from_function"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="strategy.distribute_datasets_from_function(dataset_fn)",
                rewrite=rename_method("distribute_datasets_from_function"),
                note="Renamed in TF 2.4; the old name is a deprecated alias.",
                probe=(_DIST_LIB, "StrategyBase.experimental_distribute_datasets_from_function")),
        LegacyAPI(
                rule="TPC004", api="Strategy.experimental_make_numpy_dataset",
                kind=KIND_METHOD, name="experimental_make_numpy_dataset",
                hook=calls(f"{_ADAPTER}.experimental_make_numpy_dataset",
                           f"{_NATIVE}:experimental_make_numpy_dataset",
                           f"{_TF_V1}.experimental_make_numpy_dataset"),
                eras=("1.15", "2.0", "2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="tf.data.Dataset.from_tensor_slices(numpy_input)",
                rewrite=replace_call("tf.data.Dataset.from_tensor_slices",
                                     keep_argument="numpy_input"),
                note="Removed from tf.distribute.Strategy; compat.v1 strategies keep it.",
                probe=(_DIST_LIB, "Strategy.experimental_make_numpy_dataset")),
        LegacyAPI(
                rule="TPC005", api="tf.distribute.experimental.TPUStrategy",
                kind=KIND_SYMBOL, name="TPUStrategy",
                hook=calls(_BY_ERA, f"{_V2_EXPERIMENTAL}.__init__"),
                eras=("1.15", "2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="tf.distribute.TPUStrategy(resolver)",
                rewrite=replace_symbol("tf.distribute.TPUStrategy"),
                note="The experimental endpoint is deprecated since TF 2.3.",
                symbols=("tf.distribute.experimental.TPUStrategy",
                                  "tf.compat.v2.distribute.experimental.TPUStrategy"),
                probe=(_V1_TPU, "TPUStrategy")),
        LegacyAPI(
                rule="TPC006", api="TPUStrategy(device_assignment=...)",
                kind=KIND_ARGUMENT, name="device_assignment",
                hook=passes("device_assignment", _BY_ERA, f"{_V2_EXPERIMENTAL}.__init__"),
                eras=("1.15", "2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="tf.distribute.TPUStrategy(resolver, "
                                        "experimental_device_assignment=...)",
                rewrite=rename_keyword("experimental_device_assignment"),
                note="tf.distribute.TPUStrategy renamed the argument.",
                symbols=("tf.distribute.experimental.TPUStrategy",
                                  "tf.compat.v2.distribute.experimental.TPUStrategy")),
        LegacyAPI(
                rule="TPC007", api="TPUStrategy(steps_per_run=...)",
                kind=KIND_ARGUMENT, name="steps_per_run",
                hook=passes("steps_per_run", _BY_ERA, f"{_V1}.__init__"),
                eras=("1.15",), removed_in="2.0",
                replacement="Keras compile(steps_per_execution=N), or a tf.function "
                                        "that loops N times over strategy.run",
                note="Multi-step execution moved from the strategy to Keras or the "
                          "user's own tf.function loop.",
                symbols=("tf.distribute.experimental.TPUStrategy",
                                  "tf.compat.v1.distribute.experimental.TPUStrategy")),
        LegacyAPI(
                rule="TPC008", api="Strategy.steps_per_run / extended.steps_per_run",
                kind=KIND_ATTRIBUTE, name="steps_per_run",
                hook=reads(f"{_V1}.steps_per_run", f"{_EMULATED}.steps_per_run",
                           f"{_V1_TPU}:TPUStrategyV1.steps_per_run",
                           f"{_V1_TPU}:TPUExtended.steps_per_run"),
                eras=("1.15",), removed_in="2.0",
                replacement="the N of compile(steps_per_execution=N) or of your own "
                                        "tf.function loop",
                note="Only compat.v1 TPUStrategy still has it.",
                probe=(_V1_TPU, "TPUStrategyV1.steps_per_run")),
        LegacyAPI(
                rule="TPC009", api="Strategy.make_dataset_iterator",
                kind=KIND_METHOD, name="make_dataset_iterator",
                hook=calls(f"{_V1}.make_dataset_iterator", f"{_TF_V1}.make_dataset_iterator"),
                eras=("1.15",), removed_in="2.0",
                replacement="iter(strategy.experimental_distribute_dataset(dataset))",
                # In a TF 1.x graph: ...experimental_distribute_dataset(dataset)
                # .make_initializable_iterator() (rewrites/graph_loop.py).
                rewrite=graph_loop("experimental_distribute_dataset"),
                note="Graph-mode initializable iterators have no TF2 equivalent; the "
                          "loop around them must change.",
                probe=(_DIST_LIB, "StrategyV1.make_dataset_iterator")),
        LegacyAPI(
                rule="TPC010", api="Strategy.make_input_fn_iterator",
                kind=KIND_METHOD, name="make_input_fn_iterator",
                hook=calls(f"{_V1}.make_input_fn_iterator", f"{_TF_V1}.make_input_fn_iterator"),
                eras=("1.15",), removed_in="2.0",
                replacement="iter(strategy.distribute_datasets_from_function(input_fn))",
                note="Same InputContext; the iterator protocol differs.",
                probe=(_DIST_LIB, "StrategyV1.make_input_fn_iterator")),
        LegacyAPI(
                rule="TPC011", api="Strategy.experimental_run",
                kind=KIND_METHOD, name="experimental_run",
                hook=calls(f"{_V1}.experimental_run", f"{_TF_V1}.experimental_run"),
                eras=("1.15",), removed_in="2.0",
                replacement="strategy.run(fn, args=(next(iterator),))",
                # In a TF 1.x graph: strategy.run(fn, args=(iterator.get_next(),)).
                rewrite=graph_loop("run"),
                note="Needs the iterator rewritten too (see TPC009).",
                probe=(_DIST_LIB, "StrategyV1.experimental_run")),
        LegacyAPI(
                rule="TPC012", api="extended.experimental_run_steps_on_iterator",
                kind=KIND_METHOD, name="experimental_run_steps_on_iterator",
                hook=calls(f"{_EMULATED}.experimental_run_steps_on_iterator",
                           f"{_TF_EXTENDED_V1}.experimental_run_steps_on_iterator"),
                eras=("1.15",), removed_in="2.0",
                replacement="a tf.function whose `for _ in tf.range(n)` loop calls "
                                        "strategy.run(step_fn, args=(next(iterator),)); in a "
                                        "TF 1.x graph, _run_steps_on_iterator(strategy, ...), "
                                        "a while_loop helper upgrade writes into the module",
                # In a TF 1.x graph: _run_steps_on_iterator(strategy, ...), a helper
                # upgrade writes into the module (rewrites/_steps_loop.py).
                rewrite=graph_loop("_run_steps_on_iterator"),
                note="MultiStepContext outputs become loop variables.",
                probe=(_DIST_LIB, "StrategyExtendedV1.experimental_run_steps_on_iterator")),
        LegacyAPI(
                rule="TPC013", api="Strategy.experimental_initialize",
                kind=KIND_METHOD, name="experimental_initialize",
                hook=calls(f"{_V1}.experimental_initialize"),
                eras=("1.13",), removed_in="1.14",
                replacement="tf.tpu.experimental.initialize_tpu_system(resolver) before "
                                        "building the strategy",
                note="TF 1.13's tf.distribute.Strategy method; TF 1.14 dropped it and TPU "
                          "programs call initialize_tpu_system themselves.",
                probe=(_DIST_LIB, "StrategyV1.experimental_initialize")),
        LegacyAPI(
                rule="TPC014", api="Strategy.experimental_finalize",
                kind=KIND_METHOD, name="experimental_finalize",
                hook=calls(f"{_V1}.experimental_finalize"),
                eras=("1.13",), removed_in="1.14",
                replacement="tf.tpu.experimental.shutdown_tpu_system(resolver), or "
                                        "nothing",
                note="TF 1.13's tf.distribute.Strategy method; TF 1.14 dropped it.",
                probe=(_DIST_LIB, "StrategyV1.experimental_finalize")),
        LegacyAPI(
                rule="TPC015", api="Strategy.unwrap",
                kind=KIND_METHOD, name="unwrap",
                hook=calls(f"{_ADAPTER}.unwrap", f"{_TF_BASE}.unwrap"),
                eras=("1.15",), removed_in=None,
                replacement="strategy.experimental_local_results(value)",
                rewrite=rename_method("experimental_local_results"),
                note="Renamed in TF 2.0; the old name is a deprecated alias.",
                probe=(_DIST_LIB, "StrategyBase.unwrap")),
        LegacyAPI(
                rule="TPC016", api="Model.compile(experimental_steps_per_execution=...)",
                kind=KIND_ARGUMENT, name="experimental_steps_per_execution",
                hook=passes("experimental_steps_per_execution",
                            "tf_keras.src.engine.training:Model.compile",
                            "keras.src.trainers.trainer:Trainer.compile"),
                eras=("2.2", "2.3"), removed_in="2.4",
                replacement="model.compile(..., steps_per_execution=N)",
                rewrite=rename_keyword("steps_per_execution"),
                note="Renamed in TF 2.4.", symbols=(".compile",)),
        LegacyAPI(
                rule="TPC017", api="tf.compat.v1.distribute.experimental.TPUStrategy",
                kind=KIND_SYMBOL, name="TPUStrategy",
                hook=calls(f"{_V1}.__init__"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.TPUStrategy(resolver) with a TF2 training "
                                        "loop",
                rewrite=tf2_strategy("tf.distribute.TPUStrategy"),
                note="The TF 1.x class (graph mode, steps_per_run) has no drop-in "
                          "TF2 equivalent.",
                symbols=("tf.compat.v1.distribute.experimental.TPUStrategy",),
                probe=(_V1_TPU, "TPUStrategyV1")),
        LegacyAPI(
                rule="TPC018", api="InputIterator.initialize",
                kind=KIND_METHOD, name="initialize",
                hook=calls("tpu_compat.runtime.strategy_v1:_OneShotDistributedIterator.initialize",
                           "tensorflow.python.distribute.v1.input_lib:DistributedIteratorV1.initialize"),
                eras=("1.15",), removed_in="2.0",
                replacement="the iterator's initializer property in graph mode; nothing "
                                        "in TF2",
                rewrite=graph_loop("initializer"),
                note="Distributed iterators in TF2 need no initialization.",
                probe=("tensorflow.python.distribute.v1.input_lib", "DistributedIteratorV1.initialize")),
        LegacyAPI(
                rule="TPC019", api="extended.call_for_each_replica",
                kind=KIND_METHOD, name="call_for_each_replica",
                hook=calls(f"{_TF_EXTENDED_V1}.call_for_each_replica"),
                eras=("1.15",), removed_in=None,
                replacement="strategy.run(fn, args=..., kwargs=...)",
                # In a TF 1.x graph (rewrites/graph_loop.py).
                rewrite=graph_loop("run"),
                note="The V2 StrategyExtended API does not list it.",
                probe=(_DIST_LIB, "StrategyExtendedV1.call_for_each_replica")),
        # -- TPC020-TPC039: whole programs of the era (TF 2.0-2.3 Keras surface
        #    next to the strategy, the TPU host). Served by keras/era.py,
        #    keras/imports.py and runtime/devices.py.
        LegacyAPI(
                rule="TPC020", api="tensorflow.python.keras imports",
                kind=KIND_SYMBOL, name="keras",
                hook=imports("tensorflow.python.keras"),
                eras=("1.15", "2.0", "2.1", "2.2", "2.3"), removed_in="2.6",
                replacement="tf_keras (import tf_keras / from tf_keras import layers)",
                # tf_keras is the same Keras 2 with the same public modules;
                # deeper paths (tensorflow.python.keras.engine...) are private there.
                rewrite=replace_module(
                    "tf_keras", "layers models backend optimizers regularizers initializers "
                                "losses metrics callbacks activations constraints utils "
                                "preprocessing applications datasets mixed_precision"),
                note="TF 2.6 moved Keras out of TensorFlow; tensorflow.python.keras is a "
                     "leftover without most layers. Under tpu-compat run the program's "
                     "own imports of it reach tf_keras.",
                symbols=("tensorflow.python.keras", "tensorflow.python.keras.layers",
                         "tensorflow.python.keras.models", "tensorflow.python.keras.backend",
                         "tensorflow.python.keras.optimizers",
                         "tensorflow.python.keras.regularizers",
                         "tensorflow.python.keras.initializers",
                         "tensorflow.python.keras.losses", "tensorflow.python.keras.metrics",
                         "tensorflow.python.keras.callbacks",
                         "tensorflow.python.keras.engine")),
        LegacyAPI(
                rule="TPC021", api="tf.keras.mixed_precision.experimental.Policy",
                kind=KIND_SYMBOL, name="Policy",
                hook=calls(f"{_KERAS_ERA}:Policy.__init__"),
                eras=("2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="tf.keras.mixed_precision.Policy(name)",
                note="The loss_scale argument is gone: LossScaleOptimizer owns loss "
                     "scaling since TF 2.4.",
                symbols=("tf.keras.mixed_precision.experimental.Policy",
                         "tf.compat.v2.keras.mixed_precision.experimental.Policy"),
                probe=("tf_keras.mixed_precision", "experimental.Policy")),
        LegacyAPI(
                rule="TPC022", api="tf.keras.mixed_precision.experimental.set_policy",
                kind=KIND_SYMBOL, name="set_policy",
                hook=calls(f"{_KERAS_ERA}:set_policy"),
                eras=("2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="tf.keras.mixed_precision.set_global_policy(policy)",
                rewrite=replace_symbol("tf.keras.mixed_precision.set_global_policy"),
                note="Renamed in TF 2.4 with the same argument.",
                symbols=("tf.keras.mixed_precision.experimental.set_policy",
                         "tf.compat.v2.keras.mixed_precision.experimental.set_policy"),
                probe=("tf_keras.mixed_precision", "experimental.set_policy")),
        LegacyAPI(
                rule="TPC023", api="tf.keras.mixed_precision.experimental.global_policy",
                kind=KIND_SYMBOL, name="global_policy",
                hook=calls(f"{_KERAS_ERA}:global_policy"),
                eras=("2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="tf.keras.mixed_precision.global_policy()",
                rewrite=replace_symbol("tf.keras.mixed_precision.global_policy"),
                note="Moved out of experimental in TF 2.4.",
                symbols=("tf.keras.mixed_precision.experimental.global_policy",
                         "tf.compat.v2.keras.mixed_precision.experimental.global_policy"),
                probe=("tf_keras.mixed_precision", "experimental.global_policy")),
        LegacyAPI(
                rule="TPC024",
                api="tf.keras.mixed_precision.experimental.LossScaleOptimizer",
                kind=KIND_SYMBOL, name="LossScaleOptimizer",
                hook=calls(f"{_KERAS_ERA}:LossScaleOptimizer"),
                eras=("2.1", "2.2", "2.3"), removed_in="2.4",
                replacement="tf.keras.mixed_precision.LossScaleOptimizer(optimizer, "
                            "dynamic=..., initial_scale=...)",
                note="loss_scale='dynamic' becomes dynamic=True, a number N becomes "
                     "dynamic=False, initial_scale=N.",
                symbols=("tf.keras.mixed_precision.experimental.LossScaleOptimizer",
                         "tf.compat.v2.keras.mixed_precision.experimental.LossScaleOptimizer"),
                probe=("tf_keras.mixed_precision", "experimental.LossScaleOptimizer")),
        LegacyAPI(
                rule="TPC025", api="tf.keras.mixed_precision.experimental.get_layer_policy",
                kind=KIND_SYMBOL, name="get_layer_policy",
                hook=calls(f"{_KERAS_ERA}:get_layer_policy"),
                eras=("2.3",), removed_in="2.4",
                replacement="layer.dtype_policy",
                note="A layer attribute since TF 2.4.",
                symbols=("tf.keras.mixed_precision.experimental.get_layer_policy",),
                probe=("tf_keras.mixed_precision", "experimental.get_layer_policy")),
        LegacyAPI(
                rule="TPC026", api="tf.keras.experimental.export_saved_model",
                kind=KIND_SYMBOL, name="export_saved_model",
                hook=calls(f"{_KERAS_ERA}:export_saved_model"),
                eras=("1.15", "2.0"), removed_in="2.1",
                replacement="model.save(path, save_format='tf')",
                rewrite=call_to_method("save", "save_format='tf'"),
                note="serving_only=True is include_optimizer=False; as_text has no "
                     "modern argument.",
                symbols=("tf.keras.experimental.export_saved_model",
                         "tf.compat.v1.keras.experimental.export_saved_model"),
                probe=("tf_keras.experimental", "export_saved_model")),
        LegacyAPI(
                rule="TPC027", api="tf.keras.experimental.load_from_saved_model",
                kind=KIND_SYMBOL, name="load_from_saved_model",
                hook=calls(f"{_KERAS_ERA}:load_from_saved_model"),
                eras=("1.15", "2.0"), removed_in="2.1",
                replacement="tf.keras.models.load_model(path, compile=False)",
                note="TF 2.0 returned the model uncompiled.",
                symbols=("tf.keras.experimental.load_from_saved_model",
                         "tf.compat.v1.keras.experimental.load_from_saved_model"),
                probe=("tf_keras.experimental", "load_from_saved_model")),
        LegacyAPI(
                rule="TPC028", api="tf.keras.experimental.CosineDecay",
                kind=KIND_SYMBOL, name="CosineDecay",
                hook=calls(f"{_KERAS_ERA}:CosineDecay.__init__"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="tf.keras.optimizers.schedules.CosineDecay(...)",
                rewrite=replace_symbol("tf.keras.optimizers.schedules.CosineDecay"),
                note="The same class under its TF 2.5+ name.",
                symbols=("tf.keras.experimental.CosineDecay",)),
        LegacyAPI(
                rule="TPC029", api="tf.keras.experimental.CosineDecayRestarts",
                kind=KIND_SYMBOL, name="CosineDecayRestarts",
                hook=calls(f"{_KERAS_ERA}:CosineDecayRestarts.__init__"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="tf.keras.optimizers.schedules.CosineDecayRestarts(...)",
                rewrite=replace_symbol("tf.keras.optimizers.schedules.CosineDecayRestarts"),
                note="The same class under its TF 2.5+ name.",
                symbols=("tf.keras.experimental.CosineDecayRestarts",)),
        LegacyAPI(
                rule="TPC030", api="tf.keras.experimental.LinearCosineDecay",
                kind=KIND_SYMBOL, name="LinearCosineDecay",
                hook=calls(f"{_KERAS_ERA}:LinearCosineDecay.__init__"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in="2.5",
                replacement="tf_keras.src.optimizers.schedules.learning_rate_schedule."
                            "LinearCosineDecay (no public name)",
                note="tf_keras keeps the class but exports it nowhere.",
                symbols=("tf.keras.experimental.LinearCosineDecay",),
                probe=("tf_keras.experimental", "LinearCosineDecay")),
        LegacyAPI(
                rule="TPC031", api="tf.keras.experimental.NoisyLinearCosineDecay",
                kind=KIND_SYMBOL, name="NoisyLinearCosineDecay",
                hook=calls(f"{_KERAS_ERA}:NoisyLinearCosineDecay.__init__"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in="2.5",
                replacement="tf_keras.src.optimizers.schedules.learning_rate_schedule."
                            "NoisyLinearCosineDecay (no public name)",
                note="tf_keras keeps the class but exports it nowhere.",
                symbols=("tf.keras.experimental.NoisyLinearCosineDecay",),
                probe=("tf_keras.experimental", "NoisyLinearCosineDecay")),
        LegacyAPI(
                rule="TPC032", api="tf.keras.experimental.PeepholeLSTMCell",
                kind=KIND_SYMBOL, name="PeepholeLSTMCell",
                hook=calls(f"{_KERAS_ERA}:PeepholeLSTMCell.__init__"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in="2.6",
                replacement="tf.keras.layers.LSTMCell (no peephole connections)",
                note="No exact equivalent: using it raises LegacyKerasAPIError naming it.",
                symbols=("tf.keras.experimental.PeepholeLSTMCell",),
                probe=("tf_keras.experimental", "PeepholeLSTMCell")),
        LegacyAPI(
                rule="TPC033",
                api="tf.keras.experimental.terminate_keras_multiprocessing_pools",
                kind=KIND_SYMBOL, name="terminate_keras_multiprocessing_pools",
                hook=calls(f"{_KERAS_ERA}:terminate_keras_multiprocessing_pools"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in="2.6",
                replacement="nothing (tf_keras manages its worker pools)",
                note="No equivalent: using it raises LegacyKerasAPIError naming it.",
                symbols=("tf.keras.experimental.terminate_keras_multiprocessing_pools",),
                probe=("tf_keras.experimental", "terminate_keras_multiprocessing_pools")),
        LegacyAPI(
                rule="TPC034", api="tf.config.experimental_connect_to_host",
                kind=KIND_SYMBOL, name="experimental_connect_to_host",
                hook=calls(f"{_DEVICES}:connect_to_host"),
                eras=("2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="tf.config.experimental_connect_to_cluster(resolver)",
                note="On the emulated TPU the host is this process: connecting is a "
                     "no-op and '/job:worker' names this host's CPU.",
                symbols=("tf.config.experimental_connect_to_host",),
                probe=("tensorflow.python.eager.remote", "connect_to_remote_host")),
        # -- TF 1.x low-level TPU API and the tf.contrib TPU names (TPC040-TPC069).
        # Run-time hooks: tpu_compat/lowlevel/ (TPC040-TPC050) and
        # tpu_compat/contrib/ (TPC051-TPC069, warned when the contrib name is read).
        LegacyAPI(
                rule="TPC040", api="tf.compat.v1.tpu.replicate",
                kind=KIND_SYMBOL, name="replicate",
                hook=calls(f"{_LOW_LEVEL}:replicate"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.TPUStrategy(resolver).run(fn, args=...)",
                note="Per-replica outputs become PerReplica values; variables move into strategy.scope().",
                symbols=("tf.compat.v1.tpu.replicate",),
                probe=("tensorflow.python.tpu.tpu", "replicate")),
        LegacyAPI(
                rule="TPC041", api="tf.compat.v1.tpu.rewrite",
                kind=KIND_SYMBOL, name="rewrite",
                hook=calls(f"{_LOW_LEVEL}:rewrite"),
                eras=("1.15",), removed_in=None,
                replacement="tf.function(fn) run under tf.distribute.TPUStrategy",
                note="One-core computations run as a tf.function on the TPU strategy.",
                symbols=("tf.compat.v1.tpu.rewrite",),
                probe=("tensorflow.python.tpu.tpu", "rewrite")),
        LegacyAPI(
                rule="TPC042", api="tf.compat.v1.tpu.cross_replica_sum",
                kind=KIND_SYMBOL, name="cross_replica_sum",
                hook=calls(f"{_LOW_LEVEL}:cross_replica_sum"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, x)",
                note="group_assignment has no all_reduce equivalent.",
                symbols=("tf.compat.v1.tpu.cross_replica_sum",),
                probe=("tensorflow.python.tpu.ops.tpu_ops", "cross_replica_sum")),
        LegacyAPI(
                rule="TPC043", api="tf.compat.v1.tpu.CrossShardOptimizer",
                kind=KIND_SYMBOL, name="CrossShardOptimizer",
                hook=calls(f"{_LOW_LEVEL}:CrossShardOptimizer.__init__"),
                eras=("1.15",), removed_in=None,
                replacement="a tf.keras optimizer under tf.distribute.TPUStrategy (it sums gradients across replicas)",
                note="Keras optimizers aggregate across replicas themselves; scale the loss by the global batch.",
                symbols=("tf.compat.v1.tpu.CrossShardOptimizer",),
                probe=("tensorflow.python.tpu.tpu_optimizer", "CrossShardOptimizer")),
        LegacyAPI(
                rule="TPC044", api="tf.compat.v1.tpu.shard",
                kind=KIND_SYMBOL, name="shard",
                hook=calls(f"{_LOW_LEVEL}:shard"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.TPUStrategy.run over a distributed dataset",
                note="Splitting and concatenating along axes becomes the input pipeline's job.",
                symbols=("tf.compat.v1.tpu.shard",),
                probe=("tensorflow.python.tpu.tpu", "shard")),
        LegacyAPI(
                rule="TPC045", api="tf.compat.v1.tpu.batch_parallel",
                kind=KIND_SYMBOL, name="batch_parallel",
                hook=calls(f"{_LOW_LEVEL}:batch_parallel"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.TPUStrategy.run over a distributed dataset",
                note="Splitting the batch becomes the input pipeline's job.",
                symbols=("tf.compat.v1.tpu.batch_parallel",),
                probe=("tensorflow.python.tpu.tpu", "batch_parallel")),
        LegacyAPI(
                rule="TPC046", api="tf.compat.v1.tpu.outside_compilation",
                kind=KIND_SYMBOL, name="outside_compilation",
                hook=calls(f"{_LOW_LEVEL}:outside_compilation"),
                eras=("1.15",), removed_in=None,
                replacement="tf.distribute.TPUStrategy with soft device placement, or the host side of the loop",
                note="TF2 TPUStrategy places unsupported ops on the host automatically.",
                symbols=("tf.compat.v1.tpu.outside_compilation",),
                probe=("tensorflow.python.tpu.tpu_replication", "outside_compilation")),
        LegacyAPI(
                rule="TPC047", api="tf.compat.v1.tpu.core",
                kind=KIND_SYMBOL, name="core",
                hook=calls(f"{_LOW_LEVEL}:core"),
                eras=("1.15",), removed_in=None,
                replacement="strategy.experimental_assign_to_logical_device(tensor, core)",
                note="Model parallelism moved to logical-device annotations.",
                symbols=("tf.compat.v1.tpu.core",),
                probe=("tensorflow.python.tpu.tpu_name_util", "core")),
        LegacyAPI(
                rule="TPC048", api="tf.compat.v1.tpu.bfloat16_scope",
                kind=KIND_SYMBOL, name="bfloat16_scope",
                hook=calls(f"{_LOW_LEVEL}:bfloat16_scope"),
                eras=("1.15",), removed_in=None,
                replacement="tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')",
                note="Keras mixed precision keeps float32 variables and computes in bfloat16.",
                symbols=("tf.compat.v1.tpu.bfloat16_scope",),
                probe=("tensorflow.python.tpu.bfloat16", "bfloat16_scope")),
        LegacyAPI(
                rule="TPC049", api="tf.compat.v1.tpu.initialize_system",
                kind=KIND_SYMBOL, name="initialize_system",
                hook=calls(f"{_LOW_LEVEL}:initialize_system"),
                eras=("1.15",), removed_in=None,
                replacement="tf.tpu.experimental.initialize_tpu_system(resolver)",
                note="The graph-mode op became an eager call before building the strategy.",
                symbols=("tf.compat.v1.tpu.initialize_system",),
                probe=("tensorflow.python.tpu.tpu", "initialize_system")),
        LegacyAPI(
                rule="TPC050", api="tf.compat.v1.tpu.shutdown_system",
                kind=KIND_SYMBOL, name="shutdown_system",
                hook=calls(f"{_LOW_LEVEL}:shutdown_system"),
                eras=("1.15",), removed_in=None,
                replacement="tf.tpu.experimental.shutdown_tpu_system(resolver)",
                note="The graph-mode op became an eager call.",
                symbols=("tf.compat.v1.tpu.shutdown_system",),
                probe=("tensorflow.python.tpu.tpu", "shutdown_system")),
        LegacyAPI(
                rule="TPC051", api="tf.contrib.tpu.replicate / tf.tpu.replicate",
                kind=KIND_SYMBOL, name="replicate",
                hook=reads(f"{_CONTRIB}:ContribTPU.replicate"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.replicate(computation, inputs)",
                rewrite=replace_symbol("tf.compat.v1.tpu.replicate"),
                note="TF 1.x spellings of tf.compat.v1.tpu.replicate: same object.",
                symbols=("tf.contrib.tpu.replicate", "tf.tpu.replicate")),
        LegacyAPI(
                rule="TPC052", api="tf.contrib.tpu.rewrite / tf.tpu.rewrite",
                kind=KIND_SYMBOL, name="rewrite",
                hook=reads(f"{_CONTRIB}:ContribTPU.rewrite"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.rewrite(computation, inputs)",
                rewrite=replace_symbol("tf.compat.v1.tpu.rewrite"),
                note="TF 1.x spellings of tf.compat.v1.tpu.rewrite: same object.",
                symbols=("tf.contrib.tpu.rewrite", "tf.tpu.rewrite")),
        LegacyAPI(
                rule="TPC053", api="tf.contrib.tpu.cross_replica_sum / tf.tpu.cross_replica_sum",
                kind=KIND_SYMBOL, name="cross_replica_sum",
                hook=reads(f"{_CONTRIB}:ContribTPU.cross_replica_sum"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.cross_replica_sum(x)",
                rewrite=replace_symbol("tf.compat.v1.tpu.cross_replica_sum"),
                note="TF 1.x spellings of tf.compat.v1.tpu.cross_replica_sum: same object.",
                symbols=("tf.contrib.tpu.cross_replica_sum", "tf.tpu.cross_replica_sum")),
        LegacyAPI(
                rule="TPC054", api="tf.contrib.tpu.CrossShardOptimizer / tf.tpu.CrossShardOptimizer",
                kind=KIND_SYMBOL, name="CrossShardOptimizer",
                hook=reads(f"{_CONTRIB}:ContribTPU.CrossShardOptimizer"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.CrossShardOptimizer(opt)",
                rewrite=replace_symbol("tf.compat.v1.tpu.CrossShardOptimizer"),
                note="TF 1.x spellings of tf.compat.v1.tpu.CrossShardOptimizer: same object.",
                symbols=("tf.contrib.tpu.CrossShardOptimizer", "tf.tpu.CrossShardOptimizer")),
        LegacyAPI(
                rule="TPC055", api="tf.contrib.tpu.shard / tf.tpu.shard",
                kind=KIND_SYMBOL, name="shard",
                hook=reads(f"{_CONTRIB}:ContribTPU.shard"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.shard(computation, inputs)",
                rewrite=replace_symbol("tf.compat.v1.tpu.shard"),
                note="TF 1.x spellings of tf.compat.v1.tpu.shard: same object.",
                symbols=("tf.contrib.tpu.shard", "tf.tpu.shard")),
        LegacyAPI(
                rule="TPC056", api="tf.contrib.tpu.batch_parallel / tf.tpu.batch_parallel",
                kind=KIND_SYMBOL, name="batch_parallel",
                hook=reads(f"{_CONTRIB}:ContribTPU.batch_parallel"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.batch_parallel(computation, inputs)",
                rewrite=replace_symbol("tf.compat.v1.tpu.batch_parallel"),
                note="TF 1.x spellings of tf.compat.v1.tpu.batch_parallel: same object.",
                symbols=("tf.contrib.tpu.batch_parallel", "tf.tpu.batch_parallel")),
        LegacyAPI(
                rule="TPC057", api="tf.contrib.tpu.outside_compilation / tf.tpu.outside_compilation",
                kind=KIND_SYMBOL, name="outside_compilation",
                hook=reads(f"{_CONTRIB}:ContribTPU.outside_compilation"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.outside_compilation(computation)",
                rewrite=replace_symbol("tf.compat.v1.tpu.outside_compilation"),
                note="TF 1.x spellings of tf.compat.v1.tpu.outside_compilation: same object.",
                symbols=("tf.contrib.tpu.outside_compilation", "tf.tpu.outside_compilation")),
        LegacyAPI(
                rule="TPC058", api="tf.contrib.tpu.core / tf.tpu.core",
                kind=KIND_SYMBOL, name="core",
                hook=reads(f"{_CONTRIB}:ContribTPU.core"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.core(num)",
                rewrite=replace_symbol("tf.compat.v1.tpu.core"),
                note="TF 1.x spellings of tf.compat.v1.tpu.core: same object.",
                symbols=("tf.contrib.tpu.core", "tf.tpu.core")),
        LegacyAPI(
                rule="TPC059", api="tf.contrib.tpu.bfloat16_scope / tf.tpu.bfloat16_scope",
                kind=KIND_SYMBOL, name="bfloat16_scope",
                hook=reads(f"{_CONTRIB}:ContribTPU.bfloat16_scope"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.bfloat16_scope()",
                rewrite=replace_symbol("tf.compat.v1.tpu.bfloat16_scope"),
                note="TF 1.x spellings of tf.compat.v1.tpu.bfloat16_scope: same object.",
                symbols=("tf.contrib.tpu.bfloat16_scope", "tf.tpu.bfloat16_scope")),
        LegacyAPI(
                rule="TPC060", api="tf.contrib.tpu.initialize_system / tf.tpu.initialize_system",
                kind=KIND_SYMBOL, name="initialize_system",
                hook=reads(f"{_CONTRIB}:ContribTPU.initialize_system"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.initialize_system()",
                rewrite=replace_symbol("tf.compat.v1.tpu.initialize_system"),
                note="TF 1.x spellings of tf.compat.v1.tpu.initialize_system: same object.",
                symbols=("tf.contrib.tpu.initialize_system", "tf.tpu.initialize_system")),
        LegacyAPI(
                rule="TPC061", api="tf.contrib.tpu.shutdown_system / tf.tpu.shutdown_system",
                kind=KIND_SYMBOL, name="shutdown_system",
                hook=reads(f"{_CONTRIB}:ContribTPU.shutdown_system"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.tpu.shutdown_system()",
                rewrite=replace_symbol("tf.compat.v1.tpu.shutdown_system"),
                note="TF 1.x spellings of tf.compat.v1.tpu.shutdown_system: same object.",
                symbols=("tf.contrib.tpu.shutdown_system", "tf.tpu.shutdown_system")),
        LegacyAPI(
                rule="TPC062", api="tf.contrib.distribute.TPUStrategy",
                kind=KIND_SYMBOL, name="TPUStrategy",
                hook=reads(f"{_CONTRIB}:ContribDistribute.TPUStrategy"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.distribute.experimental.TPUStrategy(tpu_cluster_resolver)",
                rewrite=replace_symbol("tf.compat.v1.distribute.experimental.TPUStrategy"),
                note="The TF 1.12-1.14 name of the compat.v1 TPUStrategy (steps_per_run included).",
                symbols=("tf.contrib.distribute.TPUStrategy",)),
        LegacyAPI(
                rule="TPC063", api="tf.contrib.cluster_resolver.TPUClusterResolver",
                kind=KIND_SYMBOL, name="TPUClusterResolver",
                hook=reads(f"{_CONTRIB}:ContribClusterResolver.TPUClusterResolver"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.cluster_resolver.TPUClusterResolver(tpu)",
                rewrite=replace_symbol("tf.distribute.cluster_resolver.TPUClusterResolver"),
                note="Moved out of contrib in TF 1.14, same class.",
                symbols=("tf.contrib.cluster_resolver.TPUClusterResolver",)),
        LegacyAPI(
                rule="TPC064", api="tf.contrib.data.map_and_batch",
                kind=KIND_SYMBOL, name="map_and_batch",
                hook=reads(f"{_CONTRIB}:ContribData.map_and_batch"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.data.experimental.map_and_batch(map_func, batch_size)",
                rewrite=replace_symbol("tf.data.experimental.map_and_batch"),
                note="Same function since TF 1.13.",
                symbols=("tf.contrib.data.map_and_batch",)),
        LegacyAPI(
                rule="TPC065", api="tf.contrib.data.parallel_interleave",
                kind=KIND_SYMBOL, name="parallel_interleave",
                hook=reads(f"{_CONTRIB}:ContribData.parallel_interleave"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.data.experimental.parallel_interleave(map_func, cycle_length)",
                rewrite=replace_symbol("tf.data.experimental.parallel_interleave"),
                note="Same function since TF 1.13.",
                symbols=("tf.contrib.data.parallel_interleave",)),
        LegacyAPI(
                rule="TPC066", api="tf.contrib.data.shuffle_and_repeat",
                kind=KIND_SYMBOL, name="shuffle_and_repeat",
                hook=reads(f"{_CONTRIB}:ContribData.shuffle_and_repeat"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.data.experimental.shuffle_and_repeat(buffer_size)",
                rewrite=replace_symbol("tf.data.experimental.shuffle_and_repeat"),
                note="Same function since TF 1.13.",
                symbols=("tf.contrib.data.shuffle_and_repeat",)),
        LegacyAPI(
                rule="TPC067", api="tf.contrib.layers.layer_norm",
                kind=KIND_SYMBOL, name="layer_norm",
                hook=reads(f"{_CONTRIB}:ContribLayers.layer_norm"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.keras.layers.LayerNormalization (its variables are "
                                        "named differently: convert checkpoints)",
                note="tpu_compat keeps the contrib variable names LayerNorm/beta and "
                          "LayerNorm/gamma so pretrained checkpoints load.",
                symbols=("tf.contrib.layers.layer_norm",)),
        LegacyAPI(
                rule="TPC068", api="tf.contrib.training.HParams",
                kind=KIND_SYMBOL, name="HParams",
                hook=reads(f"{_CONTRIB}:ContribTraining.HParams"),
                eras=("1.15",), removed_in="2.0",
                replacement="a dict, dataclass or absl flags",
                note="TensorFlow has no successor; tpu_compat provides the class.",
                symbols=("tf.contrib.training.HParams",)),
        LegacyAPI(
                rule="TPC069", api="tf.contrib.layers.xavier_initializer / tf.contrib.slim.xavier_initializer",
                kind=KIND_SYMBOL, name="xavier_initializer",
                hook=reads(f"{_CONTRIB}:ContribLayers.xavier_initializer",
                           f"{_CONTRIB}:ContribSlim.xavier_initializer"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.compat.v1.glorot_uniform_initializer() (the uniform=True "
                                        "default; same numbers for the same seed)",
                note="uniform=False has no exact TF 2 equivalent (its normal is scaled "
                          "by 1.3, glorot_normal's by 1/0.8796^2).",
                symbols=("tf.contrib.layers.xavier_initializer",
                         "tf.contrib.slim.xavier_initializer")),
        # -- TPC070-TPC089: tf.estimator and TPUEstimator (tpu_compat.estimator) ----
        # TF 2.16 removed tf.estimator; tensorflow-estimator 2.15 does not import
        # on TF 2.21, so each probe asks for the old package and finds nothing.
        LegacyAPI(
                rule="TPC070", api="tf.compat.v1.estimator.tpu.TPUEstimator",
                kind=KIND_SYMBOL, name="TPUEstimator", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST_TPU}.estimator:TPUEstimator.__init__"),
                removed_in="2.16", replacement=_TPU_ESTIMATOR_MIGRATION,
                note="No mechanical TF 2 rewrite: model_fn, input_fn and the "
                          "iterations_per_loop loop must be restructured by hand.",
                symbols=("tf.estimator.tpu.TPUEstimator",
                                  "tf.compat.v1.estimator.tpu.TPUEstimator",
                                  "tf.contrib.tpu.TPUEstimator"),
                probe=(_TPU_ESTIMATOR, "TPUEstimator")),
        LegacyAPI(
                rule="TPC071", api="tf.compat.v1.estimator.tpu.TPUEstimatorSpec",
                kind=KIND_SYMBOL, name="TPUEstimatorSpec", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST_TPU}.spec:TPUEstimatorSpec.__new__"),
                removed_in="2.16",
                replacement="the return values of your strategy.run step function "
                                        "(loss, metrics via tf.keras.metrics)",
                note="Goes with the TPUEstimator migration (TPC070).",
                symbols=("tf.estimator.tpu.TPUEstimatorSpec",
                                  "tf.compat.v1.estimator.tpu.TPUEstimatorSpec",
                                  "tf.contrib.tpu.TPUEstimatorSpec"),
                probe=(_TPU_ESTIMATOR, "TPUEstimatorSpec")),
        LegacyAPI(
                rule="TPC072", api="tf.compat.v1.estimator.tpu.RunConfig",
                kind=KIND_SYMBOL, name="RunConfig", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST_TPU}.config:RunConfig.__init__"),
                removed_in="2.16",
                replacement="tf.distribute.TPUStrategy(resolver) plus "
                                        "tf.train.CheckpointManager(max_to_keep=...) for "
                                        "checkpoints",
                note="Its settings move to the strategy, the checkpoint manager and "
                          "the training loop.",
                symbols=("tf.estimator.tpu.RunConfig", "tf.compat.v1.estimator.tpu.RunConfig",
                                  "tf.contrib.tpu.RunConfig"),
                probe=(_TPU_CONFIG, "RunConfig")),
        LegacyAPI(
                rule="TPC073", api="tf.compat.v1.estimator.tpu.TPUConfig",
                kind=KIND_SYMBOL, name="TPUConfig", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST_TPU}.config:TPUConfig.__new__"),
                removed_in="2.16",
                replacement="compile(steps_per_execution=iterations_per_loop) in Keras, "
                                        "or a tf.function looping iterations_per_loop steps",
                note="iterations_per_loop becomes steps_per_execution.",
                symbols=("tf.estimator.tpu.TPUConfig", "tf.compat.v1.estimator.tpu.TPUConfig",
                                  "tf.contrib.tpu.TPUConfig"),
                probe=(_TPU_CONFIG, "TPUConfig")),
        LegacyAPI(
                rule="TPC074", api="tf.compat.v1.estimator.tpu.InputPipelineConfig",
                kind=KIND_SYMBOL, name="InputPipelineConfig", eras=_ESTIMATOR_ERAS,
                hook=reads(f"{_EST_TPU}:InputPipelineConfig"),
                removed_in="2.16",
                replacement="strategy.distribute_datasets_from_function(dataset_fn) "
                                        "(per host) or strategy.experimental_distribute_dataset",
                note="PER_HOST_V2 corresponds to distribute_datasets_from_function with "
                          "InputContext.get_per_replica_batch_size.",
                symbols=("tf.estimator.tpu.InputPipelineConfig",
                                  "tf.compat.v1.estimator.tpu.InputPipelineConfig",
                                  "tf.contrib.tpu.InputPipelineConfig"),
                probe=(_TPU_CONFIG, "InputPipelineConfig")),
        LegacyAPI(
                rule="TPC075", api="tf.estimator.Estimator",
                kind=KIND_SYMBOL, name="Estimator", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.estimator:Estimator.__init__"),
                removed_in="2.16",
                replacement="a Keras model with fit/evaluate/predict, or a custom "
                                        "training loop with tf.train.Checkpoint",
                note="model_fn-based Estimators have no mechanical TF 2 rewrite.",
                symbols=("tf.estimator.Estimator", "tf.compat.v1.estimator.Estimator"),
                probe=(_ESTIMATOR, "Estimator")),
        LegacyAPI(
                rule="TPC076", api="tf.estimator.EstimatorSpec",
                kind=KIND_SYMBOL, name="EstimatorSpec", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}._spec:EstimatorSpec.__new__"),
                removed_in="2.16",
                replacement="the return values of a Keras train_step or of your "
                                        "training step function",
                note="Goes with the Estimator migration (TPC075).",
                symbols=("tf.estimator.EstimatorSpec", "tf.compat.v1.estimator.EstimatorSpec"),
                probe=(_MODEL_FN, "EstimatorSpec")),
        LegacyAPI(
                rule="TPC077", api="tf.estimator.RunConfig",
                kind=KIND_SYMBOL, name="RunConfig", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.run_config:RunConfig.__init__"),
                removed_in="2.16",
                replacement="tf.train.CheckpointManager and Keras callbacks "
                                        "(ModelCheckpoint, TensorBoard)",
                note="Checkpoint and summary cadence move to the training loop.",
                symbols=("tf.estimator.RunConfig", "tf.compat.v1.estimator.RunConfig"),
                probe=(_RUN_CONFIG, "RunConfig")),
        LegacyAPI(
                rule="TPC078", api="tf.estimator.ModeKeys",
                kind=KIND_SYMBOL, name="ModeKeys", eras=_ESTIMATOR_ERAS,
                hook=reads(f"{_EST}:ModeKeys"),
                removed_in="2.16",
                replacement="a `training` flag of your model call (Keras passes "
                                        "training=True/False)",
                note="Goes with the Estimator migration (TPC075).",
                symbols=("tf.estimator.ModeKeys", "tf.compat.v1.estimator.ModeKeys"),
                probe=(_MODEL_FN, "ModeKeys")),
        LegacyAPI(
                rule="TPC079", api="tf.estimator.export.ServingInputReceiver",
                kind=KIND_SYMBOL, name="ServingInputReceiver", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.export:ServingInputReceiver.__new__"),
                removed_in="2.16",
                replacement="tf.saved_model.save(module, signatures=tf.function(...)"
                                        ".get_concrete_function(tf.TensorSpec(...)))",
                note="Serving signatures become tf.function signatures.",
                symbols=("tf.estimator.export.ServingInputReceiver",
                                  "tf.compat.v1.estimator.export.ServingInputReceiver"),
                probe=(_EXPORT, "ServingInputReceiver")),
        LegacyAPI(
                rule="TPC080", api="tf.estimator.export.build_raw_serving_input_receiver_fn",
                kind=KIND_SYMBOL, name="build_raw_serving_input_receiver_fn",
                hook=calls(f"{_EST}.export:build_raw_serving_input_receiver_fn"),
                eras=_ESTIMATOR_ERAS, removed_in="2.16",
                replacement="a tf.function with an input_signature of tf.TensorSpec, "
                                        "saved with tf.saved_model.save",
                note="The receiver's placeholders become the signature's TensorSpecs.",
                symbols=("tf.estimator.export.build_raw_serving_input_receiver_fn",
                                  "tf.compat.v1.estimator.export."
                                  "build_raw_serving_input_receiver_fn"),
                probe=(_EXPORT, "build_raw_serving_input_receiver_fn")),
        LegacyAPI(
                rule="TPC081",
                api="tf.estimator.export.build_parsing_serving_input_receiver_fn",
                kind=KIND_SYMBOL, name="build_parsing_serving_input_receiver_fn",
                hook=calls(f"{_EST}.export:build_parsing_serving_input_receiver_fn"),
                eras=_ESTIMATOR_ERAS, removed_in="2.16",
                replacement="a tf.function taking serialized tf.Example strings that "
                                        "calls tf.io.parse_example, saved with "
                                        "tf.saved_model.save",
                note="Same parsing, inside the serving function.",
                symbols=("tf.estimator.export.build_parsing_serving_input_receiver_fn",
                                  "tf.compat.v1.estimator.export."
                                  "build_parsing_serving_input_receiver_fn"),
                probe=(_EXPORT, "build_parsing_serving_input_receiver_fn")),
        LegacyAPI(
                rule="TPC082", api="tf.estimator.export.PredictOutput",
                kind=KIND_SYMBOL, name="PredictOutput", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.export:PredictOutput.__init__"),
                removed_in="2.16",
                replacement="the dict a serving tf.function returns",
                note="Signature outputs are the serving function's return value.",
                symbols=("tf.estimator.export.PredictOutput",
                                  "tf.compat.v1.estimator.export.PredictOutput"),
                probe=(_EXPORT, "PredictOutput")),
        LegacyAPI(
                rule="TPC083", api="Estimator.export_savedmodel",
                kind=KIND_METHOD, name="export_savedmodel", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.estimator:Estimator.export_savedmodel"),
                removed_in="2.16",
                replacement="estimator.export_saved_model(export_dir_base, "
                                        "serving_input_receiver_fn)",
                note="Renamed in TF 1.13; tf.estimator.Estimator dropped the old name in "
                          "TF 2.0, the compat.v1 Estimators and TPUEstimator kept it until "
                          "tf.estimator went. The new name has no strip_default_attrs "
                          "argument, so the call is left for a person to check.",
                probe=(_ESTIMATOR, "Estimator.export_savedmodel")),
        LegacyAPI(
                rule="TPC084", api="tf.estimator canned estimators (DNNClassifier, ...)",
                kind=KIND_SYMBOL, name="DNNClassifier", eras=_ESTIMATOR_ERAS,
                hook=calls(*(f"{_EST}:{name}" for name in _CANNED)),
                removed_in="2.16",
                replacement="a Keras model (tf.keras.Sequential of Dense layers for "
                                        "DNN*, one Dense layer for Linear*)",
                note="tpu_compat does not provide canned estimators; calling one raises.",
                symbols=tuple(f"{ns}.{name}" for ns in ("tf.estimator",
                                                        "tf.compat.v1.estimator")
                                          for name in _CANNED),
                probe=("tensorflow_estimator.python.estimator.canned.dnn",
                              "DNNClassifier")),
        LegacyAPI(
                rule="TPC085", api="tf.estimator.train_and_evaluate",
                kind=KIND_SYMBOL, name="train_and_evaluate", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.unsupported:train_and_evaluate"),
                removed_in="2.16",
                replacement="model.fit(..., validation_data=...) or a custom loop that "
                                        "evaluates between epochs; "
                                        "tf.distribute.MultiWorkerMirroredStrategy for clusters",
                note="Runs in one process; across a TF_CONFIG cluster it raises.",
                symbols=("tf.estimator.train_and_evaluate",
                                  "tf.compat.v1.estimator.train_and_evaluate",
                                  "tf.estimator.TrainSpec", "tf.estimator.EvalSpec",
                                  "tf.compat.v1.estimator.TrainSpec",
                                  "tf.compat.v1.estimator.EvalSpec"),
                probe=(_TRAINING, "train_and_evaluate")),
        LegacyAPI(
                rule="TPC086", api="tf.estimator session-run hooks (SessionRunHook, ...)",
                kind=KIND_SYMBOL, name="SessionRunHook", eras=_ESTIMATOR_ERAS,
                hook=reads(*(f"{_EST}:{name}" for name in _SESSION_RUN_HOOKS)),
                removed_in="2.16",
                replacement="tf.keras.callbacks.Callback, or logic in your training "
                                        "loop",
                note="tf.compat.v1.train keeps the hooks for graph-mode sessions.",
                symbols=tuple(f"{ns}.{name}" for ns in ("tf.estimator",
                                                        "tf.compat.v1.estimator")
                                          for name in ("SessionRunHook", "LoggingTensorHook",
                                                       "StopAtStepHook", "CheckpointSaverHook",
                                                       "SessionRunArgs")),
                probe=("tensorflow_estimator.python.estimator.hooks.hooks",
                              "SessionRunHook")),
        LegacyAPI(
                rule="TPC087", api="tf.estimator.WarmStartSettings",
                kind=KIND_SYMBOL, name="WarmStartSettings", eras=_ESTIMATOR_ERAS,
                hook=calls(f"{_EST}.estimator:WarmStartSettings.__new__"),
                removed_in="2.16",
                replacement="tf.train.Checkpoint(...).restore(path) of the variables "
                                        "to warm-start",
                note="Goes with the Estimator migration (TPC075).",
                symbols=("tf.estimator.WarmStartSettings",
                                  "tf.compat.v1.estimator.WarmStartSettings"),
                probe=(_ESTIMATOR, "WarmStartSettings")),
        # -- TPC100-TPC139: the tf.contrib names TPU programs use (docs/contrib_survey.md);
        #    served by tpu_compat/contrib/ and warned when the name is read.
        LegacyAPI(
                rule="TPC100", api="tensorflow.contrib imports",
                kind=KIND_SYMBOL, name="contrib",
                hook=imports("tensorflow.contrib"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement="the TF 2 name of each contrib name used (docs/migration.md)",
                rewrite=drop_import(),
                note="Where a TF 1.x program first stops on TF 2. Under tpu-compat run the "
                     "names tpu_compat serves import; scan reports every such import."),
        LegacyAPI(
                rule="TPC101", api="tf.contrib.data.AUTOTUNE",
                kind=KIND_SYMBOL, name="AUTOTUNE",
                hook=reads(f"{_CONTRIB}:ContribData.AUTOTUNE"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.data.AUTOTUNE (tf.data.experimental.AUTOTUNE before TF 2.4)',
                rewrite=replace_symbol('tf.data.AUTOTUNE'),
                note='The same constant (-1).',
                symbols=('tf.contrib.data.AUTOTUNE',)),
        LegacyAPI(
                rule="TPC102", api="tf.contrib.data.batch_and_drop_remainder",
                kind=KIND_SYMBOL, name="batch_and_drop_remainder",
                hook=reads(f"{_CONTRIB}:ContribData.batch_and_drop_remainder"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='dataset.batch(batch_size, drop_remainder=True)',
                note='A Dataset.apply transformation; tpu_compat gives the one-line wrapper.',
                symbols=('tf.contrib.data.batch_and_drop_remainder',)),
        LegacyAPI(
                rule="TPC103", api="tf.contrib.data.make_csv_dataset",
                kind=KIND_SYMBOL, name="make_csv_dataset",
                hook=reads(f"{_CONTRIB}:ContribData.make_csv_dataset"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.data.experimental.make_csv_dataset(file_pattern, batch_size)',
                rewrite=replace_symbol('tf.compat.v1.data.experimental.make_csv_dataset'),
                note="contrib's was the deprecated alias of the v1 function.",
                symbols=('tf.contrib.data.make_csv_dataset',)),
        LegacyAPI(
                rule="TPC104", api="tf.contrib.keras",
                kind=KIND_SYMBOL, name="keras",
                hook=reads(f"{_CONTRIB}:_ContribModule.keras"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.keras (tf_keras, Keras 2, with TF_USE_LEGACY_KERAS=1)',
                note="The TF 1.4-1.14 alias of tf.keras; under tpu_compat it is the program's compat.v1 tf.keras. Not rewritten: plain TF 2.21 gives Keras 3 there unless TF_USE_LEGACY_KERAS=1.",
                symbols=('tf.contrib.keras',)),
        LegacyAPI(
                rule="TPC105", api="tf.contrib.distribute.initialize_tpu_system",
                kind=KIND_SYMBOL, name="initialize_tpu_system",
                hook=reads(f"{_CONTRIB}:ContribDistribute.initialize_tpu_system"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.tpu.experimental.initialize_tpu_system(resolver)',
                rewrite=replace_symbol('tf.tpu.experimental.initialize_tpu_system'),
                note='TF 1.13/1.14 Colab bring-up; the same function and argument in TF 2.21.',
                symbols=('tf.contrib.distribute.initialize_tpu_system',)),
        LegacyAPI(
                rule="TPC106", api="tf.contrib.distribute.OneDeviceStrategy",
                kind=KIND_SYMBOL, name="OneDeviceStrategy",
                hook=reads(f"{_CONTRIB}:ContribDistribute.OneDeviceStrategy"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.distribute.OneDeviceStrategy(device)',
                rewrite=replace_symbol('tf.compat.v1.distribute.OneDeviceStrategy'),
                note='The same class (the V1 API, as TF 1.x programs used it).',
                symbols=('tf.contrib.distribute.OneDeviceStrategy',)),
        LegacyAPI(
                rule="TPC107", api="tf.contrib.cluster_resolver.TFConfigClusterResolver",
                kind=KIND_SYMBOL, name="TFConfigClusterResolver",
                hook=reads(f"{_CONTRIB}:ContribClusterResolver.TFConfigClusterResolver"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.distribute.cluster_resolver.TFConfigClusterResolver()',
                rewrite=replace_symbol('tf.distribute.cluster_resolver.TFConfigClusterResolver'),
                note='Moved out of contrib in TF 1.14, same class.',
                symbols=('tf.contrib.cluster_resolver.TFConfigClusterResolver',)),
        LegacyAPI(
                rule="TPC108", api="tf.contrib.tpu.Topology",
                kind=KIND_SYMBOL, name="Topology",
                hook=reads(f"{_CONTRIB}:ContribTPU.Topology"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.tpu.experimental.Topology(serialized=...)',
                rewrite=replace_symbol('tf.tpu.experimental.Topology'),
                note='The same class.',
                symbols=('tf.contrib.tpu.Topology',)),
        LegacyAPI(
                rule="TPC109", api="tf.contrib.cloud.configure_gcs",
                kind=KIND_SYMBOL, name="configure_gcs",
                hook=reads(f"{_CONTRIB}:ContribCloud.configure_gcs"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement="nothing: TF 2 TPU VMs and the emulated TPU read GCS with the host's own credentials",
                note='On the emulated TPU the call checks its arguments, warns and sends nothing.',
                symbols=('tf.contrib.cloud.configure_gcs',)),
        LegacyAPI(
                rule="TPC110", api="tf.contrib.layers.l2_regularizer / tf.contrib.slim.l2_regularizer",
                kind=KIND_SYMBOL, name="l2_regularizer",
                hook=reads(f"{_CONTRIB}:ContribLayers.l2_regularizer",
                           f"{_CONTRIB}:ContribSlim.l2_regularizer"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='lambda w: scale * tf.nn.l2_loss(w) (tf.keras.regularizers.l2(scale) is twice that)',
                note="contrib's penalty is scale * sum(w**2) / 2; tpu_compat keeps it.",
                symbols=('tf.contrib.layers.l2_regularizer', 'tf.contrib.slim.l2_regularizer')),
        LegacyAPI(
                rule="TPC111", api="tf.contrib.training.checkpoints_iterator",
                kind=KIND_SYMBOL, name="checkpoints_iterator",
                hook=reads(f"{_CONTRIB}:ContribTraining.checkpoints_iterator"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.train.checkpoints_iterator(checkpoint_dir)',
                rewrite=replace_symbol('tf.train.checkpoints_iterator'),
                note='contrib re-exported the core function.',
                symbols=('tf.contrib.training.checkpoints_iterator',)),
        LegacyAPI(
                rule="TPC112", api="tf.contrib.framework.nest",
                kind=KIND_SYMBOL, name="nest",
                hook=reads(f"{_CONTRIB}:ContribFramework.nest"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.nest',
                rewrite=replace_symbol('tf.nest'),
                note='The same module.',
                symbols=('tf.contrib.framework.nest',)),
        LegacyAPI(
                rule="TPC113", api="tf.contrib.framework.list_variables",
                kind=KIND_SYMBOL, name="list_variables",
                hook=reads(f"{_CONTRIB}:ContribFramework.list_variables"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.train.list_variables(checkpoint)',
                rewrite=replace_symbol('tf.train.list_variables'),
                note='The same function.',
                symbols=('tf.contrib.framework.list_variables',)),
        LegacyAPI(
                rule="TPC114", api="tf.contrib.framework.load_checkpoint",
                kind=KIND_SYMBOL, name="load_checkpoint",
                hook=reads(f"{_CONTRIB}:ContribFramework.load_checkpoint"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.train.load_checkpoint(checkpoint)',
                rewrite=replace_symbol('tf.train.load_checkpoint'),
                note='The same function.',
                symbols=('tf.contrib.framework.load_checkpoint',)),
        LegacyAPI(
                rule="TPC115", api="tf.contrib.rnn.BasicLSTMCell",
                kind=KIND_SYMBOL, name="BasicLSTMCell",
                hook=reads(f"{_CONTRIB}:ContribRNN.BasicLSTMCell"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.nn.rnn_cell.BasicLSTMCell(num_units)',
                rewrite=replace_symbol('tf.compat.v1.nn.rnn_cell.BasicLSTMCell'),
                note='contrib.rnn re-exported the core cell.',
                symbols=('tf.contrib.rnn.BasicLSTMCell',)),
        LegacyAPI(
                rule="TPC116", api="tf.contrib.rnn.MultiRNNCell",
                kind=KIND_SYMBOL, name="MultiRNNCell",
                hook=reads(f"{_CONTRIB}:ContribRNN.MultiRNNCell"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.nn.rnn_cell.MultiRNNCell(cells)',
                rewrite=replace_symbol('tf.compat.v1.nn.rnn_cell.MultiRNNCell'),
                note='contrib.rnn re-exported the core cell.',
                symbols=('tf.contrib.rnn.MultiRNNCell',)),
        LegacyAPI(
                rule="TPC117", api="tf.contrib.rnn.static_rnn",
                kind=KIND_SYMBOL, name="static_rnn",
                hook=reads(f"{_CONTRIB}:ContribRNN.static_rnn"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.nn.static_rnn(cell, inputs)',
                rewrite=replace_symbol('tf.compat.v1.nn.static_rnn'),
                note='contrib.rnn re-exported the core function.',
                symbols=('tf.contrib.rnn.static_rnn',)),
        LegacyAPI(
                rule="TPC118", api="tf.contrib.summary.create_file_writer",
                kind=KIND_SYMBOL, name="create_file_writer",
                hook=reads(f"{_CONTRIB}:ContribSummary.create_file_writer"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.create_file_writer(logdir) (TF 2 summaries: tf.summary.scalar(name, data, step))',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same functions (not rewritten: the public TF 2 API differs in arguments).",
                symbols=('tf.contrib.summary.create_file_writer',)),
        LegacyAPI(
                rule="TPC119", api="tf.contrib.summary.scalar",
                kind=KIND_SYMBOL, name="scalar",
                hook=reads(f"{_CONTRIB}:ContribSummary.scalar"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.scalar(name, data, step=step)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.scalar',)),
        LegacyAPI(
                rule="TPC120", api="tf.contrib.summary.always_record_summaries",
                kind=KIND_SYMBOL, name="always_record_summaries",
                hook=reads(f"{_CONTRIB}:ContribSummary.always_record_summaries"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.record_if(True)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.always_record_summaries',)),
        LegacyAPI(
                rule="TPC121", api="tf.contrib.summary.all_summary_ops",
                kind=KIND_SYMBOL, name="all_summary_ops",
                hook=reads(f"{_CONTRIB}:ContribSummary.all_summary_ops"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.summary.all_v2_summary_ops()',
                rewrite=replace_symbol('tf.compat.v1.summary.all_v2_summary_ops'),
                note='Renamed all_v2_summary_ops in TF 1.13; the same collection.',
                symbols=('tf.contrib.summary.all_summary_ops',)),
        LegacyAPI(
                rule="TPC122", api="tf.contrib.summary.record_summaries_every_n_global_steps",
                kind=KIND_SYMBOL, name="record_summaries_every_n_global_steps",
                hook=reads(f"{_CONTRIB}:ContribSummary.record_summaries_every_n_global_steps"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.record_if(lambda: step % n == 0)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.record_summaries_every_n_global_steps',)),
        LegacyAPI(
                rule="TPC123", api="tf.contrib.summary.never_record_summaries",
                kind=KIND_SYMBOL, name="never_record_summaries",
                hook=reads(f"{_CONTRIB}:ContribSummary.never_record_summaries"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.record_if(False)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.never_record_summaries',)),
        LegacyAPI(
                rule="TPC124", api="tf.contrib.summary.should_record_summaries",
                kind=KIND_SYMBOL, name="should_record_summaries",
                hook=reads(f"{_CONTRIB}:ContribSummary.should_record_summaries"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.should_record_summaries()',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.should_record_summaries',)),
        LegacyAPI(
                rule="TPC125", api="tf.contrib.summary.histogram",
                kind=KIND_SYMBOL, name="histogram",
                hook=reads(f"{_CONTRIB}:ContribSummary.histogram"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.histogram(name, data, step=step)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.histogram',)),
        LegacyAPI(
                rule="TPC126", api="tf.contrib.summary.image",
                kind=KIND_SYMBOL, name="image",
                hook=reads(f"{_CONTRIB}:ContribSummary.image"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.image(name, data, step=step)',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.image',)),
        LegacyAPI(
                rule="TPC127", api="tf.contrib.summary.flush",
                kind=KIND_SYMBOL, name="flush",
                hook=reads(f"{_CONTRIB}:ContribSummary.flush"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.summary.flush()',
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.flush',)),
        LegacyAPI(
                rule="TPC128", api="tf.contrib.summary.initialize",
                kind=KIND_SYMBOL, name="initialize",
                hook=reads(f"{_CONTRIB}:ContribSummary.initialize"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement='tf.compat.v1.summary.initialize(graph, session)',
                rewrite=replace_symbol('tf.compat.v1.summary.initialize'),
                note="TF 1.15's contrib.summary re-exported summary_ops_v2; tpu_compat serves the same function.",
                symbols=('tf.contrib.summary.initialize',)),
        LegacyAPI(
                rule="TPC129", api="tf.contrib.cloud.BlockCacheParams",
                kind=KIND_SYMBOL, name="BlockCacheParams",
                hook=reads(f"{_CONTRIB}:ContribCloud.BlockCacheParams"),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement="nothing: TF 2 has no GCS block-cache setting to send to a worker",
                note="configure_gcs's block_cache argument (TPC109); checked, not sent.",
                symbols=("tf.contrib.cloud.BlockCacheParams",)),
        # -- TF 1.x infeed/outfeed and training loop (issue 22 item 3, TPC140-TPC149).
        # Run-time hooks: tpu_compat/contrib/ (the names are read from tf.contrib.tpu
        # or tensorflow.contrib.tpu.ops.gen_tpu_ops); served by lowlevel/feeds.py, loops.py.
        LegacyAPI(
                rule="TPC140", api="tf.contrib.tpu.infeed_enqueue_tuple / tf.contrib.tpu.ops.gen_tpu_ops.infeed_enqueue_tuple",
                kind=KIND_SYMBOL, name="infeed_enqueue_tuple",
                hook=reads(f"{_CONTRIB}:ContribTPU.infeed_enqueue_tuple",
                           f"{_CONTRIB}:ContribGenTPUOps.infeed_enqueue_tuple"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The host side of a TPU infeed: one tuple into core device_ordinal's queue; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.infeed_enqueue_tuple",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.infeed_enqueue_tuple")),
        LegacyAPI(
                rule="TPC141", api="tf.contrib.tpu.infeed_enqueue / tf.contrib.tpu.ops.gen_tpu_ops.infeed_enqueue",
                kind=KIND_SYMBOL, name="infeed_enqueue",
                hook=reads(f"{_CONTRIB}:ContribTPU.infeed_enqueue",
                           f"{_CONTRIB}:ContribGenTPUOps.infeed_enqueue"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The one-tensor form of infeed_enqueue_tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.infeed_enqueue",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.infeed_enqueue")),
        LegacyAPI(
                rule="TPC142", api="tf.contrib.tpu.infeed_dequeue_tuple / tf.contrib.tpu.ops.gen_tpu_ops.infeed_dequeue_tuple",
                kind=KIND_SYMBOL, name="infeed_dequeue_tuple",
                hook=reads(f"{_CONTRIB}:ContribTPU.infeed_dequeue_tuple",
                           f"{_CONTRIB}:ContribGenTPUOps.infeed_dequeue_tuple"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The device side of a TPU infeed: the replica's next tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.infeed_dequeue_tuple",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.infeed_dequeue_tuple")),
        LegacyAPI(
                rule="TPC143", api="tf.contrib.tpu.infeed_dequeue / tf.contrib.tpu.ops.gen_tpu_ops.infeed_dequeue",
                kind=KIND_SYMBOL, name="infeed_dequeue",
                hook=reads(f"{_CONTRIB}:ContribTPU.infeed_dequeue",
                           f"{_CONTRIB}:ContribGenTPUOps.infeed_dequeue"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The one-tensor form of infeed_dequeue_tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.infeed_dequeue",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.infeed_dequeue")),
        LegacyAPI(
                rule="TPC144", api="tf.contrib.tpu.outfeed_enqueue_tuple / tf.contrib.tpu.ops.gen_tpu_ops.outfeed_enqueue_tuple",
                kind=KIND_SYMBOL, name="outfeed_enqueue_tuple",
                hook=reads(f"{_CONTRIB}:ContribTPU.outfeed_enqueue_tuple",
                           f"{_CONTRIB}:ContribGenTPUOps.outfeed_enqueue_tuple"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The device side of a TPU outfeed: a tuple sent to the host; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.outfeed_enqueue_tuple",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.outfeed_enqueue_tuple")),
        LegacyAPI(
                rule="TPC145", api="tf.contrib.tpu.outfeed_enqueue / tf.contrib.tpu.ops.gen_tpu_ops.outfeed_enqueue",
                kind=KIND_SYMBOL, name="outfeed_enqueue",
                hook=reads(f"{_CONTRIB}:ContribTPU.outfeed_enqueue",
                           f"{_CONTRIB}:ContribGenTPUOps.outfeed_enqueue"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The one-tensor form of outfeed_enqueue_tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.outfeed_enqueue",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.outfeed_enqueue")),
        LegacyAPI(
                rule="TPC146", api="tf.contrib.tpu.outfeed_dequeue_tuple / tf.contrib.tpu.ops.gen_tpu_ops.outfeed_dequeue_tuple",
                kind=KIND_SYMBOL, name="outfeed_dequeue_tuple",
                hook=reads(f"{_CONTRIB}:ContribTPU.outfeed_dequeue_tuple",
                           f"{_CONTRIB}:ContribGenTPUOps.outfeed_dequeue_tuple"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The host side of a TPU outfeed: core device_ordinal's next tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.outfeed_dequeue_tuple",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.outfeed_dequeue_tuple")),
        LegacyAPI(
                rule="TPC147", api="tf.contrib.tpu.outfeed_dequeue / tf.contrib.tpu.ops.gen_tpu_ops.outfeed_dequeue",
                kind=KIND_SYMBOL, name="outfeed_dequeue",
                hook=reads(f"{_CONTRIB}:ContribTPU.outfeed_dequeue",
                           f"{_CONTRIB}:ContribGenTPUOps.outfeed_dequeue"),
                eras=("1.15",), removed_in="2.0",
                replacement="tf.distribute.TPUStrategy with a tf.data input "
                            "(strategy.experimental_distribute_dataset) and strategy.run "
                            "in a tf.function loop",
                note="The one-tensor form of outfeed_dequeue_tuple; emulated by per-core host queues "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.outfeed_dequeue",
                         "tensorflow.contrib.tpu.ops.gen_tpu_ops.outfeed_dequeue")),
        LegacyAPI(
                rule="TPC148", api="tf.contrib.tpu.repeat",
                kind=KIND_SYMBOL, name="repeat",
                hook=reads(f"{_CONTRIB}:ContribTPU.repeat"),
                eras=("1.15",), removed_in="2.0",
                replacement="a Python or tf.range loop over strategy.run inside one tf.function",
                note="N iterations of the body on the device, one infeed tuple each; emulated as one loop over all replicas "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.repeat",)),
        LegacyAPI(
                rule="TPC149", api="tf.contrib.tpu.while_loop",
                kind=KIND_SYMBOL, name="while_loop",
                hook=reads(f"{_CONTRIB}:ContribTPU.while_loop"),
                eras=("1.15",), removed_in="2.0",
                replacement="a Python or tf.range loop over strategy.run inside one tf.function",
                note="The TPU training loop: loop-carried tensors, then operations; emulated as one loop over all replicas "
                     "(docs/emulated_tpu.md).",
                symbols=("tf.contrib.tpu.while_loop",)),
        # -- The TF 1.9-1.13 Keras TPU API (TPC160-TPC179): served by
        # tpu_compat/keras/tpu_model.py through tf.contrib.tpu.
        LegacyAPI(
                rule="TPC160", api="tf.contrib.tpu.keras_to_tpu_model",
                kind=KIND_SYMBOL, name="keras_to_tpu_model",
                hook=reads(f"{_CONTRIB}:ContribTPU.keras_to_tpu_model"),
                eras=("1.13",), removed_in="1.14",
                replacement="build and compile the model in tf.distribute.TPUStrategy(resolver)"
                                        ".scope(), then model.fit(dataset)",
                rewrite=keras_tpu_scope("tf.distribute.TPUStrategy"),
                note="The returned model runs on the TPU strategy's replicas; fit's batch_size "
                          "is the global batch and an input_fn's batch is per core.",
                symbols=("tf.contrib.tpu.keras_to_tpu_model",)),
        LegacyAPI(
                rule="TPC161", api="tf.contrib.tpu.TPUDistributionStrategy",
                kind=KIND_SYMBOL, name="TPUDistributionStrategy",
                hook=reads(f"{_CONTRIB}:ContribTPU.TPUDistributionStrategy"),
                eras=("1.13",), removed_in="1.14",
                replacement="tf.distribute.TPUStrategy(resolver)",
                note="Only keras_to_tpu_model takes it; using_single_core=True runs one core.",
                symbols=("tf.contrib.tpu.TPUDistributionStrategy",)),
        LegacyAPI(
                rule="TPC162", api="KerasTPUModel.sync_to_cpu",
                kind=KIND_METHOD, name="sync_to_cpu",
                hook=calls("tpu_compat.keras.tpu_model:KerasTPUModel.sync_to_cpu"),
                eras=("1.13",), removed_in="1.14",
                replacement="the model built and compiled in TPUStrategy(resolver).scope() "
                                        "(one copy, nothing to sync)",
                # Where the module's keras_to_tpu_model is rewritten (rewrites/keras_tpu_scope.py).
                rewrite=keras_tpu_scope("tf.distribute.TPUStrategy"),
                note="Copies the TPU copy's weights into the CPU model and returns it."),
        # -- The era's programs outside TensorFlow (TPC201-): what their code
        #    used next to TF that today's Python no longer has.
        LegacyAPI(
                rule="TPC201", api="distutils.version.LooseVersion / StrictVersion",
                kind=KIND_SYMBOL, name="LooseVersion",
                hook=not_observable(
                    "Python's distutils, not TensorFlow: tpu_compat instruments no "
                    "standard-library module; `tpu-compat scan` finds the uses"),
                eras=("1.13", "1.14", "1.15", "2.0", "2.1", "2.2", "2.3"), removed_in=None,
                replacement="packaging.version.parse(...) on both sides of the comparison "
                            "(import packaging.version), where it orders the versions "
                            "compared the same way",
                # Only where both order every TF >= 2.21 the same way against
                # the literal (rewrites/version_compare.py).
                rewrite=version_compare("packaging.version.parse"),
                note="distutils is gone in Python 3.12 (PEP 632); packaging ships with "
                     "TensorFlow, but orders 2.0.0 vs '2.0' and release candidates "
                     "differently.",
                symbols=("distutils.version.LooseVersion", "distutils.version.StrictVersion")),
)

# -- TF-Slim and arg_scope (issue 34, TPC180-TPC200): served by tpu_compat's own
# implementation (tpu_compat/contrib/_slim.py, _arg_scope.py) as tf.contrib.slim.X,
# tf.contrib.layers.X and tf.contrib.framework.X; one record per name, whichever
# module the program reads it from. Chosen by the survey (docs/contrib_survey.md,
# "TF-Slim and arg_scope").
_SLIM_KERAS = {
        "avg_pool2d": "tf.keras.layers.AveragePooling2D(pool_size, strides=2)",
        "batch_norm": "tf.keras.layers.BatchNormalization(momentum=decay, epsilon=0.001, "
                      "scale=False) (variables named BatchNorm/... in contrib)",
        "conv2d": "tf.keras.layers.Conv2D(filters, kernel_size, padding='same', "
                  "activation='relu') (variables named kernel/bias, contrib's weights/biases)",
        "convolution2d": "tf.keras.layers.Conv2D(filters, kernel_size, padding='same', "
                         "activation='relu') (variables named kernel/bias, contrib's weights/biases)",
        "dropout": "tf.keras.layers.Dropout(rate=1 - keep_prob)",
        "flatten": "tf.keras.layers.Flatten()",
        "fully_connected": "tf.keras.layers.Dense(units, activation='relu') (variables "
                           "named kernel/bias, contrib's weights/biases)",
        "max_pool2d": "tf.keras.layers.MaxPooling2D(pool_size, strides=2)",
        "repeat": "a Python loop over the layer",
        "separable_conv2d": "tf.keras.layers.SeparableConv2D, or DepthwiseConv2D when "
                            "num_outputs is None",
        "separable_convolution2d": "tf.keras.layers.SeparableConv2D, or DepthwiseConv2D "
                                   "when num_outputs is None",
        "softmax": "tf.nn.softmax(logits)",
        "stack": "a Python loop over the layer",
        "variance_scaling_initializer": "tf.compat.v1.variance_scaling_initializer (its "
                                        "truncated normal is scaled differently: not the same numbers)",
}
_ARG_SCOPE_RECORD_NAMES = ("arg_scope", "add_arg_scope", "has_arg_scope", "arg_scoped_arguments",
                           "current_arg_scope")


def _slim_records(first_rule):
    """One record per TF-Slim name, numbered from ``first_rule``."""
    entries = [(name, ("slim", "framework"),
                f"tf_slim.{name} (pip install tf-slim); Keras has no argument scopes: "
                "pass the arguments to each layer",
                "tpu_compat implements TF 1.15's arg_scope (contrib/framework/python/ops/"
                "arg_scope.py).") for name in _ARG_SCOPE_RECORD_NAMES]
    entries += [(name, ("slim", "layers"), f"tf_slim.{name} (pip install tf-slim), or {keras}",
                 "tpu_compat implements TF 1.15's layer (contrib/layers/python/layers/layers.py) "
                 "with its defaults and variable names, so checkpoints restore.")
                for name, keras in _SLIM_KERAS.items()]
    entries += [(name, ("slim", "framework"),
                 "tf.compat.v1.get_variable(name, shape, collections=[...])",
                 "tpu_compat implements TF 1.15's function (contrib/framework/python/ops/"
                 "variables.py).") for name in ("variable", "model_variable")]
    classes = {"slim": "ContribSlim", "framework": "ContribFramework", "layers": "ContribLayers"}
    records = []
    for number, (name, modules, replacement, note) in enumerate(entries, start=first_rule):
        symbols = tuple(f"tf.contrib.{module}.{name}" for module in modules)
        records.append(LegacyAPI(
                rule=f"TPC{number:03d}", api=" / ".join(symbols), kind=KIND_SYMBOL, name=name,
                hook=reads(*(f"{_CONTRIB}:{classes[module]}.{name}" for module in modules)),
                eras=("1.13", "1.14", "1.15"), removed_in="2.0",
                replacement=replacement, note=note, symbols=symbols))
    return tuple(records)


RECORDS = RECORDS + _slim_records(180)

_BY_RULE = {record.rule: record for record in RECORDS}


def get(rule):
    """The record with rule id ``rule`` (KeyError naming the known ids if none)."""
    try:
        return _BY_RULE[rule]
    except KeyError:
        raise KeyError(f"unknown legacy-API rule {rule!r}; known: "
                                      f"{', '.join(sorted(_BY_RULE))}") from None


def by_name(name, kind=None):
    """All records whose bare ``name`` matches (and ``kind``, if given)."""
    return tuple(r for r in RECORDS
                              if r.name == name and (kind is None or r.kind == kind))
