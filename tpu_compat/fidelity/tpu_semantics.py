"""The TPU-semantics lint of fidelity ``tpu``: ops a TPU computes differently.

The compile checks (:mod:`tpu_compat.fidelity.compile_checks`) stop a replica step a
TPU would refuse. Some ops a TPU compiles and runs, but with other results
than the emulated cores' CPU kernels give. Under ``TPU_COMPAT_FIDELITY=tpu``
each op of a replica step is also checked against :data:`ROWS`, when the step
is traced, and each match is a :class:`~tpu_compat.deprecation.
TPUSemanticsWarning` naming the op and the user's line (a warning, not an
error: the program may mean it; ``--warnings=error`` makes it fail there).
One warning per (row, op type, user line) per process, however many replicas,
steps or traces build it.

Which ops are checked: those :func:`compile_checks.compiled_ops` yields, the same
walk as the compile checks (the input pipeline, ``outside_compilation`` and
the other host ops are left out, functions the step calls are followed), less
the ops that initialize a variable the step creates: TF 1.x builds those under
``ops.init_scope()``, outside the TPU computation, in a name scope
``Initializer`` (tensorflow/python/ops/ref_variable.py and
resource_variable_ops.py, ``_init_from_args``), so a TPU runs them on its host.
Gradient ops are left out too: the backward pass of a float64 op the forward
pass reported already, or TensorFlow's own shape arithmetic.
"""

import dataclasses
import re
import threading
from typing import Callable, FrozenSet

import numpy as np
import tensorflow as tf

from tpu_compat import _callsite, deprecation
from tpu_compat._tf_internals import dtypes, ops
from tpu_compat.fidelity import compile_checks

__all__ = ["ROWS", "LintRow", "check_ops"]


@dataclasses.dataclass(frozen=True)
class LintRow:
    """One kind of op a TPU computes differently from a CPU, and why."""

    rule: str
    op_types: FrozenSet[str]
    finds: Callable  # op -> what is wrong with it (a phrase), or None
    tpu_does: str  # what a TPU does instead
    fix: str
    source: str  # where TensorFlow (or XLA) says so


# -- seeded stateful random ops ------------------------------------------------------

# The stateful random ops with a `seed`/`seed2` pair that tf2xla compiles:
# RandomUniform, RandomUniformInt, RandomStandardNormal, TruncatedNormal and
# RandomShuffle in tensorflow/compiler/tf2xla/kernels/random_ops.cc (r1.15,
# r2.3; ParameterizedTruncatedNormal there since TF 2.4), Multinomial in
# categorical_op.cc. Each kernel builds xla::RngUniform / xla::RngNormal,
# which take no seed at all (random_ops.cc opens with "TODO(misard,phawkins):
# handle random number generator seeds/states correctly"; categorical_op.cc
# logs "Using tf.random.categorical with XLA compilation will ignore seeds").
# tests/test_tpu_semantics.py checks that TF 2.21's registry has exactly these.
_SEEDED_RANDOM_OPS = frozenset([
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
    "RandomShuffle", "Multinomial", "ParameterizedTruncatedNormal"])


def _seeded(op):
    seeds = [op.get_attr(name) for name in ("seed", "seed2")]
    if not any(seeds):  # (0, 0): TF's "no seed" (random_seed.get_seed)
        return None
    return f"is seeded (seed={seeds[0]}, seed2={seeds[1]})"


# -- float64 ----------------------------------------------------------------------------

_FLOAT64 = dtypes.float64.base_dtype


# Ops whose value a trace fixes when their input's shape is fully defined.
_SHAPE_OPS = frozenset(["Shape", "Size", "Rank"])


def _folds(op, depth=0):
    """Whether ``op``'s value is fixed at compile time: constants and static shapes, and
    stateless ops of them only. XLA folds such a computation before it runs (its
    HloConstantFolding pass), so none of it runs on the TPU: the TPU ResNet's
    ``tf.sqrt(tf.shape(x)[0] / (3 * tf.shape(y)[0]))`` (an int32 truediv, so float64)
    ran on TPUs for years."""
    if op.type == "Const":
        return True
    if op.type in _SHAPE_OPS:
        return op.inputs[0].shape.is_fully_defined()
    if depth > 32 or not op.inputs or op._is_stateful:  # pylint: disable=protected-access
        return False
    return all(_folds(t.op, depth + 1) for t in op.inputs)


def _makes_float64(op):
    if any(t.dtype.base_dtype == _FLOAT64 for t in op.outputs) and not _folds(op):
        return "produces a float64 tensor"
    return None


# -- integer division and modulo --------------------------------------------------------

# tf2xla lowers them to xla::Div / xla::Rem with no check of the divisor
# (tensorflow/compiler/tf2xla/kernels/binary_ops.cc: Div, TruncateDiv,
# TruncateMod, Mod; FloorDiv and FloorMod built from them), unlike DivNoNan,
# which selects 0 where the divisor is 0.
_INTEGER_DIVISION_OPS = frozenset(["Div", "TruncateDiv", "FloorDiv", "Mod", "TruncateMod",
                                   "FloorMod"])


