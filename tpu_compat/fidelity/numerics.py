"""Numerics ``tpu``: a TPU's matmul and convolution precision on the emulated TPU.

A TPU compiles a replica step with XLA, and tf2xla lowers float32 ``MatMul``,
``BatchMatMul*``, ``Einsum`` and the convolutions (forward and both backprops)
to XLA dots and convolutions at precision DEFAULT unless TensorFloat-32 is off,
in which case it asks for HIGHEST (``tensor_float_32_execution_enabled()`` in
tensorflow/compiler/tf2xla/kernels/matmul_op.cc, batch_matmul_op.cc,
einsum_op.cc and conv_op_helpers.cc's ``GetPrecisionConfig``, since TF 2.4;
before that there was no switch, and TF 1.x's matmul_op.cc (``xla::Dot(lhs,
rhs)``) and conv_op_helpers.cc (``ConvGeneralDilated`` without a precision
config) built them at DEFAULT). On a TPU, DEFAULT is one bfloat16 pass: each
operand is rounded to bfloat16 (round to nearest even) and the products are
summed in float32. ``tests/test_numerics.py`` checks :data:`ROWS` against TF
2.21's own lowering: each row's op becomes a dot or convolution whose operand
precision is DEFAULT with TF32 on and HIGHEST with it off.

With ``TPU_COMPAT_NUMERICS=tpu`` (``tpu-compat run --numerics tpu``) each
float32 operand of those ops is rounded to bfloat16 and back before the op,
when the op is created in a replica step of the emulated TPU; the CPU kernel
then multiplies the rounded values exactly and sums them in float32, as the
TPU does (in another order). The gradient functions (math_grad.py, nn_grad.py,
linalg_grad.py) call the same ``gen_*_ops`` functions, so the backward pass is
rounded too; the rounding itself passes gradients through unchanged, as a
TPU's dot has no rounding op to differentiate.

Not rounded: ops outside a replica step (input pipelines, host calls,
``outside_compilation``), ops already in bfloat16 (``mixed_bfloat16``),
float64, ``tf.raw_ops`` calls, one-operand einsums (tf2xla reduces them
before a dot with the scalar 1), and anything when the program turned TF32 off.
On a real TPU the strategies are TensorFlow's own and nothing here applies.

With ``TPU_COMPAT_NUMERICS_OPS`` set (``numerics-diff --ops-at-step``), each
rounded op replica 0 builds is also handed to :mod:`.numerics_ops`, which
records how far the rounding moves its output in the chosen step.
"""

import contextlib
import dataclasses
import functools
import inspect
import threading
from typing import Tuple

from tpu_compat._tf_internals import custom_gradient
from tpu_compat._tf_internals import distribute_lib
from tpu_compat._tf_internals import dtypes
from tpu_compat._tf_internals import framework_config as tf_config
from tpu_compat._tf_internals import gen_linalg_ops
from tpu_compat._tf_internals import gen_math_ops
from tpu_compat._tf_internals import gen_nn_ops
from tpu_compat._tf_internals import math_ops
from tpu_compat._tf_internals import ops

from tpu_compat import settings
from tpu_compat.fidelity import numerics_ops

__all__ = ["ROWS", "RoundedOp", "active", "enabled", "install", "on_host",
           "round_operands", "round_to_bfloat16"]

_KERNELS = "tensorflow/compiler/tf2xla/kernels/"


@dataclasses.dataclass(frozen=True)
class RoundedOp:
    """One op a TPU runs at DEFAULT precision, and where its operands are."""

    op_type: str  # TensorFlow's op
    module: str  # the name of the generated module whose function creates it
    function: str
    operands: Tuple[str, ...]  # the function's parameters a TPU rounds
    source: str  # the tf2xla kernel that lowers it


# The generated modules whose functions the rows name, by module name.
_MODULES = {module.__name__: module for module in (gen_math_ops, gen_linalg_ops, gen_nn_ops)}


def _row(op_type, module, function, operands, source):
    return RoundedOp(op_type, module.__name__, function, tuple(operands.split()),
                     _KERNELS + source)


ROWS = (
    _row("MatMul", gen_math_ops, "mat_mul", "a b", "matmul_op.cc"),
    _row("SparseMatMul", gen_math_ops, "sparse_mat_mul", "a b", "matmul_op.cc"),
    _row("BatchMatMul", gen_math_ops, "batch_mat_mul", "x y", "batch_matmul_op.cc"),
    _row("BatchMatMulV2", gen_math_ops, "batch_mat_mul_v2", "x y", "batch_matmul_op.cc"),
    _row("BatchMatMulV3", gen_math_ops, "batch_mat_mul_v3", "x y", "batch_matmul_op.cc"),
    _row("Einsum", gen_linalg_ops, "einsum", "inputs", "einsum_op.cc"),
    _row("Conv2D", gen_nn_ops, "conv2d", "input filter", "conv_op_helpers.cc"),
    _row("Conv2DBackpropInput", gen_nn_ops, "conv2d_backprop_input",
         "filter out_backprop", "conv_op_helpers.cc"),
    _row("Conv2DBackpropFilter", gen_nn_ops, "conv2d_backprop_filter",
         "input out_backprop", "conv_op_helpers.cc"),
    _row("Conv3D", gen_nn_ops, "conv3d", "input filter", "conv_op_helpers.cc"),
    _row("Conv3DBackpropInputV2", gen_nn_ops, "conv3d_backprop_input_v2",
         "filter out_backprop", "conv_op_helpers.cc"),
    _row("Conv3DBackpropFilterV2", gen_nn_ops, "conv3d_backprop_filter_v2",
         "input out_backprop", "conv_op_helpers.cc"),
    _row("DepthwiseConv2dNative", gen_nn_ops, "depthwise_conv2d_native",
         "input filter", "conv_op_helpers.cc"),
    _row("DepthwiseConv2dNativeBackpropInput", gen_nn_ops,
         "depthwise_conv2d_native_backprop_input", "filter out_backprop",
         "conv_op_helpers.cc"),
    _row("DepthwiseConv2dNativeBackpropFilter", gen_nn_ops,
         "depthwise_conv2d_native_backprop_filter", "input out_backprop",
         "conv_op_helpers.cc"),
    _row("Conv", gen_nn_ops, "conv", "input filter", "conv_op_helpers.cc"),
)


