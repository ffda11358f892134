"""Keras under the TPU adapters: what each era's Keras did with a TPU strategy.

Legacy TPU programs often never call ``run``: they build a Keras model in
``strategy.scope()`` and call ``compile``/``fit``. ``install()`` makes three
generations of that code run unchanged (see docs/keras.md for the semantics):

* **TF 1.15, graph mode** (``disable_v2_behavior``; tf_keras's v1 ``Model``):
  TF 1.15 trained a TPU model with ``experimental_tpu_fit_loop``, N =
  ``steps_per_run`` steps per ``Session.run``. tf_keras picks that loop by
  class name (``TPUStrategy*``), which the emulated TPU deliberately does not
  have: every other TPU-named path needs the TPU runtime. So on the emulated
  TPU, ``fit`` with ``steps_per_run > 1`` is sent to tf_keras's own TF 1.15
  loop here, with one change: its step function assumes one replica program
  (``tpu.replicate``), where the emulated TPU has one value per replica, so
  the emulated step function reduces each output across replicas (loss SUM,
  metrics MEAN: what TF 1.15 did across cores). ``evaluate``/``predict`` ran
  one step per host call in TF 1.15 and keep the Mirrored loops, which do too.
* **TF 1.15 code in eager mode, and TF 2.x** (tf_keras's v2 ``Model``): a model
  whose strategy is an adapter with ``extended.steps_per_run = N > 1`` and no
  ``steps_per_execution`` of its own is compiled with ``steps_per_execution=N``;
  ``compile(experimental_steps_per_execution=N)`` (TF 2.2-2.3) means
  ``steps_per_execution=N`` with a TPC016 warning.
* **Keras 3** (``TF_USE_LEGACY_KERAS=0``): same TPC016 translation; on the
  emulated TPU, what Keras 3 cannot do (TF 1.x graph mode; multi-step
  execution under a MirroredStrategy, which fails inside the graph with
  INVALID_ARGUMENT) is refused at ``compile`` with one
  :class:`Keras3LimitationError` naming ``TF_USE_LEGACY_KERAS=1``.

Patches are applied to whichever Keras packages are imported when
``install()`` runs, and by the import router to the ones imported later; every
patch is recorded in the installation's changes, so ``uninstall()`` restores Keras.

This module holds the patches as rows (:data:`TF_KERAS_PATCHES`,
:data:`KERAS3_PATCHES`: the registry's kind, each naming what it replaces, in
an order check_order proves) and walks them; what they do lives by job beside it:
:mod:`~tpu_compat.keras.compile` (``compile``: steps per host call,
Keras 3's limits), :mod:`~tpu_compat.keras.graph_mode` (TF 1.15's
graph-mode loops on the emulated TPU), :mod:`~tpu_compat.keras.era`
(TF 2.0-2.3's experimental names).
"""

import functools
import importlib.util
import sys

from tpu_compat.patching.rows import Call, Installation, Patch, Wrap, check_order
from tpu_compat.keras.compile import (  # Keras3LimitationError: importable from here
    LEGACY_KERAS_ADVICE, Keras3LimitationError)

__all__ = ["KERAS3_PATCHES", "Keras3LimitationError", "LEGACY_KERAS_ADVICE", "TF_KERAS_PATCHES",
           "route_keras"]


# -- the rows: one change each, in the order they are made ---------------------
#
# Rows of the registry's kind (tpu_compat/patching/rows.py): each names its payload
# (a Wrap: the attribute it replaces and the wrapper that replaces it; a Call: the
# function that makes the change) and what it replaces; one that must wrap another
# says so in ``after``, check_order refuses two rows on one target without it.
# Patch.apply installs each into the installation (its ``changes``: undone last
# first by uninstall(); its import ``router``).

