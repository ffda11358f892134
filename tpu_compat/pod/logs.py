"""Where the pod's logs go: each worker's stderr, and the chief's own C++ log after a fault.

By default no log outlives the run, however it ends (even SIGKILL of the
chief): a worker's stderr is an unlinked temporary file, which the chief keeps
open to quote the worker's last error line when it fails to start.
``TPU_COMPAT_POD_LOGS=DIR`` keeps them instead: ``DIR/worker<T>-<chief pid>.log``.

Once the chief knows of a pod fault (a lost worker, a stuck Ctrl-C, SIGTERM),
it prints one line about it; what TensorFlow's C++ code (gRPC's errors about
the worker that is gone) writes to file descriptor 2 after that is not for the
user's terminal: :func:`quiet_native_stderr` sends it to
``DIR/chief-<pid>.log`` (or nowhere), while Python's ``sys.stderr`` (the
program's own messages, a traceback) still reaches the terminal.
"""

import io
import os
import sys
import tempfile
import threading
import traceback

from tpu_compat import settings
from tpu_compat.pod.errors import PodError

__all__ = ["quiet_native_stderr", "tail", "worker_log"]

# The last part of a log that tail() reads: a worker's last words are enough.
_TAIL_BYTES = 64 * 1024

_quiet_lock = threading.Lock()
_quieted = []


def _folder():
    """The folder TPU_COMPAT_POD_LOGS names, made if needed, or None."""
    folder = settings.read("pod_logs")
    if folder is not None:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise PodError(f"emulated pod: {settings.POD_LOGS_VAR}={folder} cannot be "
                           f"made ({error.strerror or error}); expected a directory") from None
    return folder


def worker_log(task):
    """A file, open for reading and writing, for worker ``task``'s stderr."""
    folder = _folder()
    if folder is None:
        # Unlinked at once (O_TMPFILE or unlink): nothing to clean up, ever.
        return tempfile.TemporaryFile(prefix=f"tpu-compat-worker{task}-")
    return open(os.path.join(folder, f"worker{task}-{os.getpid()}.log"), "w+b")


def tail(log):
    """The end of ``log`` (a :func:`worker_log` file) as text, or "".

    Read with ``pread``: the worker writes through the same open file, whose
    offset a seek would move.
    """
    try:
        size = os.fstat(log.fileno()).st_size
        data = os.pread(log.fileno(), min(size, _TAIL_BYTES), max(0, size - _TAIL_BYTES))
    except (OSError, ValueError):
        return ""
    return data.decode(errors="replace")


def quiet_native_stderr():
    """Sends what is written to file descriptor 2 from now on to the chief's log.

    TensorFlow's C++ code logs there directly (a gRPC error per call that
    still tried the lost worker: a hundred lines and more). Python's
    ``sys.stderr`` is moved to a copy of the old descriptor first, so the
    program's own output still reaches the terminal. Once per process.
    """
    with _quiet_lock:
        if _quieted:
            return
        _quieted.append(True)
        try:
            sys.stderr.flush()
            stderr_fd = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            stderr_fd = None  # not a file (captured): Python's output is not on fd 2
        try:
            folder = _folder()
        except PodError:
            folder = None
        target = (os.path.join(folder, f"chief-{os.getpid()}.log") if folder is not None
                  else os.devnull)
        try:
            log_fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:
            return
        try:
            if stderr_fd == 2:
                terminal = os.dup(2)
                sys.stderr = io.TextIOWrapper(
                    io.FileIO(terminal, "w"), encoding=sys.stderr.encoding,
                    errors=sys.stderr.errors, line_buffering=True, write_through=True)
            os.dup2(log_fd, 2)
        except OSError:
            pass
        finally:
            os.close(log_fd)
        _tensorflow_unraisables_to_fd2()


def _tensorflow_unraisables_to_fd2():
    """TensorFlow errors Python cannot raise go to file descriptor 2 (the log now).

    After a pod fault, objects that still hold remote handles (an eager
    ``Executor``) fail in ``__del__`` as the interpreter ends: Python would
    print "Exception ignored in ... UnavailableError" and a traceback after
    the one error line. Any other unraisable exception is printed as before.
    """
    previous = sys.unraisablehook

    def to_the_log(unraisable):
        errors = getattr(sys.modules.get("tensorflow"), "errors", None)
        if errors is None or not isinstance(unraisable.exc_value, errors.OpError):
            previous(unraisable)
            return
        text = "".join(traceback.format_exception(
            unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))
        try:
            os.write(2, f"Exception ignored in: {unraisable.object!r}\n{text}".encode(
                "utf-8", "replace"))
        except OSError:
            pass
    sys.unraisablehook = to_the_log
