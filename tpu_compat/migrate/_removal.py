"""Statements upgrade removes (an import nothing uses any more), comments kept.

A rewrite that removes a statement returns :data:`REMOVE` for it; the
rewriter then calls :meth:`Removals.removed` with the statement, and
:meth:`Removals.fix_block` when it leaves the block that held it. The
statement's own comment lines (other than upgrade's TODO lines about it) go
to the statement that now follows, or to the block's footer, so removing a
line never takes a comment with it; a block left empty gets a ``pass``.
"""

from typing import Dict, List

import libcst as cst

__all__ = ["REMOVE", "Removals"]

REMOVE = cst.RemovalSentinel.REMOVE
_TODO_PREFIX = "# TODO(tpu_compat): "
_BLOCKS = (cst.Module, cst.IndentedBlock)


class Removals:
    """The statements removed so far, by id, with the comment lines they leave."""

    def __init__(self):
        self._kept: Dict[int, List[cst.EmptyLine]] = {}

    def removed(self, statement):
        """Records ``statement`` as removed. Its TODO lines go with it: they
        can only be about the statement (a removed import's own findings)."""
        self._kept[id(statement)] = [
            line for line in statement.leading_lines
            if line.comment is None or not line.comment.value.startswith(_TODO_PREFIX)]

    def fix_block(self, original, updated):
        """``updated`` (a Module or IndentedBlock) with the comment lines of its
        removed statements moved down, and a ``pass`` if nothing is left."""
        if not isinstance(original, _BLOCKS) or not any(
                id(child) in self._kept for child in original.body):
            return updated
        body, pending = [], []
        remaining = iter(updated.body)
        for child in original.body:
            if id(child) in self._kept:
                pending += self._kept[id(child)]
                continue
            new = next(remaining)
            if pending:
                new = new.with_changes(leading_lines=[*pending, *new.leading_lines])
                pending = []
            body.append(new)
        if isinstance(updated, cst.IndentedBlock) and not body:
            body.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=pending))
            pending = []
        return updated.with_changes(body=body, footer=[*pending, *updated.footer])
