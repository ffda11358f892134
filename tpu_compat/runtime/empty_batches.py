"""Convolutions of an emulated core's empty batch, as a TPU core computes them.

A last partial global batch smaller than the replica count gives some replicas
a batch of 0 examples: TensorFlow's ``input_lib`` hands such a replica an empty
batch (``_dummy_tensor_fn`` in tensorflow/python/distribute/input_lib.py, r2.2
and r2.3 as in 2.21), and on a TPU the core's program yields an empty result of
the right shape. TensorFlow 2.21's oneDNN kernels of ``Conv2D``, ``Conv3D`` and
``DepthwiseConv2dNative`` give a 0-example batch the *input's* channels
(``(0, 16, 16, 3)`` for 8 filters), so the next BatchNormalization fails.

``tpu-compat run`` keeps oneDNN off (``TF_ENABLE_ONEDNN_OPTS=0``, settings.py).
When it is on all the same (the user's choice, or ``install()`` in a process
whose TensorFlow was imported with it), each of these ops built inside a replica
of the emulated TPU gets one row of zeros appended when its batch is empty, and
its result is cut back to the batch: the empty batch's result has the right
shape, a non-empty batch's is unchanged, and gradients flow through both.
"""

from tpu_compat._tf_internals import array_ops, distribute_lib, gen_nn_ops, math_ops, ops
from tpu_compat._tf_internals import pywrap_util_port as _pywrap_util_port

__all__ = ["CONVOLUTIONS", "guard_empty_batches", "onednn_enabled"]

# gen_nn_ops' wrappers whose oneDNN kernels mis-shape a 0-example batch; each
# takes (input, filter, ...) with the batch first in every data format.
CONVOLUTIONS = ("conv2d", "conv3d", "depthwise_conv2d_native")


def onednn_enabled():
    """Whether this process's TensorFlow runs its oneDNN kernels (read at import)."""
    return bool(_pywrap_util_port.IsMklEnabled())


def _in_emulated_replica():
    from tpu_compat.runtime.emulated import EmulatedTPUExtended  # pylint: disable=import-outside-toplevel
    if not distribute_lib.has_strategy() or distribute_lib.in_cross_replica_context():
        return False
    return isinstance(distribute_lib.get_strategy().extended, EmulatedTPUExtended)


def _pad_and_cut(convolution, input, filter, *args, **kwargs):  # pylint: disable=redefined-builtin
    """``convolution`` of ``input`` with a row of zeros appended when it has no
    examples, cut back to its examples."""
    input = ops.convert_to_tensor(input)
    if input.shape.rank is None or (input.shape[0] is not None and input.shape[0] > 0):
        return convolution(input, filter, *args, **kwargs)
    examples = array_ops.shape(input)[0]
    padding_rows = math_ops.cast(math_ops.equal(examples, 0), examples.dtype)
    zeros = array_ops.zeros(
        array_ops.concat([[padding_rows], array_ops.shape(input)[1:]], 0), input.dtype)
    output = convolution(array_ops.concat([input, zeros], 0), filter, *args, **kwargs)
    return output[:examples]


def _guarded(convolution):
    def with_empty_batches(input, filter, *args, **kwargs):  # pylint: disable=redefined-builtin
        if not _in_emulated_replica():
            return convolution(input, filter, *args, **kwargs)
        return _pad_and_cut(convolution, input, filter, *args, **kwargs)

    with_empty_batches.__wrapped__ = convolution
    with_empty_batches.__name__ = convolution.__name__
    return with_empty_batches


def guard_empty_batches(changes):
    """With oneDNN on, the emulated replicas' convolutions guard empty batches."""
    if not onednn_enabled():
        return
    for name in CONVOLUTIONS:
        changes.replace(gen_nn_ops, name, _guarded(getattr(gen_nn_ops, name)))
