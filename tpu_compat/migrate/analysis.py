"""One libcst parse of a module, its metadata, and the findings scan reports.

scan and upgrade share this: :func:`analyze` parses once, wraps the module in
one ``MetadataWrapper``, and returns the findings with the very nodes they are
about, so upgrade edits those nodes (no joining by line and column).

What a name means comes from libcst's ``ScopeProvider``: a name's referents
are its assignments visible at the access, and an import's qualified name is
libcst's (``ImportAssignment.get_qualified_names_for``, what
``QualifiedNameProvider`` reports), so ``import tensorflow.compat.v1 as tf``,
``from tensorflow.distribute.experimental import TPUStrategy as S`` and
``from tensorflow.compat.v1.distribute import experimental as de`` all resolve
to dotted TensorFlow paths.

Three shortcuts keep this fast, each giving exactly libcst's answer (see
docs/performance.md and tests/test_migrate_fast_paths.py): the scope providers
run without the wrapper's idle batched passes (:func:`scopes_of`); our own
visit follows libcst's order without rebuilding the tree
(:mod:`tpu_compat.migrate._walk`); line and column are PositionProvider's,
computed for the finding nodes only (:mod:`tpu_compat.migrate._positions`).

On top of names, only the types that matter are tracked, flow-insensitively:
imported modules and classes, strategies (with a confidence, and whether they
are TPU strategies), the iterators of ``make_dataset_iterator`` /
``make_input_fn_iterator``, ``self`` (attributes assigned through it anywhere
in its class), and ``tf.function``-traced functions. Values are computed after
the whole module is visited, so a function may use a global assigned below it.
"""

import dataclasses
from typing import Dict, List, Optional, Set

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (BuiltinScope, ClassScope, ExpressionContextProvider,
                             ImportAssignment, MetadataWrapper, QualifiedNameProvider,
                             QualifiedNameSource, ScopeProvider)

from tpu_compat import tpu_strategy_args
from tpu_compat.migrate import (_libcst_fast, _object_uses, _positions, _rules, _walk, imports,
                                sources)
from tpu_compat.migrate._findings import HIGH, LOW, Finding, RunCall, Site

__all__ = ["Analysis", "analyze", "dotted"]

_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
# TF 1.x sessions: a module that names one runs its graph with it.
_SESSIONS = frozenset({"Session", "InteractiveSession", "MonitoredSession",
                       "MonitoredTrainingSession", "SingularMonitoredSession"})
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_FUNCTIONS = (cst.FunctionDef, cst.Lambda)


@dataclasses.dataclass(frozen=True, eq=False)
class _Strategy:
    confidence: str
    tpu: Optional[bool] = None  # constructed as a TPU strategy, as another one, or unknown


@dataclasses.dataclass(frozen=True, eq=False)
class _Iterator:
    """An iterator from make_dataset_iterator / make_input_fn_iterator."""
    confidence: str


@dataclasses.dataclass(frozen=True, eq=False)
class _Self:
    """The first parameter of a method: attributes live on its class."""
    klass: cst.ClassDef


@dataclasses.dataclass(frozen=True, eq=False)
class _Traced:
    """A ``tf.function``: a decorated def or the result of ``tf.function(...)``."""


_TRACED = _Traced()
_IN_PROGRESS = object()
_CYCLE = object()  # value() of a node whose value is being computed


@dataclasses.dataclass
class Analysis:
    """A parsed module (``wrapper.module`` holds the nodes findings point at)."""
    wrapper: MetadataWrapper
    findings: List[Finding]


def dotted(node):
    """``a.b.c`` for a pure Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _names_strategy(node):
    """Whether an expression's own name says it holds a strategy."""
    if isinstance(node, cst.Name):
        return bool(_rules.STRATEGY_NAME.fullmatch(node.value))
    if isinstance(node, cst.Attribute):
        if _rules.STRATEGY_NAME.fullmatch(node.attr.value):
            return True
        return node.attr.value == "extended" and _names_strategy(node.value)
    return False


def _steps_per_run_via_extended(record, attribute):
    """Whether ``attribute`` reads TPC008's ``steps_per_run`` through ``X.extended``,
    which only a strategy had (whatever ``X`` is named)."""
    owner = attribute.value
    return (record is _rules.STEPS_PER_RUN_READ and isinstance(owner, cst.Attribute)
            and owner.attr.value == "extended")


def _names_iterator(node):
    """Whether an expression's own name says it holds an input iterator."""
    name = node.value if isinstance(node, cst.Name) else (
        node.attr.value if isinstance(node, cst.Attribute) else None)
    return name is not None and bool(_rules.ITERATOR_NAME.fullmatch(name))


def _annotation_is_strategy(annotation):
    if annotation is None:
        return False
    found = []

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node.value)

        def visit_Attribute(self, node):
            found.append(node.attr.value)

        def visit_SimpleString(self, node):
            value = node.evaluated_value
            if isinstance(value, str):
                found.append(value.strip().rsplit(".", 1)[-1])

    annotation.visit(_Finder())
    return any(_rules.STRATEGY_CLASS.fullmatch(name) for name in found)


