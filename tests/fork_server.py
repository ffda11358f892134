"""``tpu-compat run`` in processes forked from one that has imported TensorFlow.

Why: importing TensorFlow 2.21 costs about 6 s of CPU, and the suite runs
`tpu-compat run` in a subprocess a few hundred times (other replica counts,
graph mode and the command line need a process of their own, see conftest).
On CI's 2 cores that import alone was a third of the 20-minute budget. A
server per pytest process imports TensorFlow once, as `tpu-compat run` would:
in ``tpu_compat._process.tensorflow_environment``, the variables the runner
exports before its import (``TF_USE_LEGACY_KERAS=1``,
``TF_ENABLE_ONEDNN_OPTS=0``: its Keras and its kernels), computed by the client
from the settings table, and the suite's ``TF_CPP_MIN_LOG_LEVEL``; it forks a
child per run. Importing
TensorFlow initializes no devices and starts no thread of TensorFlow's (one
of OpenBLAS's, whose library handles fork), so each child still chooses its
own device layout, as a fresh process does.

What the child is given so that it is `python -m tpu_compat ARGS` started
afresh: the request's environment, working directory and ``sys.argv``, the
``sys.path`` that ``-m`` would give, stdin from /dev/null, stdout and stderr
into files the client reads (``subprocess.run(capture_output=True,
text=True)``'s result), NumPy's global generator reseeded from entropy (Python's
own reseeds at fork), and the variables TensorFlow's import sets. It exits
through the interpreter's own shutdown (atexit handlers, non-daemon threads),
and the server reports its exit status as ``subprocess`` would.

``doctor`` and ``matrix`` are forked too: they set nothing before TensorFlow's
import, so their request's environment must be the server's as given.

What stays a fresh process (:func:`forkable` says no): any other command; a
request whose environment differs from the server's in a variable read when
the interpreter starts or TensorFlow is imported (``PYTHON*``, ``TF_*`` but
``TF_CONFIG``, ``XLA_*``, thread-pool and locale variables, a Keras choice
other than tf-keras); a run while another is in flight from the same test
process; and every test marked ``fresh_process`` -- the claims about how a
process starts (the runner's environment before TensorFlow's import, the
README's commands, startup cost). ``TPU_COMPAT_TEST_FORK_SERVER=0`` turns the
server off for a whole run.
"""

import io
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWITCH_VAR = "TPU_COMPAT_TEST_FORK_SERVER"
STARTUP_TIMEOUT_SECONDS = 300.0
# The server runs this file: importing tpu_compat in it before TensorFlow would
# leave tpu_compat modules in every forked child, which a fresh
# `python -m tpu_compat` process does not start with. So the client functions
# below import it when called, and the server never does.

# Read when the interpreter starts or TensorFlow (NumPy, OpenBLAS, oneDNN) is
# imported: a request must agree with the server on these.
_STARTUP_PREFIXES = ("PYTHON", "TF_", "XLA_", "LD_", "OMP_", "KMP_", "MKL_", "OPENBLAS_",
                     "CUDA_", "LC_", "LANG", "HDF5_", "TPU_ML_PLATFORM",
                     "ENABLE_RUNTIME_UPTIME_TELEMETRY")
# Read later, by tpu_compat or the program.
_READ_AFTER_STARTUP = ("TF_CONFIG",)


def _startup_variable(name):
    return name.startswith(_STARTUP_PREFIXES) and name not in _READ_AFTER_STARTUP


def enabled(environ=None):
    value = (os.environ if environ is None else environ).get(SWITCH_VAR, "1")
    if value not in ("0", "1"):
        raise ValueError(f"{SWITCH_VAR}={value!r}: expected 0 or 1")
    return value == "1"


def server_environment(env):
    """The environment the server imports TensorFlow in, for requests like ``env``:
    ``env`` plus what the runner exports before TensorFlow's import."""
    from tpu_compat import _process  # pylint: disable=import-outside-toplevel
    return _process.tensorflow_environment(env)


# Commands that import TensorFlow as the environment they are given says.
_FORKED_AS_GIVEN = ("doctor", "matrix")


def forkable(args, env, server_env):
    """Whether ``python -m tpu_compat ARGS`` with ``env`` may run forked."""
    if not args or args[0] not in ("run",) + _FORKED_AS_GIVEN:
        return False
    if args[0] == "run":
        # The runner exports its pre-import variables unless the user chose;
        # the server imported TensorFlow with them.
        env = server_environment(env)
    names = {name for name in set(env) | set(server_env) if _startup_variable(name)}
    return all(env.get(name) == server_env.get(name) for name in names)


