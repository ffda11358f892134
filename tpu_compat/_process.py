"""Child processes that leave nothing behind.

``regress``, ``verify`` and the pytest plugin run scripts and test processes
that may start processes of their own (data loaders, a TensorBoard, a
``multiprocessing`` pool). Each child therefore starts a new session, whose
process group holds everything it starts, and that whole group is killed:

* when the time limit passes (the result says it timed out);
* when the parent is interrupted (Ctrl-C's ``KeyboardInterrupt``, or the
  ``SystemExit`` that :func:`terminate_as_exit` makes of SIGTERM/SIGHUP),
  before the exception goes on;
* when the child exits, for anything it left running.

The new session also keeps a terminal's Ctrl-C from reaching the child
directly: the parent decides, and kills the group. A process that starts a
session of its own leaves the group and is out of reach; nothing else is.

A child that imports TensorFlow (a pod worker, a regress/verify script, a
benchmark program) is started with :func:`start_tensorflow_child` /
:func:`run_tensorflow_child`, whose environment before that import is
:func:`tensorflow_environment`'s: what ``tpu-compat run`` exports before its
own import of TensorFlow. So every such child computes with the kernels and
the Keras a ``tpu-compat run`` program gets (tests/fork_server.py starts the
test suite's TensorFlow from it too).

A fork server (the test suite's, tests/fork_server.py) can start these
children instead of ``exec``, when the child's environment names one
(:mod:`tpu_compat._fork_client` says how, and when it declines): without that
private variable nothing changes, and users never get a forked child.
"""

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
from typing import Optional

from tpu_compat import _fork_client

__all__ = ["Finished", "kill_group", "popen", "run_in_own_group", "run_tensorflow_child",
           "start_in_own_group", "start_tensorflow_child", "tensorflow_environment",
           "terminate_as_exit"]

# After SIGKILL the pipes close at once; a bounded wait covers a process
# that escaped the group (setsid) and still holds them.
_DRAIN_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class Finished:
    returncode: Optional[int]  # None: still running at the time limit, killed
    stdout: str
    stderr: str

    @property
    def timed_out(self):
        return self.returncode is None


def kill_group(process):
    """SIGKILLs ``process``'s process group (``process`` leads it)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in the group
    except AttributeError:  # no process groups (Windows)
        if process.poll() is None:
            process.kill()


def start_in_own_group(command, **popen_kwargs):
    """Starts ``command`` in a new session; returns its :class:`subprocess.Popen`.

    For children that outlive one call (the emulated pod's workers): the
    caller ends the child and everything it started with :func:`kill_group`.
    Forked by a fork server where one is named (module docstring).
    """
    return popen(command, start_new_session=True, **popen_kwargs)


def _drain(process):
    try:
        return process.communicate(timeout=_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        return "", ""


def run_in_own_group(command, timeout, **popen_kwargs):
    """Runs ``command`` in a new session; returns a :class:`Finished`.

    ``popen_kwargs`` go to :class:`subprocess.Popen` (``cwd``, ``env``,
    ``stdin``); output is captured as text. ``OSError`` from starting the
    command propagates.
    """
    process = start_in_own_group(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        errors="replace", **popen_kwargs)
    try:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            return Finished(process.returncode, stdout, stderr)
        except subprocess.TimeoutExpired:
            # Exited, but something it started still holds the pipes: the
            # script's own exit code stands. Still running: it timed out.
            exited = process.poll()
            kill_group(process)
            stdout, stderr = _drain(process)
            return Finished(exited, stdout, stderr)
    except BaseException:  # KeyboardInterrupt, SystemExit: kill, then go on
        kill_group(process)
        with contextlib.suppress(BaseException):
            process.wait(timeout=_DRAIN_SECONDS)
        raise
    finally:
        kill_group(process)  # whatever the child left running


def tensorflow_import_rows():
    """The settings rows ``tpu-compat run`` exports that TensorFlow reads at import.

    Computed from the table (tpu_compat/settings.py): the rows ``run`` exports
    as defaults whose variable is TensorFlow's own (``TF_*``: which Keras
    ``tf.keras`` is, whether oneDNN's kernels are used). tpu_compat's own rows
    are read after the import, by the runner in the child.
    """
    from tpu_compat import settings  # pylint: disable=import-outside-toplevel
    return [row for row in settings.ROWS
            if settings.RUN in row.exported_by and row.variable.startswith("TF_")]


def tensorflow_environment(environ=None):
    """``environ`` (default ``os.environ``), copied, plus what ``tpu-compat run``
    exports before it imports TensorFlow: each of :func:`tensorflow_import_rows`
    at run's default unless ``environ`` chose it (the user's choice stands,
    as it does for ``run``).

    A child started with it imports the TensorFlow a ``tpu-compat run`` program
    imports: same Keras, same kernels (``TF_ENABLE_ONEDNN_OPTS``), hence the
    same numbers.
    """
    from tpu_compat import settings  # pylint: disable=import-outside-toplevel
    env = dict(os.environ if environ is None else environ)
    names = [row.name for row in tensorflow_import_rows()]
    settings.export(settings.resolve(settings.RUN, env, names=names), env)
    return env


def start_tensorflow_child(command, env=None, **popen_kwargs):
    """:func:`start_in_own_group` for a child that imports TensorFlow, in
    :func:`tensorflow_environment` (``env``, default ``os.environ``)."""
    return start_in_own_group(command, env=tensorflow_environment(env), **popen_kwargs)


def run_tensorflow_child(command, timeout, env=None, **popen_kwargs):
    """:func:`run_in_own_group` for a child that imports TensorFlow, in
    :func:`tensorflow_environment` (``env``, default ``os.environ``)."""
    return run_in_own_group(command, timeout, env=tensorflow_environment(env),
                            **popen_kwargs)


def popen(command, *, import_env=None, **popen_kwargs):
    """:class:`subprocess.Popen`, forked by the fork server that the child's
    environment names, if it will (module docstring).

    ``import_env``: the environment the child imports TensorFlow in, when the
    command changes its own before that import (``tpu-compat run``); the
    server forks only children whose import would be its own.
    """
    env = popen_kwargs.get("env")
    server = (os.environ if env is None else env).get(_fork_client.FORK_SERVER_ENV)
    if not server:
        return subprocess.Popen(command, **popen_kwargs)
    return _fork_client.ForkedPopen(command, server=server, import_env=import_env, **popen_kwargs)


@contextlib.contextmanager
def terminate_as_exit():
    """Makes SIGTERM and SIGHUP raise ``SystemExit(128 + signal)`` meanwhile.

    Their default action ends the parent at once, with no chance to kill the
    children, which (in their own sessions) would run on as orphans. Only the
    main thread can set handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_on(signum, frame):
        del frame
        raise SystemExit(128 + signum)

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, exit_on)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