def _is_strategy_factory(path):
    root, _, _ = path.partition(".")
    if root not in _rules.STRATEGY_LIBRARIES:
        return False
    last = path.rsplit(".", 1)[-1]
    return bool(_rules.STRATEGY_CONSTRUCTOR.fullmatch(last)) or last in _rules.STRATEGY_GETTERS


def _positional(call):
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def _keywords(call):
    return [arg.keyword.value if arg.keyword is not None else "**"
            for arg in call.args if arg.keyword is not None or arg.star == "**"]


def _reduce_without_axis(call):
    """``reduce(op, value)``: two operands, no axis, nothing we cannot count."""
    if any(arg.star for arg in call.args):
        return False
    keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
    if "axis" in keywords:
        return False
    operands = len(_positional(call)) + sum(1 for k in keywords if k in ("reduce_op", "value"))
    return operands == 2 and len(call.args) == 2


def _argument(call, index, keyword):
    """The argument for parameter ``index``/``keyword`` of a call, or None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    positional = _positional(call)
    if any(arg.star == "*" for arg in call.args[:index + 1]):
        return None
    return positional[index] if index < len(positional) else None


@dataclasses.dataclass(eq=False)
class _Candidate:
    """A node that may be a finding, with where it is (decided after the visit)."""
    kind: str
    node: cst.CSTNode
    statement: cst.CSTNode
    scope: object
    seq: int
    call: Optional[cst.Call] = None
    functions: tuple = ()
    in_loop: bool = False
    extra: object = None


class _Collector(cst.CSTVisitor):
    """The visit: bindings, contexts and candidate nodes, nothing evaluated yet."""

    def __init__(self, scopes):
        super().__init__()
        self.scopes = scopes                       # ScopeProvider's node -> Scope
        self.candidates: List[_Candidate] = []
        self.bound: Dict[int, object] = {}         # id(Name target) -> value node/object
        self.params: Dict[int, object] = {}        # id(Param) -> value object
        self.self_assignments = []                 # (owner Name, attr, value node)
        self.decorated: Dict[int, List[cst.CSTNode]] = {}  # id(FunctionDef) -> decorators
        self.function_calls = []                   # (Call, scope): possible tf.function(...)
        self.module_calls = []                     # (Call, scope): possible disable_eager
        self.import_seq: Dict[int, int] = {}       # id(import statement) -> seq
        self.callees: Dict[int, cst.Call] = {}     # id(func node) -> its Call
        self.attribute_of: Dict[int, cst.Attribute] = {}  # id(x) -> the x.attr holding it
        self.name_uses = []                        # (Name, scope, Call or None)
        self._statements: List[cst.CSTNode] = []
        self._functions: List[cst.CSTNode] = []
        self._containers: List[cst.CSTNode] = []   # ClassDef / FunctionDef / Lambda
        self._loops = 0
        self._loop_stack: List[int] = []
        self._seq = 0
        self._legacy_names = set()                 # names bound by legacy `from` imports
        self.deleted: Dict[int, Set[str]] = {}     # id(scope) -> names a `del` there unbinds
        self.makes_iterators = False               # calls make_dataset_iterator & co.
        self.uses_session = False                  # names tf.Session & co. (a graph program)

    def _scope(self, node):
        return self.scopes.get(node)

    def _add(self, kind, node, call=None, extra=None):
        self.candidates.append(_Candidate(
            kind, node, self._statements[-1] if self._statements else None,
            self._scope(node), self._seq, call, tuple(self._functions), self._loops > 0, extra))

    # --- context stacks ---

    # CSTVisitor's hooks, answered per node type from a table: the visit
    # passes every node of the module, and isinstance against libcst's
    # abstract classes costs more than all the rest of the work.
    def on_visit(self, node):
        statement, loop, visit, _ = _hooks(type(self), type(node))
        if statement:
            self._statements.append(node)
            self._seq += 1
        if loop:
            self._loops += 1
        return visit is None or visit(self, node) is not False

    def on_leave(self, original_node):
        statement, loop, _, leave = _hooks(type(self), type(original_node))
        if leave is not None:
            leave(self, original_node)
        if statement:
            self._statements.pop()
        if loop:
            self._loops -= 1

    def visit_ClassDef(self, node):
        self._containers.append(node)

    def leave_ClassDef(self, original_node):
        self._containers.pop()

    def visit_FunctionDef(self, node):
        method_of = self._containers[-1] if self._containers and isinstance(
            self._containers[-1], cst.ClassDef) else None
        if method_of is not None and any(
                dotted(d.decorator) == "staticmethod" for d in node.decorators):
            method_of = None
        self._bind_parameters(node.params, method_of)
        self.decorated[id(node)] = [d.decorator for d in node.decorators]
        self._enter_function(node)

    def leave_FunctionDef(self, original_node):
        self._leave_function()

    def visit_Lambda(self, node):
        self._bind_parameters(node.params, None)
        self._enter_function(node)

    def leave_Lambda(self, original_node):
        self._leave_function()

    def _enter_function(self, node):
        self._containers.append(node)
        self._functions.append(node)
        # A loop around a def does not make the def's body loop.
        self._loop_stack.append(self._loops)
        self._loops = 0

    def _leave_function(self):
        self._containers.pop()
        self._functions.pop()
        self._loops = self._loop_stack.pop()

    def _bind_parameters(self, params, method_of):
        positional = list(params.posonly_params) + list(params.params)
        every = positional + list(params.kwonly_params)
        for param in (params.star_arg, params.star_kwarg):
            if isinstance(param, cst.Param):
                every.append(param)
        for param in every:
            name = param.name.value
            if (_rules.STRATEGY_NAME.fullmatch(name) or name in _rules.STRATEGY_PARAMETER_NAMES
                    or _annotation_is_strategy(param.annotation)):
                self.params[id(param)] = _Strategy(HIGH)
        if method_of is not None and positional:
            self.params[id(positional[0])] = _Self(method_of)

    # --- bindings ---

    def visit_Assign(self, node):
        for target in node.targets:
            self._bind_target(target.target, node.value)

    def visit_AnnAssign(self, node):
        value = _Strategy(HIGH) if _annotation_is_strategy(node.annotation) else node.value
        if value is not None:
            self._bind_target(node.target, value)

    def visit_Del(self, node):
        # libcst's scopes record `del tf` as a use, not a binding: after it,
        # `tf` names nothing, so an upgrade must not spell a new call with it.
        targets = [node.target]
        while targets:
            target = targets.pop()
            if isinstance(target, cst.Name):
                self._unbind(target)
            elif isinstance(target, (cst.Tuple, cst.List)):
                targets.extend(element.value for element in target.elements)

    # A `case` pattern that captures a name rebinds it (`case tf:` makes `tf`
    # the subject, whatever it was): treated like `del`, as the scopes do not
    # see these bindings.
    def visit_MatchAs(self, node):
        if node.name is not None:
            self._unbind(node.name)

    def visit_MatchStar(self, node):
        if node.name is not None:
            self._unbind(node.name)

    def visit_MatchMapping(self, node):
        if node.rest is not None:
            self._unbind(node.rest)

    def _unbind(self, name):
        """Records that ``name`` may stop naming what it was bound to, in the
        scope that owns it (the module's, under a function's `global tf`)."""
        scope = self._scope(name) or (self._scope(self._statements[-1])
                                      if self._statements else None)
        if scope is None:
            return
        # libcst keeps a function's `global`/`nonlocal` names here.
        owner = getattr(scope, "_scope_overwrites", {}).get(name.value, scope)
        self.deleted.setdefault(id(owner), set()).add(name.value)

    def visit_NamedExpr(self, node):
        self._bind_target(node.target, node.value)

    def _bind_target(self, target, value):
        if isinstance(target, cst.Name):
            self.bound[id(target)] = value
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            self.self_assignments.append((target.value, target.attr.value, value))

    def visit_Import(self, node):
        self.import_seq[id(node)] = self._seq
        for alias in node.names:
            path = imports.canonical(dotted(alias.name) or "")
            if path and _rules.import_rule(path):
                # `import tensorflow.contrib.tpu`: the module itself is legacy.
                self._add("import", alias, extra=(node, path, path))
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    # `import tensorflow.contrib.tpu as tpu`: its uses are tracked
                    # too (upgrade drops the import once none is left).
                    self._legacy_names.add(alias.asname.name.value)

    def visit_ImportFrom(self, node):
        self.import_seq[id(node)] = self._seq
        if node.relative or isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        module = dotted(node.module)
        for alias in node.names:
            name = dotted(alias.name)
            if module and name:
                path = imports.canonical(f"{module}.{name}")
                if _rules.import_rule(path) is not None:
                    self._add("import", alias, extra=(node, module, path))
                    self._legacy_names.add(
                        alias.asname.name.value if alias.asname else name)

    # --- candidates ---

    def visit_Call(self, node):
        self.callees[id(node.func)] = node
        last = _last_name(node.func)
        if last in _rules.ITERATOR_FACTORIES:
            self.makes_iterators = True
        if last in _MODULE_CALL_NAMES:
            self.function_calls.append((node, self._scope(node)))
        if (last in _rules.SYMBOL_LAST_NAMES or last in self._legacy_names
                or any(arg.keyword is not None and arg.keyword.value in _rules.ARGUMENT_RULES
                       for arg in node.args)):
            self._add("call", node, call=node)

    def visit_Attribute(self, node):
        self.attribute_of[id(node.value)] = node
        attr = node.attr.value
        if attr in _SESSIONS:
            self.uses_session = True
        if attr in _rules.METHOD_RULES or attr in _rules.ATTRIBUTE_RULES:
            self._add("member", node, call=self.callees.get(id(node)))
        if attr in _rules.SYMBOL_LAST_NAMES:
            self._add("symbol", node, call=self.callees.get(id(node)))

    def visit_Name(self, node):
        if node.value in self._legacy_names:
            self.name_uses.append((node, self._scope(node), self.callees.get(id(node))))


_HOOKS: Dict[tuple, tuple] = {}


def _hooks(visitor_class, node_class):
    """(is a statement, is a loop, visit_X, leave_X) of a collector for a node type;
    the visit and leave functions only where the collector defines them."""
    key = (visitor_class, node_class)
    hooks = _HOOKS.get(key)
    if hooks is None:
        own = []
        for prefix in ("visit_", "leave_"):
            name = prefix + node_class.__name__
            function = getattr(visitor_class, name, None)
            own.append(None if function is getattr(cst.CSTVisitor, name, None) else function)
        hooks = _HOOKS[key] = (issubclass(node_class, _STATEMENTS),
                               issubclass(node_class, _LOOPS), *own)
    return hooks


def _last_name(node):
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


# Calls whose callee the module-level facts need: tf.function(f), graph mode.
_MODULE_CALL_NAMES = frozenset(path.rsplit(".", 1)[-1] for path in
                               _rules.TF_FUNCTION_PATHS | _rules.GRAPH_MODE_SWITCHES)


class _Evaluator:
    """Values of expressions and the findings, after the visit."""

    def __init__(self, collector, path, cell):
        self.c = collector
        self.path, self.cell = path, cell
        self.raw = []  # (record, node, confidence, site)
        self._memo: Dict[int, object] = {}
        self._class_attributes: Dict[int, Dict[str, list]] = {}
        self._symbol_findings: Dict[int, Finding] = {}
        self._import_findings: Dict[tuple, object] = {}
        self._traced_functions = set()
        self._graph_mode = False
        self._referents: Dict[tuple, frozenset] = {}
        self._scope_names: Dict[int, tuple] = {}

    # --- names ---

    def referents(self, name, scope):
        if scope is None:
            return None
        # What every access of this name in this scope may refer to, computed
        # once per (scope, name): per use it would cost uses x uses.
        key = (id(scope), get_full_name_for_node(name))
        found = self._referents.get(key)
        if found is None:
            accesses = scope.accesses[name]
            found = self._referents[key] = frozenset(
                referent for access in accesses for referent in access.referents)
        return found

    def import_path(self, assignment):
        paths = {imports.canonical(q.name)
                 for q in assignment.get_qualified_names_for(assignment.name)
                 if q.source is QualifiedNameSource.IMPORT}
        return paths.pop() if len(paths) == 1 else None

    def value(self, node):
        key = id(node)
        cached = self._memo.get(key)
        if cached is _IN_PROGRESS:
            return _CYCLE
        if key in self._memo:
            return cached
        self._memo[key] = _IN_PROGRESS
        result = self._compute(node)
        if result is _CYCLE:
            result = None
        self._memo[key] = result
        return result

    def _compute(self, node):
        if isinstance(node, cst.Name):
            return self._name_value(node)
        if isinstance(node, cst.Attribute):
            dotted_import = self._dotted_import(node)
            if dotted_import is not None:
                return dotted_import
            owner = self.value(node.value)
            attr = node.attr.value
            if isinstance(owner, imports.Imported):
                return owner.child(attr)
            if isinstance(owner, _Strategy) and attr == "extended":
                return owner
            if isinstance(owner, _Self):
                values = self._class_attributes.get(id(owner.klass), {}).get(attr, ())
                return self._join(self._bound_value(v) for v in values)
            return None
        if isinstance(node, cst.Call):
            return self._call_value(node)
        return None

    def _dotted_import(self, node):
        """``a.b`` after ``import a.b`` (``import distutils.version``, ``import
        tensorflow.compat.v1``): libcst records that access on the Attribute,
        not on the Name ``a``, whose own value is then unknown."""
        scope = self.c._scope(_root_name(node))
        if scope is None or not isinstance(_root_name(node), cst.Name):
            return None
        referents = [r for access in scope.accesses[node] for r in access.referents]
        if not referents or not all(isinstance(r, ImportAssignment) for r in referents):
            return None
        paths = {self.import_path(r) for r in referents}
        path = paths.pop() if len(paths) == 1 else None
        return imports.Imported(path) if path else None

    def _bound_value(self, value):
        return self.value(value) if isinstance(value, cst.CSTNode) else value

    def _name_value(self, node):
        scope = self.c._scope(node)
        referents = self.referents(node, scope)
        if referents is None:
            return None
        if not referents:
            if node.value == "tf" and scope is not None and "tf" not in scope:
                # Doc snippets and notebook cells use `tf` without importing it.
                return imports.Imported(imports.TENSORFLOW, implicit=True)
            return None
        return self._join(self._referent_value(r) for r in referents)

    def _referent_value(self, referent):
        if isinstance(referent, ImportAssignment):
            path = self.import_path(referent)
            if path is None:
                return None
            legacy = self._import_findings.get((id(referent.node), referent.name))
            return imports.Imported(path, legacy=legacy)
        node = getattr(referent, "node", None)
        if isinstance(node, cst.Param):
            return self.c.params.get(id(node))
        if isinstance(node, cst.Name) and id(node) in self.c.bound:
            return self._bound_value(self.c.bound[id(node)])
        if isinstance(node, cst.FunctionDef) and self._is_traced_def(node):
            return _TRACED
        return None

    @staticmethod
    def _join(values):
        # A value that depends on itself (`tf = tf.compat.v1` reads the `tf`
        # it rebinds) adds nothing to what the other bindings say.
        values = [v for v in values if v is not _CYCLE]
        if not values:
            return None
        if all(isinstance(v, imports.Imported) for v in values):
            paths = list(dict.fromkeys(p for v in values for p in v.paths))
            if len(paths) == 1:
                return values[0]
            # Bound to several modules: kept, so that what any of them names
            # is still found (and left to a person, see _symbol).
            return imports.Imported(paths[0], any(v.implicit for v in values),
                                    others=tuple(paths[1:]))
        strategies = [v for v in values if isinstance(v, _Strategy)]
        if strategies:
            confidence = LOW if any(s.confidence == LOW for s in strategies) else HIGH
            kinds = {s.tpu for s in strategies}
            return _Strategy(confidence, kinds.pop() if len(kinds) == 1 else None)
        iterators = [v for v in values if isinstance(v, _Iterator)]
        if iterators:
            return _Iterator(LOW if any(i.confidence == LOW for i in iterators) else HIGH)
        if all(isinstance(v, _Self) for v in values) and len({id(v.klass) for v in values}) == 1:
            return values[0]
        if all(v is _TRACED for v in values):
            return _TRACED
        return None

    def _call_value(self, node):
        func = node.func
        callee = self.value(func)
        if isinstance(callee, imports.Imported):
            if _is_strategy_factory(callee.path):
                last = callee.path.rsplit(".", 1)[-1]
                tpu = None if last in _rules.STRATEGY_GETTERS else "TPU" in last
                return _Strategy(HIGH, tpu)
            if callee.path in _rules.TF_FUNCTION_PATHS:
                return _TRACED
        if isinstance(func, cst.Attribute) and func.attr.value in _rules.ITERATOR_FACTORIES:
            confidence = self.receiver_confidence(func.value, self.value(func.value))
            return _Iterator(confidence) if confidence is not None else None
        return None

    def receiver_confidence(self, receiver, owner):
        """high/low for a method's receiver; None when it is surely no strategy."""
        if isinstance(owner, _Strategy):
            return owner.confidence
        if isinstance(owner, (imports.Imported, _Iterator)):
            return None
        if isinstance(owner, _Self):
            return LOW
        return HIGH if _names_strategy(receiver) else LOW

    def is_tf_function(self, node):
        value = self.value(node)
        return isinstance(value, imports.Imported) and value.path in _rules.TF_FUNCTION_PATHS

    def _is_traced_def(self, node):
        if id(node) in self._traced_functions:
            return True
        for decorator in self.c.decorated.get(id(node), ()):
            target = decorator.func if isinstance(decorator, cst.Call) else decorator
            if self.is_tf_function(target):
                return True
        return False

    # --- where a name can be spelled ---

    def _names_of(self, scope):
        """``(imported, other)``: the names ``scope`` binds only by imports (with
        those imports), and the names it binds otherwise; once per scope."""
        cached = self._scope_names.get(id(scope))
        if cached is None:
            by_name = {}
            for assignment in scope.assignments:
                by_name.setdefault(assignment.name, []).append(assignment)
            imported = {name: assignments for name, assignments in by_name.items()
                        if all(isinstance(a, ImportAssignment) for a in assignments)}
            cached = self._scope_names[id(scope)] = (imported, set(by_name) - set(imported))
        return cached

    def visible_modules(self, scope, seq):
        """TensorFlow modules reachable by a bare name here: ``{name: path}``."""
        chain = []
        current = scope
        while current is not None:
            if current is scope or not isinstance(current, ClassScope):
                chain.append(current)
            parent = current.parent
            current = None if isinstance(parent, BuiltinScope) or parent is current else parent
        visible = {}
        for current in reversed(chain):  # inner scopes shadow outer ones
            imported, other = self._names_of(current)
            # A name some `del` in this scope unbinds (flow-insensitively) is gone.
            deleted = self.c.deleted.get(id(current), ())
            for name in [name for name in visible if name in other or name in deleted]:
                del visible[name]
            for name, assignments in imported.items():
                # The finding's own scope sees only the imports above it.
                earlier = [a for a in assignments if current is not scope
                           or self.c.import_seq.get(id(a.node), 0) <= seq]
                paths = {self.import_path(a) for a in earlier}
                module = paths.pop() if len(paths) == 1 else None
                if (module and module.split(".", 1)[0] == imports.TENSORFLOW
                        and name not in deleted):
                    visible[name] = module
                else:
                    visible.pop(name, None)
        return visible

    # --- findings ---

    def report(self, record, node, confidence, site):
        self.raw.append((record, node, confidence, site))
        return site

    def run(self):
        for owner, attr, value in self.c.self_assignments:
            owner_value = self._name_value(owner)
            if isinstance(owner_value, _Self):
                self._class_attributes.setdefault(id(owner_value.klass), {}).setdefault(
                    attr, []).append(value)
        for call, _ in self.c.function_calls:
            if (self.is_tf_function(call.func) and call.args
                    and isinstance(call.args[0].value, cst.Name)):
                for referent in self.referents(call.args[0].value,
                                               self.c._scope(call.args[0].value)) or ():
                    if isinstance(getattr(referent, "node", None), cst.FunctionDef):
                        self._traced_functions.add(id(referent.node))
            if isinstance(self.value(call.func), imports.Imported) and (
                    self.value(call.func).path in _rules.GRAPH_MODE_SWITCHES):
                self._graph_mode = True
        self._memo.clear()  # class attributes and tf.function uses are known now
        # Legacy callees first: argument findings depend on them.
        for candidate in self.c.candidates:
            if candidate.kind == "import":
                self._import(candidate)
        self._import_uses()
        for kinds in (("symbol",), ("member", "call")):
            for candidate in self.c.candidates:
                if candidate.kind in kinds:
                    getattr(self, "_" + candidate.kind)(candidate)
        return self.raw

    def _import(self, candidate):
        statement, module, path = candidate.extra
        site = Site("import", node=candidate.node, statement=candidate.statement,
                    written=module, resolved=path, import_statement=statement,
                    single_name=len(statement.names) == 1,
                    visible=self.visible_modules(candidate.scope, candidate.seq))
        record = _rules.import_rule(path)
        self.report(record, candidate.node.name, HIGH, site)
        bound = candidate.node.asname.name.value if candidate.node.asname else dotted(
            candidate.node.name)
        self._import_findings[(id(statement), bound)] = site

    def _import_uses(self):
        for name, scope, call in self.c.name_uses:
            for referent in self.referents(name, scope) or ():
                site = self._import_findings.get((id(getattr(referent, "node", None)),
                                                  referent.name))
                if site is not None:
                    site.uses.append(("call", call) if call is not None else ("other", None))
                    site.use_names.append(name)

    def _symbol(self, candidate):
        node = candidate.node
        value = self.value(node)
        if not isinstance(value, imports.Imported):
            return
        # tf.compat.v2.X is X in TF 2 (`import tensorflow.compat.v2 as tf`, as
        # SimCLR's TF 2 code does): a legacy X is legacy under either path.
        records = [(path, _rules.SYMBOL_RULES.get(twin)) for path in value.paths
                   for twin in imports.equivalent_paths(path)]
        records = [(path, record) for path, record in records if record is not None]
        if not records:
            return
        path, record = records[0]
        written = dotted(node) or ""
        root = written.split(".", 1)[0]
        site = Site("symbol", node=node, statement=candidate.statement, call=candidate.call,
                    written=written, resolved=path,
                    visible=self.visible_modules(candidate.scope, candidate.seq))
        root_value = self.value(_root_name(node)) if root else None
        if isinstance(root_value, imports.Imported):
            site.root_path = root_value.path
        if isinstance(root_value, imports.Imported) and root_value.others:
            site.todo_note = (
                f"`{root}` is bound to more than one module here "
                f"({', '.join(imports.table_name(p) for p in root_value.paths)}"
                f"): no one rewrite is valid for all of them")
        elif value.others:
            site.todo_note = ("the name is bound to more than one module here: no one "
                              "rewrite is valid for all of them")
        if candidate.call is not None:
            site.result_uses = _object_uses.of_assigned_call(
                candidate.statement, candidate.call, self.c.scopes, self.c.attribute_of,
                self.c.callees)
        self._symbol_findings[id(node)] = site
        self.report(record, node, HIGH, site)

    def _member(self, candidate):
        node, call = candidate.node, candidate.call
        owner = self.value(node.value)
        attr = node.attr.value
        record = _rules.ATTRIBUTE_RULES.get(attr)
        if record is not None:
            confidence = self.receiver_confidence(node.value, owner)
            if confidence == LOW and _steps_per_run_via_extended(record, node):
                # Only a strategy's `extended` had steps_per_run: marked, as TF
                # 2.21's TPUStrategy would answer 1 there (issue 35).
                confidence = HIGH
            if confidence is not None:
                self.report(record, node.attr, confidence,
                            Site("attribute", node=node, statement=candidate.statement))
        record = _rules.METHOD_RULES.get(attr)
        if record is None:
            return
        if record is _rules.ITERATOR_INITIALIZE:
            if isinstance(owner, _Iterator):
                confidence = owner.confidence
            elif (self.c.makes_iterators and not isinstance(owner, imports.Imported)
                  and _names_iterator(node.value)):
                # An iterator made elsewhere (a helper that returns
                # make_dataset_iterator(...)) in a module that makes them: its
                # name says what it is, and a TODO on a look-alike costs a comment.
                confidence = HIGH
            else:
                confidence = None
        else:
            confidence = self.receiver_confidence(node.value, owner)
            if confidence == LOW and record.name in _rules.KNOWN_RECEIVER_ONLY:
                confidence = None
            if confidence == LOW and record.name in _rules.DISTINCTIVE_METHODS:
                confidence = HIGH
            if record is _rules.REDUCE_WITHOUT_AXIS and (
                    call is None or not _reduce_without_axis(call)):
                confidence = None
        if confidence is None:
            return
        site = Site("method", node=node, statement=candidate.statement, call=call,
                    receiver_pure=dotted(node.value) is not None,
                    visible=self.visible_modules(candidate.scope, candidate.seq),
                    graph=self._graph_mode or self.c.uses_session)
        if call is not None:
            site.positional = len(_positional(call))
            site.keywords = tuple(_keywords(call))
            site.starred = any(arg.star == "*" for arg in call.args)
            if record is _rules.RUN_V2:
                site.run_call = self._run_call(candidate, owner)
        self.report(record, node.attr, confidence, site)

    def _run_call(self, candidate, owner):
        """What upgrade needs to know to keep ``strategy.run(fn)`` valid in TF 2.21."""
        call = candidate.call
        fn = _argument(call, 0, "fn")
        if self._graph_mode:
            context = "graph"
        elif not candidate.functions:
            context = "eager"
        elif any(isinstance(f, cst.FunctionDef) and self._is_traced_def(f)
                 for f in candidate.functions):
            context = "traced"
        else:
            context = "unknown"
        return RunCall(fn=fn, fn_kind=self._fn_kind(fn.value) if fn else "unknown",
                       context=context, in_loop=candidate.in_loop,
                       receiver_tpu=owner.tpu if isinstance(owner, _Strategy) else None)

    def _fn_kind(self, node):
        if isinstance(node, cst.Lambda):
            return "plain"
        if isinstance(node, cst.Call):
            return "traced" if self.value(node) is _TRACED else "unknown"
        if not isinstance(node, cst.Name):
            return "unknown"
        kinds = set()
        for referent in self.referents(node, self.c._scope(node)) or ():
            target = getattr(referent, "node", None)
            if isinstance(target, cst.FunctionDef):
                kinds.add("traced" if self._is_traced_def(target) else "plain")
            elif isinstance(target, cst.Name) and id(target) in self.c.bound:
                bound = self.c.bound[id(target)]
                kinds.add("plain" if isinstance(bound, cst.Lambda) else
                          "traced" if self._bound_value(bound) is _TRACED else "unknown")
            else:
                kinds.add("unknown")
        return kinds.pop() if len(kinds) == 1 else "unknown"

    def _call(self, candidate):
        call = candidate.call
        func = call.func
        callee = self.value(func)
        owner = self.value(func.value) if isinstance(func, cst.Attribute) else None
        # A TF 2 callee's arguments are its arguments under either spelling:
        # `import tensorflow.compat.v2 as tf` names the same class (issue 35 item 3).
        callee_names = ({imports.table_name(path) for path in imports.equivalent_paths(callee.path)}
                        if isinstance(callee, imports.Imported) else set())
        method_name = ("." + func.attr.value if isinstance(func, cst.Attribute)
                       and not isinstance(owner, imports.Imported) else None)
        depends_on = self._symbol_findings.get(id(func)) or (
            callee.legacy if isinstance(callee, imports.Imported) else None)
        for arg in call.args:
            if arg.keyword is None:
                continue
            for record in _rules.ARGUMENT_RULES.get(arg.keyword.value, ()):
                if callee_names & set(record.symbols) or method_name in record.symbols:
                    site = Site("keyword", node=arg, statement=candidate.statement, call=call,
                                depends_on=depends_on)
                    self.report(record, arg.keyword, HIGH, site)
        if callee_names:
            self._positional_steps(candidate, callee.path, depends_on)

    def _positional_steps(self, candidate, path, callee_site):
        """A positional ``steps_per_run`` (TPC007), by the run-time picker's own predicate."""
        call = candidate.call
        if path not in _rules.STEPS_PER_RUN_CALLEES or any(a.star for a in call.args):
            return
        positional = _positional(call)
        keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
        if path in _rules.V1_TPU_STRATEGY:
            index = 1 if len(positional) > 1 and "steps_per_run" not in keywords else None
        elif path.startswith("tensorflow.compat.v2."):
            # Through tf.compat.v2 the name is the v2 class in TF 1.15 as in 2.x
            # (tensorflow/python/distribute/tpu_strategy.py, r1.15: `TPUStrategy` is
            # exported with v1=[], `__init__(tpu_cluster_resolver, device_assignment)`):
            # its second positional is the device assignment, never steps_per_run.
            index = None
        else:
            kinds = [self._int_kind(arg.value) for arg in positional]
            meant = tpu_strategy_args.experimental_tpu_strategy_class(kinds, keywords)
            if meant is None and callee_site is not None:
                callee_site.todo_note = (
                    "say steps_per_run= (TF 1.15 class) or experimental_device_assignment= "
                    "(TF 2): a second positional argument is read differently by each")
            index = tpu_strategy_args.steps_argument_index(kinds, keywords)
        if index is not None:
            site = Site("positional", node=positional[index], statement=candidate.statement,
                        call=call, depends_on=callee_site)
            self.report(_rules.STEPS_PER_RUN, positional[index], HIGH, site)

    def _int_kind(self, node, depth=0):
        if isinstance(node, cst.UnaryOperation) and isinstance(
                node.operator, (cst.Minus, cst.Plus)):
            node = node.expression
        if isinstance(node, cst.Integer):
            return tpu_strategy_args.INTEGER
        if isinstance(node, (cst.BaseString, cst.Float, cst.Imaginary, cst.Tuple, cst.List,
                             cst.Dict, cst.Set, cst.Lambda)):
            return tpu_strategy_args.OTHER
        if isinstance(node, cst.Name):
            if node.value in ("None", "True", "False"):
                return tpu_strategy_args.OTHER
            referents = self.referents(node, self.c._scope(node)) or ()
            if len(referents) == 1 and depth < 5:
                target = getattr(next(iter(referents)), "node", None)
                bound = self.c.bound.get(id(target)) if isinstance(target, cst.Name) else None
                if isinstance(bound, cst.CSTNode):
                    return self._int_kind(bound, depth + 1)
        return tpu_strategy_args.UNKNOWN


