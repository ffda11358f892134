"""``keras_tpu_scope``'s second form: the conversion inside ``if use_tpu:``.

The AI Platform template (cloudml-samples tpu/templates/tpu_lstm_keras/trainer.py)
builds the model, converts it only on a TPU, and compiles it after the branch:

    model = build_model()
    if args.use_tpu:
        resolver = tf.contrib.cluster_resolver.TPUClusterResolver(args.tpu)
        strategy = tf.contrib.tpu.TPUDistributionStrategy(resolver)
        model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=strategy)
    model.compile(...)
->
    strategy = tf.distribute.get_strategy()
    if args.use_tpu:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(args.tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    with strategy.scope():
        model = build_model()
        model.compile(...)

Off the TPU the model is built and compiled in the default strategy's scope, which
is where Keras builds any model outside a scope (the same single-device program);
on the TPU it is the TPUStrategy scope of keras_tpu_scope.py's first form (r1.13
keras_support.py: the converted model replicated over the resolver's cores). The
strategy's variable keeps its name when nothing else in the block reads it; the
statements from the model's construction up to the branch move below it only
when the branch neither reads nor assigns what they assign, nor they what it does.
"""

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import imports
from tpu_compat.migrate.rewrites import _keras_tpu_parts as parts
from tpu_compat.migrate.rewrites._edit import Edit, arguments_by_name

__all__ = ["plan_branch"]

KIND = legacy_api.REWRITE_KERAS_TPU_SCOPE  # keras_tpu_scope.py's kind: it plans through here

_DEFAULT = "tensorflow.distribute.get_strategy"


def plan_branch(planner, finding, target, model, strategy_name):
    """Plans the branch form; None when planned, else why not."""
    statement = finding.site.statement
    inner, k = parts.home(planner, statement)
    branch = _owners(planner).get(id(inner))
    if branch is None:
        return "the strategy is not a TPUDistributionStrategy(...) built in the call"
    if target != model:
        return "in a branch, only a conversion onto the model's own name (model = ...(model))"
    body = list(inner.body)
    declared = _strategy_statement(planner, body[:k], strategy_name)
    if declared is None:
        return ("the strategy is not a TPUDistributionStrategy(...) assigned to one name "
                "earlier in the branch")
    j, dist, strategy_call = declared
    resolver, why = parts.resolver_of(strategy_call)
    if why:
        return why
    outer, i = parts.home(planner, branch)
    if outer is None or id(outer) in planner.edits or id(inner) in planner.edits:
        return "not a statement of a block this rewrite can restructure"
    if _count(outer, strategy_name) != 2:
        return f"`{strategy_name}` is used elsewhere than the conversion"
    outer_body = list(outer.body)
    start = parts.last_assignment(outer_body[:i], model)
    if start is None:
        return f"`{model}` is not built by a statement before the branch in the same block"
    end = parts.compile_after(outer_body, i, (model, model))
    if end < i:
        return f"`{model}` is not compiled after the branch in the same block"
    if any(parts.is_import(s) for s in outer_body[start:end + 1] + body):
        return "imports among the statements that would move"
    if not _may_swap(outer_body[start:i], branch, statement):
        return "the branch reads or assigns what the model's statements assign"
    names = parts.spellings(finding.site)
    default = _default_spelling(finding.site)
    if names is None or default is None:
        return "cannot name tf.distribute.TPUStrategy from this module's imports"
    names["default"] = default
    taken = parts.names_in(planner.module)
    fresh = None
    if not isinstance(resolver, cst.Name):
        fresh = parts.fresh("tpu_resolver", taken)
    feeds = _input_fn_fits(planner.module, outer_body, end, model)
    if feeds:
        spelled = _feed_spellings(finding.site)
        if spelled is None:
            return "cannot name tf.nest.flatten from this module's imports"
        feeds = (feeds, parts.fresh("tpu_dataset", taken), spelled)
    layout = _Layout(start, i, end, j, k, strategy_name, names, fresh, feeds, len(outer.body))
    edit = Edit(outer, type(outer), layout.apply, KIND)
    planner.edit(finding, edit)
    planner.cover(dist, edit, "the TPUStrategy scope replaces it")
    return None


