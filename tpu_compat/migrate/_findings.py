"""What scan reports: findings, file errors and the result of a run."""

import dataclasses
from typing import Dict, List, Optional, Tuple

from tpu_compat import legacy_api
from tpu_compat.migrate import sources

__all__ = ["FileError", "FileScan", "Finding", "HIGH", "LOW", "RunCall", "ScanResult", "Site"]

HIGH, LOW = "high", "low"


@dataclasses.dataclass(eq=False)
class RunCall:
    """What upgrade needs to keep ``strategy.run(fn)`` valid under TF 2.21.

    fn: the ``fn`` argument (a libcst Arg) or None.
    fn_kind: "plain" (an undecorated def or a lambda), "traced" (a
        tf.function) or "unknown".
    context: "eager" (module level), "traced" (inside a tf.function),
        "graph" (the module disables eager execution) or "unknown" (inside a
        function that may or may not be traced).
    in_loop: the call is in a loop of its function (or of the module).
    receiver_tpu: the strategy was built as a TPU strategy (True), as another
        one (False), or is unknown (None).
    """
    fn: object
    fn_kind: str
    context: str
    in_loop: bool
    receiver_tpu: Optional[bool]


@dataclasses.dataclass(eq=False)
class Site:
    """What upgrade needs to know about a finding (not serialised).

    The nodes belong to the one libcst parse that scan and upgrade share
    (``analysis.Analysis.wrapper``): upgrade edits exactly them.

    kind: "method" (node: the Attribute whose name is the method),
        "attribute", "keyword" (node: the Arg), "positional" (node: the Arg),
        "symbol" (node: the dotted Attribute) or "import" (node: the
        ImportAlias, in ``import_statement``).
    statement: the innermost statement holding the finding (a TODO goes above it).
    call: the Call the finding belongs to (callee, method or argument).
    written: the dotted name as written (symbols) or the module of a
        ``from`` import.
    resolved: the full path a symbol resolved to (``tensorflow....``).
    root_path: what the first name of a dotted symbol is bound to.
    depends_on: for an argument, the site of the legacy callee it is passed to.
    positional / keywords / starred: the call's argument shape (methods).
    receiver_pure: the receiver is a plain dotted name (no call to drop).
    visible: TensorFlow modules in scope at the finding, ``{name: path}``.
    uses: for legacy symbols bound to a name, each later use as
        ``("call", Call)`` or ``("other", None)``.
    use_names: the Name node of each of those uses, in the same order.
    result_uses: for a call assigned to a plain name (``s = TPUStrategy(r)``),
        how that name is used: ``(attribute, called)`` per use (``("scope",
        True)`` for ``s.scope()``, ``(None, False)`` for ``f(s)``); None when
        the result is not assigned to a plain name.
    graph: (methods) the module runs a TF 1.x graph: it disables eager
        execution or names a ``tf.Session`` (or a monitored one).
    single_name: a ``from`` import that imports only this name.
    run_call: for ``experimental_run_v2(...)`` calls, a :class:`RunCall`.
    todo_note: why this finding needs a person although its rule has a rewrite.
    finding: the Finding this site belongs to.
    """
    kind: str
    node: object = None
    statement: object = None
    call: object = None
    written: str = ""
    resolved: str = ""
    root_path: str = ""
    depends_on: Optional["Site"] = None
    positional: int = 0
    keywords: Tuple[str, ...] = ()
    starred: bool = False
    receiver_pure: bool = False
    visible: Dict[str, str] = dataclasses.field(default_factory=dict)
    uses: List[Tuple[str, object]] = dataclasses.field(default_factory=list)
    use_names: List[object] = dataclasses.field(default_factory=list)
    result_uses: Optional[List[Tuple[Optional[str], bool]]] = None
    graph: bool = False
    single_name: bool = False
    import_statement: object = None
    run_call: Optional[RunCall] = None
    todo_note: str = ""
    finding: Optional["Finding"] = None


@dataclasses.dataclass(frozen=True)
class Finding:
    """One use of a legacy API: where, which rule, how sure we are.

    ``column`` is 1-based and counts characters (code points). ``cell`` is
    the notebook cell (1-based) for ``.ipynb`` files, and ``line`` then
    counts within the cell.
    """
    path: str
    line: int
    column: int
    rule: str
    confidence: str
    cell: Optional[int] = None
    site: Optional[Site] = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def record(self):
        return legacy_api.get(self.rule)

    @property
    def api(self):
        return self.record.api

    @property
    def era(self):
        return self.record.era_text()

    @property
    def replacement(self):
        return self.record.replacement

    @property
    def autofix(self):
        return self.record.autofix

    def message(self):
        record = self.record
        status = f", removed in TF {record.removed_in}" if record.removed_in else ""
        text = f"{record.api} ({record.era_text()}{status}): use {record.replacement}"
        if self.confidence == LOW:
            text += " (low confidence: the receiver is not known to be a strategy)"
        return text

    def location(self):
        """``path:line:col``, or ``path:cell_N:line:col`` in a notebook."""
        cell = f"cell_{self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def to_dict(self):
        data = {
            "path": self.path, "line": self.line, "column": self.column,
            "api": self.api, "rule": self.rule, "era": self.era,
            "replacement": self.replacement, "autofix": self.autofix,
            "confidence": self.confidence,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data

    def sort_key(self):
        return (self.path, self.cell or 0, self.line, self.column, self.rule)


@dataclasses.dataclass(frozen=True)
class FileError:
    path: str
    message: str

    def to_dict(self):
        return {"path": self.path, "message": self.message}


@dataclasses.dataclass
class FileScan:
    """The findings of one file, or why it could not be scanned."""
    path: str
    findings: List[Finding]
    error: Optional[FileError] = None
    source: Optional[sources.SourceFile] = None


@dataclasses.dataclass
class ScanResult:
    files_scanned: int
    findings: List[Finding]
    errors: List[FileError]

    def to_dict(self):
        return {
            "files_scanned": self.files_scanned,
            "findings": [finding.to_dict() for finding in self.findings],
            "errors": [error.to_dict() for error in self.errors],
        }
