"""Every TensorFlow private module (``tensorflow.python...``) that tpu_compat uses.

One place to look when a TensorFlow release moves or changes one: each entry
says what tpu_compat takes from it and why no public API serves. "Patched" means
runtime/ replaces an attribute on TensorFlow's own module or class (recorded
through the installation's changes and undone by ``uninstall()``), which only
the defining module allows: the public name is the same object, so replacing
it there would not reach TensorFlow's internal callers. "No public API" means
none in TF 2.21's ``tf`` namespace. Checked in: the proven range, TF 2.15 to
2.21 (docs/tf_versions.md), whose runs install tpu_compat (runtime/, lowlevel/)
and run a TPUEstimator (estimator/); a section whose names were checked in fewer
versions says which.

Importing this module imports TensorFlow: runtime/, lowlevel/ and estimator/
import it at module level (they import TensorFlow anyway); patching/, pod/ and
``_callsite`` only inside the functions that need TensorFlow, so that
``import tpu_compat`` stays light. Strings naming TensorFlow modules as data
(the legacy table's targets, the import router's routes, tf.contrib's name
tables) are not imports: tests/test_package_structure.py lists them.
"""

# pylint: disable=unused-import

# -- tf.distribute's machinery ------------------------------------------------------
# StrategyBase / StrategyExtendedV1: the base classes of every strategy, patched
# (native_methods.py) and subclassed; no public name. Strategy, StrategyV1,
# InputReplicationMode, RunOptions, get_strategy, has_strategy and
# in_cross_replica_context are the objects tf.distribute (and tf.compat.v1.distribute)
# export, read from here with the classes they go with; lowlevel/ reads
# get_replica_context, has_strategy and in_cross_replica_context (tf.distribute's too).
from tensorflow.python.distribute import distribute_lib
# regroup and select_replica: how a strategy packs and unpacks per-replica values;
# no public API.
from tensorflow.python.distribute import distribute_utils
# MirroredExtended: the emulated TPU's extended (emulated.py); no public name.
# MirroredStrategy / MirroredStrategyV1: patched (devices.py) and mixed into the adapters.
from tensorflow.python.distribute import mirrored_strategy
# TPUStrategyV1/V2, TPUExtended and its run checks (validate_run_function,
# _maybe_partial_apply_variables): the native TPU strategy adapters extend and
# strict mode follows; public only as tf.distribute.TPUStrategy (V2), without its
# extended's class or checks; patching/namespaces.py finds the natives it routes here.
from tensorflow.python.distribute import tpu_strategy
# OneDeviceStrategy / OneDeviceStrategyV1: patched (devices.py); the classes
# tf.distribute.OneDeviceStrategy and tf.compat.v1's name.
from tensorflow.python.distribute import one_device_strategy
# ReductionToOneDevice (public as tf.distribute.ReductionToOneDevice, the same class).
from tensorflow.python.distribute import cross_device_ops as cross_device_ops_lib
# canonicalize / current: device strings as strategies compare them; no public API.
from tensorflow.python.distribute import device_util
# SingleDevice: where a strategy puts numpy input (emulated.py); no public API.
from tensorflow.python.distribute import numpy_dataset
# MultiStepContext: the step context of TF 1.15's experimental_run_steps_on_iterator
# (steps.py); no public API.
from tensorflow.python.distribute import input_lib
# TPUClusterResolver (subclassed), initialize/shutdown_tpu_system (wrapped) and
# _LocalCloudTpuClient (resolver.py); the resolver is public as
# tf.distribute.cluster_resolver.TPUClusterResolver, the local client is not;
# patching/namespaces.py routes the native class from here.
from tensorflow.python.distribute.cluster_resolver.tpu import (
    tpu_cluster_resolver as native_resolver_lib)
# compute_batch_size / replicate: tf.data's per-replica batch arithmetic (adapter.py);
# no public API.
from tensorflow.python.data.experimental.ops import distribute as tf_data_distribute
# _create_device_dataset: the per-device pipeline of a MultiDeviceIterator, which
# distributed input is read through (device_input.py); same signature
# (prototype_ds, incarnation_id, prefetch_buffer_size, experimental_slack) checked
# in TF 2.15 and 2.21 (added after the matrix's last cells); no public API.
from tensorflow.python.data.ops import multi_device_iterator_ops

# -- the TPU library ------------------------------------------------------------------
# Topology: the emulated slice's (topology.py); public as tf.tpu.experimental.Topology.
from tensorflow.python.tpu import topology as topology_lib
# get_tpu_context: the replica count of a TF 1.x TPU step (emulated.py); no public API.
from tensorflow.python.tpu import tpu_function
# TPUSystemMetadata: what a resolver reports of the (emulated) TPU; no public name.
from tensorflow.python.tpu import tpu_system_metadata as metadata_lib

# -- graphs, devices, eager -----------------------------------------------------------
# device / device_v2: patched (devices.py: tf.device and with ops.device); estimator/'s
# input pipeline places ops on the backend's own host names with the unpatched
# ops.device; EagerTensor (no public class); the others runtime/ and lowlevel/ read
# (get_default_graph, inside_function, init_scope, name_scope, RegisterGradient, ...)
# have public twins.
from tensorflow.python.framework import ops
# list_logical_devices / list_physical_devices: patched (devices.py), the functions
# tf.config exports; get_soft_device_placement is tf.config's.
from tensorflow.python.framework import config as framework_config
# DeviceSpec (emulated.py): public as tf.DeviceSpec, the same class.
from tensorflow.python.framework import device as framework_device
# dtypes: tf.string, tf.complex128 and tf.as_dtype, the same objects.
from tensorflow.python.framework import dtypes
# graph_io: its module-level text_format, patched (protobuf_text.py) where TF 2.14-2.20's
# write_graph passes an argument protobuf 7 removed; the function tf.io.write_graph exports.
from tensorflow.python.framework import graph_io
# get_registered_kernels_for_op: which dtypes a TPU kernel takes (fidelity.py); no public API.
from tensorflow.python.framework import kernels
# context / eager_mode: the host's address space for a kernel query (fidelity.py), and the
# ConfigProto a Session given none takes (pod_sessions.py); no public API.
from tensorflow.python.eager import context as eager_context
# Function: the class of tf.function's result (isinstance, its jit_compile flag); no
# public class.
from tensorflow.python.eager import def_function
# BaseSession.__init__: patched (pod_sessions.py) so TF 1.15's Session(master) reaches the pod.
from tensorflow.python.client import session as client_session
# CONVERSION_RULES / DoNotConvert: autograph's module-level rules (autograph_rules.py);
# public only as the per-function tf.autograph.experimental.do_not_convert.
from tensorflow.python.autograph.core import config as autograph_config

# -- ops patched for oneDNN's empty batches (empty_batches.py) -----------------------
# gen_nn_ops' wrappers: patched; array_ops / math_ops: the concat, shape, zeros,
# cast and equal the patched wrappers call (tf's public functions wrap these).
from tensorflow.python.ops import array_ops
from tensorflow.python.ops import gen_nn_ops
from tensorflow.python.ops import math_ops
# gen_math_ops / gen_linalg_ops (and gen_nn_ops above): the generated op wrappers
# numerics.py patches for --numerics tpu (matmuls, einsum; conv in gen_nn_ops); TF's
# public functions and gradients call them from these modules, which `import tensorflow`
# loads itself.
from tensorflow.python.ops import gen_linalg_ops
from tensorflow.python.ops import gen_math_ops
# custom_gradient: numerics.py's bfloat16 rounding passes its gradient through
# unchanged; the decorator is public as tf.custom_gradient, read here beside
# the other ops modules numerics.py takes.
from tensorflow.python.ops import custom_gradient
# saveable_object_util: a scaffold_fn's tf.compat.v1.train.Saver({name: variable}) over the
# emulated TPU's MirroredVariables (estimator/tpu/scaffold_savers.py) must restore every
# copy; the Saver asks this module's saveable_objects_for_op. No public API (checked 2.15-2.21).
from tensorflow.python.training.saving import saveable_object_util
# moving_averages and smart_cond: TF-Slim's batch_norm (contrib/_slim_batch_norm.py)
# updates its moving averages with assign_moving_average (zero_debias included, which
# tf.compat.v1.train.ExponentialMovingAverage does not take per variable) and picks
# its training branch with smart_cond when is_training is a Python bool or a
# tensor, as TF 1.15's contrib layers did; neither has a public TF 2.21 name.
from tensorflow.python.training import moving_averages
from tensorflow.python.framework import smart_cond
# IsMklEnabled: whether oneDNN kernels run; no public API.
from tensorflow.python.util import _pywrap_util_port as pywrap_util_port