_ENGINE = "tf_keras.src.engine"
_TRAINING = f"{_ENGINE}.training"
_DISTRIBUTED = f"{_ENGINE}.training_distributed_v1"
_COMPILE = f"{_TRAINING}:Model.compile"
_OUTERMOST = "outermost: the hooks see the user's call, not tpu_compat's"
# tf_keras's API modules (tf.keras.experimental, tf_keras.mixed_precision, ...) are one
# name each (rows.module_name); tf.keras.* import statements get them (router ALIASES).
_ERA_NAMES = ("CosineDecay", "CosineDecayRestarts", "LinearCosineDecay",
              "NoisyLinearCosineDecay", "PeepholeLSTMCell", "export_saved_model",
              "load_from_saved_model", "terminate_keras_multiprocessing_pools")

# tf_keras (Keras 2), patched when install() runs or when it is first imported.
TF_KERAS_PATCHES = (
    Patch("multi-host check",
          Wrap(_TRAINING, "_is_tpu_multi_host", "tpu_compat.keras.pod:emulated_pods_are_tpu_pods"),
          "an emulated pod counts as a TPU pod for tf_keras's multi-host checks (keras/pod)"),
    Patch("compile",
          Wrap(f"{_TRAINING}:Model", "compile", "tpu_compat.keras.compile:tf_keras_compile",
               how="add"),
          "Model.compile: steps_per_run as steps_per_execution, TPC016 (keras/compile)"),
    Patch("metric variables",
          Wrap("tf_keras.src.metrics.base_metric:Metric", "add_weight",
               "tpu_compat.keras.graph_mode:metric_variables_are_local", how="add"),
          "Metric.add_weight: metric variables local to each replica (keras/graph_mode)"),
    Patch("era names", Call("tpu_compat.keras.era:patch_tf_keras", gets=("changes", "router")),
          "TF 2.0-2.3's tf.keras.experimental and mixed_precision.experimental names "
          "(keras/era)",
          targets=tuple(f"tf_keras.experimental:{name}" for name in _ERA_NAMES)
          + ("tf_keras.mixed_precision:experimental",
             # and the copies a tf.keras.X import made before install() (era.py)
             "tf.keras.experimental", "tf.keras.mixed_precision:experimental",
             "sys.modules:tensorflow.keras.mixed_precision",
             "sys.modules:tensorflow.keras.experimental")),
    Patch("batch-norm moments", Call("tpu_compat.keras.batch_norm_moments:patch_tf_keras"),
          "the TPU batch-norm subclasses' _moments, as TF 1.15 computed them "
          "(keras/batch_norm_moments)",
          targets=("tf_keras.src.layers.normalization.batch_normalization:"
                   "BatchNormalizationBase.__init__",)),
    Patch("layer collections",
          Wrap("tf_keras.src.legacy_tf_layers.base", "_add_elements_to_collection",
               "tpu_compat.lowlevel.replica_collections:recorded_layer_collections"),
          "tf.layers' update ops and losses recorded as the emulated replica's that added "
          "them, as add_to_collection's are (lowlevel/replica_collections)"),
    Patch("placeholder units", Call("tpu_compat.keras.placeholder_units:patch_tf_keras"),
          "Dense(-1): sized in the parent's build (keras/placeholder_units)",
          targets=("tf_keras.src.layers.core.dense:Dense.__init__",)),
    Patch("optimizer base",
          Call("tpu_compat.keras.optimizer_base:patch_tf_keras", gets=("changes", "router")),
          "tf.keras.optimizers.Optimizer is OptimizerV2, the class TF 2.x programs "
          "subclass (keras/optimizer_base)",
          targets=("tf_keras.optimizers:Optimizer", "tf.keras.optimizers:Optimizer",
                   "sys.modules:tensorflow.keras.optimizers")),
    Patch("tf_keras hooks", Call("tpu_compat.runtime.hooks:instrument_library", args=("tf_keras",)),
          "the legacy table's hooks on tf_keras (runtime/hooks)",
          targets=(_COMPILE,), after={"compile": _OUTERMOST}),
    Patch("fit loop",
          Wrap(f"{_ENGINE}.training_arrays_v1", "fit_loop",
               "tpu_compat.keras.graph_mode:multi_step_fit_loop",
               args=(_DISTRIBUTED, f"{_ENGINE}.training_utils_v1")),
          "fit with steps_per_run > 1 on the emulated TPU: TF 1.15's loop (keras/graph_mode)"),
    Patch("train step",
          Wrap(_DISTRIBUTED, "_make_train_step_fn",
               "tpu_compat.keras.graph_mode:emulated_train_step_fn",
               args=(_DISTRIBUTED, "tf_keras.src.distribute.distributed_training_utils_v1",
                     "tf_keras.src.backend")),
          "that loop's step function reduces each output across the replicas "
          "(keras/graph_mode)"),
    Patch("pod session",
          Wrap("tf_keras.src.backend", "configure_and_create_distributed_session",
               "tpu_compat.keras.graph_mode:pod_session", args=("tf_keras.src.backend",)),
          "Keras's distributed session on the emulated pod's master (keras/graph_mode)"),
    Patch("validation loop",
          Wrap(_DISTRIBUTED, "experimental_tpu_test_loop",
               "tpu_compat.keras.graph_mode:emulated_validation_loop",
               args=(f"{_ENGINE}.training_arrays_v1",)),
          "validation inside that fit loop (keras/graph_mode)"),
)

