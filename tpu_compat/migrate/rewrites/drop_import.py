"""``drop_import``: ``from tensorflow.contrib import cluster_resolver as ccr``
goes once every use of ``ccr`` was rewritten to its TF 2 name
(``ccr.TPUClusterResolver(...)`` -> ``tf.distribute.cluster_resolver.TPUClusterResolver(...)``).

TF 2 has no ``tensorflow.contrib``, so the import itself would fail; it is
removed only when nothing in the module needs what it bound: every use is the
root of a dotted name another rewrite replaces, and the file is written only
if all of those are (``Edit.requires``). Planned after every other finding.
"""

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate._removal import REMOVE
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "dropped_last", "plan"]

KIND = legacy_api.REWRITE_DROP_IMPORT


def plan(planner, finding, rewrite):
    del rewrite
    site = finding.site
    if site.kind != "import":
        return "a use of the legacy package's dotted path; use the TF 2 name of what it names"
    alias, statement, line = site.node, site.import_statement, site.statement
    if isinstance(statement, cst.Import) and alias.asname is None:
        # `import tensorflow.contrib.tpu` binds `tensorflow`, which other code uses.
        return "a plain import binds `tensorflow`; remove it once nothing uses the contrib path"
    if not site.single_name:
        return "the import brings in other names too; split it by hand"
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return "the import shares its line with other statements"
    needed = []
    for name in site.use_names:
        edit = _edit_rooted_at(planner, name)
        if edit is None:
            return ("a name it binds is used where no TF 2 name replaces it "
                    "(see the TODOs of those uses)")
        needed.append(edit.node)
    planner.edit(finding, Edit(line, cst.SimpleStatementLine, _remove, KIND,
                               requires=tuple(needed)))
    return None


def dropped_last(finding):
    """Sort key: this kind's imports are planned after every other finding."""
    rewrite = finding.record.rewrite
    return bool(finding.site is not None and finding.site.kind == "import"
                and rewrite is not None and rewrite.kind == KIND)


def _edit_rooted_at(planner, name):
    """The planned edit replacing the dotted name whose root is the Name node
    ``name`` (``ccr`` of ``ccr.TPUClusterResolver``), or None."""
    for edit in planner.edits.values():
        node = edit.node
        if isinstance(node, cst.Attribute):
            while isinstance(node, cst.Attribute):
                node = node.value
            if node is name:
                return edit
    return None


def _remove(original, updated):
    del original, updated
    return REMOVE
