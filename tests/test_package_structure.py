"""The package's shape, read from its source (no TensorFlow): no import circles, no
reaching into another package's private names, no module that grew past 400 lines.

docs/architecture.md ("Imports between modules") documents the exceptions each
test allows, with their reasons; a new exception goes there and here together.
"""

import ast
import functools
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "tpu_compat")
ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")

# tpu_compat-wide internals: private top-level modules that every part of the
# package may import (docs/architecture.md says what each is for).
SHARED_INTERNALS = {
    "tpu_compat._atomic", "tpu_compat._callsite", "tpu_compat._config", "tpu_compat._lazy",
    "tpu_compat._paths", "tpu_compat._process", "tpu_compat._tf_internals", "tpu_compat._version",
}
# Private modules shared by two modules only: (importer, imported).
PRIVATE_PAIRS = {("tpu_compat.pytest_plugin", "tpu_compat._pytest_child"),
                 ("tpu_compat._process", "tpu_compat._fork_client")}
# Circles through imports inside functions (none at import time): each pair.
FUNCTION_LEVEL_CIRCLES = set()
# The only modules allowed over MAX_LINES: the legacy table's records (data)
# and the scanner's analysis.
MAX_LINES = 400
# estimator_tf2: the one file `upgrade --estimator-to-tf2` writes beside a program
# (issue 36), self-contained by design.
LONG_MODULES = {"tpu_compat.legacy.records", "tpu_compat.migrate.analysis",
                "tpu_compat.migrate.estimator.estimator_tf2"}


def _modules():
    found = {}
    for folder, _, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


@functools.lru_cache(maxsize=None)
def _tree(module):
    with open(MODULES[module], encoding="utf-8") as source:
        return ast.parse(source.read(), MODULES[module])


def _is_package(module):
    return MODULES[module].endswith("__init__.py")


def _area(module):
    """The package a module belongs to: ``tpu_compat.X`` for a module below the
    subpackage X (its subpackages included), the module itself at the top."""
    parts = module.split(".")
    top = ".".join(parts[:2])
    return top if top in MODULES and _is_package(top) else module


def _import_nodes(tree, in_functions):
    """The import statements run when the module is imported (module and class
    bodies, under if/try/with), plus those in functions when ``in_functions``."""
    found = []

    def visit(statements):
        for node in statements:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if in_functions:
                    visit(node.body)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, field, None) or [])

    visit(tree.body)
    return found


def _from_module(module, node):
    """The module a ``from ... import`` statement in ``module`` imports from."""
    if not node.level:
        return node.module
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


_PAYLOADS = {"Call", "Wrap", "Ref"}  # tpu_compat/patching/rows.py


def _named_references(tree):
    """``(module, name, line)`` for each ``"tpu_compat.module:name"`` a patch row's
    payload names (``Call(...)``, ``Wrap(...)``, ``Ref(...)``, their ``args`` too):
    imported by the installer when the row is applied, an import inside a function."""
    found = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) in _PAYLOADS):
            continue
        for argument in call.args + [keyword.value for keyword in call.keywords]:
            for node in ast.walk(argument):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    module, colon, name = node.value.partition(":")
                    if colon and module in MODULES:
                        found.append((module, name.partition(".")[0], node.lineno))
    return sorted(set(found), key=lambda reference: reference[2])  # a Ref in a Call: once


@functools.lru_cache(maxsize=None)
def _imports(module, in_functions=False):
    """``(target module, imported name or None, line)`` for each tpu_compat import;
    with ``in_functions``, the modules patch rows name for the installer to import too."""
    tree = _tree(module)
    found = _named_references(tree) if in_functions else []
    for node in _import_nodes(tree, in_functions):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names
                      if alias.name.partition(".")[0] == "tpu_compat"]
            continue
        source_module = _from_module(module, node)
        if source_module.partition(".")[0] != "tpu_compat":
            continue
        for alias in node.names:
            submodule = f"{source_module}.{alias.name}"
            if submodule in MODULES:  # `from tpu_compat.pod import config`: the submodule
                found.append((submodule, None, node.lineno))
            else:
                found.append((source_module, alias.name, node.lineno))
    return found


