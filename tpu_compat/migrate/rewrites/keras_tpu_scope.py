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
keras_tpu_branch.py's form. Anything else (the model built in another block or function,
``using_single_core=True``, a resolver that cannot be hoisted) keeps the TODO.
"""

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import imports
from tpu_compat.migrate.rewrites._edit import Edit, arguments_by_name

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_KERAS_TPU_SCOPE
_DISTRIBUTION_STRATEGY = "TPC161"
_V1 = "tensorflow.compat.v1"
_CONNECT = "tensorflow.config.experimental_connect_to_cluster"
_INITIALIZE = "tensorflow.tpu.experimental.initialize_tpu_system"
_BLOCKS = (cst.Module, cst.IndentedBlock)


def plan(planner, finding, rewrite):
    site = finding.site
    call = site.call
    if site.kind != "symbol" or call is None or call.func is not site.node:
        return "a reference, not a call"
    statement = site.statement
    target = _assigned_name(statement, call)
    if target is None:
        return "the converted model is not assigned to one name in its own statement"
    # r1.13: tpu_model(model, strategy=None).
    placed = arguments_by_name(call, ("model", "strategy"))
    if placed is None or not isinstance(placed.get("model"), cst.Name):
        return "only keras_to_tpu_model(model, strategy=TPUDistributionStrategy(resolver))"
    model = placed["model"].value
    strategy_call = placed.get("strategy")
    if isinstance(strategy_call, cst.Name):
        from tpu_compat.migrate.rewrites import keras_tpu_branch  # it imports this module
        return keras_tpu_branch.plan_branch(planner, finding, target, model, strategy_call.value)
    dist = [f for f in planner.findings if f.rule == _DISTRIBUTION_STRATEGY
            and f.site is not None and f.site.call is strategy_call]
    if not isinstance(strategy_call, cst.Call) or len(dist) != 1:
        return "the strategy is not a TPUDistributionStrategy(...) built in the call"
    resolver, why = _resolver_of(strategy_call)
    if why:
        return why
    block, index = _home(planner, statement)
    if block is None or id(block) in planner.edits:
        return "not a statement of a block this rewrite can restructure"
    body = list(block.body)
    start = _last_assignment(body[:index], model)
    if start is None:
        return f"`{model}` is not built by a statement before this one in the same block"
    end = _compile_after(body, index, (model, target))
    if any(_is_import(s) for s in body[start:]):
        return "imports among the statements that would move"
    hoisted = _hoisted(body, start, max(end, index), index, resolver)
    if hoisted is None:
        return "the resolver's names are assigned among the model's statements"
    names = _spellings(site)
    if names is None:
        return "cannot name tf.distribute.TPUStrategy from this module's imports"
    taken = _names_in(planner.module)
    fresh = {"strategy": _fresh("tpu_strategy", taken),
             "resolver": None if isinstance(resolver, cst.Name) else _fresh("tpu_resolver", taken)}
    layout = _Layout(start, index, end, hoisted, target, model, names, fresh,
                     len(block.body))
    edit = Edit(block, type(block), layout.apply, KIND)
    planner.edit(finding, edit)
    planner.cover(dist[0], edit, "the TPUStrategy scope replaces it")
    return None


def _resolver_of(strategy_call):
    """(the resolver argument, None), or (None, why it is not rewritten)."""
    # r1.13: TPUDistributionStrategy(tpu_cluster_resolver=None, using_single_core=False).
    strategy_args = arguments_by_name(strategy_call, ("tpu_cluster_resolver", "using_single_core"))
    if strategy_args is None or "tpu_cluster_resolver" not in strategy_args:
        return None, "TPUDistributionStrategy without a resolver argument"
    single = strategy_args.get("using_single_core")
    if single is not None and not (isinstance(single, cst.Name) and single.value == "False"):
        return None, ("using_single_core: one core of the TPU; TF 2's TPUStrategy needs a "
                      "device assignment for that")
    return strategy_args["tpu_cluster_resolver"], None


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
        bring_up += [_line(f"{self.names['connect']}({resolver_code})"),
                     _line(f"{self.names['initialize']}({resolver_code})"),
                     _line(f"{strategy} = {self.names['strategy']}({resolver_code})")]
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


def _line(code):
    return cst.parse_statement(code)


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


def _assigned_name(statement, call):
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return assign.targets[0].target.value
    return None


def _home(planner, statement):
    """The block (Module or IndentedBlock) whose body holds ``statement``, and its index."""
    homes = getattr(planner, "_keras_tpu_homes", None)
    if homes is None:
        homes = {}
        if planner.module is not None:
            planner.module.visit(_Homes(homes))
        planner._keras_tpu_homes = homes  # pylint: disable=protected-access
    return homes.get(id(statement), (None, None))


class _Homes(cst.CSTVisitor):
    def __init__(self, homes):
        super().__init__()
        self.homes = homes

    def on_visit(self, node):
        if isinstance(node, _BLOCKS):
            for index, child in enumerate(node.body):
                self.homes[id(child)] = (node, index)
        return True


def _stored(node):
    """Names a statement binds (assignment targets, loop and with targets, defs, imports)."""
    names = set()

    class Visitor(cst.CSTVisitor):
        def visit_AssignTarget(self, target):
            names.update(n.value for n in _all_names(target.target))

        def visit_AnnAssign(self, assign):
            names.update(n.value for n in _all_names(assign.target))

        def visit_AugAssign(self, assign):
            names.update(n.value for n in _all_names(assign.target))

        def visit_For(self, loop):
            names.update(n.value for n in _all_names(loop.target))

        def visit_AsName(self, asname):
            names.update(n.value for n in _all_names(asname.name))

        def visit_FunctionDef(self, definition):
            names.add(definition.name.value)

        def visit_ClassDef(self, definition):
            names.add(definition.name.value)

        def visit_NamedExpr(self, expression):
            names.update(n.value for n in _all_names(expression.target))

        def visit_Global(self, statement):
            names.update(n.name.value for n in statement.names)

    node.visit(Visitor())
    return names


def _all_names(node):
    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, name):
            found.append(name)

        def visit_Attribute(self, attribute):
            attribute.value.visit(self)  # `a.b` reads a, not b
            return False

    node.visit(Visitor())
    return found


def _last_assignment(statements, name):
    for index in range(len(statements) - 1, -1, -1):
        statement = statements[index]
        if name in _stored(statement):
            if (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                    and isinstance(statement.body[0], cst.Assign)):
                return index
            return None
    return None


def _compile_after(body, index, names):
    """The first later statement ``<model or converted>.compile(...)``, else ``index - 1``."""
    for j in range(index + 1, len(body)):
        statement = body[j]
        if (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Expr)
                and isinstance(statement.body[0].value, cst.Call)):
            func = statement.body[0].value.func
            if (isinstance(func, cst.Attribute) and func.attr.value == "compile"
                    and isinstance(func.value, cst.Name) and func.value.value in names):
                return j
        if names[0] in _stored(statement) or names[1] in _stored(statement):
            break
    return index - 1


def _is_import(statement):
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)


def _hoisted(body, start, last, index, resolver):
    """Indices of the statements in (start, index) that define the resolver's names and
    can move above the model's statements; None when one cannot."""
    wanted = {name.value for name in _all_names(resolver)}
    hoisted = []
    for j in range(last, start - 1, -1):
        if j == index:
            continue
        stored = _stored(body[j])
        if not stored & wanted:
            continue
        if j == start or j > index or not isinstance(body[j], cst.SimpleStatementLine):
            return None
        hoisted.append(j)
        wanted |= {name.value for name in _all_names(body[j])} - stored
    hoisted.reverse()
    # What the moved statements read must not be assigned by the ones they jump
    # over, nor what they assign be read there (a builder reading the old value).
    moved = set().union(*(_stored(body[j]) for j in hoisted)) if hoisted else set()
    for j in range(start, last + 1):
        if j in hoisted or j == index:
            continue
        if _stored(body[j]) & wanted or (j < max(hoisted, default=-1) and moved & {
                name.value for name in _all_names(body[j])}):
            return None
    return hoisted


def _spellings(site):
    visible = dict(site.visible)
    root = site.written.split(".", 1)[0]
    if site.root_path:
        visible[root] = site.root_path
    # A TF 1.x program runs its `import tensorflow` as compat.v1 (`tpu-compat run
    # --tf1`): spell what both bindings have (tf.compat.v2.X where needed).
    visible = {name: _V1 if path == "tensorflow" else path for name, path in visible.items()}
    names = {}
    for key, path in (("strategy", "tensorflow.distribute.TPUStrategy"),
                      ("connect", _CONNECT), ("initialize", _INITIALIZE)):
        spelled = imports.spell(path, visible, prefer=(root,), through_v2=True)
        if spelled is None:
            return None
        names[key] = spelled
    return names


def _names_in(module):
    return {name.value for name in _all_names(module)} if module is not None else set()


def _fresh(base, taken):
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}_{number}"
    taken.add(name)
    return name
