"""Faults while the program runs: a lost worker, a Ctrl-C stuck in TensorFlow.

The main thread runs the user's program; a daemon thread (the monitor) polls
the workers. Whoever notices a lost worker first reports it, in one line
(:func:`tpu_compat.pod.errors.report`):

* usually TensorFlow does: the step in flight fails within about a second
  (the dead worker's connections are reset) and the runner, asking
  :func:`failure_behind`, reports the lost worker instead of gRPC's error;
* the monitor, within ``launch.POLL_SECONDS``, prints the line, stops the
  other workers and raises :class:`WorkerLostError` in the main thread when
  it next runs Python; if the main thread is still inside TensorFlow after
  _GRACE_SECONDS, the process ends there (exit code 2).

Ctrl-C during a step that does not return stops the workers after
_INTERRUPT_GRACE_SECONDS (:class:`_InterruptWatch`). The bounds are measured
in docs/pods.md's fault table.
"""

import ctypes
import os
import select
import signal
import sys
import threading
import time

from tpu_compat.pod import launch
from tpu_compat.pod.errors import WorkerLostError, first_report, report

__all__ = ["failure_behind", "program_exiting", "watch"]

# How long a chief blocked in a TensorFlow call on a dead worker gets to
# raise the error itself before the process is ended.
_GRACE_SECONDS = 10.0
# How long Ctrl-C may wait for the main thread to leave a TensorFlow call.
_INTERRUPT_GRACE_SECONDS = 5.0

_watched = None      # the pod the monitor watches (one per process)
_exiting = threading.Event()
_arm_lock = threading.Lock()
_disarmed = []       # the main thread handles the failure: no async exception
_interrupted = []    # the pod was stopped because Ctrl-C could not get through


def watch(pod):
    """Starts the monitor of ``pod`` (a :class:`tpu_compat.pod.session.Pod`)."""
    global _watched  # pylint: disable=global-statement
    _watched = pod
    _Monitor(pod, _InterruptWatch.install()).start()


def program_exiting():
    """Stops the monitor: the interpreter is exiting, workers leave with it."""
    _exiting.set()


