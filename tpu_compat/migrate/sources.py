"""Finding, reading and safely writing the files that scan and upgrade see.

Reading never raises for a bad file: binary files, undecodable bytes and
broken notebooks become :class:`SourceError`, which the callers turn into an
``errors`` entry. Writing is atomic: a temporary file in the target's own
directory is filled, given the original's permissions and renamed over the
target, so a failure at any point leaves the original intact.
"""

import dataclasses
import fnmatch
import io
import json
import os
import re
import stat
import tokenize
from typing import Iterable, Iterator, List, Optional, Sequence

from tpu_compat._atomic import TEMP_SUFFIX, atomic_write

__all__ = [
    "CodeChunk",
    "MissingPathError",
    "SourceError",
    "SourceFile",
    "atomic_write",
    "decode_python",
    "discover",
    "in_place_problem",
    "link_problem",
    "stale_temp_files",
    "is_notebook",
    "read_bytes",
    "read_source",
    "source_from_bytes",
]

PYTHON_SUFFIX = ".py"
NOTEBOOK_SUFFIX = ".ipynb"
# Directories that never hold a project's own sources. Hidden directories
# (.git, .tox, .venv, ...) are skipped as well.
SKIPPED_DIRECTORIES = frozenset({"__pycache__"})


class SourceError(Exception):
    """A file that cannot be read as Python source; the message says why."""


class MissingPathError(Exception):
    """A path given on the command line does not exist."""


@dataclasses.dataclass(frozen=True)
class CodeChunk:
    """Python text to analyze: a whole ``.py`` file or one notebook cell.

    ``cell`` is the 1-based index of the cell among all of a notebook's cells
    (None for a ``.py`` file); line numbers of findings count within it.
    """
    text: str
    cell: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """A readable source file.

    ``raw`` is kept so that callers can leave a file byte-for-byte unchanged;
    ``encoding`` is the one Python itself would use (PEP 263 cookie or BOM).
    """
    path: str
    raw: bytes
    encoding: str
    chunks: Sequence[CodeChunk]
    notebook: bool = False

    @property
    def text(self):
        """The whole decoded text of a ``.py`` file."""
        return self.chunks[0].text if self.chunks else ""


def is_notebook(path):
    return path.endswith(NOTEBOOK_SUFFIX)


def _is_candidate(name):
    return name.endswith(PYTHON_SUFFIX) or name.endswith(NOTEBOOK_SUFFIX)


def _excluded(path, patterns):
    """Whether ``path`` (or its last component) matches one of the globs."""
    if not patterns:
        return False
    posix = path.replace(os.sep, "/")
    name = os.path.basename(posix.rstrip("/"))
    return any(fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(name, pattern)
               for pattern in patterns)


def discover(paths: Iterable[str], exclude: Sequence[str] = (),
             skip_under: Optional[str] = None) -> Iterator[str]:
    """The ``.py`` and ``.ipynb`` files under ``paths``, in a stable order.

    A file named explicitly is yielded whatever its suffix; directories are
    walked in sorted order without following symlinks to directories.
    ``exclude`` globs are matched against each file's and directory's path
    (as displayed) and against its name, so both ``--exclude tests`` and
    ``--exclude 'src/*_test.py'`` work. ``skip_under`` (an upgrade's output
    directory) is never descended into. Raises MissingPathError up front for
    a path that does not exist.
    """
    paths = list(paths)
    for path in paths:
        if not os.path.lexists(path):
            raise MissingPathError(f"{path}: no such file or directory")
    skip_real = os.path.realpath(skip_under) if skip_under else None
    seen = set()
    for path in paths:
        path = os.path.normpath(path)
        if _excluded(path, exclude):
            continue
        if not os.path.isdir(path):
            if path not in seen:
                seen.add(path)
                yield path
            continue
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(
                d for d in subdirs
                if not d.startswith(".") and d not in SKIPPED_DIRECTORIES
                and not _excluded(os.path.join(directory, d), exclude)
                and not (skip_real and os.path.realpath(os.path.join(directory, d)) == skip_real))
            for name in sorted(files):
                file_path = os.path.normpath(os.path.join(directory, name))
                if (_is_candidate(name) and file_path not in seen
                        and not _excluded(file_path, exclude)):
                    seen.add(file_path)
                    yield file_path


def decode_python(raw: bytes):
    """``(text, encoding)`` of Python source bytes, as the interpreter reads them.

    Raises SourceError for binary data or bytes that are not in the file's
    encoding (UTF-8 unless a coding cookie or BOM says otherwise).
    """
    if b"\0" in raw:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" not in str(error):
            raise SourceError(f"bad encoding declaration: {error}") from None
        # Non-UTF-8 bytes in the first two lines and no cookie: say so plainly.
        encoding = "utf-8"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        label = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
        raise SourceError(f"not valid {label} (byte 0x{raw[error.start]:02x} at offset "
                          f"{error.start})") from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
    return text, encoding


