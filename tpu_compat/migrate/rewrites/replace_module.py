"""``replace_module``: an import statement of a legacy package names its
successor (``from tensorflow.python.keras import layers`` -> ``from tf_keras
import layers``, ``import tensorflow.python.keras as K`` -> ``import tf_keras as
K``), for the package itself and its public modules only."""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_REPLACE_MODULE


def _new_module(record, rewrite, module):
    """``module`` under the successor, or None when it is not one the rewrite covers."""
    public = set(rewrite.value.split())
    for package in record.hook.targets:
        if module == package:
            return rewrite.to
        rest = module[len(package) + 1:] if module.startswith(package + ".") else None
        if rest in public:
            return f"{rewrite.to}.{rest}"
    return None


def plan(planner, finding, rewrite):
    site = finding.site
    if site.kind != "import":
        return "a use of the legacy package's dotted path; import its successor instead"
    statement = site.import_statement
    if isinstance(statement, cst.ImportFrom):
        module = _new_module(finding.record, rewrite, site.written)
        if module is None or not _public_names(rewrite, module, statement):
            return f"not a public module of {rewrite.to}; import its successor by hand"
        planner.edit(finding, Edit(statement, cst.ImportFrom,
                                   functools.partial(_from_module, module), KIND))
        return None
    alias = site.node
    module = _new_module(finding.record, rewrite, site.resolved)
    if module is None or alias.asname is None:
        # `import tensorflow.python.keras.layers` binds `tensorflow`: its uses
        # spell the old path and would break.
        return f"a plain import of the legacy path; use `import {rewrite.to}... as name`"
    planner.edit(finding, Edit(alias, cst.ImportAlias,
                               functools.partial(_alias_module, module), KIND))
    return None


def _public_names(rewrite, module, statement):
    """Whether every name imported from the package itself is one of its
    public modules or a class (``from ... import layers, Model``), never a
    private module (``engine``)."""
    if module != rewrite.to:
        return True
    if isinstance(statement.names, cst.ImportStar):
        return False
    public = set(rewrite.value.split())
    names = [alias.name.value for alias in statement.names
             if isinstance(alias.name, cst.Name)]
    return len(names) == len(statement.names) and all(
        name in public or name[:1].isupper() for name in names)


def _from_module(module, original, updated):
    del original
    return updated.with_changes(module=cst.parse_expression(module), relative=())


def _alias_module(module, original, updated):
    del original
    return updated.with_changes(name=cst.parse_expression(module))
