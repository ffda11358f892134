"""``add_keyword``: ``f(a, b)`` -> ``f(a, b, <to>=<value>)`` (``reduce``'s ``axis=None``)."""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_ADD_KEYWORD


def plan(planner, finding, rewrite):
    if finding.site.call is None:
        return "not a call"
    planner.edit(finding, Edit(finding.site.call, cst.Call,
                               functools.partial(_add, rewrite.to, rewrite.value), KIND))
    return None


def _add(name, value, original, updated):
    del original
    return updated.with_changes(args=_append_keyword(updated.args, name, value))


def _append_keyword(args, name, value):
    """``f(a, b)`` -> ``f(a, b, name=value)``, keeping a trailing comma and
    whatever whitespace or comment followed the last argument."""
    args = list(args)
    last = args[-1]
    new_arg = cst.Arg(
        value=cst.parse_expression(value), keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace("")),
        comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                 whitespace_after_arg=cst.SimpleWhitespace(""))
    return args + [new_arg]
