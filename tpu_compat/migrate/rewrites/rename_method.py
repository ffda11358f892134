"""``rename_method``: ``strategy.old(...)`` -> ``strategy.<to>(...)``.

TF 1.15-2.3 TPU strategies traced a plain Python ``fn`` given to
``experimental_run_v2`` themselves; TF 2.21's ``run`` raises "does not support
pure eager execution" unless the call is already inside a tf.function. So
where the call runs eagerly, the rename also wraps ``fn`` in ``tf.function``,
or leaves a TODO saying why it cannot (see docs/migration.md).
"""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import imports
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_RENAME_METHOD

_TF_FUNCTION = "tensorflow.function"
_EAGER_RUN = ("TF 2.21's TPUStrategy.run rejects a plain Python function in eager mode: "
              "{advice}")


def plan(planner, finding, rewrite):
    site = finding.site
    rename = functools.partial(_rename, rewrite.to)
    if site.run_call is not None:
        wrap = _run_fn_wrapping(site)
        if isinstance(wrap, tuple):
            return wrap
        if wrap:
            # The call's func is site.node: the Call is left after its func.
            also = Edit(site.call, cst.Call, functools.partial(_wrap, site.run_call.fn, wrap),
                        KIND)
            planner.edit(finding, Edit(site.node, cst.Attribute, rename, KIND, also=also))
            return None
    planner.edit(finding, Edit(site.node, cst.Attribute, rename, KIND))
    return None


def _run_fn_wrapping(site):
    """How ``experimental_run_v2(fn)`` -> ``run(...)`` stays valid in TF 2.21.

    Returns None (a plain rename is right), the source of the ``tf.function``
    to wrap ``fn`` in, or ``(detail, note)`` for a TODO.
    """
    run = site.run_call
    if (run.fn is None or run.fn_kind != "plain" or run.receiver_tpu is False
            or run.context in ("traced", "graph")):
        return None
    fn_text = cst.Module([]).code_for_node(run.fn.value)
    if run.context == "unknown":
        note = _EAGER_RUN.format(advice=f"unless this function runs inside a tf.function, "
                                        f"pass tf.function({fn_text})")
        return ("cannot tell whether this runs inside a tf.function", note)
    if run.in_loop:
        note = _EAGER_RUN.format(advice=f"create tf.function({fn_text}) once, before the "
                                        f"loop, and pass that")
        return ("a plain function run eagerly in a loop", note)
    spelled = imports.spell(_TF_FUNCTION, site.visible)
    if spelled is None:
        note = _EAGER_RUN.format(advice=f"pass tf.function({fn_text})")
        return ("no TensorFlow module is imported here to name tf.function", note)
    return spelled


def _rename(new, original, updated):
    del original
    return updated.with_changes(attr=cst.Name(new))


def _wrap(fn_arg, wrapper, original, updated):
    """The call with its ``fn`` argument passed through ``wrapper(...)``."""
    index = next(i for i, arg in enumerate(original.args) if arg is fn_arg)
    wrapped = updated.args[index]
    args = [arg.with_changes(value=cst.Call(func=cst.parse_expression(wrapper),
                                            args=[cst.Arg(arg.value)]))
            if arg is wrapped else arg for arg in updated.args]
    return updated.with_changes(args=args)
