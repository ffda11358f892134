"""How the object a call made is used afterwards (``s = TPUStrategy(r)``, then
``s.scope()``, ``s.num_replicas_in_sync``, ``f(s)``), from libcst's scopes.

upgrade may swap a class for another only where every use of the object is
one both classes answer the same way; this module lists the uses, the
rewrite decides.
"""

from typing import List, Optional, Tuple

import libcst as cst

__all__ = ["of_assigned_call"]


def of_assigned_call(statement, call, scopes, attribute_of,
                     callees) -> Optional[List[Tuple[Optional[str], bool]]]:
    """``[(attribute, called), ...]`` for each use of the name ``call``'s result
    is assigned to in ``statement`` (``NAME = call``); None when ``statement``
    is not such an assignment.

    ``attribute`` is the attribute read on the name (None when the name is
    used otherwise: passed, returned, rebound...); ``called`` whether that
    attribute is called. ``attribute_of`` maps id(expression) to the
    Attribute reading an attribute of it, ``callees`` id(func) to its Call.
    """
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if (not isinstance(assign, cst.Assign) or len(assign.targets) != 1
            or assign.value is not call or not isinstance(assign.targets[0].target, cst.Name)):
        return None
    target = assign.targets[0].target
    scope = scopes.get(target)
    if scope is None:
        return None
    uses = []
    for assignment in scope.assignments[target.value]:
        if getattr(assignment, "node", None) is not target:
            continue
        for access in assignment.references:
            attribute = attribute_of.get(id(access.node))
            if attribute is None:
                uses.append((None, False))
            else:
                uses.append((attribute.attr.value, id(attribute) in callees))
    return uses