# IPython syntax that is not Python: line magics, shell escapes and
# `x = !cmd` captures. Replaced by `pass` at the same indentation so that the
# cell still parses and every other line keeps its number and columns.
_MAGIC_LINE = re.compile(r"^([ \t]*)(?:[%!]|[A-Za-z_]\w*\s*=\s*[%!]).*$", re.MULTILINE)


def _cell_source(cell):
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def notebook_chunks(raw: bytes) -> List[CodeChunk]:
    """The Python code cells of a Jupyter notebook (nbformat 4 JSON).

    Cell magics (``%%bash`` ...) make a whole cell not-Python, so it is
    skipped; a notebook whose kernel language is not Python has no chunks.
    """
    try:
        notebook = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise SourceError(f"notebook is not valid UTF-8 (offset {error.start})") from None
    except ValueError as error:
        raise SourceError(f"notebook is not valid JSON: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SourceError("not a Jupyter notebook (no 'cells' list)")
    metadata = notebook.get("metadata")
    language = None
    if isinstance(metadata, dict):
        info = metadata.get("language_info")
        if isinstance(info, dict):
            language = info.get("name")
    if isinstance(language, str) and language.lower() != "python":
        return []
    chunks = []
    for index, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = _cell_source(cell)
        if source.lstrip().startswith("%%"):
            continue
        chunks.append(CodeChunk(_MAGIC_LINE.sub(r"\1pass", source), cell=index))
    return chunks


# What a path that is not a regular file is, for the message that skips it.
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _not_regular(mode):
    """SourceError saying what a non-regular file is: reading it could block
    (a FIFO nobody writes) or never end (/dev/zero)."""
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    if kind == "a directory":
        return SourceError("is a directory")
    return SourceError(f"skipped: {kind}, not a regular file")


def read_bytes(path: str) -> bytes:
    """The bytes of the regular file ``path``; SourceError for anything else.

    A FIFO, device or socket is never opened: ``stat`` says what it is first,
    and the opened file is checked again (``O_NONBLOCK`` keeps a FIFO swapped
    in meanwhile from blocking the open).
    """
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(mode)
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                             | getattr(os, "O_NOCTTY", 0))
        with open(descriptor, "rb") as stream:
            mode = os.fstat(descriptor).st_mode
            if not stat.S_ISREG(mode):
                raise _not_regular(mode)
            return stream.read()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def source_from_bytes(path: str, raw: bytes) -> SourceFile:
    """``raw`` as the Python file or notebook ``path``; SourceError if it is neither."""
    if is_notebook(path):
        return SourceFile(path, raw, "utf-8", notebook_chunks(raw), notebook=True)
    text, encoding = decode_python(raw)
    return SourceFile(path, raw, encoding, (CodeChunk(text),))


def read_source(path: str) -> SourceFile:
    """Reads ``path`` as a Python file or notebook; SourceError if it cannot be."""
    return source_from_bytes(path, read_bytes(path))


# --- what upgrade may write ----------------------------------------------------------


def link_problem(path: str) -> Optional[str]:
    """Why upgrade does not touch ``path``: a symbolic link (it could lead out
    of the tree), or None."""
    if not os.path.islink(path):
        return None
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return f"is a symbolic link (to {target}): not followed, left unchanged"


def in_place_problem(path: str, force: bool) -> Optional[str]:
    """Why ``path`` is not rewritten in place, or None.

    A file with other hard links would become a separate file (the atomic
    write replaces the name, not the inode the other names share), so it is
    refused. A read-only file is rewritten (and stays read-only) only with
    ``force``.
    """
    try:
        info = os.stat(path)
    except OSError as error:
        return f"cannot write: {error.strerror or error}"
    if info.st_nlink > 1:
        return (f"has {info.st_nlink} hard links and rewriting it would split them: "
                f"left unchanged (upgrade a copy, or use --output)")
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) and not force:
        return "is read-only: left unchanged (--force rewrites it, keeping it read-only)"
    return None


# atomic_write's temporary files: `.NAME.<random>.tpu-compat-tmp`.
_TEMP_FILE = re.compile(r"\..+\.[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX))


def stale_temp_files(directory: str) -> List[str]:
    """atomic_write's temporary files in ``directory``: a run killed while
    writing leaves one behind (a finished or failed write removes its own)."""
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    return sorted(os.path.join(directory, name) for name in names
                  if _TEMP_FILE.fullmatch(name))
