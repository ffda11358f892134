"""One measurement: run a script once and capture the numbers it reported."""

import dataclasses
from typing import Dict, Optional

from tpu_compat.regress import capture, compare, script_process

__all__ = ["Measurement", "RunOptions", "measure", "launch_for", "tolerances"]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What every script of a check runs with (a sidecar may refine some)."""
    replicas: int
    timeout: float
    seed: Optional[int]
    rtol: Optional[float] = None  # None: the sidecar's, else compare.DEFAULT_RTOL
    atol: Optional[float] = None
    cwd: Optional[str] = None  # None: the current directory, as `tpu-compat run`
    backend: Optional[str] = None  # None: $TPU_COMPAT_BACKEND, else the CPU emulation
    fidelity: Optional[str] = None  # None: $TPU_COMPAT_FIDELITY, else regress's (settings.py)
    numerics: Optional[str] = None  # None: $TPU_COMPAT_NUMERICS, else exact


def launch_for(path, config, options, warnings=None, strict=None):
    """The Launch of script ``path`` with its sidecar ``config``."""
    return script_process.Launch(script=path, replicas=options.replicas,
                                 timeout=config.timeout or options.timeout,
                                 args=config.args, tf1=config.tf1, warnings=warnings,
                                 strict=strict, seed=options.seed, cwd=options.cwd,
                                 backend=options.backend, fidelity=options.fidelity,
                                 numerics=options.numerics)


def tolerances(config, options):
    """(rtol, atol): the sidecar's, else the command line's, else the defaults.

    The sidecar wins because it is specific: a script known to be noisy keeps
    its looser tolerance when the whole suite is run with a tighter one.
    """
    def pick(from_sidecar, from_options, default):
        for value in (from_sidecar, from_options):
            if value is not None:
                return value
        return default
    return (pick(config.rtol, options.rtol, compare.DEFAULT_RTOL),
            pick(config.atol, options.atol, compare.DEFAULT_ATOL))


@dataclasses.dataclass(frozen=True)
class Measurement:
    script: str
    run: script_process.RunResult
    numbers: Optional[Dict[str, float]]
    problem: Optional[str] = None  # why there are no numbers

    @property
    def ok(self):
        return self.problem is None


def _nothing_reported(sidecar):
    what = ("no `KEY: number`, `KEY=number` or `RESULT {json}` line on stdout"
            if sidecar.standard_lines else "the standard lines are off")
    if sidecar.patterns or sidecar.files:
        what += f", and nothing that {sidecar.path} selects"
    return f"reported no numbers ({what})"


def measure(launch, sidecar, command=script_process.tpu_compat_command):
    """Runs ``launch`` and captures its numbers as its sidecar says."""
    result = script_process.run(launch, command)
    problem, numbers = None, None
    if result.timed_out:
        problem = f"timed out after {launch.timeout:g} s"
    elif result.returncode != 0:
        problem = f"exited with code {result.returncode}"
    else:
        try:
            numbers = capture.capture(result.stdout, sidecar, launch.cwd or ".",
                                      result.started_at)
        except capture.CaptureError as error:
            problem = str(error)
        else:
            if not numbers:
                problem, numbers = _nothing_reported(sidecar), None
    return Measurement(launch.script, result, numbers, problem)
