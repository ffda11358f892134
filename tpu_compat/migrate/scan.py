"""Find uses of legacy TPU-strategy APIs in Python source, without TensorFlow.

Every rule comes from :mod:`tpu_compat.legacy_api`: a method record matches
an attribute call on an object we can tie to a strategy, an argument record a
keyword passed to one of its ``symbols``, a symbol record a dotted name that
resolves (through the imports in scope) to one of its ``symbols``.

Names are resolved with libcst's scope metadata (:mod:`tpu_compat.migrate.analysis`,
the one parse upgrade edits too), and receivers are typed flow-insensitively
after the whole module is visited, so a function may use a global strategy
assigned below it. A receiver is a
strategy with **high** confidence when it was assigned from a strategy
constructor or ``tf.distribute.get_strategy()``, is a parameter named
``strategy``/``*_strategy``/``distribution`` or annotated as a Strategy, is
an attribute such as ``self.strategy`` or ``model._distribution_strategy``,
or is the ``.extended`` of one of those. A method name on any other object
is reported with **low** confidence, except names too common to mean
anything without a strategy (``reduce``, ``unwrap``, ``initialize``), and a
receiver known to be a module or class (``functools.reduce``,
``tf.__internal__.decorator.unwrap``) is never reported.

Every file goes through Python's own parser (the judge of "is this Python
3"), so unparseable files are always reported; only files that can hold a
finding (:mod:`tpu_compat.migrate._prefilter`, a conservative test on the
code's words and Python's tree) are then parsed by libcst and analysed. A file
whose code writes no word a finding needs is only compiled (:func:`check_syntax`).
"""

import ast
import contextlib
import sys
import warnings
from typing import Sequence

from tpu_compat import settings
from tpu_compat.migrate import _prefilter, sources
from tpu_compat.migrate._findings import (HIGH, LOW, FileError, FileScan, Finding, ScanResult,
                                          Site)

__all__ = [
    "Finding",
    "FileError",
    "FileScan",
    "HIGH",
    "LOW",
    "ScanResult",
    "Site",
    "analyze_text",
    "check_syntax",
    "deep_recursion",
    "describe_syntax_error",
    "parse",
    "scan_bytes",
    "scan_file",
    "scan_paths",
    "scan_source",
    "scan_text",
    "too_large",
]


# Long `a + b + c + ...` chains nest one level per term; the analysis and the
# rewrite recurse per level. Python 3.11+ recursion between Python functions
# does not grow the C stack, so a larger limit is safe there.
_RECURSION_LIMIT = 20000 if sys.version_info >= (3, 11) else 4000


@contextlib.contextmanager
def deep_recursion():
    """Lets deeply nested (machine-written) expressions be analysed."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def parse(text, path="<string>"):
    """ast.parse, quiet: invalid escapes in old code are not our finding."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=path)


