"""``tf.keras.optimizers.Optimizer`` as the base class TF 2.0-2.10 programs subclassed.

LARS and LAMB in TF 2 pre-training code (SimCLR's ``lars_optimizer.py``, the
BERT/ALBERT/ELECTRA ports) subclass the public ``tf.keras.optimizers.Optimizer``
and use OptimizerV2's subclassing points: ``_set_hyper``/``_get_hyper``,
``_create_slots``/``add_slot``/``get_slot``, ``_prepare_local``,
``_fallback_apply_state``, ``_resource_apply_dense``/``_sparse``,
``_serialize_hyperparameter``. In TF 2.0-2.10 that public name was OptimizerV2
(tensorflow/python/keras/optimizer_v2/optimizer_v2.py, exported as
``keras.optimizers.Optimizer``); tf_keras 2.21 exports its new optimizer under
it, which has none of them (``no attribute '_set_hyper'``), and keeps OptimizerV2
as ``tf_keras.optimizers.legacy.Optimizer``.

``install()`` (a legacy program's run) puts OptimizerV2 back under the public
name on tf_keras's API modules (``tf.keras.optimizers``, ``import tf_keras``)
and for ``from tensorflow.keras.optimizers import Optimizer``; ``uninstall()``
takes it back. The concrete optimizers (``tf.keras.optimizers.SGD``, ``Adam``)
stay tf_keras's: only the base class a program subclasses changes.
"""

import importlib

from tpu_compat.keras import submodule_imports as keras_submodule_imports

__all__ = ["patch_tf_keras"]

# tf_keras's public API modules that TF 2.x programs reach as tf.keras.
_API_ROOTS = ("tf_keras", "tf_keras.api._v2.keras")


def _classes():
    # pylint: disable=import-outside-toplevel
    from tf_keras.src.optimizers import optimizer
    from tf_keras.src.optimizers.legacy import optimizer_v2
    return optimizer.Optimizer, optimizer_v2.OptimizerV2


def _route(state, optimizers, modern, era):
    if getattr(optimizers, "Optimizer", None) is modern:
        state.replace(optimizers, "Optimizer", era)


def patch_tf_keras(state, router):
    """Puts OptimizerV2 under ``optimizers.Optimizer`` through ``state``; ``router``
    serves ``tensorflow.keras.optimizers`` (its ALIASES row made by "optimizer base")."""
    modern, era = _classes()
    for root in _API_ROOTS:
        try:
            optimizers = importlib.import_module(root + ".optimizers")
        except ImportError:
            continue
        _route(state, optimizers, modern, era)
    for copy in keras_submodule_imports.serve(router, "optimizer base") or ():
        _route(state, copy, modern, era)
