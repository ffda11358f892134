"""Per-script settings: the optional ``SCRIPT.regress.toml`` next to ``SCRIPT.py``.

Every key is optional; unknown keys are errors, so a typo cannot silently
turn a check off::

    args = ["--epochs", "2"]        # command-line arguments for the script
    tf1 = true                      # run with `tpu-compat run --tf1`
    timeout = 300                   # seconds; overrides --timeout
    rtol = 1e-3                     # override --rtol / --atol for this script
    atol = 1e-5
    standard_lines = true           # KEY: number, KEY=number, RESULT {json} (default true)
    ignore = ["seconds*"]           # keys (globs) neither recorded nor compared

    [patterns]                      # more numbers from stdout: NAME = regex
    accuracy = 'final accuracy ([0-9.]+)%'
    loss = 'step (?P<key>\\d+): loss (?P<value>\\S+)'

    [files]                         # numbers from files the script writes
    weights = "out/weights.npy"
    model = { path = "ckpt", format = "checkpoint" }
"""

import dataclasses
import os
import re
from typing import Optional, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

from tpu_compat import _config
from tpu_compat.regress import artifacts

__all__ = ["FileSpec", "Pattern", "Sidecar", "SidecarError", "load", "path_for"]

SUFFIX = ".regress.toml"


class SidecarError(Exception):
    """A sidecar file that cannot be used; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A regex over stdout lines: group ``value`` (or 1) is the number.

    With a group ``key``, each match is recorded as ``NAME[KEY]``.
    """
    name: str
    regex: "re.Pattern"

    @property
    def value_group(self):
        return "value" if "value" in self.regex.groupindex else 1

    @property
    def has_key(self):
        return "key" in self.regex.groupindex


@dataclasses.dataclass(frozen=True)
class FileSpec:
    """A file the script writes, read for numbers after the run."""
    name: str
    path: str
    format: str


@dataclasses.dataclass(frozen=True)
class Sidecar:
    path: Optional[str] = None
    args: Tuple[str, ...] = ()
    tf1: bool = False
    timeout: Optional[float] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    standard_lines: bool = True
    ignore: Tuple[str, ...] = ()
    patterns: Tuple[Pattern, ...] = ()
    files: Tuple[FileSpec, ...] = ()


def path_for(script):
    """``train.py`` -> ``train.regress.toml`` (beside it)."""
    root, _ = os.path.splitext(script)
    return root + SUFFIX


def load(script):
    """The sidecar of ``script``; the defaults when it has none."""
    path = path_for(script)
    if not os.path.exists(path):
        return Sidecar()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SidecarError(f"{path}: cannot read the sidecar: {error}") from None
    return _Parser(path).parse(data)


class _Parser:
    def __init__(self, path):
        self.path = path

    def error(self, message):
        return SidecarError(f"{self.path}: {message}")

    def parse(self, data):
        known = {field.name for field in dataclasses.fields(Sidecar)} - {"path"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise self.error(f"unknown key(s) {', '.join(unknown)}; allowed: "
                             f"{', '.join(sorted(known))}")
        return Sidecar(
            path=self.path,
            args=self.strings(data, "args"),
            tf1=self.boolean(data, "tf1", False),
            timeout=self.seconds(data, "timeout"),
            rtol=self.non_negative_number(data, "rtol"),
            atol=self.non_negative_number(data, "atol"),
            standard_lines=self.boolean(data, "standard_lines", True),
            ignore=self.strings(data, "ignore"),
            patterns=self.patterns(data.get("patterns", {})),
            files=self.files(data.get("files", {})))

    def strings(self, data, key):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"{key} must be a list of strings, got {value!r}")
        return tuple(value)

    def boolean(self, data, key, default):
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false, got {value!r}")
        return value

    def number(self, data, key):
        value = data.get(key)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float))):
            raise self.error(f"{key} must be a number, got {value!r}")
        return value

    def positive_number(self, data, key):
        value = self.number(data, key)
        if value is not None and value <= 0:
            raise self.error(f"{key} must be positive, got {value!r}")
        return value

    def seconds(self, data, key):
        """A time limit: positive and at most a day (TOML has inf and 1e308,
        which Python's waits refuse with OverflowError)."""
        value = self.positive_number(data, key)
        if value is not None and not value <= _config.MAX_SECONDS:
            raise self.error(f"{key} must be at most {_config.MAX_SECONDS:g} seconds, "
                             f"got {value!r}")
        return value

    def non_negative_number(self, data, key):
        value = self.number(data, key)
        if value is not None and value < 0:
            raise self.error(f"{key} must not be negative, got {value!r}")
        return value

    def patterns(self, table):
        if not isinstance(table, dict):
            raise self.error("[patterns] must be a table of NAME = 'regex'")
        patterns = []
        for name, source in table.items():
            if not isinstance(source, str):
                raise self.error(f"patterns.{name} must be a regex string, got {source!r}")
            try:
                regex = re.compile(source)
            except re.error as error:
                raise self.error(f"patterns.{name} is not a valid regex: {error}") from None
            if regex.groups == 0:
                raise self.error(f"patterns.{name} needs a group around the number, "
                                 f"e.g. '(?P<value>\\S+)'")
            patterns.append(Pattern(name, regex))
        return tuple(patterns)

    def files(self, table):
        if not isinstance(table, dict):
            raise self.error("[files] must be a table of NAME = 'path' or "
                             "NAME = { path = '...', format = '...' }")
        specs = []
        for name, entry in table.items():
            if isinstance(entry, str):
                entry = {"path": entry}
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise self.error(f"files.{name} must be a path or a table with a path")
            extra = sorted(set(entry) - {"path", "format"})
            if extra:
                raise self.error(f"files.{name}: unknown key(s) {', '.join(extra)}")
            file_format = entry.get("format") or artifacts.format_for(entry["path"])
            if file_format not in artifacts.FORMATS:
                raise self.error(
                    f"files.{name}: format {file_format!r} is not one of "
                    f"{', '.join(artifacts.FORMATS)}" if "format" in entry else
                    f"files.{name}: cannot tell the format of {entry['path']!r} "
                    f"from its name; add format = one of {', '.join(artifacts.FORMATS)}")
            specs.append(FileSpec(name, entry["path"], file_format))
        return tuple(specs)
