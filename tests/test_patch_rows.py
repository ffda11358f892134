"""Patch rows name their payload and their targets, and two rows on one target are
ordered (issue #32).

The registry's rows (tpu_compat/patching/registry.py) and Keras's inner rows
(tpu_compat/keras/routes.py) share one shape, one installer and one check
(tpu_compat/patching/rows.py). One fresh process installs with a recording
``Changes`` and serves the claims that need TensorFlow: every attribute a row
replaces is one of its declared targets, and every ``sys.modules`` alias of the
router's table resolves while installed and is gone after ``uninstall()``.
"""

import ast
import json
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

from conftest import REPO_ROOT, subprocess_env
from tpu_compat.patching import changes as changes_lib
from tpu_compat.patching import import_router, registry, rows


_NOTHING = rows.Call("os:getpid", gets=())  # a payload that changes nothing


def _row(name, targets, after=None):
    return rows.Patch(name, _NOTHING, "a row only this test has", targets=targets,
                      after=after or {})


def test_every_row_names_its_targets():
    with pytest.raises(ValueError, match="patch 'bare': targets must be a non-empty tuple"):
        rows.Patch("bare", _NOTHING, "changes something")
    with pytest.raises(ValueError, match="targets must be"):
        _row("a string", "gen_nn_ops:conv2d")  # a tuple of names, not one string
    assert all(row.targets for row in registry.PATCHES)


# -- payloads: what a row installs, as data; one installer, one undo ------------------

class _Base:
    def method(self):
        return "original"


class _Owner(_Base):  # inherits method: Wrap(how="add") sets it here, undo deletes it
    pass


def _suffixed(original, suffix):
    return lambda self: original(self) + suffix


def test_one_installer_applies_a_wrap_and_a_call_and_the_changes_undo_them():
    here = sys.modules[__name__]
    _UNDONE.clear()
    module = __name__
    wrap = rows.Patch("wrap", rows.Wrap(f"{module}:_Owner", "method", f"{module}:_suffixed",
                                        args=(f"{module}:_SUFFIX",), how="add"), "a test row")
    assert wrap.targets == (f"{module}:_Owner.method",)  # a Wrap row's target: its attribute
    call = rows.Patch("call", rows.Call(f"{module}:_reverted_by_undo", gets=(),
                                        args=(rows.Ref(f"{module}:_SUFFIX"), "literal"),
                                        undo="returned"), "a test row", targets=("x:y",))
    changes = changes_lib.Changes()
    installation = rows.Installation(changes)
    for row in (wrap, call):
        row.apply(installation)
    assert here._Owner().method() == "original!" and "method" in vars(here._Owner)
    changes.undo()
    assert _UNDONE == [("!", "literal")]
    assert here._Owner().method() == "original" and "method" not in vars(here._Owner)


_SUFFIX = "!"
_UNDONE = []


def _reverted_by_undo(suffix, literal):
    return lambda: _UNDONE.append((suffix, literal))


def test_a_payload_that_is_not_data_is_refused():
    with pytest.raises(ValueError, match="payload must be a Call or a Wrap"):
        rows.Patch("function", lambda installation: None, "x", targets=("m:x",))
    with pytest.raises(ValueError, match=r"gets names parts of \('changes', 'router', "
                                         r"'policy'\) \(got \('session',\)\)"):
        rows.Call("m:f", gets=("session",))
    with pytest.raises(ValueError, match="how is one of"):
        rows.Wrap("m:C", "f", "m:g", how="swap")


def test_only_rows_needing_just_the_changes_stand_alone():
    # apply_alone reads what a row needs from its payload: the router, the policy.
    needs_more = {row.name for row in registry.PATCHES
                  if row.option or row.each_call or set(row.gets) - {"changes"}}
    assert {"keras", "import redirects", "estimator", "tf1", "warning policy"} <= needs_more
    for name in sorted(needs_more):
        with pytest.raises(ValueError, match=f"patch {name!r} cannot be applied outside"):
            registry.apply_alone(name, changes_lib.Changes())
    with pytest.raises(ValueError, match="'nope' is not a row of the registry"):
        registry.apply_alone("nope", changes_lib.Changes())


def _defines(module, name):
    tree = ast.parse((pathlib.Path(REPO_ROOT) / (module.replace(".", "/") + ".py"))
                     .read_text(encoding="utf-8"))
    return any(getattr(node, "name", None) == name
               or (isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == name for t in node.targets))
               for node in tree.body)


@pytest.mark.requires_tf  # keras/routes imports keras/compile, which imports TensorFlow
def test_every_payload_names_a_function_tpu_compat_defines():
    # Read from the source: no TensorFlow. The tables name; the installer imports.
    from tpu_compat.keras import routes  # pylint: disable=import-outside-toplevel
    named = []
    for row in registry.PATCHES + routes.TF_KERAS_PATCHES + routes.KERAS3_PATCHES:
        payload = row.payload
        named.append(payload.function if isinstance(payload, rows.Call) else payload.wrapper)
        named += [arg.name for arg in getattr(payload, "args", ()) if isinstance(arg, rows.Ref)]
    assert len(named) >= 30
    missing = [name for name in named if not name.startswith("tpu_compat.")
               or not _defines(*name.split(":"))]
    assert missing == []


