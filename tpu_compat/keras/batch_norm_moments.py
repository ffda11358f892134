"""TPU "global batch norm" subclasses: ``_moments`` called as TF 1.15-2.3 called it.

The TPU recipe for batch norm over the global batch (tensorflow/tpu's
``TpuBatchNormalization``, SimCLR's ``BatchNormalization``, the EfficientNet
and ResNet trainers) subclasses ``tf.layers.BatchNormalization`` or
``tf.keras.layers.BatchNormalization`` and overrides
``_moments(self, inputs, reduction_axes, keep_dims)`` to average the
per-core moments with ``tf.tpu.cross_replica_sum``.

The era's Keras called that hook without a mask: TF 1.15-2.3's
``BatchNormalizationBase.call`` (tensorflow/python/keras/layers/normalization.py)
runs ``self._moments(math_ops.cast(inputs, self._param_dtype), reduction_axes,
keep_dims=keep_dims)``, and its batch norm took no ``mask``. tf_keras 2.21
passes ``mask=mask`` too, so every such subclass failed with
``_moments() got an unexpected keyword argument 'mask'``.

``install()`` wraps ``BatchNormalizationBase.__init__``: an instance whose
class overrides ``_moments`` with a signature that takes no ``mask`` gets the
era's call (the override, called without ``mask``). An override that accepts
``mask`` (or ``**kwargs``), and tf_keras's own classes, are left as they are.
A mask given to such a layer is dropped, as the era's batch norm ignored it.
"""

import functools
import inspect

__all__ = ["accepts_mask", "era_moments_init", "patch_tf_keras"]


def accepts_mask(method):
    """Whether ``method`` can be called with ``mask=`` (tf_keras 2.21's call)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin or C callable: leave it alone
        return True
    return "mask" in parameters or any(
        parameter.kind is inspect.Parameter.VAR_KEYWORD
        for parameter in parameters.values())


class _EraMomentsCall:
    """``layer._moments`` as tf_keras calls it, calling the era's override without ``mask``."""

    __slots__ = ("_layer", "_override")

    def __init__(self, layer, override):
        self._layer = layer
        self._override = override

    def __call__(self, inputs, reduction_axes, keep_dims=False, mask=None):
        del mask  # TF 1.15-2.3's batch norm took no mask
        return self._override(self._layer, inputs, reduction_axes, keep_dims=keep_dims)


def era_moments_init(init):
    """``BatchNormalizationBase.__init__``, then the era's ``_moments`` call where needed."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        override = type(self)._moments  # pylint: disable=protected-access
        if not accepts_mask(override):
            # object.__setattr__: not a tracked attribute of the layer (no
            # weights, no config), only what tf_keras's call finds first.
            object.__setattr__(self, "_moments", _EraMomentsCall(self, override))

    return __init__


def patch_tf_keras(state):
    """Wraps tf_keras's batch-norm base class through ``state`` (undone by uninstall)."""
    # pylint: disable=import-outside-toplevel
    from tf_keras.src.layers.normalization import batch_normalization
    base = batch_normalization.BatchNormalizationBase
    state.replace(base, "__init__", era_moments_init(base.__init__))
