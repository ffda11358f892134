"""Rewrite legacy TPU-strategy APIs with libcst, keeping comments and layout.

The scanner decides *what* is legacy, on the same libcst parse that is
rewritten here (``scan.analyze_text``): each finding carries the nodes it is
about, and this module decides, per finding, whether it can be rewritten
safely and then edits exactly those nodes:

* high-confidence findings of a rule with a ``rewrite`` are rewritten as the
  record's :class:`tpu_compat.legacy_api.Rewrite` says (kind and names are
  data in the table), by the module of :mod:`tpu_compat.migrate.rewrites`
  registered for its kind, which plans the edit and makes it;
* high-confidence findings that cannot be rewritten (no ``rewrite``, or this
  call site needs judgement) get one ``# TODO(tpu_compat): TPC### ...`` line
  above their statement, added once, so a second run changes nothing;
* low-confidence findings are only reported.

The rewrite never produces code TF 2.21 rejects where it can see that it would:
eager ``experimental_run_v2(fn)`` becomes ``run(tf.function(fn))`` (docs/migration.md).

A file that does not parse, or whose rewrite would not parse, is left
byte-for-byte unchanged and reported.
"""

import collections
import dataclasses
from typing import Dict, List, Optional

import libcst as cst

from tpu_compat.migrate import _positions, _preserve, _removal, rewrites, scan, sources
from tpu_compat.migrate._todo_lines import all_written as _todo_lines_written

__all__ = ["FileUpgrade", "Outcome", "REPORTED", "REWRITTEN", "TODO", "TODO_PREFIX",
           "upgrade_bytes", "upgrade_file", "upgrade_source", "upgrade_text"]

