"""``replace_call``: ``strategy.old(x)`` -> ``<to>(x)``
(``experimental_make_numpy_dataset(x)`` -> ``tf.data.Dataset.from_tensor_slices(x)``)."""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import imports
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_REPLACE_CALL


def plan(planner, finding, rewrite):
    site = finding.site
    one_argument = (site.positional, site.keywords) in (
        (1, ()), (0, (rewrite.keep_argument,)))
    if site.call is None or site.starred or not one_argument:
        return "only a call with exactly one argument is rewritten"
    if not site.receiver_pure:
        return "the receiver is an expression whose evaluation would be dropped"
    target = imports.module_path(rewrite.to)
    spelled = imports.spell(target, site.visible)
    if spelled is None:
        return (f"no TensorFlow 2 module is imported here to name "
                f"{imports.table_name(target)}")
    planner.edit(finding, Edit(site.call, cst.Call, functools.partial(_replace, spelled), KIND))
    return None


def _replace(callee, original, updated):
    del original
    # The new callee takes the one argument positionally.
    args = [arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
            for arg in updated.args]
    return updated.with_changes(func=cst.parse_expression(callee), args=args)
