"""A regression suite: which scripts, and recording or checking each one.

Directories are searched recursively, in sorted order, for ``*.py`` files;
names starting with ``.`` or ``_`` (hidden files, ``__init__.py``, helper
modules, ``__pycache__``) and the golden directory itself are skipped. A
script's golden file is its path relative to the directory it was found in
(or its file name, when given directly), with ``.json`` for ``.py``.

Each script is measured in its own process; whatever one script does, the
others still run. An outcome is ``passed``, ``failed`` (numbers differ from
the golden file) or ``error`` (no numbers to compare: the script failed, hung
or reported nothing, or its golden file or sidecar is unusable).
"""

import dataclasses
import os
from typing import Optional, Tuple

from tpu_compat import _paths

from tpu_compat.regress import compare, golden, measure, script_process, sidecar
from tpu_compat.regress.measure import launch_for, tolerances

__all__ = ["DiscoveryError", "Outcome", "Script", "check", "discover", "golden_path",
           "record", "run_suite"]

PASSED, FAILED, ERROR = "passed", "failed", "error"


class DiscoveryError(Exception):
    """The paths given do not name a usable set of scripts (a usage error)."""


@dataclasses.dataclass(frozen=True)
class Script:
    path: str
    golden_name: str  # relative, "/"-separated, without ".py"


@dataclasses.dataclass(frozen=True)
class Outcome:
    script: Script
    status: str
    message: str
    golden_path: str
    measurement: Optional[measure.Measurement] = None
    comparison: Optional[compare.Comparison] = None
    notes: Tuple[str, ...] = ()

    @property
    def seconds(self):
        return self.measurement.run.seconds if self.measurement else 0.0


def _skipped_name(name):
    return name.startswith((".", "_"))


def _walk(directory, skip_dirs):
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not _skipped_name(d)
                         and os.path.abspath(os.path.join(root, d)) not in skip_dirs)
        found += [os.path.join(root, f) for f in sorted(files)
                  if f.endswith(".py") and not _skipped_name(f)]
    return found


def discover(paths, skip_dirs=()):
    """The scripts under ``paths``; DiscoveryError for missing paths or clashes."""
    skip = {os.path.abspath(d) for d in skip_dirs}
    scripts = []
    for given in paths:
        if os.path.isfile(given):
            if not given.endswith(".py"):
                raise DiscoveryError(f"{given}: not a Python script (*.py)")
            scripts.append(Script(given, os.path.splitext(os.path.basename(given))[0]))
        elif os.path.isdir(given):
            for path in _walk(given, skip):
                relative = os.path.relpath(path, given)
                scripts.append(Script(path, os.path.splitext(relative)[0].replace(os.sep, "/")))
        else:
            raise DiscoveryError(_paths.not_a_regular_file(given, or_directory=True))
    if not scripts:
        raise DiscoveryError(f"no scripts (*.py) found in {', '.join(paths)}")
    owners = {}
    for script in scripts:
        other = owners.setdefault(script.golden_name, script)
        if other is not script:
            raise DiscoveryError(f"{other.path} and {script.path} would share the "
                                 f"golden file {script.golden_name}.json")
    return scripts


def _version_notes(recorded, current):
    notes = []
    for name in ("tensorflow", "tpu_compat"):
        before, now = recorded.get(name), current.get(name)
        if before and now and before != now:
            notes.append(f"recorded with {name} {before}, now {now}")
    return tuple(notes)


def golden_path(golden_dir, script):
    return os.path.join(golden_dir, script.golden_name + ".json")


def record(script, golden_dir, options, command=script_process.tpu_compat_command):
    """Measures ``script`` and writes its golden file (not when it fails)."""
    path = golden_path(golden_dir, script)
    try:
        config = sidecar.load(script.path)
    except sidecar.SidecarError as error:
        return Outcome(script, ERROR, str(error), path)
    result = measure.measure(launch_for(script.path, config, options), config, command)
    if not result.ok:
        return Outcome(script, ERROR, f"{result.problem}; {path} left unchanged",
                       path, result)
    try:
        golden.write(path, golden.Golden(
            script=script.path.replace(os.sep, "/"), replicas=options.replicas,
            seed=options.seed, numbers=result.numbers,
            recorded_with=golden.current_versions()))
    except OSError as error:
        return Outcome(script, ERROR, f"{path}: cannot write the golden file: {error}",
                       path, result)
    return Outcome(script, PASSED, f"recorded {len(result.numbers)} numbers to {path}",
                   path, result)


def check(script, golden_dir, options, command=script_process.tpu_compat_command):
    """Measures ``script`` and compares it with its golden file."""
    path = golden_path(golden_dir, script)
    try:
        config = sidecar.load(script.path)
        expected = golden.load(path)
    except (sidecar.SidecarError, golden.GoldenError) as error:
        return Outcome(script, ERROR, str(error), path)
    mismatch = expected.mismatch(options.replicas, options.seed)
    if mismatch:
        return Outcome(script, ERROR, f"{path}: {mismatch}", path)
    result = measure.measure(launch_for(script.path, config, options), config, command)
    notes = _version_notes(expected.recorded_with, golden.current_versions())
    if not result.ok:
        return Outcome(script, ERROR, result.problem, path, result, notes=notes)
    rtol, atol = tolerances(config, options)
    comparison = compare.compare(expected.numbers, result.numbers, rtol, atol)
    return Outcome(script, PASSED if comparison.equal else FAILED,
                   comparison.summary(), path, result, comparison, notes)


def run_suite(scripts, golden_dir, mode, options,
              command=script_process.tpu_compat_command,
              on_outcome=None):
    """Records (``mode="record"``) or checks every script, one after another.

    ``on_outcome(outcome)`` is called as each script finishes, so a long suite
    can show progress.
    """
    step = {"record": record, "check": check}[mode]
    outcomes = []
    for script in scripts:
        outcome = step(script, golden_dir, options, command)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes
