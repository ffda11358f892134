"""``rename_keyword``: ``f(old=x)`` -> ``f(<to>=x)`` (``device_assignment=`` ->
``experimental_device_assignment=``), only together with the rewrite of the
constructor it is passed to."""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_RENAME_KEYWORD


def plan(planner, finding, rewrite):
    site = finding.site
    requires = None
    if site.depends_on is not None:
        edit = planner.edit_of(site.depends_on)
        if edit is None:
            return "the constructor it is passed to is not rewritten"
        requires = edit.node
    planner.edit(finding, Edit(site.node, cst.Arg, functools.partial(_rename, rewrite.to),
                               KIND, requires=requires))
    return None


def _rename(new, original, updated):
    del original
    return updated.with_changes(keyword=cst.Name(new))
