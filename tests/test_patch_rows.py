"""Patch rows name their targets, and two rows on one target are ordered (issue #32).

The registry's rows (tpu_compat/patching/registry.py) and Keras's inner rows
(tpu_compat/keras/routes.py) share one shape and one check
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


def _row(name, targets, after=None):
    return rows.Patch(name, lambda _: None, "a row only this test has", targets=targets,
                      after=after or {})


def test_every_row_names_its_targets():
    with pytest.raises(ValueError, match="patch 'bare': targets must be a non-empty tuple"):
        rows.Patch("bare", lambda _: None, "changes something")
    with pytest.raises(ValueError, match="targets must be"):
        _row("a string", "gen_nn_ops:conv2d")  # a tuple of names, not one string
    assert all(row.targets for row in registry.PATCHES)


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
    import dataclasses, json, sys
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

    def watched(row, prefix=""):
        def apply(context):
            current.append(prefix + row.name)
            try:
                row.apply(context)
            finally:
                current.pop()
        return dataclasses.replace(row, apply=apply)

    registry.PATCHES = tuple(watched(row) for row in registry.PATCHES)
    tables = {"": registry.PATCHES}
    from tpu_compat.keras import routes
    routes.TF_KERAS_PATCHES = tuple(watched(row, "keras/") for row in routes.TF_KERAS_PATCHES)
    tables["keras/"] = routes.TF_KERAS_PATCHES
    tables["keras 3/"] = routes.KERAS3_PATCHES
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
