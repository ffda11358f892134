"""``graph_loop``'s TF 1.15 multi-step loop: ``extended.experimental_run_steps_on_iterator``.

``loop = strategy.extended.experimental_run_steps_on_iterator(step_fn, it,
iterations=N, initial_loop_values=V)`` (TPC012), in a graph program ->
``loop = _run_steps_on_iterator(strategy, step_fn, it, N, V)``, with the
helper below written once into the module after its imports. The program
keeps its ``step_fn(ctx, inputs)``, its ``ctx.set_last_step_output`` calls and
its ``session.run(loop.run_op)`` / ``loop.last_step_outputs[...]``; the helper
is TF 2.21's public API only (no tpu_compat at run time).

What it keeps, from tensorflow r1.15 tensorflow/python/distribute/
tpu_strategy.py ``_experimental_run_steps_on_iterator`` and input_lib.py
``MultiStepContext``: ``iterations`` steps per ``Session.run`` of ``run_op`` in
one host loop, ``step_fn`` called with the iterator's next element in the
strategy's scope, an output with a ``reduce_op`` reduced across replicas
(``strategy.reduce`` in cross-replica context, a ``merge_call`` in a replica),
one without kept as the replicas' values, and ``last_step_outputs`` holding
the last step's values (the ``initial_loop_values`` give their structure).

Not kept without a person: r1.15's TPU loop ran ONE step when the strategy's
``steps_per_run`` was 1, whatever ``iterations`` said. TF 2's class has no
``steps_per_run``, so the call is rewritten only where the number of steps
is the same either way: ``iterations`` is the expression the module's one TPU
strategy was given as ``steps_per_run``, or both are 1 (or absent), or it
reads that strategy's own ``S.steps_per_run`` / ``S.extended.steps_per_run``.
Those mean the constructor's value by definition (r1.15 tpu_strategy.py:
``TPUStrategyV1.steps_per_run`` returns ``extended.steps_per_run``, which
``TPUExtended.__init__`` set from its ``steps_per_run`` argument, 1 when
None), but TF 2.21's ``TPUStrategy`` has no ``steps_per_run`` and its
``extended.steps_per_run`` is 1: the read is replaced by the constructor's
expression where repeating it gives the same value (a literal, or a name
assigned once at module level), and keeps the TODO otherwise.
"""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import analysis
from tpu_compat.migrate.rewrites._edit import Edit, arguments_by_name
from tpu_compat.migrate.rewrites._keras_tpu_parts import is_import

__all__ = ["HELPER_NAME", "helper_source", "plan", "problem"]

HELPER_NAME = "_run_steps_on_iterator"
_PARAMETERS = ("fn", "iterator", "iterations", "initial_loop_values")
# The TPU strategy constructors whose steps_per_run decides the step count.
_TPU_CONSTRUCTORS = ("TPC005", "TPC017")
_STEPS_PER_RUN_READ = legacy_api.get("TPC008").rule  # S.steps_per_run / S.extended.steps_per_run
_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")
_KERAS_TPU_SCOPE = legacy_api.REWRITE_KERAS_TPU_SCOPE

# The helper, with TF's module spelled {tf}.
_HELPER = '''

class _MultiStepContext(object):
    """TF 1.15's MultiStepContext (experimental_run_steps_on_iterator's ctx),
    written by `tpu-compat upgrade` (TPC012) in TF 2 API."""

    def __init__(self):
        self.last_step_outputs = {{}}
        self.non_tensor_outputs = {{}}
        self.run_op = None

    def set_last_step_output(self, name, output, reduce_op=None):
        if reduce_op is None:
            strategy = {tf}.distribute.get_strategy()
            self.last_step_outputs[name] = list(strategy.experimental_local_results(output))
        elif {tf}.distribute.in_cross_replica_context():
            self.last_step_outputs[name] = {tf}.distribute.get_strategy().reduce(
                reduce_op, output, axis=None)
        else:
            def merge(strategy, value):
                self.last_step_outputs[name] = strategy.reduce(reduce_op, value, axis=None)
            {tf}.distribute.get_replica_context().merge_call(merge, args=(output,))

    def set_non_tensor_output(self, name, output):
        if {tf}.distribute.in_cross_replica_context():
            self.non_tensor_outputs[name] = output
        else:
            def merge(strategy, value):
                self.non_tensor_outputs[name] = strategy.experimental_local_results(value)
            {tf}.distribute.get_replica_context().merge_call(merge, args=(output,))


def {helper}(strategy, fn, iterator, iterations=1, initial_loop_values=None):
    """TF 1.15's strategy.extended.experimental_run_steps_on_iterator, written by
    `tpu-compat upgrade` (TPC012): `iterations` calls of fn(ctx, next element)
    in one graph loop; ctx.run_op runs them, ctx.last_step_outputs holds the
    last step's outputs."""
    ctx = _MultiStepContext()
    initial = {tf}.nest.flatten(initial_loop_values or {{}})

    def body(step, *unused):
        with strategy.scope():
            result = fn(ctx, iterator.get_next())
        with {tf}.control_dependencies([] if result is None else [result]):
            outputs = [{tf}.identity(value) for value in {tf}.nest.flatten(ctx.last_step_outputs)]
            return [step + 1] + outputs

    # flatten: TF 1's while_loop returns a lone loop variable bare, TF 2's a list.
    loop = {tf}.nest.flatten({tf}.while_loop(lambda step, *unused: step < iterations, body,
                                           [{tf}.constant(0)] + initial, parallel_iterations=1))
    ctx.run_op = {tf}.group(loop)
    ctx.last_step_outputs = {tf}.nest.pack_sequence_as(ctx.last_step_outputs, list(loop[1:]))
    return ctx
'''


