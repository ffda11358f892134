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

This module applies the patches; what they do lives by job beside it:
:mod:`~tpu_compat.keras.compile` (``compile``: steps per host call,
Keras 3's limits), :mod:`~tpu_compat.keras.graph_mode` (TF 1.15's
graph-mode loops on the emulated TPU), :mod:`~tpu_compat.keras.era`
(TF 2.0-2.3's experimental names).
"""

import functools
import importlib.util
import sys

from tpu_compat.runtime import hooks
from tpu_compat.keras.compile import (  # Keras3LimitationError: importable from here
    LEGACY_KERAS_ADVICE, Keras3LimitationError, keras3_compile, tf_keras_compile)
from tpu_compat.keras.graph_mode import (
    emulated_train_step_fn, emulated_validation_loop, metric_variables_are_local,
    multi_step_fit_loop, pod_session)

__all__ = ["Keras3LimitationError", "route_keras", "LEGACY_KERAS_ADVICE"]


# -- applying the patches -----------------------------------------------------

def _patch_tf_keras(state, package):
    del package  # tf_keras/__init__ has imported the engine modules below
    # pylint: disable=import-outside-toplevel
    from tf_keras.src import backend
    from tf_keras.src.distribute import distributed_training_utils_v1
    from tf_keras.src.engine import training
    from tf_keras.src.engine import training_arrays_v1
    from tf_keras.src.engine import training_distributed_v1
    from tf_keras.src.engine import training_utils_v1
    from tf_keras.src.metrics import base_metric

    from tpu_compat.keras import batch_norm_moments, optimizer_base, placeholder_units
    from tpu_compat.keras import era, pod
    state.replace(training, "_is_tpu_multi_host",
                  pod.emulated_pods_are_tpu_pods(training._is_tpu_multi_host))  # pylint: disable=protected-access
    state.add(training.Model, "compile",
              tf_keras_compile(training.Model.compile))
    state.add(base_metric.Metric, "add_weight",
              metric_variables_are_local(base_metric.Metric.add_weight))
    era.patch_tf_keras(state)
    batch_norm_moments.patch_tf_keras(state)  # TPU batch-norm subclasses' _moments
    placeholder_units.patch_tf_keras(state)  # Dense(-1), sized in the parent's build
    optimizer_base.patch_tf_keras(state)  # subclasses of tf.keras.optimizers.Optimizer
    hooks.instrument_library(state, "tf_keras")  # outermost: sees the user's call
    state.replace(training_arrays_v1, "fit_loop", multi_step_fit_loop(
        training_arrays_v1.fit_loop, training_distributed_v1,
        training_utils_v1))
    state.replace(training_distributed_v1, "_make_train_step_fn",
                  emulated_train_step_fn(
                      training_distributed_v1._make_train_step_fn,  # pylint: disable=protected-access
                      training_distributed_v1, distributed_training_utils_v1,
                      backend))
    state.replace(backend, "configure_and_create_distributed_session", pod_session(
        backend.configure_and_create_distributed_session, backend))
    state.replace(training_distributed_v1, "experimental_tpu_test_loop",
                  emulated_validation_loop(
                      training_distributed_v1.experimental_tpu_test_loop,
                      training_arrays_v1))


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


def _patch_keras3(state, package):
    if not _is_keras3(package):
        return
    from keras.src.trainers import trainer  # pylint: disable=import-outside-toplevel
    state.add(trainer.Trainer, "compile", keras3_compile(trainer.Trainer.compile))
    hooks.instrument_library(state, "keras")  # outermost: sees the user's call


_PATCHES = {"tf_keras": _patch_tf_keras, "keras": _patch_keras3}


def route_keras(state, router):
    """Patches tf_keras and Keras 3 now, or when first imported, through ``state``.

    ``state`` is the installation's ``Changes``; a package not imported yet is
    patched on load by ``router``, the installation's import router
    (:mod:`tpu_compat.patching.import_router`).
    """
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(state, sys.modules[name])
        else:
            router.patch_on_load(name, functools.partial(patch, state))
