"""upgrade's guarantee, checked: outside the spans it edits, its output is the input.

Two helpers for :mod:`tpu_compat.migrate.upgrade`:

* :func:`split_trailer` cuts a module's text into the code libcst is given and
  the trailing blank and comment-only lines, which are kept as they are.
  libcst 1.x does not give them back in two cases: comment lines indented
  deeper than the last statement at the end of a file (they vanish with the
  blank lines before them), and the last ``\\r`` of a file whose lines end in
  a bare CR.
* :func:`unchanged_outside` checks a rewrite before it is written: every byte
  of the input outside the edited spans appears in the output, in order, and
  what stands where a TODO was added is only TODO comment lines.
"""

import re
from typing import Iterable, Optional, Tuple

__all__ = ["split_trailer", "unchanged_outside"]

_BLANK = " \t\f"
# What upgrade may put where it adds a TODO: whole comment lines of its own.
_TODO_LINES = re.compile(r"(?:[ \t\f]*# TODO\(tpu_compat\): [^\r\n]*(?:\r\n|\r|\n))*")


def split_trailer(text: str) -> Tuple[str, str]:
    """``(code, trailer)`` with ``code + trailer == text``: ``trailer`` is the
    line break ending the last line that holds code and every blank or
    comment-only line after it (empty when there is no such tail)."""
    end = len(text)
    while True:
        start = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1
        stripped = text[start:end].lstrip(_BLANK)
        if stripped and not stripped.startswith("#"):
            break
        if start == 0:
            return "", text
        end = start - 1
        if text[end] == "\n" and end > 0 and text[end - 1] == "\r":
            end -= 1
    code = text[:end]
    if code.rstrip(_BLANK).endswith("\\"):
        # A backslash before the tail joins the next line: keep it all as code.
        return text, ""
    return code, text[end:]


def unchanged_outside(original: str, updated: str, edits: Iterable[Tuple[int, int]],
                      insertions: Iterable[int] = ()) -> Optional[str]:
    """None when ``updated`` is ``original`` with only the ``edits`` spans
    (``(start, end)`` offsets into ``original``) replaced and only TODO lines
    inserted at the ``insertions`` offsets; else why not.

    The kept pieces of ``original`` are looked for in ``updated`` in order,
    each at the leftmost place after the previous one (which finds a match
    whenever one exists), the last one at the very end; the cost is linear in
    the two texts' lengths.
    """
    regions = sorted([(start, end, False) for start, end in edits]
                     + [(offset, offset, True) for offset in insertions])
    merged = []  # (start, end, todo_only); an empty kept piece may separate two
    for start, end, todo in regions:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), False)
        else:
            merged.append((start, end, todo))
    if not merged:
        return None if updated == original else _where(original, 0)
    pieces, previous = [], 0
    for start, end, _ in merged:
        pieces.append(original[previous:start])
        previous = end
    pieces.append(original[previous:])
    if not updated.startswith(pieces[0]):
        return _where(original, 0)
    position = len(pieces[0])
    for index, (start, end, todo) in enumerate(merged):
        piece = pieces[index + 1]
        if index + 1 == len(merged):
            found = len(updated) - len(piece)
            if found < position or not updated.endswith(piece):
                return _where(original, end)
        else:
            found = updated.find(piece, position)
            if found < 0:
                return _where(original, end)
        if todo and not _TODO_LINES.fullmatch(updated, position, found):
            return _where(original, start)
        position = found + len(piece)
    return None


def _where(original, offset):
    line = original.count("\n", 0, offset) + 1
    if "\n" not in original:
        line = original.count("\r", 0, offset) + 1
    return f"the rewrite would change the file outside its edits (near line {line})"