def enabled():
    """True when ``TPU_COMPAT_NUMERICS`` is ``tpu`` (validated, naming it)."""
    return settings.read("numerics") == "tpu"


# -- where a TPU rounds -----------------------------------------------------------

_host = threading.local()


@contextlib.contextmanager
def on_host():
    """Ops created inside run on the TPU's host (``outside_compilation``): exact.

    Per thread: each replica is built in its own thread.
    """
    _host.depth = getattr(_host, "depth", 0) + 1
    try:
        yield
    finally:
        _host.depth -= 1


def active(emulated_extended):
    """Whether an op created now runs in a replica step at DEFAULT precision.

    ``emulated_extended``: the emulated TPU's ``StrategyExtended`` class, given
    by ``install()``'s row (this package sits below runtime/ and does not import it).
    """
    if getattr(_host, "depth", 0):
        return False
    # The program's own switch, read when the step is traced (tf2xla reads
    # it when the step is compiled).
    if not tf_config.tensor_float_32_execution_enabled():
        return False
    if distribute_lib.in_cross_replica_context():
        return False
    context = distribute_lib.get_replica_context()
    return (context is not None
            and isinstance(context.strategy.extended, emulated_extended))


# -- the rounding ------------------------------------------------------------------

_ROUNDED_MARK = "_tpu_compat_bfloat16_rounded"


@custom_gradient.custom_gradient
def _round_passing_gradients(value):
    # TF's CPU Cast float32 -> bfloat16 rounds to nearest even (as ml_dtypes
    # does, ties and subnormals included: tests/test_numerics.py).
    rounded = math_ops.cast(math_ops.cast(value, dtypes.bfloat16), dtypes.float32)

    def gradient(upstream):
        return upstream

    return rounded, gradient


def _is_float32(value):
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    try:
        return dtypes.as_dtype(dtype).base_dtype == dtypes.float32
    except TypeError:
        return False


def _already_rounded(tensor):
    return getattr(tensor.op, _ROUNDED_MARK, False)


def round_to_bfloat16(value):
    """``value`` (float32) rounded to the nearest bfloat16, still float32.

    Gradients pass through unchanged. Anything not float32 is returned as is.
    """
    if not _is_float32(value):
        return value
    tensor = ops.convert_to_tensor(value)  # a variable is read here
    if not isinstance(tensor, ops.EagerTensor) and _already_rounded(tensor):
        return tensor  # the backward pass reuses the forward's rounded operands
    rounded = _round_passing_gradients(tensor)
    if not isinstance(rounded, ops.EagerTensor):
        setattr(rounded.op, _ROUNDED_MARK, True)
    return rounded


def round_operands(row, arguments):
    """Rounds ``row``'s operands in ``arguments`` (a function's bound arguments).

    Returns whether an operand was rounded here.
    """
    changed = False
    for name in row.operands:
        if name not in arguments:
            continue
        value = arguments[name]
        if isinstance(value, (list, tuple)):
            # Einsum: a one-operand einsum is a reduction, not a dot.
            if len(value) == 2:
                arguments[name] = [round_to_bfloat16(v) for v in value]
                changed = changed or any(a is not b for a, b in zip(arguments[name], value))
        else:
            arguments[name] = round_to_bfloat16(value)
            changed = changed or arguments[name] is not value
    return changed


def _rounding(original, row, emulated_extended):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def rounded(*args, **kwargs):
        if not active(emulated_extended):
            return original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        if numerics_ops.recorder() is None:
            round_operands(row, bound.arguments)
            return original(*bound.args, **bound.kwargs)
        # numerics-diff --ops-at-step: the same op on the operands as given too.
        exact = signature.bind(*args, **kwargs)
        if "name" in signature.parameters:
            # The caller's name is the op's own (a name scope ending in "/").
            exact.arguments["name"] = None
        if not round_operands(row, bound.arguments):
            return original(*bound.args, **bound.kwargs)
        return numerics_ops.record(row.op_type, original(*bound.args, **bound.kwargs),
                                   lambda: original(*exact.args, **exact.kwargs))

    return rounded


def install(changes, emulated_extended):
    """Wraps each row's function (recorded in ``changes``) when numerics is ``tpu``.

    The wrappers round in replica steps of strategies whose extended is an
    ``emulated_extended`` (:class:`tpu_compat.runtime.emulated.EmulatedTPUExtended`,
    passed by the registry's "numerics" row).
    """
    if not enabled():
        return
    numerics_ops.configure()
    for row in ROWS:
        module = _MODULES[row.module]
        changes.replace(module, row.function,
                        _rounding(getattr(module, row.function), row, emulated_extended))