# Keras 3 (the ``keras`` package when it is Keras 3), likewise.
KERAS3_PATCHES = (
    Patch("keras 3 compile",
          Wrap("keras.src.trainers.trainer:Trainer", "compile",
               "tpu_compat.keras.compile:keras3_compile", how="add"),
          "Trainer.compile: TPC016, and Keras 3's limits refused at compile (keras/compile)"),
    Patch("keras 3 hooks", Call("tpu_compat.runtime.hooks:instrument_library", args=("keras",)),
          "the legacy table's hooks on Keras 3 (runtime/hooks)",
          targets=("keras.src.trainers.trainer:Trainer.compile",),
          after={"keras 3 compile": _OUTERMOST}),
)

check_order(TF_KERAS_PATCHES)
check_order(KERAS3_PATCHES)


def _apply(table, installation):
    for row in table:
        row.apply(installation)


def _patch_tf_keras(installation, package):
    del package  # tf_keras/__init__ has imported the engine modules the rows patch
    _apply(TF_KERAS_PATCHES, installation)


def _is_keras3(package):
    """Whether the ``keras`` PACKAGE is Keras 3 (a feature check, not a version compare).

    TF 2.16 made ``keras`` Keras 3, whose trainer lives in
    ``keras.src.trainers``. TF 2.15 and older depend on Keras 2 under the same
    name (``keras.src.engine``, tf_keras's code): nothing of Keras 3's to
    patch there. TF 2.15 already honours ``TF_USE_LEGACY_KERAS=1`` (set by
    ``tpu-compat run`` when tf-keras is installed), so its ``tf.keras`` is
    tf_keras and gets tf_keras's patches.
    """
    return importlib.util.find_spec(f"{package.__name__}.src.trainers") is not None


def _patch_keras3(installation, package):
    if _is_keras3(package):
        _apply(KERAS3_PATCHES, installation)


_PACKAGES = {"tf_keras": _patch_tf_keras, "keras": _patch_keras3}


def route_keras(changes, router):
    """Walks the rows of tf_keras and Keras 3 now, or when each is first imported.

    The registry's "keras" row: ``changes`` records every change (uninstall()
    undoes them, last first); a package not imported yet is patched on load by
    ``router``, the installation's import router
    (:mod:`tpu_compat.patching.import_router`).
    """
    installation = Installation(changes, router)
    for name, patch in _PACKAGES.items():
        if name in sys.modules:
            patch(installation, sys.modules[name])
        else:
            installation.router.patch_on_load(name, functools.partial(patch, installation))
