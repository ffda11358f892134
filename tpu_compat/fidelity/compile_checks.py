"""Fidelity ``tpu``: would TF 2.21's TPU compiler accept this replica step?

A TPU compiles each replica step with XLA; the emulated cores are CPU devices
and run anything. With ``TPU_COMPAT_FIDELITY=tpu`` (``tpu-compat run
--fidelity tpu``) the ops a replica step creates are checked when the step is
traced, before any step runs, against what TF 2.21 would do with them:

* An op compiles when TensorFlow's own XLA kernel registry has a kernel for
  it (device type ``XLA_CPU_JIT``/``XLA_GPU_JIT``: TensorFlow registers the
  tf2xla kernels for every XLA device, TPU included, from one op list) whose
  type constraints accept the op's dtypes.
* A TPU has no string or complex128 tensors (``kTpuAllTypes``,
  tensorflow/core/tpu/tpu_defs.h; float64 *is* in it since TF 2.x).
* An op the compiler cannot compile fails the compilation only when soft
  device placement is off when the step is traced: with it on, TF 2.21's
  ``tpu.replicate`` enables *automatic outside compilation*
  (tensorflow/python/tpu/tpu.py: "Ops without XLA kernels will be
  automatically placed on CPU"), so such ops run on the host. Unless set,
  TF derives it from ``executing_eagerly()``: off inside a ``tf.function``
  being traced (TF 2.x ``strategy.run`` steps) and in TF 1.x programs
  (``disable_v2_behavior``: sessions, TPUEstimator, ``tpu.replicate``).
* Ops inside ``outside_compilation`` and the input pipeline (iterators,
  optionals, function arguments) run on the host, as on a TPU.

* Shapes XLA cannot bound: an input XLA must know at compile time (Reshape's
  ``shape``, Fill's ``dims``, Range's bounds, OneHot's ``depth``...: the
  ``CompileTimeConstantInput`` registrations of tf2xla, tabled with their
  sources in :mod:`tpu_compat.fidelity.compile_time_constants`) that the step
  computes from tensor *values* -- its inputs, variables, random numbers --
  rather than from constants and ``tf.shape``/``tf.size``/``tf.rank``, which
  XLA folds or bounds. Data-dependent *output* shapes are not flagged: XLA
  bounds ``Where``, ``Unique``, ``boolean_mask``, ``DynamicPartition``...
  (they have XLA kernels); an op that cannot be bounded has no XLA kernel and
  is caught by the registry.
"""

import threading

import tensorflow as tf

from tpu_compat import _callsite, settings
from tpu_compat._tf_internals import dtypes, kernels, ops
from tpu_compat._tf_internals import eager_context as context
from tpu_compat._tf_internals import framework_config as tf_config
from tpu_compat.fidelity import compile_time_constants

__all__ = ["TPUCompilationError", "check_ops", "compiled_ops", "enabled",
           "mark_host_ops"]

_XLA_DEVICE_TYPES = ("XLA_CPU_JIT", "XLA_GPU_JIT")
# Not in kTpuAllTypes (tensorflow/core/tpu/tpu_defs.h).
_TPU_UNSUPPORTED_DTYPES = (dtypes.string, dtypes.complex128)
# Host-side by construction: the replica's inputs, the input pipeline, the
# outside_compilation markers TF itself sets.
# Variables a step creates are lifted out of the compiled computation by
# TF's TPU replicate context and passed in as resources.
_HOST_OP_TYPES = frozenset(["Placeholder", "_Arg", "_Retval", "NoOp", "Const",
                            "VarHandleOp", "VariableV2", "VarIsInitializedOp",
                            "IsVariableInitialized"])
_HOST_OP_WORDS = ("Iterator", "Dataset", "Optional")
# TF 1.x control flow (tf.while_loop/tf.cond in graph mode): the TPU bridge
# functionalizes these into XLA While/If before compiling
# (tensorflow/compiler/tf2xla/functionalize_control_flow.cc).
_V1_CONTROL_FLOW = frozenset(["Enter", "Exit", "Merge", "Switch", "LoopCond",
                              "NextIteration", "RefEnter", "RefExit", "RefMerge",
                              "RefSwitch", "RefNextIteration", "ControlTrigger"])
