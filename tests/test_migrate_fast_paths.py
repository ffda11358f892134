"""The analysis' shortcuts through libcst give libcst's own answers.

* ``_walk.walk`` calls a visitor's hooks on the same nodes in the same order as
  ``node.visit`` (it only skips rebuilding the tree);
* ``_positions.start_positions`` gives every node the start PositionProvider
  gives it (it only skips the per-token bookkeeping);
* ``analysis.scopes_of`` gives every node the scope ``MetadataWrapper`` gives
  it (it only skips the wrapper's idle passes).

Both are compared with libcst on every node of the migrate corpus, of two of
tf_keras' modules, and of sources written to be awkward.
"""

import functools
import glob
import importlib.util
import os

import libcst as cst
import pytest
from libcst._metadata_dependent import LazyValue
from libcst.metadata import (ExpressionContextProvider, MetadataWrapper, PositionProvider,
                             QualifiedNameProvider, ScopeProvider)

from tpu_compat.migrate import _positions, _walk, analysis, scan

HERE = os.path.dirname(os.path.abspath(__file__))

AWKWARD = {
    "crlf": "import tensorflow as tf\r\nif x:\r\n    y = f(a,\r\n          b)\r\n",
    "lone cr": "a = 1\rb = [1,\r     2]\r",
    "mixed endings": "a = 1\r\nb = 2\nc = (3,\r4)\r\n",
    "no final newline": "x = strategy.reduce('SUM', v)",
    "empty": "",
    "comments only": "# one\n\n# two\n",
    "tabs and form feed": "if x:\n\ty = 1\n\f\nz = 2\n",
    "continuation": "x = 1 + \\\n    2\nstrategy.\\\n    experimental_run_v2(fn)\n",
    "non-BMP text": "s = '\U0001f600\U0001f600'; t = s  # \u00e9\u00e9\nu = t\n",
    "f-strings": "x = f'{a!r:>{width}} {b=} {c:{d}.{e}f} {{}}'\ny = f'''\n{z}\n'''\n",
    "decorators and defs": "@a.b(c)\n@d\nasync def f(x, /, y=1, *a, k: int = 2, **kw) -> T:\n"
                           "    async with m as n:\n        await g(lambda q: q)\n"
                           "    return [i async for i in h() if i]\n",
    "classes": "class A(B, metaclass=M):\n    '''doc'''\n    x: int = 1\n"
               "    def m(self): global G; G = self.x\n",
    "walrus and stars": "if (n := len(a)) > 1:\n    first, *rest = a\n    print(*rest, **kw)\n",
    "match": "match p:\n    case {'k': [1, *r]} | A(x=1) if r:\n        pass\n"
             "    case _:\n        pass\n",
    "try and loops": "for i in x:\n    try:\n        pass\n    except (E, F) as e:\n        raise\n"
                     "    else:\n        continue\n    finally:\n        del i\nelse:\n"
                     "    while 0: break\n",
    "semicolons and dict/set": "a = {1: 2, **b}; c = {3, 4}; d = a[1:2, ::3]\n",
    "strings": "x = ('a' 'b'\n     \"c\")\ny = b'\\x00'; z = r'\\n' '''\nq\n'''\n",
}


def _tf_keras_modules():
    spec = importlib.util.find_spec("tf_keras")
    if spec is None:
        return []
    root = list(spec.submodule_search_locations)[0]
    return [os.path.join(root, "src", name)
            for name in ("distribute/distributed_training_utils_v1.py", "callbacks.py")]


def _sources():
    cases = [pytest.param(text, id=name) for name, text in AWKWARD.items()]
    for path in sorted(glob.glob(os.path.join(HERE, "migrate_corpus", "*", "*.py"))):
        cases.append(pytest.param(path, id=os.path.relpath(path, HERE)))
    for path in _tf_keras_modules():
        if os.path.exists(path):
            cases.append(pytest.param(path, id="tf_keras/" + os.path.basename(path)))
    return cases


@functools.lru_cache(maxsize=None)
def _module(source):
    """The parse of ``source`` (a path or text), once for the module's tests:
    libcst trees are immutable, and each test resolves its own metadata."""
    if source.endswith(".py") and os.path.exists(source):
        with open(source, encoding="utf-8", newline="") as stream:
            source = stream.read()
    return cst.parse_module(source)


