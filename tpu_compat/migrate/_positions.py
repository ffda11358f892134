"""Where a few nodes start, exactly as libcst's ``PositionProvider`` says, at a
fraction of its cost.

``PositionProvider`` generates the module's code once and, for every token,
splits it on newlines to keep a running line and column, then stores a range
for every node. Scan needs the start of a handful of finding nodes, so this
runs the same code generation with the same hooks (``before_codegen``,
``after_codegen``, ``record_syntactic_position``, including its hoisting from
``start_node``/``end_node``) but records only token *indexes*, and turns just
the requested indexes into lines and columns afterwards; it stops after the
last requested node's code. The rules for
counting are PositionProvider's: a line ends at ``\\r\\n``, ``\\r`` or ``\\n``
within a token, and the column counts characters after the last one.

tests/test_migrate_fast_paths.py checks the result against PositionProvider
for every node of the migrate corpus and of hand-written awkward sources.

``CodegenState`` and ``Module._codegen`` are libcst's private API: where
:mod:`~tpu_compat.migrate._libcst_fast` finds them missing or changed,
PositionProvider itself answers.
"""

import contextlib
import re
from typing import Dict, Iterable, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tpu_compat.migrate import _libcst_fast

__all__ = ["code_spans", "start_positions"]

# PositionProvider's own definition of a line break inside a token.
_NEWLINE = re.compile(r"\r\n?|\n")


class _AllFound(Exception):
    """Every requested node's range is final: the rest of the code is not needed."""


class _TokenIndexState(_libcst_fast.CodegenState or object):
    """Code generation that notes each node's range as token indexes, and
    stops once the code of every node in ``wanted`` has been generated.

    (Based on ``object`` only where libcst has no ``CodegenState``; then
    ``_libcst_fast.codegen_state()`` is False and this class is never built.)"""

    def __init__(self, module: cst.Module, wanted):
        super().__init__(default_indent=module.default_indent,
                         default_newline=module.default_newline)
        self.spans: Dict[cst.CSTNode, Tuple[int, int]] = {}
        self._starts = []
        self._missing = set(wanted)

    # The whitespace-inclusive range, kept only where no syntactic range was
    # recorded (PositionProvider's rule).
    def before_codegen(self, node):
        self._starts.append(len(self.tokens))

    def after_codegen(self, node):
        start = self._starts.pop()
        if node not in self.spans:
            self.spans[node] = (start, len(self.tokens))
        # A node's range is settled when its own code is done (hoisting reads
        # only its children), so later code cannot move it.
        self._missing.discard(node)
        if not self._missing:
            raise _AllFound

    @contextlib.contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        start = len(self.tokens)
        yield  # on _AllFound, nothing more to record (hoisted nodes may be missing)
        end = len(self.tokens)
        if start_node is not None:
            start = self.spans[start_node][0]
        if end_node is not None:
            end = self.spans[end_node][1]
        self.spans[node] = (start, end)


class _SpanState(_TokenIndexState):
    """Code generation of the whole module that keeps, for each node in
    ``wanted``, the token range of everything it renders (leading lines and
    owned whitespace included) and where its syntactic range starts."""

    def __init__(self, module: cst.Module, wanted):
        super().__init__(module, ())
        self._wanted = set(wanted)
        self.rendered: Dict[cst.CSTNode, Tuple[int, int]] = {}

    def after_codegen(self, node):
        start = self._starts.pop()
        if node not in self.spans:
            self.spans[node] = (start, len(self.tokens))
        if node in self._wanted:
            self.rendered[node] = (start, len(self.tokens))


def _offsets(code):
    """The offset where each line of ``code`` starts (PositionProvider's lines)."""
    return [0] + [match.end() for match in _NEWLINE.finditer(code)]


def code_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]):
    """``(code, {node: (start, syntactic_start, end)})``: the module's code and,
    per node, the character offsets of everything it renders and where its
    own syntax (after leading lines and whitespace) starts. One code
    generation, linear in the module's size."""
    nodes = list(nodes)
    if not _libcst_fast.codegen_state():
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        syntactic = wrapper.resolve(PositionProvider)
        inclusive = wrapper.resolve(cst.metadata.WhitespaceInclusivePositionProvider)
        code = module.code
        lines = _offsets(code)

        def offset(position):
            # The end of a module without a final newline may be counted
            # past its popped last line break.
            if position.line > len(lines):
                return len(code)
            return min(lines[position.line - 1] + position.column, len(code))
        return code, {node: (offset(inclusive[node].start), offset(syntactic[node].start),
                             offset(inclusive[node].end)) for node in nodes}
    state = _SpanState(module, nodes)
    module._codegen(state)  # pylint: disable=protected-access
    ends = [0]
    total = 0
    for token in state.tokens:
        total += len(token)
        ends.append(total)
    spans = {}
    last = len(state.tokens)  # a module without a final newline pops its last one
    for node in nodes:
        start, end = state.rendered[node]
        syntactic = state.spans[node][0]
        spans[node] = (ends[min(start, last)], ends[min(syntactic, last)], ends[min(end, last)])
    return "".join(state.tokens), spans


def _advance(line, column, tokens):
    """Line and column after ``tokens``, from ``line``/``column`` (PositionProvider's rule)."""
    text = "".join(tokens)
    if "\r" not in text:  # then token boundaries cannot split a line break
        breaks = text.count("\n")
        if breaks:
            return line + breaks, len(text) - text.rfind("\n") - 1
        return line, column + len(text)
    for token in tokens:
        segments = _NEWLINE.split(token)
        if len(segments) == 1:
            column += len(token)
        else:
            line += len(segments) - 1
            column = len(segments[-1])
    return line, column


def start_positions(module: cst.Module,
                    nodes: Iterable[cst.CSTNode]) -> Dict[cst.CSTNode, cst.metadata.CodePosition]:
    """``{node: CodePosition}``: where each node starts (line 1-based, column 0-based)."""
    nodes = list(nodes)
    if not nodes:
        return {}
    if not _libcst_fast.codegen_state():
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return {node: positions[node].start for node in nodes}
    state = _TokenIndexState(module, nodes)
    try:
        module._codegen(state)  # pylint: disable=protected-access
    except _AllFound:
        pass
    tokens = state.tokens
    starts = sorted({state.spans[node][0] for node in nodes})
    at_index = {}
    line, column, done = 1, 0, 0
    for index in starts:
        line, column = _advance(line, column, tokens[done:index])
        done = index
        at_index[index] = cst.metadata.CodePosition(line, column)
    return {node: at_index[state.spans[node][0]] for node in nodes}


def first_line_node(statement):
    """The node on ``statement``'s first line: its first decorator, if any
    (libcst's position of a definition starts at `def`/`class`)."""
    decorators = getattr(statement, "decorators", None)
    return decorators[0] if decorators else statement


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_breaks_after(module, statements, code):
    """``{id(statement): the line break ending its first line}`` when ``code``
    mixes line endings (else ``{}``): a TODO line upgrade puts above a
    statement ends as its neighbour does, not as the file's first line."""
    if not statements or len(set(_LINE_BREAK.findall(code))) < 2:
        return {}
    firsts = {id(node): first_line_node(node) for node in statements}
    _, spans = code_spans(module, list(firsts.values()))
    breaks = {}
    for key, first in firsts.items():
        found = _LINE_BREAK.search(code, spans[first][1])
        if found is not None:
            breaks[key] = found.group()
    return breaks
