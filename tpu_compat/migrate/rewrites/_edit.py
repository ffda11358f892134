"""One planned change to one node of the shared libcst parse."""

import dataclasses
from typing import Callable, Optional

import libcst as cst

__all__ = ["Edit"]


@dataclasses.dataclass(frozen=True)
class Edit:
    """A change to ``node``, made by ``change(original, updated)`` when the
    rewriter leaves it (``updated`` has its children's edits already).

    An edit applies only to a node whose type is exactly ``node_type``, the
    type its kind plans for: a finding whose node turns out to be another
    (a bare ``Name`` where a dotted ``Attribute`` was expected) is then
    "could not be located for rewriting" instead of being edited wrongly.

    kind: the table's ``rewrite=`` kind that planned it (one vocabulary).
    requires: another edit's node (or a tuple of them) that must be edited
        too, or the rewrite of the whole file is refused (never write half a
        rewrite).
    also: an edit of another node that goes with this one (the Call around a
        renamed method whose ``fn`` is wrapped); it is applied first when its
        node is left, and does not count as this edit being located.
    """
    node: cst.CSTNode
    node_type: type
    change: Callable[[cst.CSTNode, cst.CSTNode], cst.CSTNode]
    kind: str
    requires: Optional[object] = None  # a node or a tuple of nodes
    also: Optional["Edit"] = None

    def required_nodes(self):
        """The nodes ``requires`` names, as a tuple."""
        if self.requires is None:
            return ()
        return self.requires if isinstance(self.requires, tuple) else (self.requires,)

    def apply_to(self, original, updated):
        """``updated`` changed, or None when ``original`` is not a node this edit fits."""
        if type(original) is not self.node_type:  # pylint: disable=unidiomatic-typecheck
            return None
        return self.change(original, updated)


def arguments_by_name(call, names):
    """A call's arguments by parameter ``names`` (positional or keyword), or None
    where one is starred, an extra positional, or a keyword not in ``names``."""
    placed = {}
    for position, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if position >= len(names):
                return None
            placed[names[position]] = arg.value
        elif arg.keyword.value in names:
            placed[arg.keyword.value] = arg.value
        else:
            return None
    return placed
