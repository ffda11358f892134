"""``call_to_method``: a function of an object becomes the object's method.

``tf.keras.experimental.export_saved_model(model, path)`` (TPC026) ->
``model.save(path, save_format='tf')``: TF 2.0's function (tensorflow/python/
keras/saving/saved_model_experimental.py, r2.0) wrote the same Keras
SavedModel that tf_keras' ``Model.save(..., save_format='tf')`` writes, its
``serving_only=True`` leaving the optimizer out (``include_optimizer=False``).
Arguments with no modern meaning (``custom_objects``, ``as_text``,
``input_signature``) or values upgrade cannot read keep the TODO.
"""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_CALL_TO_METHOD

# Per legacy function (the record's name): its parameters in order (the
# first is the object whose method is called), and how a keyword-only
# argument with a literal True/False maps onto the method: {name: {literal:
# keyword text or "" to drop it}}.
_SIGNATURES = {
    "export_saved_model": (("model", "saved_model_path"),
                           {"serving_only": {"True": "include_optimizer=False", "False": ""}}),
}


def plan(planner, finding, rewrite):
    site = finding.site
    call = site.call
    signature = _SIGNATURES.get(finding.record.name)
    if site.kind != "symbol" or call is None or call.func is not site.node or signature is None:
        return "a reference, not a call"
    parameters, flags = signature
    placed, extra = {}, []
    for index, arg in enumerate(call.args):
        if arg.star:
            return "a call with *args or **kwargs"
        if arg.keyword is None:
            if index >= len(parameters):
                return "more positional arguments than the function takes"
            placed[parameters[index]] = arg
        elif arg.keyword.value in parameters:
            placed[arg.keyword.value] = arg
        elif arg.keyword.value in flags and isinstance(arg.value, cst.Name) and (
                arg.value.value in flags[arg.keyword.value]):
            added = flags[arg.keyword.value][arg.value.value]
            if added:
                extra.append(added)
        else:
            return f"the {arg.keyword.value}= argument has no equivalent upgrade can write"
    if set(placed) != set(parameters):
        return "a call without the object and the path"
    receiver = placed[parameters[0]].value
    if not _plain(receiver):
        return "the object is an expression, not a name"
    rest = [placed[name] for name in parameters[1:]]
    planner.edit(finding, Edit(call, cst.Call, functools.partial(
        _to_method, rewrite.to, [rewrite.value, *extra], receiver, rest), KIND))
    return None


def _plain(node):
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _to_method(method, added, receiver, rest, original, updated):
    del original
    args = [arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                             comma=cst.MaybeSentinel.DEFAULT) for arg in rest]
    for text in added:
        keyword, value = text.split("=", 1)
        args.append(cst.Arg(cst.parse_expression(value), keyword=cst.Name(keyword),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                  cst.SimpleWhitespace(""))))
    return updated.with_changes(func=cst.Attribute(receiver, cst.Name(method)), args=args)
