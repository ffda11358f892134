"""``keras_tpu_scope``: TF 1.13's ``keras_to_tpu_model`` becomes a TPUStrategy scope.

    model = build_model()                      # built (and compiled) here ...
    resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tpu_model = tf.contrib.tpu.keras_to_tpu_model(
        model, strategy=tf.contrib.tpu.TPUDistributionStrategy(resolver))
    tpu_model.compile(...)                     # ... or compiled after the conversion
->
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    tpu_strategy = tf.distribute.TPUStrategy(resolver)
    with tpu_strategy.scope():
        model = build_model()
        tpu_model = model
        tpu_model.compile(...)

Why that is the same program (tensorflow/contrib/tpu/python/tpu/keras_support.py,
r1.13, ``tpu_model`` and ``KerasTPUModel``): the converted model replicated the
model over every core of the resolver's TPU, split fit's global batch across the
cores and averaged the gradients across them (the cross-shard optimizer), which is
what Keras computes for a model built and compiled in ``TPUStrategy(resolver).scope()``
with the same global batch; bring-up connected to the resolver's master and
initialized the TPU system, TF 2's two calls above. The statements that build and
compile the model (and any between them) move into the scope; the statements that
define the resolver move above it when nothing they read is assigned there.

The strategy held in a variable and the conversion inside ``if use_tpu:`` is
_keras_tpu_branch.py's form. Anything else (the model built in another block or function,
``using_single_core=True``, a resolver that cannot be hoisted) keeps the TODO.
"""

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites import _keras_tpu_branch
from tpu_compat.migrate.rewrites._edit import Edit, arguments_by_name
from tpu_compat.migrate.rewrites._keras_tpu_parts import (
    DISTRIBUTION_STRATEGY, all_names, assigned_name, compile_after, fresh, function_of, home,
    is_import, last_assignment, line, names_in, resolver_of, spellings, stored)

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_KERAS_TPU_SCOPE


def plan(planner, finding, rewrite):
    site = finding.site
    call = site.call
    if finding.record.name == "sync_to_cpu":
        return _plan_sync(planner, finding)
    if site.kind != "symbol" or call is None or call.func is not site.node:
        return "a reference, not a call"
    statement = site.statement
    target = assigned_name(statement, call)
    if target is None:
        return "the converted model is not assigned to one name in its own statement"
    # r1.13: tpu_model(model, strategy=None).
    placed = arguments_by_name(call, ("model", "strategy"))
    if placed is None or not isinstance(placed.get("model"), cst.Name):
        return "only keras_to_tpu_model(model, strategy=TPUDistributionStrategy(resolver))"
    model = placed["model"].value
    strategy_call = placed.get("strategy")
    if isinstance(strategy_call, cst.Name):
        return _keras_tpu_branch.plan_branch(planner, finding, target, model, strategy_call.value)
    dist = [f for f in planner.findings if f.rule == DISTRIBUTION_STRATEGY
            and f.site is not None and f.site.call is strategy_call]
    if not isinstance(strategy_call, cst.Call) or len(dist) != 1:
        return "the strategy is not a TPUDistributionStrategy(...) built in the call"
    resolver, why = resolver_of(strategy_call)
    if why:
        return why
    block, index = home(planner, statement)
    if block is None or id(block) in planner.edits:
        return "not a statement of a block this rewrite can restructure"
    body = list(block.body)
    start = last_assignment(body[:index], model)
    if start is None:
        return f"`{model}` is not built by a statement before this one in the same block"
    end = compile_after(body, index, (model, target))
    if any(is_import(s) for s in body[start:]):
        return "imports among the statements that would move"
    hoisted = _hoisted(body, start, max(end, index), index, resolver)
    if hoisted is None:
        return "the resolver's names are assigned among the model's statements"
    names = spellings(site)
    if names is None:
        return "cannot name tf.distribute.TPUStrategy from this module's imports"
    taken = names_in(planner.module)
    new_names = {"strategy": fresh("tpu_strategy", taken),
                 "resolver": None if isinstance(resolver, cst.Name) else fresh("tpu_resolver", taken)}
    layout = _Layout(start, index, end, hoisted, target, model, names, new_names,
                     len(block.body))
    edit = Edit(block, type(block), layout.apply, KIND)
    planner.edit(finding, edit)
    planner.cover(dist[0], edit, "the TPUStrategy scope replaces it")
    return None