def test_two_unordered_rows_on_one_target_are_refused_naming_both_and_the_target():
    # What broke tests on AMX machines: two rows wrapping gen_nn_ops.conv2d, no order.
    guard = _row("guard", ("gen_nn_ops:conv2d", "gen_nn_ops:conv3d"))
    between = _row("between", ("gen_math_ops:mat_mul",))
    rounding = _row("rounding", ("gen_math_ops:einsum", "gen_nn_ops:conv2d"))
    with pytest.raises(ValueError, match=r"patches 'guard' and 'rounding' both replace "
                                         r"gen_nn_ops:conv2d; declare their order "
                                         r"\('rounding' after=\{'guard': why\}\)"):
        rows.check_order([guard, between, rounding])
    ordered = _row("rounding", rounding.targets, after={"guard": "rounding wraps the guard"})
    rows.check_order([guard, between, ordered])
    with pytest.raises(ValueError, match="'rounding' must come after 'guard'"):
        rows.check_order([ordered, guard])


def test_a_class_and_its_member_are_one_target():
    whole = _row("whole class", ("session:BaseSession",))
    member = _row("its init", ("session:BaseSession.__init__",))
    with pytest.raises(ValueError, match="'whole class' and 'its init' both replace "
                                         "session:BaseSession and session:BaseSession.__init__"):
        rows.check_order([whole, member])
    package = _row("a package", ("tf_keras",))
    with pytest.raises(ValueError, match="both replace tf_keras and tf_keras.src"):
        rows.check_order([package, _row("in it", ("tf_keras.src.engine.training:Model.fit",))])
    # a name that only begins like another is another target
    rows.check_order([_row("conv2d", ("gen_nn_ops:conv2d",)),
                      _row("its gradient", ("gen_nn_ops:conv2d_backprop_input",))])


def test_target_names_fold_tensorflows_module_copies():
    assert rows.module_name("tensorflow.python.ops.gen_nn_ops") == "gen_nn_ops"
    assert rows.module_name("tensorflow._api.v2.compat.v1.config.experimental") == \
        "tf.config.experimental"
    assert rows.module_name("tensorflow.compat.v2") == "tf"
    assert rows.module_name("tensorflow") == "tf"
    assert rows.module_name("tf_keras.api._v2.keras.experimental") == "tf_keras.experimental"
    assert rows.module_name("tf_keras.src.engine.training") == "tf_keras.src.engine.training"


def test_the_tensorflow_hooks_rows_targets_are_the_legacy_tables():
    from tpu_compat.runtime import hooks  # pylint: disable=import-outside-toplevel
    table = {f"{rows.module_name(module)}:{path}" for module, members in hooks.targets().items()
             if module.startswith("tensorflow.") for path in members}
    declared = {row.name: row for row in registry.PATCHES}["tensorflow hooks"].targets
    assert set(declared) == table


# -- sys.modules aliases: one table, in the import router ------------------------------

# Who else writes sys.modules, and why it is not install()'s alias.
_OTHER_SYS_MODULES_WRITERS = {
    "runner.py": "the program's own module as __main__, as python does",
}


def _sys_modules_writes(tree):
    """Lines that set, delete or pop a ``sys.modules`` entry."""
    def is_sys_modules(node):
        return (isinstance(node, ast.Attribute) and node.attr == "modules"
                and isinstance(node.value, ast.Name) and node.value.id == "sys")
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                   else [node.target] if isinstance(node, ast.AugAssign) else [])
        if any(isinstance(t, ast.Subscript) and is_sys_modules(t.value) for t in targets):
            found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and is_sys_modules(node.func.value)
              and node.func.attr in ("__setitem__", "__delitem__", "pop", "setdefault",
                                     "update", "popitem", "clear")):
            found.append(node.lineno)
    return found