def _static_value(tensor):
    """The value of ``tensor`` when it is known at trace time, else None."""
    value = tf.get_static_value(tensor)
    if value is not None:
        return value
    # A tf.function's capture of an eager tensor: fixed for this trace.
    captures = getattr(tensor.graph, "captures", ())
    for external, internal in captures:
        if internal is tensor and isinstance(external, ops.EagerTensor):
            return external.numpy()
    return None


def _positive(tensor):
    value = _static_value(tensor)
    return value is not None and bool(np.all(np.asarray(value) > 0))


def _divisor_can_be_zero(op):
    if not op.inputs[0].dtype.base_dtype.is_integer:
        return None
    divisor = op.inputs[1]
    value = _static_value(divisor)
    if value is None:
        # tf.maximum(d, 1): the guard the fix suggests (and TF's own
        # _safe_shape_div in math_grad.py) cannot be 0.
        if divisor.op.type == "Maximum" and any(_positive(t) for t in divisor.op.inputs):
            return None
        return "divides integers by a divisor only known at run time"
    if np.all(np.asarray(value) != 0):
        return None
    return "divides integers by a divisor that is 0"


ROWS = (
    LintRow(
        "seeded-random", _SEEDED_RANDOM_OPS, _seeded,
        tpu_does="a TPU ignores the seeds of stateful random ops, so a TPU run draws "
                 "other numbers than this seeded run",
        fix="draw with a stateless op and an explicit seed "
            "(tf.random.stateless_uniform/stateless_normal), or in the input pipeline",
        source="tensorflow/compiler/tf2xla/kernels/random_ops.cc, categorical_op.cc "
               "(xla::RngUniform/RngNormal take no seed)"),
    LintRow(
        "float64", None, _makes_float64,
        tpu_does="a TPU has no float64 hardware: XLA rewrites float64 into pairs "
                 "of float32 (slow; some ops are not rewritten and fail)",
        fix="compute in float32 (cast the input pipeline's float64 features there)",
        source="jax-ml/jax#10158 (XLA: TPUs have no float64 hardware, emulated with "
               "float32 double-double math); the TPU compiler's \"While rewriting "
               "computation to not contain X64 element types\" (jax-ml/jax#11831)"),
    LintRow(
        "integer-division", _INTEGER_DIVISION_OPS, _divisor_can_be_zero,
        tpu_does="where the divisor is 0 a TPU gives an implementation-defined value, "
                 "where TF's CPU kernel raises \"Integer division by zero\"",
        fix="guard the divisor: tf.maximum(d, 1)",
        source="tensorflow/compiler/tf2xla/kernels/binary_ops.cc (xla::Div/xla::Rem, "
               "no zero check); XLA operation semantics: integer division by zero "
               "\"produces an implementation defined value\""),
)


# -- the walk ---------------------------------------------------------------------------

_INITIALIZER_SCOPE = "Initializer"
# tf.gradients' and GradientTape's name scopes (uniquified: gradients_1).
GRADIENT_SCOPE = re.compile(r"(gradients(_\d+)?|gradient_tape)$")


def _skipped(op):
    """Variable initializers (run on the host), and gradient ops: the backward
    pass of an op the forward pass already reported, or TensorFlow's own
    (shape arithmetic), reported at the line that asked for the gradient."""
    scopes = op.name.split("/")[:-1]
    return _INITIALIZER_SCOPE in scopes or any(GRADIENT_SCOPE.match(s) for s in scopes)


def _findings(op):
    for row in ROWS:
        if row.op_types is not None and op.type not in row.op_types:
            continue
        problem = row.finds(op)
        if problem:
            yield row, problem


_warned = set()
_warned_lock = threading.Lock()


def _first_time(key):
    with _warned_lock:
        if key in _warned:
            return False
        _warned.add(key)
        return True


def check_ops(op_list, graph):
    """Warns, once per (row, op type, user line), for each op of ``op_list`` in ROWS.

    ``op_list`` are the ops a replica step created in ``graph``; functions
    they call are checked too. Under ``--warnings=error`` the first warning
    raises (a :class:`~tpu_compat.deprecation.TPUSemanticsWarning`).
    """
    for op in compile_checks.compiled_ops(op_list, graph):
        if _skipped(op):
            continue
        for row, problem in _findings(op):
            filename, lineno = _callsite.user_location(op.traceback)
            if not _callsite.is_program_file(filename):
                # No frame of the program made this op (a library's own
                # code, e.g. tensorboard's histogram bucketing with nothing
                # of the user's on the stack): the program cannot fix it.
                continue
            if not _first_time((row.rule, op.type, filename, lineno)):
                continue
            message = (f"{filename}:{lineno}: on a TPU, op {op.type} ({op.name}) in a "
                       f"replica step {problem}: {row.tpu_does}. Fix: {row.fix}. "
                       f"[{row.rule}]")
            deprecation.warn_at(deprecation.TPUSemanticsWarning(message), filename, lineno)
