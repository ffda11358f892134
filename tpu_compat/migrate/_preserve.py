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

from tpu_compat.migrate import _positions

__all__ = ["rewrite_problem", "split_trailer", "unchanged_outside"]

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


def rewrite_problem(module, text, new_text, changed, todo_statements):
    """Why ``new_text`` (``module`` rewritten) is not ``text`` outside the
    ``changed`` nodes with only TODO lines added above ``todo_statements``; None
    when it is (upgrade's guarantee)."""
    # A TODO goes on its own lines, right above its statement's first line.
    firsts = {node: _positions.first_line_node(node) for node in todo_statements}
    code, spans = _positions.code_spans(module, list(changed) + list(todo_statements)
                                        + list(firsts.values()))
    if code != text:
        return "libcst does not reproduce this file exactly"
    edits = [(spans[node][0], spans[node][2]) for node in changed]
    insertions = []
    for node in todo_statements:
        start = spans[firsts[node]][1]
        insertions.append(max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1)
    return unchanged_outside(text, new_text, edits, insertions)


def unchanged_outside(original: str, updated: str, edits: Iterable[Tuple[int, int]],
                      insertions: Iterable[int] = ()) -> Optional[str]:
    """None when ``updated`` is ``original`` with only the ``edits`` spans
    (``(start, end)`` offsets into ``original``) replaced and only TODO lines
    inserted at the ``insertions`` offsets; else why not.

    The kept text between edits (a *unit*: pieces of ``original`` that only
    TODO lines may separate) is looked for in ``updated`` in order, each unit
    at the leftmost place after the previous one (which finds a match whenever
    one exists, an edit's new text being anything), the first at the start
    and the last at the very end.
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
    units, unit_starts, previous = [[]], [0], 0
    for start, end, todo in merged:
        units[-1].append(original[previous:start])
        if not todo:
            units.append([])
            unit_starts.append(end)
        previous = end
    units[-1].append(original[previous:])
    position = 0
    for index, unit in enumerate(units):
        found = _find_unit(updated, unit, position, anchored=index == 0,
                           at_end=index == len(units) - 1)
        if found is None:
            return _where(original, _mismatch(updated, unit, unit_starts[index], position,
                                              anchored=index == 0,
                                              at_end=index == len(units) - 1))
        position = found
    return None


def _find_unit(updated, unit, start, anchored, at_end):
    """Where ``unit`` ends in ``updated`` (placed leftmost from ``start``; at
    ``start`` when ``anchored``, ending at the end when ``at_end``), or None."""
    if at_end and len(unit) == 1 and not anchored:
        found = len(updated) - len(unit[0])
        return len(updated) if found >= start and updated.endswith(unit[0]) else None
    found = start if anchored else updated.find(unit[0], start)
    while found >= 0:
        end = _match_unit(updated, unit, found)
        if end is not None and (not at_end or end == len(updated)):
            return end
        if anchored:
            return None
        found = updated.find(unit[0], found + 1)
    return None


def _match_unit(updated, unit, at):
    if not updated.startswith(unit[0], at):
        return None
    position = at + len(unit[0])
    for piece in unit[1:]:
        position = _TODO_LINES.match(updated, position).end()
        if not updated.startswith(piece, position):
            return None
        position += len(piece)
    return position


def _mismatch(updated, unit, unit_start, start, anchored, at_end):
    """The offset in the original of the first character of ``unit`` (which
    starts there at ``unit_start``) that ``updated`` does not keep, so that
    the message points at the changed line, not at where the kept text began.

    The last unit must end the file: the common suffix says where it stops
    matching. Another is placed where the longest prefix of its first piece
    is found (binary search: a prefix found means every shorter one is)."""
    if at_end and len(unit) == 1 and not anchored:
        kept = len(_common_prefix(updated[::-1], unit[0][::-1]))
        return unit_start + max(0, len(unit[0]) - kept - 1)
    candidates = [start]
    if not anchored:
        low, high = 0, len(unit[0])
        while low < high:
            middle = (low + high + 1) // 2
            if updated.find(unit[0][:middle], start) >= 0:
                low = middle
            else:
                high = middle - 1
        found = updated.find(unit[0][:low], start) if low else -1
        while found >= 0 and len(candidates) < 64:
            candidates.append(found)
            found = updated.find(unit[0][:low], found + 1)
    furthest = unit_start
    for at in candidates:
        position, offset = at, unit_start
        for number, piece in enumerate(unit):
            if number:
                position = _TODO_LINES.match(updated, position).end()
            kept = len(_common_prefix(updated[position:position + len(piece)], piece))
            offset += kept
            if kept < len(piece):
                break
            position += len(piece)
        furthest = max(furthest, offset)
    return furthest


def _common_prefix(first, second):
    size = 0
    for a, b in zip(first, second):
        if a != b:
            break
        size += 1
    return first[:size]


def _where(original, offset):
    line = original.count("\n", 0, offset) + 1
    if "\n" not in original:
        line = original.count("\r", 0, offset) + 1
    return f"the rewrite would change the file outside its edits (near line {line})"
