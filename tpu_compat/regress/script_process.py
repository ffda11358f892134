"""Running one script in its own process, with a time limit.

Each script runs as ``python -m tpu_compat run --replicas N SCRIPT ARGS`` (the
command is a parameter, so tests can run plain ``python``), in its own
process group (:mod:`tpu_compat._process`): a timeout or a Ctrl-C ends
everything it started. Nothing a script does (exit code, hang, crash, silence)
raises here: it is all in the :class:`RunResult`.

The scripts run on the emulated TPU over logical CPU devices unless the user
chose a backend (``--backend`` or ``TPU_COMPAT_BACKEND``): ``auto`` would pick
a machine's GPUs, which may be fewer than the replicas asked for, and golden
files recorded on one machine must check on another.

They run with fidelity ``tpu`` (each replica step checked as a TPU compiler
would, docs/emulated_tpu.md#fidelity-would-a-tpu-compile-this-step) unless the
user chose one (``--fidelity`` or ``TPU_COMPAT_FIDELITY``): a regression check
answers "does this still work on our TPUs", and every scenario, example and
legacy program of tpu_compat's own suite passes under ``tpu``.
"""

import dataclasses
import os
import subprocess
import sys
import time
from typing import Optional, Tuple

from tpu_compat import _process, settings

__all__ = ["Launch", "RunResult", "chosen_backend", "chosen_fidelity", "python_command",
           "run", "tpu_compat_command"]

STDERR_TAIL_LINES = 20
_TPU_COMPAT_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class Launch:
    """How to run one script."""
    script: str
    replicas: int
    timeout: float
    args: Tuple[str, ...] = ()
    tf1: bool = False
    warnings: Optional[str] = None  # `tpu-compat run --warnings`; None: inherit
    strict: Optional[str] = None  # `tpu-compat run --strict`; None: inherit
    seed: Optional[int] = None
    cwd: Optional[str] = None
    backend: Optional[str] = None  # None: $TPU_COMPAT_BACKEND, else regress's default
    fidelity: Optional[str] = None  # None: $TPU_COMPAT_FIDELITY, else regress's default
    numerics: Optional[str] = None  # None: $TPU_COMPAT_NUMERICS, else exact
    numerics_ops: Optional[str] = None  # $TPU_COMPAT_NUMERICS_OPS (STEP:FILE); None: unset


@dataclasses.dataclass(frozen=True)
class RunResult:
    returncode: Optional[int]  # None when the script was killed at its timeout
    stdout: str
    stderr: str
    seconds: float
    started_at: float  # time.time() at the start, to tell fresh files from old

    @property
    def timed_out(self):
        return self.returncode is None

    def stderr_tail(self, lines=STDERR_TAIL_LINES):
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])


def tpu_compat_command(launch):
    """``python -m tpu_compat run ...``: the script unchanged, under the shim."""
    command = [sys.executable, "-m", "tpu_compat", "run",
               "--replicas", str(launch.replicas)]
    if launch.tf1:
        command.append("--tf1")
    if launch.warnings:
        command += ["--warnings", launch.warnings]
    if launch.strict:
        command += ["--strict", launch.strict]
    return command + [launch.script, *launch.args]


def python_command(launch):
    """``python SCRIPT ...``: no shim, no TensorFlow (for tests of this layer)."""
    return [sys.executable, launch.script, *launch.args]


def _chosen(name, value, environ):
    """``value`` (validated, naming the flag), else the variable (validated,
    naming it), else regress's default (tpu_compat/settings.py)."""
    return getattr(settings.resolve(settings.REGRESS, environ, flags={name: value},
                                    names=(name,)), name)


def chosen_backend(backend=None, environ=None):
    """The backend scripts run on: ``backend``, else ``$TPU_COMPAT_BACKEND``,
    else regress's default (``cpu``)."""
    return _chosen("backend", backend, environ)


def chosen_fidelity(fidelity=None, environ=None):
    """The fidelity scripts run with: ``fidelity``, else ``$TPU_COMPAT_FIDELITY``,
    else regress's default (``tpu``)."""
    return _chosen("fidelity", fidelity, environ)


def _environment(launch):
    env = dict(os.environ)
    env.pop(settings.SEED_VAR, None)
    # The script's sidecar decides --tf1 (tpu_compat_command), not this environment.
    env.pop(settings.TF1_VAR, None)
    if launch.seed is not None:
        env[settings.SEED_VAR] = str(launch.seed)
        # Hash randomization reorders sets of strings from run to run.
        env.setdefault("PYTHONHASHSEED", str(launch.seed))
    env[settings.BACKEND_VAR] = chosen_backend(launch.backend, env)
    env[settings.FIDELITY_VAR] = chosen_fidelity(launch.fidelity, env)
    env[settings.NUMERICS_VAR] = _chosen("numerics", launch.numerics, env)
    env.pop(settings.NUMERICS_OPS_VAR, None)  # only numerics-diff's tpu run records
    if launch.numerics_ops is not None:
        env[settings.NUMERICS_OPS_VAR] = launch.numerics_ops
    # TensorFlow's C++ INFO lines would bury the traceback in the stderr tail.
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The child runs the tpu_compat this process runs, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(
        [_TPU_COMPAT_PARENT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run(launch, command=tpu_compat_command):
    """Runs ``launch``; never raises for anything the script does.

    A ``KeyboardInterrupt`` (or ``SystemExit``) in this process kills the
    script's process group and propagates.
    """
    started_at, start = time.time(), time.monotonic()
    try:
        # Started in what `tpu-compat run` exports before TensorFlow's import
        # (_process), whichever ``command`` runs the script.
        finished = _process.run_tensorflow_child(
            command(launch), launch.timeout, cwd=launch.cwd,
            env=_environment(launch), stdin=subprocess.DEVNULL)
    except OSError as error:
        # Reported like a script that failed at once (127: "cannot execute").
        return RunResult(127, "", f"cannot start {launch.script}: {error}",
                         time.monotonic() - start, started_at)
    return RunResult(finished.returncode, finished.stdout, finished.stderr,
                     time.monotonic() - start, started_at)