def helper_source(tf_name):
    """The helper's text, TensorFlow spelled ``tf_name``."""
    return _HELPER.format(tf=tf_name, helper=HELPER_NAME)


def problem(planner, finding):
    """Why the TPC012 ``finding`` (in a graph program) is not rewritten, or None."""
    return _check(planner, finding)[0]


def _check(planner, finding):
    """``(why not, None)``, or ``(None, steps)``: the call can be rewritten, with
    ``iterations`` replaced by the expression ``steps`` (None: kept as written)."""
    site = finding.site
    call = site.call
    if call is None or site.starred or call.func is not site.node:
        return "a reference, not a call", None
    placed = arguments_by_name(call, _PARAMETERS)
    if placed is None or not {"fn", "iterator"} <= set(placed):
        return ("only experimental_run_steps_on_iterator(fn, iterator, iterations, ...) "
                "is rewritten"), None
    receiver = site.node.value
    if not (isinstance(receiver, cst.Attribute) and receiver.attr.value == "extended"
            and site.receiver_pure):
        return "the receiver is not `<strategy>.extended`", None
    steps = _steps(planner, receiver.value, placed.get("iterations"))
    if isinstance(steps, str):
        return steps, None
    module = planner.module
    if module is None:
        return "the module was not parsed for rewriting", None
    if any(f.record.rewrite is not None and f.record.rewrite.kind == _KERAS_TPU_SCOPE
           for f in planner.findings):
        # That kind edits the module's statements too; one edit per node.
        return "the module's keras_to_tpu_model rewrite edits its top level too", None
    if getattr(planner.edits.get(id(module)), "kind", None) is not None:
        return None, steps  # the helper is planned already
    if _module_tf_name(module) is None:
        return "no module-level `import tensorflow as tf` to write the loop's helper with", None
    if {HELPER_NAME, "_MultiStepContext"} & {node.value for node in _names(module)}:
        return f"the module already names {HELPER_NAME} or _MultiStepContext", None
    return None, steps


def plan(planner, finding, kind):
    """Plans the rewrite of the TPC012 ``finding`` (edits of ``kind``); None, or why it
    needs a person."""
    why, steps = _check(planner, finding)
    if why:
        return why
    helper = _helper_edit(planner, kind)
    call = finding.site.call
    iterations = arguments_by_name(call, _PARAMETERS).get("iterations")
    edit = Edit(call, cst.Call, functools.partial(
        _call_helper, finding.site.node.value.value, iterations if steps is not None else None,
        steps), kind, requires=helper.node)
    planner.edit(finding, edit)
    if steps is not None:
        for read in planner.findings:
            if read.rule == _STEPS_PER_RUN_READ and read.site.node is iterations:
                planner.cover(read, edit, "iterations: the strategy's steps_per_run, "
                                          "written as the value it was given")
    return None


def _code(node):
    return None if node is None else cst.Module([]).code_for_node(node).strip()


def _steps(planner, strategy, iterations):
    """Why the step count could differ from the era's (the module's TPU strategy's
    ``steps_per_run`` against ``iterations``, on the call's ``strategy``); else
    the expression to write for ``iterations`` (None: as written)."""
    built = [f for f in planner.findings if f.rule in _TPU_CONSTRUCTORS
             and f.site is not None and f.site.call is not None
             and f.site.call.func is f.site.node]
    if len(built) != 1:
        return ("cannot tell the strategy's steps_per_run (TF 1.15's TPU loop ran one "
                "step per call when it was 1): build one TPU strategy in this module")
    arguments = arguments_by_name(built[0].site.call, (
        "tpu_cluster_resolver", "steps_per_run", "device_assignment")) or {}
    given = arguments.get("steps_per_run")
    if _reads_steps_per_run(iterations, strategy):
        return _steps_value(planner, built[0].site, strategy, given)
    given, wanted = _code(given), _code(iterations)
    if given == wanted or {given, wanted} <= {None, "1"}:
        return None
    return (f"iterations ({wanted or 1}) is not the strategy's steps_per_run "
            f"({given or 1}): TF 1.15's TPU loop ran one step per call when "
            f"steps_per_run was 1")