class ForkServer:
    """The client: one server process, one run at a time (others go fresh)."""

    def __init__(self, env):
        self.env = dict(env)
        self._busy = threading.Lock()
        self._process = None
        self._broken = False

    def _start(self):
        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env,
            cwd=REPO_ROOT)
        self._read(STARTUP_TIMEOUT_SECONDS, "ready")

    def _read(self, timeout, expected):
        stdout = self._process.stdout
        ready, _, _ = select.select([stdout], [], [], timeout)
        line = stdout.readline() if ready else b""
        if not line:
            raise RuntimeError(f"fork server gave no {expected!r} reply "
                               f"(exit code {self._process.poll()})")
        reply = json.loads(line)
        if expected not in reply:
            raise RuntimeError(f"fork server replied {reply!r}, expected {expected!r}")
        return reply[expected]

    def try_run(self, args, env, cwd, timeout):
        """A CompletedProcess, or None when this run must be a fresh process."""
        if self._broken or not forkable(args, env, self.env):
            return None
        if not self._busy.acquire(blocking=False):
            return None
        try:
            if self._process is None:
                self._start()
            return self._run(args, env, cwd, timeout)
        except (OSError, RuntimeError, ValueError):
            self._broken = True  # every later run goes fresh, and this one too
            return None
        finally:
            self._busy.release()

    def _run(self, args, env, cwd, timeout):
        with tempfile.TemporaryDirectory(prefix="tpu_compat_fork_") as scratch:
            paths = {name: os.path.join(scratch, name) for name in ("stdout", "stderr")}
            request = {"args": list(args), "env": dict(env), "cwd": os.path.abspath(cwd),
                       **paths}
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
            pid = self._read(60.0, "pid")
            try:
                returncode = self._read(timeout, "returncode")
            except RuntimeError:
                if self._process.poll() is not None:
                    raise
                # subprocess.run's timeout: kill the child, then raise.
                os.kill(pid, signal.SIGKILL)
                self._read(60.0, "returncode")
                raise subprocess.TimeoutExpired(
                    [sys.executable, "-m", "tpu_compat", *args], timeout,
                    _text(paths["stdout"]), _text(paths["stderr"])) from None
            return subprocess.CompletedProcess(
                [sys.executable, "-m", "tpu_compat", *args], returncode,
                _text(paths["stdout"]), _text(paths["stderr"]))

    def close(self):
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.stdin.close()  # the server exits at end of input
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            pipe.close()


def _text(path):
    """A captured stream as ``subprocess.run(text=True)`` decodes it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return ""
    return io.TextIOWrapper(io.BytesIO(data)).read()


# -- the server ------------------------------------------------------------------

def _serve():
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    before = dict(os.environ)
    import numpy  # pylint: disable=import-outside-toplevel
    import tensorflow  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    set_by_import = {name: value for name, value in os.environ.items()
                     if before.get(name) != value}
    # After this file's directory: PYTHONPATH's entries and the interpreter's,
    # as site left them (without duplicates); a request has the same PYTHONPATH.
    base_path = sys.path[1:]

    def reply(**fields):
        replies.write(json.dumps(fields).encode() + b"\n")
        replies.flush()

    reply(ready=True)
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            replies.close()
            os.close(null)
            _become(request, set_by_import, base_path, numpy)
            return  # into the interpreter's own exit, as `python -m` ends
        reply(pid=pid)
        _, status = os.waitpid(pid, 0)
        reply(returncode=os.waitstatus_to_exitcode(status))
    sys.exit(0)


def _become(request, set_by_import, base_path, numpy):
    """Turns this forked child into ``python -m tpu_compat ARGS`` and runs it."""
    import runpy  # pylint: disable=import-outside-toplevel
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        target = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(set_by_import)
    sys.path[:] = [os.getcwd()] + base_path  # `python -m` puts the working directory first
    numpy.random.seed()  # a fresh process's global generator is seeded from entropy
    sys.argv = [sys.executable, *request["args"]]  # runpy sets argv[0] to the module's file
    sys.orig_argv = [sys.executable, "-m", "tpu_compat", *request["args"]]
    runpy.run_module("tpu_compat", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve()