class _Layout:
    """Where the statements go: ``start``..``index`` of the outer block (the branch at
    ``index``, compiled at ``end``); ``j``/``k`` the strategy and conversion in the branch."""

    def __init__(self, start, index, end, j, k, strategy, names, fresh, feeds, size):
        self.start, self.index, self.end, self.j, self.k = start, index, end, j, k
        self.strategy, self.names, self.fresh, self.size = strategy, names, fresh, size
        self.feeds = feeds  # (fit indices, the dataset's name, tf.nest.flatten's spelling)

    def apply(self, original, updated):
        del original
        body = list(updated.body)
        shift = self.size - len(body)  # imports dropped above the model's statements
        start, index, end = self.start - shift, self.index - shift, self.end - shift
        branch = body[index]
        inner = list(branch.body.body)
        declared = inner[self.j]
        resolver = _resolver(declared)
        bring_up = []
        if self.fresh:
            bring_up.append(cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(cst.Name(self.fresh))], resolver)]))
            resolver = cst.Name(self.fresh)
        code = cst.Module([]).code_for_node(resolver)
        bring_up += [parts.line(f"{self.names['connect']}({code})"),
                     parts.line(f"{self.names['initialize']}({code})")]
        bring_up.append(declared.with_changes(body=[cst.Assign(
            [cst.AssignTarget(cst.Name(self.strategy))],
            cst.parse_expression(f"{self.names['strategy']}({code})"))]))
        bring_up[0] = bring_up[0].with_changes(
            leading_lines=[*declared.leading_lines, *bring_up[0].leading_lines])
        if len(bring_up) > 1:
            bring_up[-1] = bring_up[-1].with_changes(leading_lines=[])
        kept = [*inner[:self.j], *bring_up,
                *(s for n, s in enumerate(inner) if n > self.j and n != self.k)]
        branch = branch.with_changes(body=branch.body.with_changes(body=kept))
        default = body[start].with_changes(body=[cst.Assign(
            [cst.AssignTarget(cst.Name(self.strategy))],
            cst.parse_expression(f"{self.names['default']}()"))])
        after = list(body[index + 1:end + 1])
        # The blank lines that followed the branch now come before the scope.
        spacing = after[0].leading_lines
        after[0] = after[0].with_changes(leading_lines=[])
        moved = [body[start].with_changes(leading_lines=[]), *body[start + 1:index], *after]
        within = cst.With([cst.WithItem(cst.parse_expression(f"{self.strategy}.scope()"))],
                          cst.IndentedBlock(moved), leading_lines=spacing)
        rest = list(body[end + 1:])
        if self.feeds:
            rest = _fed_per_core(rest, [n - self.end - 1 for n in self.feeds[0]],
                                 self.feeds[1], self.feeds[2], self.strategy)
        return updated.with_changes(body=[*body[:start], default, branch, within, *rest])


def _input_fn_fits(module, body, end, model):
    """Indices after ``end`` of ``model.fit(input_fn, ...)`` / ``evaluate`` statements,
    ``input_fn`` a module-level function without parameters."""
    input_fns = {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)
                 and not s.params.params and not s.params.kwonly_params
                 and not s.params.posonly_params}
    found = []
    for index in range(end + 1, len(body)):
        statement = body[index]
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Expr)
                and isinstance(statement.body[0].value, cst.Call)):
            continue
        call = statement.body[0].value
        func = call.func
        if (isinstance(func, cst.Attribute) and func.attr.value in ("fit", "evaluate")
                and isinstance(func.value, cst.Name) and func.value.value == model
                and call.args and call.args[0].keyword is None and not call.args[0].star
                and isinstance(call.args[0].value, cst.Name)
                and call.args[0].value.value in input_fns):
            found.append(index)
    return found


def _feed_spellings(site):
    visible = dict(site.visible)
    root = site.written.split(".", 1)[0]
    if site.root_path:
        visible[root] = site.root_path
    visible = {n: parts.V1 if p == "tensorflow" else p for n, p in visible.items()}
    return imports.spell("tensorflow.nest.flatten", visible, prefer=(root,),
                               through_v2=True)