def check_syntax(text, path="<string>"):
    """Raises what :func:`parse` raises when Python cannot parse ``text``.

    Compiling to bytecode runs the same parser and builds no Python objects for
    the tree: on tf_keras it takes about a quarter of ast.parse's time.
    Compiling also refuses some code the parser accepts (``return`` outside a
    function, ...): whatever it raises, parse() gives the verdict.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, path, "exec", dont_inherit=True)
            return
        except Exception:  # pylint: disable=broad-except  # parse() decides, below
            pass
    parse(text, path)


def describe_syntax_error(error):
    where = f" (line {error.lineno})" if error.lineno else ""
    return f"cannot parse as Python 3: {error.msg}{where}"


def too_large(size, max_bytes):
    """Why a file of ``size`` bytes is skipped, or None when within ``max_bytes``."""
    if max_bytes is None or size <= max_bytes:
        return None
    return (f"{size} bytes, over the per-file limit of {max_bytes} "
            f"(--max-file-bytes, {settings.MAX_FILE_BYTES_VAR}): skipped")


def analyze_text(text, path="<string>", cell=None, max_bytes=None, size=None):
    """The shared libcst parse of one chunk of text with its findings, or None
    when the text cannot contain any. Raises SyntaxError if Python cannot parse
    it, cst.ParserSyntaxError if libcst cannot, sources.SourceError if it may
    hold a finding but is larger than ``max_bytes`` (libcst's cost and memory
    grow with the size: Python's own parser and the prefilter stay cheap);
    ``size`` is the file's size in bytes, when known (else the text's)."""
    words = _prefilter.code_words(text)
    if not _prefilter.words_name_a_rule(text, words):
        check_syntax(text, path)
        return None
    tree = parse(text, path)
    if not _prefilter.tree_may_have_findings(text, tree, words):
        return None
    if max_bytes is not None and (size is not None or len(text) > max_bytes // 4):
        if size is None:
            size = len(text.encode("utf-8", "surrogatepass"))
        reason = too_large(size, max_bytes)
        if reason is not None:
            raise sources.SourceError(reason)
    # libcst loads only for files that may hold a finding: scanning a tree
    # that mentions no legacy name stays as light as Python's own parser.
    from tpu_compat.migrate import analysis  # pylint: disable=import-outside-toplevel
    with deep_recursion():
        result = analysis.analyze(text, path, cell)
    result.findings.sort(key=Finding.sort_key)
    return result


def scan_text(text, path="<string>", cell=None, max_bytes=None, size=None):
    """Findings in one chunk of Python text. Raises SyntaxError if it does not parse."""
    result = analyze_text(text, path, cell, max_bytes, size)
    return result.findings if result is not None else []


def _scan_chunks(source, max_bytes):
    findings = []
    for chunk in source.chunks:
        where = f"cell {chunk.cell}: " if chunk.cell is not None else ""
        try:
            size = len(source.raw) if chunk.cell is None else None
            findings.extend(scan_text(chunk.text, source.path, chunk.cell, max_bytes, size))
        except SyntaxError as error:
            raise sources.SourceError(where + describe_syntax_error(error)) from None
        except (RecursionError, MemoryError):
            raise sources.SourceError(where + "too deeply nested to analyse") from None
        except sources.SourceError as error:  # libcst could not parse it
            raise sources.SourceError(where + str(error)) from None
        except ValueError as error:  # e.g. source with NUL bytes in a notebook cell
            raise sources.SourceError(where + f"cannot parse: {error}") from None
    findings.sort(key=Finding.sort_key)
    return findings


def scan_source(source: sources.SourceFile, max_bytes=None) -> FileScan:
    """Scans a read file; ``max_bytes``: the per-file limit (see analyze_text)."""
    try:
        return FileScan(source.path, _scan_chunks(source, max_bytes), source=source)
    except sources.SourceError as error:
        return FileScan(source.path, [], FileError(source.path, str(error)), source)


def scan_bytes(path, raw, max_bytes=None) -> FileScan:
    """Scans ``raw`` as the contents of ``path``; problems become ``FileScan.error``."""
    try:
        source = sources.source_from_bytes(path, raw)
    except sources.SourceError as error:
        return FileScan(path, [], FileError(path, str(error)))
    return scan_source(source, max_bytes)


def scan_file(path, max_bytes=None) -> FileScan:
    """Reads and scans one file; problems become ``FileScan.error``, never raise."""
    try:
        return scan_bytes(path, sources.read_bytes(path), max_bytes)
    except sources.SourceError as error:
        return FileScan(path, [], FileError(path, str(error)))


def scan_paths(paths: Sequence[str], exclude: Sequence[str] = (), max_bytes=None) -> ScanResult:
    """Scans every Python file and notebook under ``paths``.

    Raises sources.MissingPathError if a path does not exist.
    """
    findings, errors, scanned = [], [], 0
    for path in sources.discover(paths, exclude):
        result = scan_file(path, max_bytes)
        if result.error is not None:
            errors.append(result.error)
        else:
            scanned += 1
            findings.extend(result.findings)
    return ScanResult(scanned, findings, errors)