def _graph(in_functions):
    return {module: {target for target, _, _ in _imports(module, in_functions)
                     if target != module and target in MODULES}
            for module in MODULES}


def _circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def connect(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                connect(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(frozenset(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return circles


def _private_parts(target, name):
    parts = target.split(".")[1:] + ([name] if name else [])
    return [part for part in parts if part.startswith("_") and not part.startswith("__")]


def _allowed_private(importer, target):
    return (target in SHARED_INTERNALS or (importer, target) in PRIVATE_PAIRS
            or _area(importer) == _area(target))


def _private_imports(module):
    return [f"{module}:{line} imports {target}{':' + name if name else ''}"
            for target, name, line in _imports(module, in_functions=True)
            if _private_parts(target, name) and not _allowed_private(module, target)]


def _private_attribute_reads(module):
    """``alias._name`` where ``alias`` is a tpu_compat module of another package."""
    tree = _tree(module)
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname, alias.name) for alias in node.names
                         if alias.asname and alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            source_module = _from_module(module, node)
            bound.update((alias.asname or alias.name, f"{source_module}.{alias.name}")
                         for alias in node.names if f"{source_module}.{alias.name}" in MODULES)
    return [f"{module}:{node.lineno} reads {bound[node.value.id]}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in bound and node.attr.startswith("_") and not node.attr.startswith("__")
            and not _allowed_private(module, bound[node.value.id])]


def test_the_graph_sees_the_package():
    graph = _graph(in_functions=False)
    assert len(MODULES) > 100
    assert "tpu_compat.runtime.hooks" in graph["tpu_compat.contrib"]
    # relative and `from package import module` imports resolve to the module
    assert "tpu_compat.estimator.graphs" in graph["tpu_compat.estimator.estimator"]
    assert "tpu_compat.keras.compile" in graph["tpu_compat.keras.routes"]
    # a patch row's payload, named for the installer to import, is an arrow too
    named = _graph(in_functions=True)
    assert "tpu_compat.runtime.native_methods" in named["tpu_compat.patching.registry"]
    assert "tpu_compat.keras.graph_mode" in named["tpu_compat.keras.routes"]
    assert _named_references(ast.parse(
        'f("tpu_compat.runtime.hooks:x")\n'
        'Call("tpu_compat.runtime.hooks:instrument_library",\n'
        '     args=(Ref("tpu_compat.runtime.emulated:EmulatedTPUExtended"),))')) == [
        ("tpu_compat.runtime.hooks", "instrument_library", 2),
        ("tpu_compat.runtime.emulated", "EmulatedTPUExtended", 3)]


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_at_import_time():
    assert _circles(_graph(in_functions=False)) == []


def test_import_circles_through_functions_are_the_documented_ones():
    assert set(_circles(_graph(in_functions=True))) <= FUNCTION_LEVEL_CIRCLES


def test_no_module_imports_another_packages_private_names():
    found = [line for module in sorted(MODULES) for line in _private_imports(module)]
    assert found == []


def test_no_module_reads_another_packages_private_names():
    found = [line for module in sorted(MODULES) for line in _private_attribute_reads(module)]
    assert found == []


def test_the_private_name_checks_see_a_reach_across():
    # tpu_compat.estimator._inputs is the estimator package's own: another
    # package importing it, or reading estimator_lib._inputs, is refused.
    assert not _allowed_private("tpu_compat.keras.routes", "tpu_compat.estimator._inputs")
    assert _allowed_private("tpu_compat.estimator.tpu.spec", "tpu_compat.estimator._inputs")
    assert _allowed_private("tpu_compat.runner", "tpu_compat._callsite")
    assert _private_parts("tpu_compat.keras.routes", "_patch_keras3") == ["_patch_keras3"]
    assert _private_parts("tpu_compat.keras.routes", "__all__") == []


def test_modules_stay_under_400_lines():
    long = {}
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as source:
            count = sum(1 for _ in source)
        if count > MAX_LINES:
            long[module] = count
    assert set(long) <= LONG_MODULES, (
        f"over {MAX_LINES} lines: {long}; split by job (docs/architecture.md)")


# Modules where ``tensorflow.python...`` appears only as data: strings naming modules
# that are matched, redirected or served by name, never imported for tpu_compat's use.
TF_INTERNALS_AS_DATA = {
    "tpu_compat.legacy.records":
        "the legacy table: the TensorFlow targets its hooks wrap and its rules name",
    "tpu_compat.patching.import_router":
        "the router's REDIRECTS table: the program's imports each route serves",
    "tpu_compat.patching.rows":
        "the patch rows' target names: the module names of what install() replaces, "
        "folded to the names the rows declare",
    "tpu_compat.keras.imports":
        "the program's tensorflow.python.keras imports, served from tf_keras",
    "tpu_compat.contrib.submodules":
        "tf.contrib's name table: the \"module:attribute\" each name serves, "
        "resolved when the program reads it",
    "tpu_compat.contrib.deep_imports":
        "TF 1.15's deep contrib import paths: the same kind of name table",
    "tpu_compat.estimator.python_imports":
        "TF 1.x's tensorflow.python.estimator paths: the program's imports it serves "
        "(TF 2.16+ has no such module)",
}


def _docstrings(tree):
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _tensorflow_internal_imports(tree):
    """``import`` statements of ``tensorflow.python...``, in functions too."""
    return [node.lineno for node in ast.walk(tree)
            if (isinstance(node, ast.ImportFrom) and not node.level
                and node.module.startswith("tensorflow.python"))
            or (isinstance(node, ast.Import) and any(
                alias.name.startswith("tensorflow.python") for alias in node.names))]


def _tensorflow_internal_names(tree):
    """Strings (f-strings too, not docstrings) naming a ``tensorflow.python...`` module:
    what ``importlib.import_module`` or ``sys.modules`` would be given."""
    docstrings = _docstrings(tree)
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.startswith("tensorflow.python") and id(node) not in docstrings]


def test_the_tensorflow_internals_checks_see_each_kind_of_use():
    source = ('"""tensorflow.python.x in a docstring."""\n'
              "import tensorflow as tf\n"
              "def f(name):\n"
              "    from tensorflow.python.ops import gen_nn_ops\n"
              "    import tensorflow.python.eager.remote\n"
              "    sys.modules.get('tensorflow.python.framework.errors_impl')\n"
              "    return importlib.import_module(f'tensorflow.python.ops.{name}')\n")
    tree = ast.parse(source)
    assert _tensorflow_internal_imports(tree) == [4, 5]
    assert sorted(_tensorflow_internal_names(tree)) == [6, 7]


def test_tensorflow_internals_are_imported_only_through_tf_internals():
    imports, names = [], []
    for module in sorted(set(MODULES) - {"tpu_compat._tf_internals"}):
        tree = _tree(module)
        imports += [f"{module}:{line}" for line in _tensorflow_internal_imports(tree)]
        if module not in TF_INTERNALS_AS_DATA:
            names += [f"{module}:{line}" for line in _tensorflow_internal_names(tree)]
    assert imports == [], "import it in tpu_compat/_tf_internals.py, saying why"
    assert names == [], "import it in tpu_compat/_tf_internals.py, or list the data here"
    assert _tensorflow_internal_imports(_tree("tpu_compat._tf_internals"))
    graph = _graph(in_functions=False)
    assert "tpu_compat._tf_internals" in graph["tpu_compat.runtime.emulated"]
    assert "tpu_compat._tf_internals" in graph["tpu_compat.estimator.estimator"]


@pytest.mark.parametrize("module", sorted(TF_INTERNALS_AS_DATA))
def test_each_module_of_tensorflow_names_as_data_holds_some(module):
    # An exemption whose module no longer names a tensorflow.python module goes.
    assert _tensorflow_internal_names(_tree(module))


def test_each_tensorflow_internal_says_why():
    # Each import (or group of adjacent imports) under a comment saying what
    # tpu_compat takes from it and which public API is missing.
    with open(MODULES["tpu_compat._tf_internals"], encoding="utf-8") as source:
        lines = source.read().splitlines()
    bare = []
    for node in _tree("tpu_compat._tf_internals").body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        above = node.lineno - 2
        while above >= 0 and lines[above].startswith("from "):
            above -= 1
        if not lines[above].startswith("# ") or lines[above].startswith("# --"):
            bare.append(lines[node.lineno - 1])
    assert bare == []


def test_import_tpu_compat_does_not_reach_tf_internals():
    graph = _graph(in_functions=False)
    reached, todo = set(), ["tpu_compat"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph[module])
    assert "tpu_compat._tf_internals" not in reached


@pytest.mark.parametrize("module", sorted(
    SHARED_INTERNALS | {target for _, target in PRIVATE_PAIRS}
    | {module for circle in FUNCTION_LEVEL_CIRCLES for module in circle}))
def test_each_exception_is_documented(module):
    with open(ARCHITECTURE, encoding="utf-8") as doc:
        text = doc.read()
    section = text[text.index("## Imports between modules"):]
    assert module.removeprefix("tpu_compat.").replace(".", "/") in section


# -- issue 21's counts: one import interceptor, one call-site decider --------------------
# (one TF_CONFIG reader: tests/test_pod_package.py; one definition of each setting's
# default: tests/test_settings.py)

def _import_interceptions(tree):
    """Lines that replace ``builtins.__import__`` or change ``sys.meta_path``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                target = target.value if isinstance(target, ast.Subscript) else target
                if isinstance(target, ast.Attribute) and target.attr in ("__import__", "meta_path"):
                    found.append(node.lineno)
        elif isinstance(node, ast.Call):
            called = getattr(node.func, "attr", getattr(node.func, "id", None))
            names = {arg.value for arg in node.args if isinstance(arg, ast.Constant)}
            owner = getattr(node.func, "value", None)
            if called in ("setattr", "replace") and names & {"__import__", "meta_path"}:
                found.append(node.lineno)  # changes.replace(builtins, "__import__", ...)
            elif (isinstance(owner, ast.Attribute) and owner.attr == "meta_path"
                  and called in ("insert", "append", "extend")):
                found.append(node.lineno)
    return sorted(found)


# What walks the stack or judges a frame by its code: only _callsite. The runner
# collects a traceback's frames (traceback.walk_tb) and _callsite decides which
# it shows; deprecation passes the frame _callsite chose to warnings.warn_explicit.
_FRAME_WALKS = {"f_back", "tb_next"}
_FRAME_FUNCTIONS = {"stack", "currentframe", "getouterframes", "getinnerframes",
                    "extract_stack", "walk_stack", "format_stack", "print_stack"}
_FRAME_FACTS = {"co_filename", "f_globals"}
_FRAME_FACT_READERS = {"tpu_compat._callsite", "tpu_compat.deprecation"}


def _call_site_decisions(tree, reads_facts):
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (
                node.attr in _FRAME_WALKS or (node.attr in _FRAME_FACTS and not reads_facts)):
            found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name)
              and node.func.value.id in ("inspect", "traceback")
              and node.func.attr in _FRAME_FUNCTIONS):
            found.append(node.lineno)
    return sorted(set(found))


def test_the_count_checks_see_what_they_count():
    tree = ast.parse("import builtins, sys, inspect, traceback\n"
                     "builtins.__import__ = wrapper\n"
                     "setattr(builtins, '__import__', wrapper)\n"
                     "changes.replace(builtins, '__import__', wrapper)\n"
                     "sys.meta_path.insert(0, finder)\n"
                     "sys.meta_path[:] = []\n"
                     "caller = frame.f_back\n"
                     "here = frame.f_code.co_filename\n"
                     "frames = inspect.stack()\n"
                     "summary = traceback.extract_stack()\n"
                     "frames = list(traceback.walk_tb(tb))\n")
    assert _import_interceptions(tree) == [2, 3, 4, 5, 6]
    assert _call_site_decisions(tree, reads_facts=False) == [7, 8, 9, 10]
    assert _call_site_decisions(tree, reads_facts=True) == [7, 9, 10]


def test_one_import_interceptor():
    """Only the import router wraps ``__import__`` or adds a meta-path finder."""
    found = {module for module in MODULES if _import_interceptions(_tree(module))}
    assert found == {"tpu_compat.patching.import_router"}


def test_one_call_site_decider():
    """Only _callsite walks frames and judges them by their code (issue 21 found five)."""
    found = {module: lines for module in sorted(MODULES)
             if (lines := _call_site_decisions(_tree(module), module in _FRAME_FACT_READERS))}
    assert set(found) == {"tpu_compat._callsite"}, found


# -- the layers of runtime/, keras/ and fidelity/ (docs/architecture.md, "Layers") ----------

MAX_RUNTIME_MODULES = 20


def _in_package(package):
    return {module for module in MODULES
            if module == package or module.startswith(package + ".")}


def _arrows(from_package, to_package, in_functions):
    targets = _in_package(to_package)
    return sorted(f"{module}:{line} imports {target}"
                  for module in _in_package(from_package)
                  for target, _, line in _imports(module, in_functions)
                  if target in targets or target.rpartition(".")[0] in targets)


def test_runtime_keeps_the_strategy_core_only():
    # keras/ and fidelity/ took their families out of runtime/ (issue #32).
    runtime = _in_package("tpu_compat.runtime")
    assert len(runtime) <= MAX_RUNTIME_MODULES, sorted(runtime)
    assert [m for m in runtime if m.rpartition(".")[2].startswith(("keras", "numerics", "fidelity"))] == []
    assert _is_package("tpu_compat.keras") and _is_package("tpu_compat.fidelity")


def test_fidelity_sits_below_runtime_and_keras():
    # Function-level imports count too: the emulated TPU hands fidelity/ what it
    # needs (numerics.install(changes, EmulatedTPUExtended)), never the reverse.
    assert _arrows("tpu_compat.fidelity", "tpu_compat.runtime", in_functions=True) == []
    assert _arrows("tpu_compat.fidelity", "tpu_compat.keras", in_functions=True) == []


def test_runtime_does_not_import_keras():
    assert _arrows("tpu_compat.runtime", "tpu_compat.keras", in_functions=False) == []


def test_the_layer_check_sees_an_arrow():
    assert _arrows("tpu_compat.keras", "tpu_compat.runtime", in_functions=False)
    assert _arrows("tpu_compat.runtime", "tpu_compat.fidelity", in_functions=False)


def test_the_architecture_page_lists_the_new_packages():
    with open(ARCHITECTURE, encoding="utf-8") as page:
        text = page.read()
    for module in sorted(_in_package("tpu_compat.keras") | _in_package("tpu_compat.fidelity")
                         | _in_package("tpu_compat.runtime") | {"tpu_compat.pytest_plugin"}):
        name = MODULES[module].rpartition(os.sep)[2]
        if name != "__init__.py":
            assert name in text, f"docs/architecture.md does not list {module}"


def test_the_architecture_page_names_every_package_and_top_level_module():
    # Its "Layers" section: the picture of who imports whom names every subpackage;
    # the listing below it names every subpackage and every top-level module.
    with open(ARCHITECTURE, encoding="utf-8") as page:
        text = page.read()
    start = text.index("## Layers")
    section = text[start:text.index("\n## ", start + 1)]
    picture = section.split("```")[1]
    packages = sorted(module.split(".")[1] for module in MODULES
                      if module.count(".") == 1 and _is_package(module))
    top_level = sorted(os.path.basename(MODULES[module]) for module in MODULES
                       if module.count(".") == 1 and not _is_package(module))
    assert len(packages) >= 14 and "cli.py" in top_level
    assert [name for name in packages if f"{name}/" not in picture] == []
    assert [name for name in packages if f"{name}/" not in section] == []
    assert [name for name in top_level if name not in section] == []


_ADAPTERS = ("keras", "estimator", "lowlevel", "contrib", "compat", "distribute")


@pytest.mark.parametrize("lower, above", [
    ("runtime", _ADAPTERS + ("patching",)),
    ("pod", _ADAPTERS + ("patching", "runtime", "fidelity")),
    ("fidelity", _ADAPTERS + ("patching", "runtime", "pod")),
])
def test_the_architecture_pages_picture_holds(lower, above):
    # docs/architecture.md's picture of who imports whom, function-level imports and
    # patch rows' payloads counted: no arrow from a lower package up.
    assert [arrow for package in above
            for arrow in _arrows(f"tpu_compat.{lower}", f"tpu_compat.{package}",
                                 in_functions=True)] == []