class _Recorder(cst.CSTVisitor):
    """Notes every hook call; skips the children of lambdas and subscripts."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def on_visit(self, node):
        self.calls.append(("visit", node))
        return not isinstance(node, (cst.Lambda, cst.Subscript))

    def on_leave(self, original_node):
        self.calls.append(("leave", original_node))


@pytest.mark.parametrize("source", _sources())
def test_walk_visits_like_libcst(source):
    module = _module(source)
    expected, got = _Recorder(), _Recorder()
    with scan.deep_recursion():
        module.visit(expected)
        _walk.walk(module, got)
    assert len(got.calls) == len(expected.calls)
    assert all(a[0] == b[0] and a[1] is b[1] for a, b in zip(got.calls, expected.calls))


def test_walk_refuses_visitors_of_attributes():
    class Attributes(cst.CSTVisitor):
        def on_visit_attribute(self, node, attribute):
            pass

    with pytest.raises(TypeError, match="attribute hooks"):
        _walk.walk(cst.parse_module("x = 1\n"), Attributes())


@pytest.mark.parametrize("source", _sources())
def test_start_positions_are_position_providers(source):
    module = _module(source)
    with scan.deep_recursion():
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        got = _positions.start_positions(module, list(expected))
    assert {node: got[node] for node in expected} == {
        node: where.start for node, where in expected.items()}


def test_start_positions_of_no_nodes_generate_no_code():
    assert _positions.start_positions(cst.parse_module("x = 1\n"), []) == {}


@pytest.mark.parametrize("source", [p for p in _sources() if "tf_keras" not in p.id])
def test_start_positions_of_single_nodes_stop_early_and_agree(source):
    """Asked for one node, code generation stops after it: its start is the same."""
    module = _module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = list(expected)
    for node in nodes[::max(1, len(nodes) // 20)]:
        assert _positions.start_positions(module, [node]) == {node: expected[node].start}


class _Nodes(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.numbers = {}

    def on_visit(self, node):
        self.numbers[id(node)] = len(self.numbers)
        return True


def _scope_signature(module, scopes):
    """Each node's scope described by its kind, node, parents, assignments and
    accesses (with their referents), so two computations can be compared.
    Nodes are numbered in visiting order; ScopeProvider also parses string
    annotations into nodes of its own, which are described by their code."""
    nodes = _Nodes()
    module.visit(nodes)

    def name(node):
        if node is None:
            return None
        number = nodes.numbers.get(id(node))
        return number if number is not None else (type(node).__name__, module.code_for_node(node))

    described = {}

    def describe(scope):
        if scope is None:
            return None
        if id(scope) not in described:
            builtin = type(scope).__name__ == "BuiltinScope"
            described[id(scope)] = str((
                type(scope).__name__, name(getattr(scope, "node", None)),
                "root" if scope.parent is scope else describe(scope.parent),
                None if builtin else sorted(
                    (a.name, str(name(getattr(a, "node", None))), type(a).__name__)
                    for a in scope.assignments),
                None if builtin else sorted(
                    (str(name(a.node)), sorted(str(name(getattr(r, "node", None)))
                                               for r in a.referents))
                    for a in scope.accesses)))
        return described[id(scope)]

    return sorted((str(name(node)), describe(scope)) for node, scope in scopes.items())


@pytest.mark.parametrize("source", _sources())
def test_scopes_are_the_metadata_wrappers(source):
    module = _module(source)
    with scan.deep_recursion():
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
        got = analysis.scopes_of(module)
    assert _scope_signature(module, got) == _scope_signature(module, expected)


# Two of the TPUEstimator programs (each wrapper resolution costs about a second): the
# BERT-style one and one importing Keras and contrib under several names.
PROGRAMS = [os.path.join(HERE, "migrate_programs", name) for name in (
    "tpu_estimator_bert_legacy.py", "keras_to_tpu_model_legacy.py")]


def test_names_resolved_are_the_metadata_wrappers_qualified_names():
    """analysis.names_resolved (``--estimator-to-tf2``'s wrapper) holds the qualified
    names the wrapper resolves itself, node for node, on two TPUEstimator programs."""
    for path in PROGRAMS:
        with open(path, encoding="utf-8") as f:
            module = cst.parse_module(f.read())
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
        got = analysis.names_resolved(module).resolve(QualifiedNameProvider)
        assert got.keys() == expected.keys() and len(got) > 100, path
        assert all(_value(got[node]) == _value(expected[node]) for node in expected), path


def _value(value):
    """A provider's value; QualifiedNameProvider stores most as LazyValue, computed
    when a visitor's get_metadata asks."""
    return value() if isinstance(value, LazyValue) else value


def test_scope_providers_do_all_their_work_in_visit_module():
    """scopes_of and names_resolved skip the wrapper's batched pass, which would
    call these providers' other hooks: there must be none."""
    for provider in (ScopeProvider, ExpressionContextProvider, QualifiedNameProvider):
        hooks = {name for klass in provider.__mro__
                 if klass.__module__.startswith("libcst.metadata")
                 for name in vars(klass)
                 if name.startswith(("visit_", "leave_")) or name in ("on_visit", "on_leave")}
        assert hooks == {"visit_Module"}, (provider.__name__, hooks)


# --- The gates in front of the fast paths (migrate/_libcst_fast.py) ------------------

CORPUS_FILES = sorted(glob.glob(os.path.join(HERE, "migrate_corpus", "*", "*.py")))


def _scan_and_upgrade(paths):
    """Every upgrade's bytes and outcomes. The outcomes hold every finding of scan's
    analysis of the file (``scan.analyze_text``, what ``scan`` runs), rule and position
    (and those of upgrade's second pass over its rewrite), so they are scan's answer
    too, without analysing each file a second time."""
    from tpu_compat.migrate import upgrade
    results = []
    for path in paths:
        upgraded = upgrade.upgrade_file(path)
        results.append((path, [outcome.to_dict() for outcome in upgraded.outcomes],
                        upgraded.output, upgraded.error))
    return results


def _counting(calls, name, original):
    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)
    return counted