def _set_async_exception(exception_type):
    """Raises ``exception_type`` in the main thread (None clears a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(threading.main_thread().ident),
        ctypes.py_object(exception_type) if exception_type is not None else None)


def _lost_worker(pod):
    """What happened to the first worker found gone, or None."""
    exited = launch.exited_worker()
    if exited is not None:
        return exited
    if not pod.spawned:
        for task, address in enumerate(pod.addresses):
            why = launch.unreachable(task, address)
            if why is not None:
                return why.replace("is not reachable", "stopped answering")
    return None


def _is_tensorflow_error(error):
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    return errors is not None and isinstance(error, errors.OpError)


def failure_behind(error, settle_seconds=1.0):
    """The pod failure that explains ``error`` ending the program, or None.

    Called by the runner (main thread) with whatever ended the program. A
    TensorFlow error raised because a worker died (``UnavailableError``:
    socket closed) becomes the :class:`WorkerLostError` naming the worker; a
    step stopped because Ctrl-C could not interrupt it becomes the
    ``KeyboardInterrupt`` it stands for. The monitor's pending exception is
    withdrawn: the main thread reports now.
    """
    pod = _watched
    if pod is None:
        return None
    with _arm_lock:
        _disarmed.append(True)
        _set_async_exception(None)
    if _interrupted and not isinstance(error, KeyboardInterrupt):
        return KeyboardInterrupt()
    if isinstance(error, WorkerLostError):
        return error
    reported = first_report()
    if reported is not None and not _interrupted:
        return WorkerLostError(reported)  # the monitor saw it first
    lost = _lost_worker(pod)
    # TensorFlow can notice a dead worker (its sockets close) a moment before
    # its exit is visible here.
    deadline = time.monotonic() + (settle_seconds if _is_tensorflow_error(error) else 0)
    while lost is None and time.monotonic() < deadline:
        time.sleep(0.05)
        lost = _lost_worker(pod)
    if lost is None:
        return None
    launch.stop_workers()
    return WorkerLostError(_lost_message(pod, lost))


def _lost_message(pod, lost):
    stopped = ("the pod is stopped" if pod.spawned else
               "the program is stopped (the other workers keep running)")
    return f"emulated pod: {lost} while the program was running; {stopped}"


class _InterruptWatch:
    """Bounds Ctrl-C while the main thread waits inside TensorFlow.

    Python turns SIGINT into KeyboardInterrupt only when the main thread runs
    Python again; a step running on the pod (one TensorFlow call) keeps it in
    C++ until the step ends, however long that is. The C-level wakeup fd tells
    the monitor that SIGINT arrived; the handler (Python's, plus a note) tells
    it the main thread got it. If it does not within _INTERRUPT_GRACE_SECONDS,
    the monitor stops the workers: the step fails at once, and the program
    gets its KeyboardInterrupt (exit code 130 under ``tpu-compat run``).
    """

    def __init__(self, read_fd):
        self.read_fd = read_fd
        self.handler = None
        # Counts, not flags: the handler may run before the monitor reads the
        # wakeup byte of the same signal.
        self.arrived = 0    # SIGINTs the wakeup fd reported (monitor thread)
        self.delivered = 0  # SIGINTs the main thread took (the handler)

    @classmethod
    def install(cls):
        # Only the main thread may set handlers; a program (or a library) with
        # its own SIGINT handling or wakeup fd keeps it.
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            return None
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except ValueError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if previous != -1:
            signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
            return None
        watch_ = cls(read_fd)

        def on_interrupt(signum, frame):
            watch_.delivered += 1
            signal.default_int_handler(signum, frame)

        signal.signal(signal.SIGINT, on_interrupt)
        watch_.handler = on_interrupt
        return watch_

    def wait(self, seconds):
        """Sleeps ``seconds``, counting the SIGINTs that arrive meanwhile."""
        ready, _, _ = select.select([self.read_fd], [], [], seconds)
        if ready:
            try:
                self.arrived += os.read(self.read_fd, 512).count(signal.SIGINT)
            except OSError:
                pass

    def pending(self):
        """Whether a SIGINT arrived that the main thread has not taken."""
        return (self.arrived > self.delivered
                and signal.getsignal(signal.SIGINT) is self.handler)


class _Monitor(threading.Thread):
    """Ends the program with a clear error when a worker goes away."""

    def __init__(self, pod, interrupts):
        super().__init__(daemon=True, name="tpu-compat-pod-monitor")
        self._pod = pod
        self._interrupts = interrupts
        self._interrupted_at = None

    def _sleep(self, seconds):
        if self._interrupts is None:
            time.sleep(seconds)
        else:
            self._interrupts.wait(seconds)

    def _interrupt_stuck(self):
        """Whether Ctrl-C has not reached the main thread for too long."""
        if self._interrupts is None or not self._interrupts.pending():
            self._interrupted_at = None  # none, or the program has it
            return False
        if self._interrupted_at is None:
            self._interrupted_at = time.monotonic()
        return time.monotonic() - self._interrupted_at >= _INTERRUPT_GRACE_SECONDS

    def run(self):
        # A connection a second to a TF_CONFIG worker; a poll() is cheaper.
        period = launch.POLL_SECONDS if self._pod.spawned else 1.0
        while True:
            self._sleep(period)
            if _exiting.is_set():
                return
            if self._interrupt_stuck():
                self._stop_for_interrupt()
                return
            lost = _lost_worker(self._pod)
            if lost and not _exiting.is_set():
                break
        report(_lost_message(self._pod, lost))
        launch.stop_workers()
        with _arm_lock:
            if not _disarmed:
                # Raised in the main thread as soon as it runs Python again.
                _set_async_exception(WorkerLostError)
        self._end_after_grace(2)

    def _stop_for_interrupt(self):
        _interrupted.append(True)
        print(f"tpu-compat: interrupted; the program is still inside a "
              f"TensorFlow call on the pod after {_INTERRUPT_GRACE_SECONDS:g} s, "
              f"so the pod's workers are stopped", file=sys.stderr, flush=True)
        launch.stop_workers()
        self._end_after_grace(130)

    @staticmethod
    def _end_after_grace(code):
        # The main thread normally ends the program first (the failed step
        # raises); if it is still stuck in TensorFlow, the process ends here.
        time.sleep(_GRACE_SECONDS)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # pylint: disable=protected-access
