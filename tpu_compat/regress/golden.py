"""Golden files: the numbers a script reported, with how they were obtained.

One JSON file per script, ``GOLDEN_DIR/<script path without .py>.json``::

    {
      "format": "tpu-compat-regress-golden",
      "format_version": 1,
      "script": "tf1_linear_regression.py",
      "replicas": 8,
      "seed": 0,
      "recorded_with": {"tpu_compat": "0.1.0", "tensorflow": "2.21.0", "python": "3.11.7"},
      "numbers": {"loss_after_step_10": 3.447257, "weight_sum": 35.998978}
    }

``numbers`` keep the order the script reported them in. Non-finite values
are the strings ``"nan"``, ``"inf"`` and ``"-inf"`` (JSON has no NaN). A
check needs the golden file's replica count and seed, since both change
numbers; versions are informational (they differ after an upgrade, which is
what the check is for).
"""

import dataclasses
import importlib.metadata
import json
import math
import os
import platform
from typing import Dict, Optional

from tpu_compat import _config
from tpu_compat._atomic import atomic_write
from tpu_compat._version import __version__

__all__ = ["FORMAT", "Golden", "GoldenError", "current_versions", "load", "write"]

FORMAT = "tpu-compat-regress-golden"
FORMAT_VERSION = 1
_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-macos",
                             "tf-nightly")
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class GoldenError(Exception):
    """A golden file that is missing, unreadable or does not fit; names the file."""


@dataclasses.dataclass(frozen=True)
class Golden:
    script: str
    replicas: int
    seed: Optional[int]
    numbers: Dict[str, float]
    recorded_with: Dict[str, Optional[str]] = dataclasses.field(default_factory=dict)

    def mismatch(self, replicas, seed):
        """Why this golden file cannot check a run with ``replicas`` and ``seed``."""
        if self.replicas != replicas:
            return (f"recorded with {self.replicas} replicas, but this check runs "
                    f"with {replicas}; check with --replicas {self.replicas}, or "
                    f"record again")
        if self.seed != seed:
            def describe(value):
                return "no seed" if value is None else f"seed {value}"
            return (f"recorded with {describe(self.seed)}, but this check uses "
                    f"{describe(seed)}; check with the same seed, or record again")
        return None


def current_versions():
    """Versions of what produced the numbers (no TensorFlow import)."""
    tensorflow = None
    for distribution in _TENSORFLOW_DISTRIBUTIONS:
        try:
            tensorflow = importlib.metadata.version(distribution)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"tpu_compat": __version__, "tensorflow": tensorflow,
            "python": platform.python_version()}


def _encode(value):
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _decode(path, key, value):
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GoldenError(f"{path}: golden file is damaged: numbers[{key!r}] is "
                          f"{value!r}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer literal past float's range
        number = math.inf
    if math.isinf(number):
        # JSON's 1e999 parses as infinity; recorded infinities are "inf"/"-inf".
        raise GoldenError(f"{path}: golden file is damaged: numbers[{key!r}] is beyond "
                          f"float's range (infinities are written \"inf\" or \"-inf\")")
    return number


def write(path, golden):
    """Writes ``golden`` to ``path`` atomically (a crash leaves the old file)."""
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "script": golden.script,
        "replicas": golden.replicas,
        "seed": golden.seed,
        "recorded_with": golden.recorded_with,
        "numbers": {key: _encode(value) for key, value in golden.numbers.items()},
    }
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def load(path):
    """Reads a golden file; GoldenError (naming ``path``) for any problem."""
    if not os.path.exists(path):
        raise GoldenError(f"{path}: no golden file; record one with --record")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError) as error:
        raise GoldenError(f"{path}: cannot read the golden file: {error}") from None
    except ValueError as error:
        raise GoldenError(f"{path}: golden file is not valid JSON ({error}); "
                          f"record it again with --record") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GoldenError(f"{path}: not a tpu-compat regress golden file "
                          f"(it has no \"format\": \"{FORMAT}\")")
    if data.get("format_version") != FORMAT_VERSION:
        raise GoldenError(f"{path}: golden file format_version "
                          f"{data.get('format_version')!r} is not supported "
                          f"(this tpu_compat reads {FORMAT_VERSION})")
    replicas, seed, numbers = data.get("replicas"), data.get("seed"), data.get("numbers")
    # The bounds --replicas and --seed accept: mismatch() suggests --replicas N.
    if (isinstance(replicas, bool) or not isinstance(replicas, int)
            or not 1 <= replicas <= _config.MAX_REPLICAS):
        raise GoldenError(f"{path}: golden file is damaged: \"replicas\" is {replicas!r} "
                          f"(allowed: 1 to {_config.MAX_REPLICAS})")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                             or not 0 <= seed <= _config.MAX_SEED):
        raise GoldenError(f"{path}: golden file is damaged: \"seed\" is {seed!r} "
                          f"(allowed: 0 to {_config.MAX_SEED}, or null)")
    if not isinstance(numbers, dict):
        raise GoldenError(f"{path}: golden file is damaged: \"numbers\" is not an object")
    recorded_with = data.get("recorded_with")
    return Golden(
        script=str(data.get("script", "")), replicas=replicas, seed=seed,
        numbers={key: _decode(path, key, value) for key, value in numbers.items()},
        recorded_with=recorded_with if isinstance(recorded_with, dict) else {})