_OUTSIDE_COMPILATION_ATTR = "_xla_outside_compilation"
# Compiled as no-ops (tensorflow/compiler/tf2xla/kernels/assert_op.cc): their
# inputs never become TPU tensors, so a string message is fine. Keras losses
# and tf.debugging.assert_* put these in every TPU training step. TF's XLA
# kernel registry lists DT_STRING among Assert's allowed types.
_XLA_NO_OPS = frozenset(["Assert"])


class TPUCompilationError(ValueError):
    """A replica step has ops a TPU cannot compile (fidelity ``tpu``)."""

    # Raised while autograph traces a tf.function (TF 2.x strategy.run steps,
    # Keras train functions): without this, autograph re-raises a ValueError
    # subclass as a generic StagingError. The message already names the
    # user's line, so the error passes through unchanged.
    ag_pass_through = True


def enabled():
    """True when replica steps are checked as a TPU compiler would."""
    # The library's default is cpu; `tpu-compat run`, regress and the pytest
    # plugin export tpu (tpu_compat/settings.py).
    return settings.read("fidelity") == "tpu"


# -- TensorFlow's XLA kernel registry ----------------------------------------

_registry_lock = threading.Lock()
_registry_ready = False
_kernel_cache = {}


def _ensure_xla_kernels_registered():
    """TF registers its tf2xla kernels when the first XLA device starts."""
    global _registry_ready  # pylint: disable=global-statement
    with _registry_lock:
        if _registry_ready:
            return
        # Eager even in a TF 1.x graph program: the kernel must really run.
        # This process's own CPU, named in full: inside a pod's strategy
        # scope, "/device:CPU:0" would be a remote worker's, and the kernels
        # would be registered there.
        with context.eager_mode(), ops.device(
                context.context().host_address_space() + "/device:CPU:0"):
            tf.function(lambda x: x + 1, jit_compile=True)(tf.constant(0))
        if not _xla_kernels("MatMul"):
            raise RuntimeError(
                f"{settings.FIDELITY_VAR}=tpu needs TensorFlow's XLA kernel "
                f"registry, which this TensorFlow build does not expose")
        _registry_ready = True


def _xla_kernels(op_type):
    if op_type not in _kernel_cache:
        try:
            kernel_list = kernels.get_registered_kernels_for_op(op_type)
        except Exception:  # pylint: disable=broad-except
            kernel_list = None  # an op this build does not know
        _kernel_cache[op_type] = [k for k in (kernel_list.kernel if kernel_list else ())
                                  if k.device_type in _XLA_DEVICE_TYPES]
    return _kernel_cache[op_type]


def _constraint_met(op, constraint):
    allowed = set(constraint.allowed_values.list.type)
    try:
        value = op.get_attr(constraint.name)
    except ValueError:
        return True
    values = value if isinstance(value, list) else [value]
    return all(dtypes.as_dtype(v).as_datatype_enum in allowed for v in values)


def _compile_problem(op):
    """Why TF 2.21's TPU compiler rejects ``op``, or None."""
    if op.type in _XLA_NO_OPS:
        return None
    for tensor in list(op.inputs) + list(op.outputs):
        if tensor.dtype.base_dtype in _TPU_UNSUPPORTED_DTYPES:
            return f"a TPU has no {tensor.dtype.base_dtype.name} tensors"
    candidates = _xla_kernels(op.type)
    if not candidates:
        return "XLA has no kernel for it"
    if not any(all(_constraint_met(op, c) for c in k.constraint) for k in candidates):
        types = ", ".join(sorted({t.dtype.name for t in op.inputs}))
        return f"XLA has no kernel for it with these types ({types})"
    return None


# -- which ops are checked ------------------------------------------------------

_HOST_MARK = "_tpu_compat_outside_compilation"


def mark_host_ops(ops_list):
    """Exempts ``ops_list`` (an ``outside_compilation``'s host ops) from checks.

    The mark is on the op objects: replicas are built in their own threads,
    the check runs in the caller's.
    """
    for op in ops_list:
        setattr(op, _HOST_MARK, True)


def _is_host_op(op):
    if op.type in _HOST_OP_TYPES or any(w in op.type for w in _HOST_OP_WORDS):
        return True
    if _OUTSIDE_COMPILATION_ATTR in op.node_def.attr:
        return True
    return getattr(op, _HOST_MARK, False)