def _reads_steps_per_run(iterations, strategy):
    """Whether ``iterations`` is ``<strategy>.steps_per_run`` or
    ``<strategy>.extended.steps_per_run`` (``strategy`` a plain name)."""
    if not (isinstance(iterations, cst.Attribute) and iterations.attr.value == "steps_per_run"
            and isinstance(strategy, cst.Name)):
        return False
    owner = iterations.value
    if isinstance(owner, cst.Attribute) and owner.attr.value == "extended":
        owner = owner.value
    return isinstance(owner, cst.Name) and owner.value == strategy.value


def _steps_value(planner, built, strategy, given):
    """The constructor's ``steps_per_run`` expression ``given`` (``1`` when
    absent) to write where the call's ``strategy`` read it; or why not."""
    target = _assigned_name(built.statement, built.call)
    if target is None:
        return ("iterations reads the strategy's steps_per_run, but the TPU strategy "
                "is not assigned to a plain name whose value can be followed")
    scopes = analysis.scopes_of(planner.module)
    if _assignments(scopes, strategy) != [target]:
        return (f"iterations reads the steps_per_run of `{strategy.value}`, which is not "
                f"(only) the module's TPU strategy `{target.value}`")
    if given is None:
        return cst.Integer("1")
    if isinstance(given, cst.Integer):
        return given.deep_clone()
    if isinstance(given, cst.Name):
        once = _module_constant(planner.module, scopes, given)
        if once is not None and _assignments(scopes, strategy, given.value) == [once]:
            return given.deep_clone()
    return (f"iterations reads the strategy's steps_per_run, given as `{_code(given)}`, "
            f"which cannot be repeated at the call with the same value (only a literal or "
            f"a name assigned once at module level can): write the number of steps")


def _assigned_name(statement, call):
    """The Name ``call``'s result is assigned to in ``statement`` (``NAME = call``), or None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return assign.targets[0].target
    return None


def _assignments(scopes, node, name=None):
    """The nodes that bind ``name`` (default: the Name ``node``'s own) where
    ``node`` is, by libcst's scopes."""
    scope = scopes.get(node)
    if scope is None:
        return None
    return [assignment.node for assignment in scope[name or node.value]]


def _module_constant(module, scopes, name):
    """The target of the one top-level ``NAME = value`` that binds the Name
    ``name`` (nothing else in the module binding it, ``global`` included), or None."""
    top = scopes.get(module)
    bound = [assignment.node for assignment in top.assignments[name.value]] if top else []
    if len(bound) != 1 or _assignments(scopes, name) != bound:
        return None
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and _assigned_name(
                statement, getattr(statement.body[0], "value", None)) is bound[0]:
            return bound[0]
    return None


def _module_tf_name(module):
    """The name a module-level ``import tensorflow[.compat.vN] as X`` binds, or None."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                dotted = _code(alias.name)
                if dotted in _TF_MODULES and (alias.asname is not None or dotted == "tensorflow"):
                    return _code(alias.asname.name) if alias.asname else dotted
    return None


def _helper_edit(planner, kind):
    """The module's one edit that writes the helper after its imports, planned once
    (``problem`` has checked that it can be written)."""
    module = planner.module
    existing = planner.edits.get(id(module))
    if existing is not None:
        return existing
    helper = list(cst.parse_module(helper_source(_module_tf_name(module))).body)
    helper[0] = helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    edit = Edit(module, cst.Module, functools.partial(_insert_helper, helper), kind)
    planner.edits[id(module)] = edit
    return edit


def _names(module):
    found = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node)

    module.visit(Names())
    return found


def _insert_helper(helper, original, updated):
    """``helper``'s statements after the module's last top-level import."""
    del original
    body = list(updated.body)
    after = 0
    for index, statement in enumerate(body):
        if is_import(statement):
            after = index + 1
    rest = body[after:]
    if rest:  # two blank lines after the helper's def, as before any top-level code
        blank = sum(1 for line in rest[0].leading_lines if line.comment is None)
        rest[0] = rest[0].with_changes(
            leading_lines=[cst.EmptyLine()] * max(0, 2 - blank) + list(rest[0].leading_lines))
    return updated.with_changes(body=[*body[:after], *helper, *rest])


def _call_helper(strategy, iterations, steps, original, updated):
    """``S.extended.experimental_run_steps_on_iterator(args)`` ->
    ``_run_steps_on_iterator(S, args)``: the helper's parameters have the
    method's names, so the arguments stay as written, but for ``iterations``
    (the original node) replaced by ``steps`` when that is given."""
    args = list(updated.args)
    for index, arg in enumerate(original.args):
        if iterations is not None and arg.value is iterations:
            args[index] = args[index].with_changes(value=steps.deep_clone())
    first = cst.Arg(strategy, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return updated.with_changes(func=cst.Name(HELPER_NAME), args=[first, *args])