def test_the_fast_paths_run_with_the_installed_libcst():
    # setup.cfg's oldest libcst (1.1.0) and the newest checked (1.9.0) pass
    # every check; a libcst that fails one still works, only slower.
    from tpu_compat.migrate import _libcst_fast
    assert _libcst_fast.children_visit()
    assert _libcst_fast.codegen_state()
    assert _libcst_fast.provider_results()


def test_scan_and_upgrade_are_the_same_with_the_fast_paths_off(monkeypatch):
    from tpu_compat.migrate import _libcst_fast
    assert len(CORPUS_FILES) >= 20
    calls = []  # which fast paths' own code ran
    for module, name in ((_walk, "_walk"), (_positions, "_TokenIndexState"),
                         (analysis, "_scopes_by_hand")):
        monkeypatch.setattr(module, name, _counting(calls, name, getattr(module, name)))
    fast = _scan_and_upgrade(CORPUS_FILES)
    assert set(calls) == {"_walk", "_TokenIndexState", "_scopes_by_hand"}
    calls.clear()
    monkeypatch.setattr(_libcst_fast, "ENABLED", False)
    slow = _scan_and_upgrade(CORPUS_FILES)
    assert calls == []
    assert sum(len(outcomes) for _, outcomes, *_ in slow) > 100
    assert slow == fast


@pytest.mark.parametrize("gate, break_it", [
    ("codegen_state", lambda mp, fast: mp.setattr(fast, "CodegenState", None)),
    ("provider_results", lambda mp, fast: mp.setattr(
        ScopeProvider, "visit_Name", lambda self, node: None, raising=False)),
    ("children_visit", lambda mp, fast: mp.setattr(
        cst.Call, "_visit_and_replace_children", lambda self, visitor: self)),
])
def test_a_changed_libcst_internal_turns_its_fast_path_off(monkeypatch, gate, break_it):
    from tpu_compat.migrate import _libcst_fast
    checks = (_libcst_fast._children_visit_works, _libcst_fast._codegen_state_works,
              _libcst_fast._provider_results_work)
    for check in checks:
        check.cache_clear()
    try:
        break_it(monkeypatch, _libcst_fast)
        assert getattr(_libcst_fast, gate)() is False
        monkeypatch.undo()
        for check in checks:
            check.cache_clear()
        assert getattr(_libcst_fast, gate)() is True
    finally:
        monkeypatch.undo()
        for check in checks:
            check.cache_clear()