REWRITTEN, TODO, REPORTED = "rewritten", "todo", "reported"
TODO_PREFIX = "# TODO(tpu_compat): "


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What upgrade did with one finding: rewritten, todo or reported.

    ``note`` is a TODO's precise reason when the rule's replacement text alone
    would mislead (it is written into the TODO comment).
    """
    finding: scan.Finding
    action: str
    detail: str = ""
    note: str = ""

    def to_dict(self):
        data = self.finding.to_dict()
        data["action"] = self.action
        data["detail"] = self.detail
        return data


@dataclasses.dataclass
class FileUpgrade:
    """One file's upgrade: new bytes (None when unchanged), outcomes, error, and
    ``companions``, files to write beside it ({name: bytes}, issue 36's driver).
    ``original`` is None only when the file could not be read at all.
    """
    path: str
    original: Optional[bytes]
    updated: Optional[bytes]
    outcomes: List[Outcome]
    error: Optional[scan.FileError] = None
    companions: Dict[str, bytes] = dataclasses.field(default_factory=dict)

    @property
    def changed(self):
        return self.updated is not None and self.updated != self.original

    @property
    def output(self):
        """The bytes to write: the new ones, or the original ones unchanged."""
        return self.updated if self.changed else self.original


# --- Planning: which finding becomes which edit --------------------------------------


class _Planner:
    """Decides, per finding, rewritten (an edit planned by its kind's module in
    :mod:`tpu_compat.migrate.rewrites`), todo or reported."""

    def __init__(self, findings, module=None):
        self.findings = findings
        self.module = module  # libcst's, for version_compare (every use checked); or None
        self.outcomes: Dict[int, Outcome] = {}
        self.edits: Dict[int, rewrites.Edit] = {}
        self.todos: List[Outcome] = []
        self._edit_of: Dict[int, rewrites.Edit] = {}  # id(site) -> its edit
        self._blocked_calls = {
            id(f.site.call) for f in findings
            if f.site is not None and f.site.call is not None and not f.autofix
            and f.confidence == scan.HIGH}

    def plan(self):
        # Arguments last: whether `device_assignment=` may be renamed depends
        # on whether the constructor naming it is rewritten; an import is
        # dropped only after every use of it is rewritten, a strategy class
        # swapped only after its loop.
        ordered = sorted(self.findings, key=lambda f: (
            rewrites.drop_import.dropped_last(f),
            f.site is not None and f.site.kind in ("keyword", "positional"),
            rewrites.tf2_strategy.after_its_loop(f)))
        for finding in ordered:
            self._plan_one(finding)
        return [self.outcomes[id(f)] for f in self.findings]

    # What the rewrite kinds' plans use.

    def edit(self, finding, edit):
        """Plans ``edit`` as the rewrite of ``finding``."""
        self.edits[id(edit.node)] = edit
        self._edit_of[id(finding.site)] = edit
        self._set(finding, REWRITTEN)

    def edit_of(self, site):
        """The edit planned for ``site``'s finding, or None."""
        return self._edit_of.get(id(site))

    def cover(self, finding, edit, detail=""):
        """``finding`` is rewritten by ``edit``, planned for another (any TODO it had goes)."""
        self._edit_of[id(finding.site)] = edit
        self.todos = [t for t in self.todos if t.finding is not finding]
        self._set(finding, REWRITTEN, detail)

    def blocked(self, call):
        """Whether ``call`` has a finding that needs a person (so it is not rewritten)."""
        return id(call) in self._blocked_calls

    def _set(self, finding, action, detail="", note=""):
        outcome = Outcome(finding, action, detail, note)
        self.outcomes[id(finding)] = outcome
        if action == TODO:
            self.todos.append(outcome)

    def _plan_one(self, finding):
        if id(finding) in self.outcomes:  # covered by another finding's edit
            return
        if finding.confidence != scan.HIGH:
            self._set(finding, REPORTED, "low confidence: not rewritten")
            return
        if finding.cell is not None:
            self._set(finding, REPORTED, "notebooks are scanned, not rewritten")
            return
        if not finding.autofix:
            self._set(finding, TODO, "needs a manual change")
            return
        if finding.site.todo_note:
            self._set(finding, TODO, finding.site.todo_note, note=finding.site.todo_note)
            return
        result = rewrites.plan(self, finding)
        if isinstance(result, tuple):
            self._set(finding, TODO, *result)
        elif result:
            self._set(finding, TODO, result)


# --- Rewriting: the libcst transformer ---------------------------------------------


def _todo_text(outcome):
    finding = outcome.finding
    text = f"{TODO_PREFIX}{finding.rule} {finding.replacement}"
    return f"{text}; {outcome.note}" if outcome.note else text


class _Rewriter(cst.CSTTransformer):
    """Applies the planned edits to the nodes of the shared parse."""

    def __init__(self, edits, todos, newlines=None):
        super().__init__()
        self.edits = edits
        self._newlines = newlines or {}  # id(statement) -> its TODO lines' break
        self._also = {id(edit.also.node): edit.also for edit in edits.values()
                      if edit.also is not None}
        self.applied = set()      # ids of edited nodes
        self.changed = []         # the original nodes edited (an edit or its `also`)
        self.todo_statements = []  # the original statements given TODO lines
        self.todo_placed = set()  # indices into todos
        self._removals = _removal.Removals()
        self._todos = todos
        self._todo_homes = collections.defaultdict(list)
        for index, outcome in enumerate(todos):
            self._todo_homes[id(outcome.finding.site.statement)].append(index)
        self._first_statement = None
        self._header_comments = []

    def visit_Module(self, node):
        # libcst gives comments above the first statement to the module
        # header, not to the statement: a TODO placed there on an earlier
        # run lives in the header.
        self._first_statement = node.body[0] if node.body else None
        self._header_comments = [line.comment.value for line in node.header
                                 if line.comment is not None]
        return True

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        key = id(original_node)
        also = self._also.get(key)
        changed = False
        if also is not None:
            also_edited = also.apply_to(original_node, updated_node)
            if also_edited is not None:
                updated_node, changed = also_edited, True
        edit = self.edits.get(key)
        if edit is not None:
            edited = edit.apply_to(original_node, updated_node)
            if edited is not None:
                self.applied.add(key)
                updated_node, changed = edited, True
        if changed:
            self.changed.append(original_node)
        if updated_node is _removal.REMOVE:
            self._removals.removed(original_node)
            return updated_node
        updated_node = self._removals.fix_block(original_node, updated_node)
        indices = self._todo_homes.get(key)
        if indices:
            with_todos = self._add_todos(updated_node, indices,
                                         original_node is self._first_statement)
            if with_todos is not updated_node:
                self.todo_statements.append(original_node)
            updated_node = with_todos
        return updated_node

    def _add_todos(self, statement, indices, first):
        existing = [line.comment.value for line in statement.leading_lines
                    if line.comment is not None]
        if first:
            existing += self._header_comments
        lines = []
        for index in sorted(indices, key=lambda i: self._todos[i].finding.rule):
            outcome = self._todos[index]
            self.todo_placed.add(index)
            marker = f"{TODO_PREFIX}{outcome.finding.rule}"
            if any(text == marker or text.startswith(marker + " ") for text in existing):
                continue
            existing.append(marker)
            newline = cst.Newline(self._newlines.get(id(outcome.finding.site.statement)))
            lines.append(cst.EmptyLine(indent=True, newline=newline,
                                       comment=cst.Comment(_todo_text(outcome))))
        if not lines:
            return statement
        return statement.with_changes(leading_lines=[*statement.leading_lines, *lines])


# --- Files ---------------------------------------------------------------------------


class _RewriteFailed(Exception):
    pass


def _check_preserved(module, text, new_text, rewriter):
    """Raises _RewriteFailed unless ``new_text`` is ``text`` outside the edited
    nodes, with only TODO lines added above statements (upgrade's guarantee)."""
    problem = _preserve.rewrite_problem(module, text, new_text, rewriter.changed,
                                        rewriter.todo_statements)
    if problem is not None:
        raise _RewriteFailed(problem)


def _rewrite(module, edits, todos, text):
    """The new text, and the edited node ids and TODO indices actually placed."""
    rewriter = _Rewriter(edits, todos, _positions.line_breaks_after(
        module, [o.finding.site.statement for o in todos], text))
    with scan.deep_recursion():
        new_text = module.visit(rewriter).code
        _check_preserved(module, text, new_text, rewriter)
    for key in rewriter.applied:
        if any(id(node) not in rewriter.applied for node in edits[key].required_nodes()):
            # Renaming `device_assignment=` without the constructor would
            # break working code; never write half a rewrite.
            raise _RewriteFailed("a rewrite could not be completed")
    return new_text, rewriter.applied, rewriter.todo_placed


def upgrade_text(text, path="<string>", max_bytes=None, size=None):
    """``(new_text, outcomes)`` for one module's text.

    Raises SyntaxError / sources.SourceError if it does not parse, and
    _RewriteFailed if the result would be inconsistent or not parse.
    """
    # libcst is given the code without its trailing blank and comment lines,
    # which it does not always give back (see _preserve); they are kept as read.
    code, trailer = _preserve.split_trailer(text)
    analysis = scan.analyze_text(code, path, max_bytes=max_bytes,
                                 size=len(text.encode("utf-8", "surrogatepass"))
                                 if size is None and max_bytes is not None else size)
    if analysis is None or not analysis.findings:
        return text, []
    findings, module = analysis.findings, analysis.wrapper.module
    planner = _Planner(findings, module)
    outcomes = planner.plan()
    if not planner.edits and _todo_lines_written(module, planner.todos, TODO_PREFIX):
        return text, outcomes  # nothing to write (a second run): as the rewrite would
    if "\n" not in code and "\r" not in code and trailer[:1] in ("\r", "\n"):
        # One line of code: libcst would take "\n" for the file's line break.
        module = module.with_changes(default_newline="\r\n" if trailer.startswith("\r\n")
                                     else trailer[0])
    new_code, applied, placed = _rewrite(module, planner.edits, planner.todos, code)
    new_text = new_code + trailer
    try:
        scan.parse(new_text)
    except (SyntaxError, ValueError) as error:
        raise _RewriteFailed(f"the rewritten code would not parse ({error})") from None
    missing = {id(f) for f in findings
               if planner.edit_of(f.site) is not None
               and id(planner.edit_of(f.site).node) not in applied}
    missing |= {id(o.finding) for index, o in enumerate(planner.todos) if index not in placed}
    if missing:
        outcomes = [Outcome(o.finding, REPORTED, "could not be located for rewriting")
                    if id(o.finding) in missing else o for o in outcomes]
    return new_text, outcomes


def _error(source, message):
    return FileUpgrade(source.path, source.raw, None, [], scan.FileError(source.path, message))


def upgrade_source(source: sources.SourceFile, max_bytes=None) -> FileUpgrade:
    """Upgrades one read file in memory; never raises for a bad file.

    ``max_bytes``: the per-file limit past which a file is skipped (see
    scan.analyze_text)."""
    if source.notebook:
        scanned = scan.scan_source(source, max_bytes)
        if scanned.error is not None:
            return FileUpgrade(source.path, source.raw, None, [], scanned.error)
        return FileUpgrade(source.path, source.raw, None, _Planner(scanned.findings).plan())
    try:
        new_text, outcomes = upgrade_text(source.text, source.path, max_bytes,
                                          len(source.raw))
    except SyntaxError as error:
        return _error(source, scan.describe_syntax_error(error))
    except sources.SourceError as error:
        return _error(source, str(error))
    except _RewriteFailed as error:
        return _error(source, f"{error}; left unchanged")
    except (RecursionError, MemoryError):
        return _error(source, "too deeply nested to rewrite")
    except ValueError as error:  # e.g. NUL bytes
        return _error(source, f"cannot parse: {error}")
    if new_text == source.text:
        return FileUpgrade(source.path, source.raw, None, outcomes)
    if source.text.encode(source.encoding) != source.raw:
        # Then the unedited text would not come back as the same bytes.
        return _error(source, f"its bytes do not survive decoding as {source.encoding} "
                              f"and encoding again; left unchanged")
    return FileUpgrade(source.path, source.raw, new_text.encode(source.encoding), outcomes)


def _upgrade_once(path, raw, max_bytes) -> FileUpgrade:
    try:
        source = sources.source_from_bytes(path, raw)
    except sources.SourceError as error:
        return FileUpgrade(path, raw, None, [], scan.FileError(path, str(error)))
    return upgrade_source(source, max_bytes)


def upgrade_bytes(path, raw, max_bytes=None) -> FileUpgrade:
    """Upgrades ``raw`` as the contents of ``path``; never raises for bad input."""
    first = _upgrade_once(path, raw, max_bytes)
    if (first.error is not None or not first.changed  # TODO lines alone add no legacy name
            or all(o.action != REWRITTEN for o in first.outcomes)):
        return first
    # A rewrite can land on a legacy name (tf.contrib.tpu.X -> tf.compat.v1.tpu.X):
    # a second pass leaves that name's TODO, so one run of upgrade is final.
    second = _upgrade_once(path, first.output, None)
    if second.error is not None or not second.changed:
        return first
    already = collections.Counter(o.finding.rule for o in first.outcomes if o.action == TODO)
    added = []
    for outcome in second.outcomes:
        if outcome.action != TODO:
            continue
        if already[outcome.finding.rule]:
            already[outcome.finding.rule] -= 1
        else:
            added.append(outcome)
    return FileUpgrade(path, raw, second.output, first.outcomes + added)


def upgrade_file(path, max_bytes=None) -> FileUpgrade:
    try:
        raw = sources.read_bytes(path)
    except sources.SourceError as error:
        return FileUpgrade(path, None, None, [], scan.FileError(path, str(error)))
    return upgrade_bytes(path, raw, max_bytes)


def outcome_counts(outcomes):
    return collections.Counter(outcome.action for outcome in outcomes)