# -- for lowlevel/ (tf.compat.v1.tpu) ------------------------------------------------
# DistributedValues / DistributedVariable / PerReplica: isinstance checks of what a
# replicated step takes and returns; PerReplica and DistributedVariable have no public class.
from tensorflow.python.distribute import values as values_lib
# TF's own tf.compat.v1.tpu functions (the real-TPU path, lowlevel/native.py), captured
# from their defining modules because install() routes the public names to
# tpu_compat's: replicate, rewrite, shard, batch_parallel, initialize_system (tpu);
# core (tpu_name_util); outside_compilation (tpu_replication); bfloat16_scope
# (bfloat16); cross_replica_sum and the infeed/outfeed ops (tpu_ops); CrossShardOptimizer
# (tpu_optimizer); repeat and while_loop (training_loop: no tf.compat.v1.tpu name).
from tensorflow.python.tpu import bfloat16 as native_bfloat16
from tensorflow.python.tpu import tpu as native_tpu
from tensorflow.python.tpu import tpu_name_util
from tensorflow.python.tpu import tpu_optimizer
from tensorflow.python.tpu import tpu_replication
from tensorflow.python.tpu import training_loop
from tensorflow.python.tpu.ops import tpu_ops
# Reduction and Optimizer: tf.compat.v1.losses.Reduction and tf.compat.v1.train.Optimizer,
# the same classes, read beside CrossShardOptimizer's module.
from tensorflow.python.ops.losses import losses
from tensorflow.python.training import optimizer as optimizer_lib

# -- for estimator/ (tf.estimator, which TF 2.16 removed with tensorflow_estimator) -------
# ExportOutput and its Classification/Regression/Predict subclasses (_spec.py, export.py):
# tf.estimator.export's classes up to TF 2.15; no public name since.
from tensorflow.python.saved_model.model_utils import export_output as export_output_lib
# get_timestamped_export_dir, get_temp_export_dir, export_outputs_for_mode and
# build_all_signature_defs (_saved_model.py): what tensorflow_estimator's
# export_saved_model called; no public API.
from tensorflow.python.saved_model.model_utils import export_utils
# EstimatorModeKeys: tf.estimator.ModeKeys's class up to TF 2.15; no public name since.
from tensorflow.python.saved_model.model_utils import mode_keys
# _StopAfterNEvalsHook, _evaluate_once, _get_or_create_eval_step: what TF 1.15's
# Estimator.evaluate ran (tensorflow_estimator's estimator.py); private in TF too.
from tensorflow.python.training import evaluation as tf_evaluation
# get_or_create_steps_per_run_variable / _MultiStepStopAtStepHook: the steps-per-run
# variable and stop hook of TF 1.15's Estimator with a TPU strategy (estimator/
# distributed.py); the hook is private, the variable has no public API.
from tensorflow.python.training import basic_session_run_hooks
# _get_or_create_global_step_read: the read Estimator graphs cache (private);
# create_global_step is public as tf.compat.v1.train.create_global_step, the same function.
from tensorflow.python.training import training_util
# ENABLE_CONTROL_FLOW_V2: the process-wide flag each Estimator graph turns off while
# it is built (v1 control flow, as TF 1.15) and restores (graphs.py); no public reader
# or setter that restores it.
from tensorflow.python.ops import control_flow_util
# summary_writer_initializer_op / flush_summary_writer: the graph's summary writers'
# init and flush ops a host call's hook runs (tpu/spec.py); no public API.
from tensorflow.python.ops import gen_summary_ops
from tensorflow.python.ops import summary_ops_v2

# -- for patching/, pod/ and _callsite (imported inside their functions) --------------
# Checked in TF 2.21 only (the matrix runs neither a pod nor a warning from inside
# a tf.function); both modules exist in TF 1.15 and in TF 2.21.
# _source_mapper_stacks: autograph's per-thread map from generated code to the user's
# line (_callsite.autograph_source, which falls back to the generated line when it
# moves); no public API.
from tensorflow.python.util import tf_stack
# connect_to_cluster: TF's own connect (pod/session.py), from where install() never
# routes it; tf.config.experimental_connect_to_cluster is routed to tpu_compat's.
from tensorflow.python.eager import remote as eager_remote