def _plan_sync(planner, finding):
    """``tpu_model.sync_to_cpu()`` -> ``tpu_model``, where every conversion of the same
    function (or module level) is rewritten and one made ``tpu_model``.

    r1.13 keras_support.py ``KerasTPUModel.sync_to_cpu`` copied the TPU copy's weights
    into the CPU model and returned it; a model built and compiled in the TPUStrategy
    scope is one model with one set of weights, so the call is that model."""
    site = finding.site
    call = site.call
    if call is None or call.func is not site.node or call.args:
        return "only tpu_model.sync_to_cpu() with no arguments is rewritten"
    receiver = site.node.value
    if not isinstance(receiver, cst.Name):
        return "the receiver is not a name"
    converted = set()
    where = function_of(planner, site.statement)
    for other in planner.findings:
        if (other.record.name != "keras_to_tpu_model" or other.site is None
                or function_of(planner, other.site.statement) is not where):
            continue
        outcome = planner.outcomes.get(id(other))
        if outcome is None or outcome.action != "rewritten":
            return "a keras_to_tpu_model of this function is not rewritten (before it)"
        placed = arguments_by_name(other.site.call, ("model", "strategy")) or {}
        converted |= {assigned_name(other.site.statement, other.site.call),
                      getattr(placed.get("model"), "value", None)}
    if receiver.value not in converted:
        return f"`{receiver.value}` is not a model a rewritten keras_to_tpu_model converted"
    planner.edit(finding, Edit(call, cst.Call, _receiver, KIND))
    return None


def _receiver(original, updated):
    del original
    return updated.func.value.with_changes(lpar=updated.lpar, rpar=updated.rpar)


class _Layout:
    """Where the statements of the block go (indices of the original block)."""

    def __init__(self, start, index, end, hoisted, target, model, names, fresh, size):
        self.start, self.index, self.end = start, index, end
        self.hoisted, self.target, self.model = hoisted, target, model
        self.names, self.fresh, self.size = names, fresh, size

    def apply(self, original, updated):
        del original
        body = list(updated.body)
        # Statements removed before `start` (imports nothing uses any more) shift the rest.
        shift = self.size - len(body)
        start, index, end = self.start - shift, self.index - shift, self.end - shift
        hoisted = [j - shift for j in self.hoisted]
        conversion = body[index]
        resolver = _strategy_resolver(conversion)
        alias = _alias(self.target, self.model, conversion)
        bring_up = [body[j] for j in hoisted]
        if self.fresh["resolver"]:
            bring_up.append(cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(cst.Name(self.fresh["resolver"]))], resolver)]))
            resolver = cst.Name(self.fresh["resolver"])
        resolver_code = cst.Module([]).code_for_node(resolver)
        strategy = self.fresh["strategy"]
        bring_up += [line(f"{self.names['connect']}({resolver_code})"),
                     line(f"{self.names['initialize']}({resolver_code})"),
                     line(f"{strategy} = {self.names['strategy']}({resolver_code})")]
        # The model statement's comments stay above what now comes first.
        bring_up[0] = bring_up[0].with_changes(
            leading_lines=[*body[start].leading_lines, *bring_up[0].leading_lines])
        last = max(end, index - 1)
        inside = []
        for j in range(start, last + 1):
            if j in hoisted:
                continue
            statement = body[j]
            if j == start:
                statement = statement.with_changes(leading_lines=[])
            if j == index:
                if alias is None:
                    continue
                statement = alias
            inside.append(statement)
        scope = cst.With([cst.WithItem(cst.parse_expression(f"{strategy}.scope()"))],
                         cst.IndentedBlock(inside))
        after = [] if index <= last or alias is None else [alias]
        rest = [s for j, s in enumerate(body) if j > last and j != index]
        return updated.with_changes(body=[*body[:start], *bring_up, scope, *after, *rest])


def _alias(target, model, conversion):
    """``target = model`` keeping the conversion's comments, or None when they are one name."""
    if target == model:
        return None
    return conversion.with_changes(body=[cst.Assign([cst.AssignTarget(cst.Name(target))],
                                                    cst.Name(model))])


def _strategy_resolver(conversion):
    call = conversion.body[0].value
    strategy = arguments_by_name(call, ("model", "strategy"))["strategy"]
    return arguments_by_name(strategy, ("tpu_cluster_resolver", "using_single_core"))[
        "tpu_cluster_resolver"]


def _hoisted(body, start, last, index, resolver):
    """Indices of the statements in (start, index) that define the resolver's names and
    can move above the model's statements; None when one cannot."""
    wanted = {name.value for name in all_names(resolver)}
    hoisted = []
    for j in range(last, start - 1, -1):
        if j == index:
            continue
        binds = stored(body[j])
        if not binds & wanted:
            continue
        if j == start or j > index or not isinstance(body[j], cst.SimpleStatementLine):
            return None
        hoisted.append(j)
        wanted |= {name.value for name in all_names(body[j])} - binds
    hoisted.reverse()
    # What the moved statements read must not be assigned by the ones they jump
    # over, nor what they assign be read there (a builder reading the old value).
    moved = set().union(*(stored(body[j]) for j in hoisted)) if hoisted else set()
    for j in range(start, last + 1):
        if j in hoisted or j == index:
            continue
        if stored(body[j]) & wanted or (j < max(hoisted, default=-1) and moved & {
                name.value for name in all_names(body[j])}):
            return None
    return hoisted