def test_only_the_import_router_puts_aliases_in_sys_modules():
    package = pathlib.Path(REPO_ROOT) / "tpu_compat"
    writers = {}
    for path in sorted(package.rglob("*.py")):
        lines = _sys_modules_writes(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            writers[str(path.relative_to(package))] = lines
    assert set(writers) == {"patching/import_router.py"} | set(_OTHER_SYS_MODULES_WRITERS)
    # the checker sees each kind of write
    source = ("import sys\nsys.modules['a'] = m\ndel sys.modules['a']\n"
              "sys.modules.pop('a', None)\nsys.modules.__setitem__('a', m)\nsys.modules.get('a')\n")
    assert _sys_modules_writes(ast.parse(source)) == [2, 3, 4, 5]


def test_each_alias_is_made_by_a_row_and_says_why():
    names = [row.name for row in import_router.ALIASES]
    assert len(names) == len(set(names)) == 13
    registry_rows = {row.name for row in registry.PATCHES}
    for row in import_router.ALIASES:
        assert row.why
        assert row.made_by in registry_rows | {"era names", "optimizer base"}  # keras/routes.py
    assert [row.name for row in import_router.aliases("optimizer base")] == [
        "tensorflow.keras.optimizers"]
    with pytest.raises(ValueError, match="'x' is not a row of import_router.ALIASES"):
        router = import_router.ImportRouter(changes_lib.Changes(), threading.RLock())
        router.alias(import_router.Alias("x", "os", "y", "z"))


# -- one installation, recorded --------------------------------------------------------

_RECORD = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tf_keras
    from tpu_compat.patching import changes as changes_lib, import_router, registry, rows
    current = []
    replaced = {}

    def recording(method):
        def record(self, owner, attribute, new):
            if current:
                replaced.setdefault(current[-1], []).append(rows.target_name(owner, attribute))
            return method(self, owner, attribute, new)
        return record

    changes_lib.Changes.replace = recording(changes_lib.Changes.replace)
    changes_lib.Changes.add = recording(changes_lib.Changes.add)

    from tpu_compat.keras import routes
    tables = {"": registry.PATCHES, "keras/": routes.TF_KERAS_PATCHES,
              "keras 3/": routes.KERAS3_PATCHES}
    install_row = rows.Patch.apply  # the one installer every table's rows go through

    def watched(row, installation):
        prefix = next(prefix for prefix, table in tables.items()
                      if any(row is member for member in table))
        current.append(prefix + row.name)
        try:
            install_row(row, installation)
        finally:
            current.pop()

    rows.Patch.apply = watched
    registry.install()
    aliases = {alias.name: sys.modules.get(alias.name) is import_router.alias_target(alias)
               for alias in import_router.ALIASES}
    # an import statement gets it too
    from tensorflow.compat.v1.estimator import tpu as estimator_tpu
    import tensorflow.keras.mixed_precision.experimental as mixed_precision_experimental
    assert estimator_tpu is sys.modules["tpu_compat.estimator.tpu"]
    assert mixed_precision_experimental.__name__ == "tf_keras.mixed_precision.experimental"
    registry.uninstall()
    gone = {alias.name: alias.name not in sys.modules for alias in import_router.ALIASES}
    declared = {prefix + row.name: list(row.targets)
                for prefix, table in tables.items() for row in table}
    print("RECORD " + json.dumps({"replaced": replaced, "declared": declared,
                                  "aliases": aliases, "gone": gone}))
""")


@pytest.fixture(scope="module")
def recorded():
    # oneDNN on and numerics tpu: the empty-batch guard installs beside the rounding.
    result = subprocess.run(
        [sys.executable, "-c", _RECORD], capture_output=True, text=True, timeout=300,
        cwd=REPO_ROOT, env=subprocess_env(TF_ENABLE_ONEDNN_OPTS=1, TF_USE_LEGACY_KERAS=1, TPU_COMPAT_NUMERICS="tpu",
                                          TPU_COMPAT_NUM_REPLICAS=2))
    line = next((line for line in result.stdout.splitlines() if line.startswith("RECORD ")),
                None)
    assert line is not None, result.stderr[-5000:]
    return json.loads(line[len("RECORD "):])


@pytest.mark.requires_tf
def test_every_attribute_a_row_replaces_is_one_of_its_targets(recorded):
    undeclared = {name: sorted({target for target in replaced
                                if not any(rows.overlap(declared, target)
                                           for declared in recorded["declared"][name])})
                  for name, replaced in recorded["replaced"].items()}
    assert {name: found for name, found in undeclared.items() if found} == {}
    # the recording saw the rows it is about
    assert {"API routes", "numerics", "empty batches", "tensorflow hooks", "keras/compile",
            "keras/tf_keras hooks", "keras/era names"} <= set(recorded["replaced"])


@pytest.mark.requires_tf
def test_every_alias_resolves_while_installed_and_is_gone_after_uninstall(recorded):
    names = [row.name for row in import_router.ALIASES]
    assert recorded["aliases"] == {name: True for name in names}
    assert recorded["gone"] == {name: True for name in names}


@pytest.mark.requires_tf
def test_each_alias_is_one_of_its_rows_targets(recorded):
    declared = recorded["declared"]
    for row in import_router.ALIASES:
        maker = row.made_by if row.made_by in declared else f"keras/{row.made_by}"
        assert any(rows.overlap(target, f"sys.modules:{row.name}")
                   for target in declared[maker]), (row.name, maker)


@pytest.mark.requires_tf
def test_keras_inner_rows_targets_are_below_the_keras_rows(recorded):
    # Keras's inner tables (keras/routes.py) are walked by the registry's "keras" row:
    # what they replace is what that row declares it replaces.
    outer = recorded["declared"]["keras"]
    inner = {name: targets for name, targets in recorded["declared"].items()
             if name.startswith(("keras/", "keras 3/"))}
    assert len(inner) >= 12
    assert {name: [target for target in targets
                   if not any(rows.overlap(claim, target) for claim in outer)]
            for name, targets in inner.items()} == {name: [] for name in inner}
