"""``replace_symbol``: the legacy dotted name -> ``<to>``, at a constructor call or
in the ``from ... import`` that binds it."""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import _rules, imports
from tpu_compat.migrate.rewrites import tf2_strategy
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_REPLACE_SYMBOL

# `tensorflow.distribute` is a real package directory in TF 2.x that does not
# hold the API names, so `from tensorflow.distribute import TPUStrategy`
# fails; the API module `tensorflow.compat.v2.distribute` always works.
_IMPORTABLE_ROOT = "tensorflow.compat.v2"


def plan(planner, finding, rewrite):
    site = finding.site
    target = imports.module_path(rewrite.to)
    if site.kind == "import":
        return _plan_import(planner, finding, target)
    strategy_class = bool(_rules.STRATEGY_CLASS.fullmatch(site.resolved.rsplit(".", 1)[-1]))
    if site.call is None and strategy_class:
        # The experimental and stable strategy classes are siblings, not
        # subclasses: renaming an isinstance check changes what it accepts.
        # Other names (constants, functions, modules, same-class aliases such
        # as tf.contrib.data.AUTOTUNE) are the same object under the new name.
        return "a reference, not a construction (isinstance checks and aliases need review)"
    if strategy_class and site.call is not None and tf2_strategy.steps_only(planner, finding):
        # `steps_per_run` says this is the TF 1.15 class (tpu_strategy_args):
        # rewritten as the compat.v1 class is, where its uses allow.
        return tf2_strategy.plan_tf1_class(planner, finding)
    if planner.blocked(site.call):
        return "other arguments of this call need a manual change first"
    root = site.written.split(".", 1)[0]
    visible = dict(site.visible)
    if site.root_path:
        # The name the code already used (even the conventional `tf`
        # without an import) can spell the new path: no new name.
        visible[root] = site.root_path
    # A TF 2 strategy class is not spelled through compat.v1's `tf.compat.v2`:
    # a compat.v1 program is a graph-mode one, where it needs a person.
    spelled = imports.spell(target, visible, prefer=(root,), through_v2=not strategy_class)
    if spelled is None:
        return f"cannot name {imports.table_name(target)} from this module's imports"
    planner.edit(finding, Edit(site.node, cst.Attribute,
                               functools.partial(_replace_chain, spelled), KIND))
    return None


def _plan_import(planner, finding, target):
    site = finding.site
    if not isinstance(site.import_statement, cst.ImportFrom):
        return f"`import` of a legacy module: import {imports.table_name(target)}'s module instead"
    if not site.single_name:
        return "the import brings in other names too; split it by hand"
    for use, call in site.uses:
        if use != "call":
            return "the imported class is used other than as a constructor call"
        if planner.blocked(call):
            return "a call of the imported class needs a manual change first"
    variants = [p for p in imports.equivalent_paths(target)
                if p.startswith(_IMPORTABLE_ROOT + ".")]
    if not variants or site.resolved.rsplit(".", 1)[-1] != variants[0].rsplit(".", 1)[-1]:
        return "cannot rewrite this import"
    module = variants[0].rsplit(".", 1)[0]
    planner.edit(finding, Edit(site.import_statement, cst.ImportFrom,
                               functools.partial(_import_from, module), KIND))
    return None


def _replace_chain(dotted, original, updated):
    del original
    return cst.parse_expression(dotted).with_changes(lpar=updated.lpar, rpar=updated.rpar)


def _import_from(module, original, updated):
    del original
    return updated.with_changes(module=cst.parse_expression(module), relative=())
