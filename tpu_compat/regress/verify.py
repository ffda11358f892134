"""``verify``: does a migrated script compute what its legacy original did?

The legacy script runs under the shim (warnings shown, not fatal, TF 1.x/2.0
conveniences on); the migrated one with ``--warnings=error --strict on``, so
any legacy API left in it fails the run, and its modern calls follow TF
2.21's TPUStrategy rules (docs/emulated_tpu.md, strict mode): what passes here
does not rely on the shim's leniency. Both run on the same emulated TPU with
the same seed, and their numbers are compared as ``regress --check`` compares
with a golden file. Each script uses its own sidecar; a migrated copy without
one uses the legacy script's (an upgraded copy written elsewhere reports the
same way).
"""

import dataclasses
import os
import re
from typing import Optional

from tpu_compat.regress import compare, measure, script_process, sidecar
from tpu_compat.regress.measure import launch_for, tolerances

__all__ = ["VerifyResult", "verify"]

_LEGACY_WARNING = re.compile(r"TPUCompatDeprecationWarning: (?P<message>.+)$", re.MULTILINE)
# fidelity tpu's lint, also an error under --warnings=error (docs/emulated_tpu.md).
_LINT_WARNING = re.compile(r"TPUSemanticsWarning: (?P<message>.+)$", re.MULTILINE)
# The last line of a Python traceback: `SomeError: message` (dotted names too).
_EXCEPTION_LINE = re.compile(r"^(?P<error>[A-Za-z_][\w.]*: .+)$", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last):"


def _last_exception(stderr):
    """``Type: message`` of the last traceback in ``stderr``, if there is one."""
    start = stderr.rfind(_TRACEBACK)
    if start < 0:
        return None
    error = None
    for error in _EXCEPTION_LINE.finditer(stderr, start):
        pass  # the last one ends the traceback
    return error.group("error").strip() if error else None


@dataclasses.dataclass(frozen=True)
class VerifyResult:
    legacy: Optional[measure.Measurement]
    migrated: Optional[measure.Measurement]
    comparison: Optional[compare.Comparison] = None
    problem: Optional[str] = None  # why nothing could be compared

    @property
    def passed(self):
        return self.problem is None and self.comparison is not None and self.comparison.equal


def _migrated_problem(path, result):
    warning = None
    for warning in _LEGACY_WARNING.finditer(result.run.stderr):
        pass  # the last one is the warning that was raised
    if warning is not None and not result.run.timed_out and result.run.returncode:
        return (f"{path} still uses legacy TPU APIs, so it fails under "
                f"--warnings=error: {warning.group('message').strip()}")
    error = None if result.run.timed_out else _last_exception(result.run.stderr)
    lint = _LINT_WARNING.search(error or "")
    if lint is not None and result.run.returncode:
        return (f"{path} computes something differently on a TPU, which fails it under "
                f"--warnings=error (--fidelity cpu turns the check off): "
                f"{lint.group('message').strip()}")
    if error is not None:
        # Most often a call TF 2.21's TPUStrategy rejects (strict mode).
        return f"{path} (migrated) {result.problem}: {error}"
    return f"{path} (migrated) {result.problem}"


def verify(legacy_path, migrated_path, options, command=script_process.tpu_compat_command):
    """Runs both scripts with ``options`` (a RunOptions) and compares their numbers."""
    try:
        legacy_config = sidecar.load(legacy_path)
        migrated_config = (sidecar.load(migrated_path)
                           if os.path.exists(sidecar.path_for(migrated_path))
                           else legacy_config)
    except sidecar.SidecarError as error:
        return VerifyResult(None, None, problem=str(error))
    legacy = measure.measure(
        launch_for(legacy_path, legacy_config, options, "once", strict="off"),
        legacy_config, command)
    migrated = measure.measure(
        launch_for(migrated_path, migrated_config, options, "error", strict="on"),
        migrated_config, command)
    if not legacy.ok:
        return VerifyResult(legacy, migrated, problem=f"{legacy_path} (legacy) {legacy.problem}")
    if not migrated.ok:
        return VerifyResult(legacy, migrated, problem=_migrated_problem(migrated_path, migrated))
    rtol, atol = tolerances(legacy_config, options)
    return VerifyResult(legacy, migrated,
                        compare.compare(legacy.numbers, migrated.numbers, rtol, atol))