def _root_name(node):
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


def scopes_of(module):
    """``{node: Scope}``: what ``MetadataWrapper(module).resolve(ScopeProvider)``
    returns, for half its cost.

    ScopeProvider and the ExpressionContextProvider it depends on do all their
    work in ``visit_Module``, each walking the module with a visitor of its own.
    The wrapper calls ``visit_Module`` from a batched visit of the whole module,
    which then goes on through every node calling nothing else: two full passes
    over the tree that compute nothing. Here each provider's ``visit_Module``
    runs directly and the second gets the first's results, as the wrapper would
    hand them over. tests/test_migrate_fast_paths.py checks that the scopes are
    the wrapper's; :mod:`~tpu_compat.migrate._libcst_fast` checks that both
    providers still have no other hook and keep ``_computed``, and where not,
    the wrapper itself answers.
    """
    if not _libcst_fast.provider_results():
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    return _scopes_by_hand(module)


def _scopes_by_hand(module, results=None):
    """``{node: Scope}``; ``results`` (a dict) also gets each provider's mapping."""
    results = {} if results is None else results
    contexts = ExpressionContextProvider()
    contexts.visit_Module(module)
    results[ExpressionContextProvider] = contexts._computed  # pylint: disable=protected-access
    scopes = ScopeProvider()
    scopes.metadata = dict(results)
    scopes.visit_Module(module)
    results[ScopeProvider] = scopes._computed  # pylint: disable=protected-access
    return results[ScopeProvider]


def qualified_names(visitor, node):
    """The qualified names ``visitor`` (a libcst visitor depending on
    QualifiedNameProvider) resolved for ``node``; none for a node the provider did
    not see (one a rewrite made)."""
    try:
        return {name.name for name in visitor.get_metadata(QualifiedNameProvider, node)}
    except KeyError:
        return set()


def names_resolved(module):
    """``MetadataWrapper(module, unsafe_skip_copy=True)`` with QualifiedNameProvider
    (and the scopes it depends on) already resolved, as :func:`scopes_of` resolves
    scopes: each provider's ``visit_Module`` run directly, without the wrapper's idle
    batched passes over the whole tree (about half of ``--estimator-to-tf2``'s time).
    Where :mod:`~tpu_compat.migrate._libcst_fast` finds the providers changed, the
    wrapper resolves them itself when a visitor asks."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    if _libcst_fast.provider_results():
        results = {}
        _scopes_by_hand(wrapper.module, results)
        names = QualifiedNameProvider()
        names.metadata = dict(results)
        names.visit_Module(wrapper.module)
        results[QualifiedNameProvider] = names._computed  # pylint: disable=protected-access
        wrapper._metadata.update(results)  # pylint: disable=protected-access
    return wrapper


def analyze(text, path="<string>", cell=None) -> Analysis:
    """Parses ``text`` once and finds its legacy APIs.

    Raises sources.SourceError when libcst cannot parse the text.
    """
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise sources.SourceError(
            f"libcst cannot parse it: {str(error).splitlines()[0]}") from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = _Collector(scopes_of(wrapper.module))
    _walk.walk(wrapper.module, collector)
    evaluator = _Evaluator(collector, path, cell)
    raw = evaluator.run()
    findings = []
    if raw:
        positions = _positions.start_positions(wrapper.module, [entry[1] for entry in raw])
        for record, node, confidence, site in raw:
            start = positions[node]
            finding = Finding(path, start.line, start.column + 1, record.rule, confidence,
                              cell, site)
            site.finding = finding
            findings.append(finding)
    return Analysis(wrapper, findings)
