"""Inputs XLA must know at compile time, and whether a step computes them from data.

XLA compiles a program with static (or bounded) shapes, so tf2xla registers
some op inputs as *compile-time constants* (``XlaOpRegistrationBuilder::
CompileTimeConstantInput``, tensorflow/compiler/tf2xla/xla_op_registry.cc):
Reshape's ``shape``, Fill's ``dims``, Range's bounds... When the tensor
feeding one is computed from tensor *values* (the step's inputs, variables,
random numbers), XLA cannot fold it to a constant nor bound it, and the TPU
compilation fails with "Input 1 to node ... must be a compile-time constant".

Where the table comes from. TensorFlow does not expose these inputs to Python:
``XlaOpRegistry::CompileTimeConstantInputArgNames`` is C++ only, and the
``XLA_*_JIT`` KernelDefs that ``kernels.get_registered_kernels_for_op`` returns
carry no ``host_memory_arg`` for them (``RegisterCompilationKernels`` in
xla_op_registry.cc copies only the type constraints; checked on TF 2.21:
Reshape, Fill, Range, Tile... all have empty ``host_memory_arg``). So
``MUST_BE_CONSTANT`` is a short table of the ``REGISTER_XLA_OP(Name(...)
.CompileTimeConstantInput(...))`` registrations in
tensorflow/compiler/tf2xla/kernels/, each file named, limited to inputs whose
kernel has no fallback for a value it cannot infer. Left out on purpose:
Slice/StridedSlice ``begin``/``end`` (the kernels fall back to a dynamic
slice), stateless random ``alg``/``key`` (XLA's key/counter op emits them as
constants), TensorList sizes (bounded at run time by the while loop).

What counts as "computed from data" (``ValueDependence``): the tensor reaches,
through data edges, a value only known at run time -- a placeholder or
function argument, a variable read, an iterator value, a stateful op (random
numbers) -- without passing a ``Shape``/``ShapeN``/``Size``/``Rank``/
``VariableShape``: XLA value-infers those (static or bounded dimensions).
Constants and arithmetic on shapes fold. Calls, ``If`` and ``While`` bodies
are followed argument by argument. Everything else it cannot see into (a
function whose graph is gone, a captured eager value) counts as *not* from
data: a false alarm on a legitimate TPU program is worse than a miss.
"""

from tpu_compat._tf_internals import ops

__all__ = ["MUST_BE_CONSTANT", "ValueDependence", "constant_inputs"]

_REDUCTIONS = dict.fromkeys(["Sum", "Prod", "Min", "Max", "Mean", "All", "Any"],
                            ("reduction_indices",))  # reduction_ops.cc
_RANDOM_SHAPES = dict.fromkeys(
    ["RandomUniform", "RandomStandardNormal", "TruncatedNormal",  # random_ops.cc
     "RandomUniformInt",
     "StatelessRandomUniform", "StatelessRandomNormal",  # stateless_random_ops.cc
     "StatelessTruncatedNormal", "StatelessRandomUniformV2",  # stateless_random_ops_v2.cc
     "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"], ("shape",))

# op type -> its inputs XLA must fold to a constant (file in
# tensorflow/compiler/tf2xla/kernels/ that registers them).
MUST_BE_CONSTANT = {
    "Reshape": ("shape",),                                      # reshape_op.cc
    "Fill": ("dims",),                                          # fill_op.cc
    "Range": ("start", "limit", "delta"),                       # sequence_ops.cc
    "LinSpace": ("num",),                                       # sequence_ops.cc
    "Tile": ("multiples",),                                     # tile_ops.cc
    "Slice": ("size",),                                         # slice_op.cc
    "OneHot": ("depth",),                                       # one_hot_op.cc
    "BroadcastTo": ("shape",),                                  # broadcast_to_op.cc
    "Pad": ("paddings",), "PadV2": ("paddings",),               # pad_op.cc
    "MirrorPad": ("paddings",),                                 # mirror_pad_op.cc
    "Transpose": ("perm",),                                     # transpose_op.cc
    "ExpandDims": ("dim",),                                     # shape_op.cc
    "ConcatV2": ("axis",),                                      # concat_op.cc
    "Split": ("split_dim",),                                    # split_op.cc
    "SplitV": ("size_splits", "split_dim"),                     # split_op.cc
    "ArgMax": ("dimension",), "ArgMin": ("dimension",),         # index_ops.cc
    "Cumsum": ("axis",), "Cumprod": ("axis",),                  # scan_ops.cc
    "TopKV2": ("k",),                                           # topk_op.cc
    "ResizeBilinear": ("size",),                                # image_resize_ops.cc
    "ResizeNearestNeighbor": ("size",),                         # image_resize_ops.cc
    "GatherV2": ("axis",),                                      # gather_op.cc
    "ReverseV2": ("axis",),                                     # reverse_op.cc
    **_REDUCTIONS,
    **_RANDOM_SHAPES,
}

# XLA knows their value from the (static or bounded) shape alone.
_SHAPE_OPS = frozenset(["Shape", "ShapeN", "Size", "Rank", "VariableShape"])
# Values known only at run time.
_SOURCE_OPS = frozenset(["Placeholder", "PlaceholderWithDefault", "_Arg",
                         "ReadVariableOp", "ResourceGather", "VariableV2", "Variable"])
