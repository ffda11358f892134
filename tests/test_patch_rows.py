"""Patch rows name their targets, and two rows on one target are ordered (issue #32).

The registry's rows (tpu_compat/patching/registry.py) and Keras's inner rows
(tpu_compat/keras/routes.py) share one shape and one check
(tpu_compat/patching/rows.py). One fresh process installs with a recording
``Changes`` and serves the claims that need TensorFlow: every attribute a row
replaces is one of its declared targets, and every ``sys.modules`` alias of the
router's table resolves while installed and is gone after ``uninstall()``.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO_ROOT, subprocess_env
from tpu_compat.patching import registry, rows


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
               for alias in getattr(import_router, "ALIASES", ())}
    registry.uninstall()
    gone = {alias.name: alias.name not in sys.modules
            for alias in getattr(import_router, "ALIASES", ())}
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