def _fed_per_core(statements, indices, dataset, flatten, strategy):
    """``model.fit(input_fn, ...)`` -> the dataset ``input_fn()`` re-batched to its batch
    times the replicas. r1.13 keras_support.py (``TPUDatasetInfeedManager``) had every
    core take its own batch of ``input_fn()``'s dataset per step, so a step's global
    batch was the next ``cores`` batches in order, which is what a TPUStrategy model
    splits back into one per replica."""
    out = []
    for n, statement in enumerate(statements):
        if n not in indices:
            out.append(statement)
            continue
        call = statement.body[0].value
        input_fn = call.args[0].value.value
        note = cst.EmptyLine(comment=cst.Comment(
            f"# keras_to_tpu_model fed each TPU core its own batch of {input_fn}()'s dataset"))
        out.append(statement.with_changes(
            leading_lines=[*statement.leading_lines, note],
            body=[cst.parse_statement(f"{dataset} = {input_fn}()").body[0]]))
        batched = cst.parse_expression(
            f"{dataset}.unbatch().batch(\n    {flatten}({dataset}.element_spec)[0].shape"
            f".as_list()[0] * {strategy}.num_replicas_in_sync, drop_remainder=True)")
        args = [call.args[0].with_changes(value=batched), *call.args[1:]]
        out.append(statement.with_changes(leading_lines=[], body=[
            statement.body[0].with_changes(value=call.with_changes(args=args))]))
    return out


def _resolver(declared):
    call = declared.body[0].value
    return arguments_by_name(call, ("tpu_cluster_resolver", "using_single_core"))[
        "tpu_cluster_resolver"]


def _strategy_statement(planner, statements, name):
    """(index, finding, call) of ``name = TPUDistributionStrategy(...)``, the last
    assignment of ``name`` among ``statements``; None otherwise."""
    for index in range(len(statements) - 1, -1, -1):
        statement = statements[index]
        if name not in parts.stored(statement):
            continue
        for found in planner.findings:
            call = found.site.call if found.site is not None else None
            if (found.rule == parts.DISTRIBUTION_STRATEGY
                    and call is not None and found.site.statement is statement
                    and parts.assigned_name(statement, call) == name):
                return index, found, call
        return None
    return None


def _may_swap(moved, branch, conversion):
    """Whether ``moved`` (before the branch) may run after it, the conversion dropped."""
    assigned = set().union(*(parts.stored(s) for s in moved)) if moved else set()
    read = {n.value for s in moved for n in parts.all_names(s)}
    others = [branch.test, *(s for s in branch.body.body if s is not conversion)]
    branch_read = {n.value for node in others for n in parts.all_names(node)}
    branch_assigned = set().union(*(parts.stored(s) for s in others[1:]))
    return not (assigned & (branch_read | branch_assigned) or branch_assigned & read)


def _count(block, name):
    """How often ``block`` names ``name`` as a variable (not as a keyword or attribute)."""
    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node):
            if node.value == name:
                found.append(node)

        def visit_Arg(self, node):
            node.value.visit(self)  # `f(strategy=x)`: the keyword is no variable
            return False

        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

    block.visit(Visitor())
    return len(found)


def _default_spelling(site):
    visible = dict(site.visible)
    root = site.written.split(".", 1)[0]
    if site.root_path:
        visible[root] = site.root_path
    visible = {n: parts.V1 if p == "tensorflow" else p
               for n, p in visible.items()}
    return imports.spell(_DEFAULT, visible, prefer=(root,), through_v2=True)


def _owners(planner):
    """id(if-body) -> its ``if`` statement, for ifs with no ``else``/``elif``."""
    owners = getattr(planner, "_keras_tpu_branches", None)
    if owners is None:
        owners = {}

        class Visitor(cst.CSTVisitor):
            def visit_If(self, node):
                if node.orelse is None:
                    owners[id(node.body)] = node

        if planner.module is not None:
            planner.module.visit(Visitor())
        planner._keras_tpu_branches = owners
    return owners