def _function_graphs(op, graph):
    """The graphs of the functions ``op`` calls (tf.function, While/If bodies)."""
    names = []
    for value in op.node_def.attr.values():
        if value.HasField("func"):
            names.append(value.func.name)
        names.extend(f.name for f in value.list.func)
    for name in names:
        function = graph._get_function(name)  # pylint: disable=protected-access
        function_graph = getattr(function, "graph", None) if function else None
        if function_graph is not None:
            yield function_graph


def _unbounded_shape_problem(op, dependence):
    """Why XLA cannot make ``op``'s compile-time-constant inputs constant, or None."""
    for name, tensor in compile_time_constants.constant_inputs(op):
        if dependence.from_data(tensor):
            return (f"its input `{name}` is computed from tensor values, so XLA "
                    f"cannot make it a compile-time constant (data-dependent shape)")
    return None


def compiled_ops(op_list, graph, entering=None, seen_graphs=None):
    """The ops of ``op_list`` (in ``graph``) a TPU compiles, and those of the
    functions they call, each function once; host ops are left out.

    ``entering(inner_graph, calling_op)`` is told before a function's ops.
    """
    seen_graphs = set() if seen_graphs is None else seen_graphs
    for op in op_list:
        if op.type in _V1_CONTROL_FLOW or _is_host_op(op):
            continue
        yield op
        for inner in _function_graphs(op, graph):
            if id(inner) not in seen_graphs:
                seen_graphs.add(id(inner))
                if entering is not None:
                    entering(inner, op)
                yield from compiled_ops(inner.get_operations(), inner, entering,
                                        seen_graphs)


def _offenders(op_list, graph, dependence):
    for op in compiled_ops(op_list, graph, dependence.bind):
        problem = _compile_problem(op) or _unbounded_shape_problem(op, dependence)
        if problem:
            yield op, problem


# -- the user's line -------------------------------------------------------------

def _user_location(op, caller):
    """The ``(file, line)`` of the user's code that created ``op``.

    ``caller``: the frames of the thread that asked for the step. A replica
    runs in a thread of its own whose stack starts in ``threading``; when the
    replica function is a library's (a Keras train step, ``strategy.run(
    tf.strings.as_string, ...)``), the program's line is the one that asked.
    """
    return _callsite.user_location(op.traceback, caller)


_FIXES = {
    "shape": "give it a static shape: compute the size from tf.shape or a Python "
             "constant, or move it to the input pipeline (dataset.map)",
    "string": "move the string processing into the input pipeline (dataset.map) "
              "or wrap it in tf.compat.v1.tpu.outside_compilation",
    "default": "move it into the input pipeline (dataset.map) or the host "
               "(tf.compat.v1.tpu.outside_compilation), or replace it with an op "
               "XLA compiles (static shapes)",
}


def _message(op, problem, caller):
    filename, lineno = _user_location(op, caller)
    kind = ("shape" if "compile-time constant" in problem
            else "string" if "string" in problem else "default")
    fix = _FIXES[kind]
    return (f"{filename}:{lineno}: a TPU cannot compile op {op.type} "
            f"({op.name}) in a replica step: {problem}. Fix: {fix}.")


def check_ops(op_list, graph):
    """Raises TPUCompilationError naming each op of ``op_list`` a TPU rejects.

    ``op_list`` are the ops a replica step created in ``graph``; functions they
    call are checked too. Nothing is checked while soft device placement is
    on: TF 2.21 then outside-compiles what XLA cannot compile. Called in the
    thread that asked for the step, whose frames name the program's line
    when a replica's own do not.
    """
    if tf_config.get_soft_device_placement():
        return
    caller = _callsite.current_frames()
    _ensure_xla_kernels_registered()
    messages = []
    dependence = compile_time_constants.ValueDependence()
    for op, problem in _offenders(op_list, graph, dependence):
        message = _message(op, problem, caller)
        key = message.split(" (", 1)[0]  # one line per op type and user line
        if all(not m.startswith(key) for m in messages):
            messages.append(message)
    if messages:
        raise TPUCompilationError(
            f"{len(messages)} op(s) in this replica step would fail TPU "
            f"compilation ({settings.FIDELITY_VAR}=tpu):\n  " + "\n  ".join(messages))