_SOURCE_WORDS = ("Iterator", "Optional")
_CALLS = frozenset(["PartitionedCall", "StatefulPartitionedCall"])
_IFS = frozenset(["If", "StatelessIf"])
_CASES = frozenset(["Case", "StatelessCase"])
_WHILES = frozenset(["While", "StatelessWhile"])
# A bound XLA can infer when any operand is bounded (kUpperBound value
# inference): min(n, 10) is at most 10 whatever n is.
_BOUNDED_BY_ANY = frozenset(["Minimum"])


def constant_inputs(op):
    """``[(input name, tensor)]`` of ``op``'s inputs XLA must know at compile time."""
    names = MUST_BE_CONSTANT.get(op.type)
    if not names:
        return []
    found, index = [], 0
    for arg in op.op_def.input_arg:
        if arg.number_attr:
            width = op.get_attr(arg.number_attr)
        elif arg.type_list_attr:
            width = len(op.get_attr(arg.type_list_attr))
        else:
            width = 1
        if arg.name in names:
            found.extend((arg.name, op.inputs[i]) for i in range(index, index + width))
        index += width
    return found


def _function_graph(op, attr_name):
    try:
        name = op.get_attr(attr_name).name
    except (ValueError, AttributeError):
        return None
    function = op.graph._get_function(name)  # pylint: disable=protected-access
    return getattr(function, "graph", None) if function else None


def _branch_graphs(op):
    if op.type in _IFS:
        return [_function_graph(op, "then_branch"), _function_graph(op, "else_branch")]
    graphs = []
    for branch in op.get_attr("branches"):
        function = op.graph._get_function(branch.name)  # pylint: disable=protected-access
        graphs.append(getattr(function, "graph", None) if function else None)
    return graphs


class ValueDependence:
    """Answers "is this tensor computed from data?" for one check, memoized."""

    def __init__(self):
        self._memo = {}
        self._in_progress = set()
        # id(function graph) -> (op calling it, offset of its first argument,
        # the loop body whose outputs feed the arguments back, for While)
        self._callers = {}
        self._input_index = {}
        self._captures = {}

    def bind(self, inner_graph, caller):
        """``inner_graph`` (a body of ``caller``) gets its arguments from ``caller``."""
        if id(inner_graph) in self._callers:
            return
        offset = 1 if caller.type in _IFS | _CASES else 0
        body = _function_graph(caller, "body") if caller.type in _WHILES else None
        self._callers[id(inner_graph)] = (caller, offset, body)

    def from_data(self, tensor):
        key = (id(tensor.op), tensor.value_index)
        if key in self._memo:
            return self._memo[key]
        if key in self._in_progress:  # a loop-carried cycle: decided elsewhere
            return False
        self._in_progress.add(key)
        try:
            result = self._compute(tensor)
        finally:
            self._in_progress.discard(key)
        self._memo[key] = result
        return result

    def _compute(self, tensor):
        op = tensor.op
        if op.type == "Const" or op.type in _SHAPE_OPS:
            return False
        if op.type in ("Placeholder", "_Arg"):
            return self._argument(tensor)
        if op.type in _CALLS:
            return self._through_body(_function_graph(op, "f"), op, tensor.value_index)
        if op.type in _IFS | _CASES:
            return self.from_data(op.inputs[0]) or any(
                self._through_body(graph, op, tensor.value_index)
                for graph in _branch_graphs(op))
        if op.type in _WHILES:
            return self.from_data(op.inputs[tensor.value_index]) or self._through_body(
                _function_graph(op, "body"), op, tensor.value_index)
        if op.type in _SOURCE_OPS or any(w in op.type for w in _SOURCE_WORDS):
            return True
        if op.op_def.is_stateful and op.outputs:  # random numbers, collectives...
            return True
        inputs = [self.from_data(t) for t in op.inputs]
        if op.type in _BOUNDED_BY_ANY:
            return all(inputs)
        return any(inputs)

    def _through_body(self, graph, caller, output_index):
        if graph is None or output_index >= len(graph.outputs):
            return False  # cannot see into it: not reported
        self.bind(graph, caller)
        return self.from_data(graph.outputs[output_index])

    def _argument(self, tensor):
        graph = tensor.graph
        caller = self._callers.get(id(graph))
        if caller is not None:
            index = self._position(graph, tensor)
            if index is None:
                return False
            op, offset, body = caller
            if offset + index >= len(op.inputs):
                return False
            if self.from_data(op.inputs[offset + index]):
                return True
            # A loop variable: also the previous iteration's value.
            return body is not None and index < len(body.outputs) \
                and self.from_data(body.outputs[index])
        captured = self._captured(graph, tensor)
        if captured is not None:
            # A symbolic tensor of an outer graph: follow it. An eager value
            # captured by a tf.function: not something to report.
            return not isinstance(captured, ops.EagerTensor) \
                and hasattr(captured, "op") and self.from_data(captured)
        return True  # the step's own argument: data

    def _position(self, graph, tensor):
        positions = self._input_index.get(id(graph))
        if positions is None:
            positions = {id(t.op): i for i, t in enumerate(getattr(graph, "inputs", ()))}
            self._input_index[id(graph)] = positions
        return positions.get(id(tensor.op))

    def _captured(self, graph, tensor):
        """The outer tensor ``tensor`` (a FuncGraph placeholder) captures, or None."""
        captures = self._captures.get(id(graph))
        if captures is None:
            captures = {id(internal.op): external
                        for external, internal in getattr(graph, "captures", ())}
            self._captures[id(graph)] = captures
        return captures.get(id(tensor.op))
