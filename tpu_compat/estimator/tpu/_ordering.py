"""One step's variable reads ordered before its updates, as on a TPU.

Used by TPUEstimator's emulated TPU step (``programs.py``: every read of the
step, :func:`step_reads_before_writes`) and by its CPU path
(``spec.TPUEstimatorSpec.as_estimator_spec``: the reads ``host_call`` gets),
so that the step's numbers do not depend on which thread of the graph
executor runs first.
"""

__all__ = ["reads_before_updates", "step_reads_before_writes"]


# Ops that write a resource variable given as their first input.
_VARIABLE_WRITE_TYPES = frozenset({"AssignVariableOp", "AssignAddVariableOp",
                                   "AssignSubVariableOp"})


# Ops that read a resource variable given as their first input.
_VARIABLE_READ_TYPES = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd"})


def _writes_variable(op):
    return op.inputs and (op.type in _VARIABLE_WRITE_TYPES or op.type.startswith(
        ("ResourceApply", "ResourceSparseApply", "ResourceScatter")))


def _variable_of(tensor):
    """The op that creates the resource ``tensor`` refers to (through Identity)."""
    op = tensor.op
    while op.type == "Identity" and op.inputs:
        op = op.inputs[0].op
    return op


def _ancestors(ops):
    seen, stack = set(), list(ops)
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend(tensor.op for tensor in op.inputs)
            stack.extend(op.control_inputs)
    return seen


def reads_before_updates(host_tensors, train_op):
    """Orders the step's variable reads feeding ``host_call`` before its updates.

    A TPU runs the step as one XLA computation, whose variable reads see the
    values the step started with; so ``host_call`` gets the step's own
    ``global_step`` (0, 1, ... as TF 1.15 logged it). A CPU graph runs an
    unordered read and the step's ``assign_add`` in either order, so the value
    would be this step's or the next one's at random. Each read of a variable
    that the train op writes becomes a control input of that write (unless the
    read depends on the write, or lives in another loop frame).
    """
    reads = {}
    for op in _ancestors(tensor.op for tensor in host_tensors if hasattr(tensor, "op")):
        if op.type == "ReadVariableOp":
            reads.setdefault(_variable_of(op.inputs[0]), []).append(op)
    if not reads:
        return
    for op in _ancestors([getattr(train_op, "op", train_op)]):
        if not _writes_variable(op):
            continue
        context = op._get_control_flow_context()  # pylint: disable=protected-access
        before = [read for read in reads.get(_variable_of(op.inputs[0]), ())
                  if read._get_control_flow_context() is context  # pylint: disable=protected-access
                  and op not in _ancestors([read])]
        if before:
            op._add_control_inputs(before)  # pylint: disable=protected-access


def _consumers(ops):
    """``{op: [ops of ``ops`` that take its output or wait for it]}``."""
    consumers = {}
    for op in ops:
        for producer in [tensor.op for tensor in op.inputs] + list(op.control_inputs):
            consumers.setdefault(producer, []).append(op)
    return consumers


def step_reads_before_writes(fetches):
    """Orders every variable read of a step before the step's writes of that variable.

    On a TPU the step was one XLA computation, compiled in one fixed order
    (TF 1.15, tensorflow/compiler/tf2xla/graph_compiler.cc,
    ``GraphCompiler::Compile``: "XLA requires determinism, generate a stable
    ordering from DFS"), so a read that no data or control edge orders
    against a write gave the same value in every run. The emulated step is a
    graph run by the executor's threads, where such a read sees the old or
    the new value at random. BERT's optimization.py is the case in point: its
    learning rate reads ``global_step`` while
    ``tf.group(train_op, [global_step.assign(global_step + 1)])`` increments it,
    unordered, so the learning rate of a step was that step's or the next
    one's, and a run of several steps gave different weights each time (issue
    36). Here each such read runs first: the step sees the values it started
    with, as ``reads_before_updates`` gives ``host_call`` (and as a TF 2
    ``tf.function``, ordering stateful ops as written, gives BERT's code).

    ``fetches``: the step's outputs (every replica's), which depend on its
    train ops. Reads that depend on one of the step's writes are left alone
    (they are ordered already, and a control edge could close a cycle); so
    are reads in another control-flow frame than the write.
    """
    region = _ancestors(getattr(f, "op", f) for f in fetches)
    writes = [op for op in region if _writes_variable(op)]
    if not writes:
        return 0
    after_a_write, stack, consumers = set(), list(writes), _consumers(region)
    while stack:
        op = stack.pop()
        if op not in after_a_write:
            after_a_write.add(op)
            stack.extend(consumers.get(op, ()))
    reads = {}
    for op in region:
        if op.type in _VARIABLE_READ_TYPES and op not in after_a_write:
            reads.setdefault(_variable_of(op.inputs[0]), []).append(op)
    added = 0
    for write in writes:
        context = write._get_control_flow_context()  # pylint: disable=protected-access
        before = [read for read in reads.get(_variable_of(write.inputs[0]), ())
                  if read._get_control_flow_context() is context  # pylint: disable=protected-access
                  and read not in write.control_inputs]
        if before:
            write._add_control_inputs(before)  # pylint: disable=protected-access
            added += len(before)
    return added
