"""Faults while the program runs: a lost worker, a Ctrl-C stuck in TensorFlow, SIGTERM.

The main thread runs the user's program; a daemon thread (the monitor) polls
the workers, and one heartbeat thread per worker checks that its gRPC server
still answers (:func:`tpu_compat.pod.launch.silent`, every _HEARTBEAT_PERIOD
with a deadline of _HEARTBEAT_SECONDS): a worker that is stopped (SIGSTOP),
wedged or cut off keeps its port open but answers nothing. Whoever notices a
lost worker first reports it, in one line
(:func:`tpu_compat.pod.errors.report`), and from then on TensorFlow's C++ log
of the chief goes to the pod's log, not to the terminal (:mod:`.logs`):

* usually TensorFlow does: the step in flight fails within about a second
  (the dead worker's connections are reset) and the runner, asking
  :func:`failure_behind`, reports the lost worker instead of gRPC's error;
* the monitor, within ``launch.POLL_SECONDS``, prints the line, stops the
  other workers and raises :class:`WorkerLostError` in the main thread when
  it next runs Python; if the main thread is still inside TensorFlow after
  _GRACE_SECONDS, the process ends there (exit code 2).

Ctrl-C during a step that does not return stops the workers after
_INTERRUPT_GRACE_SECONDS (:class:`_InterruptWatch`); SIGTERM stops them at
once and then ends the chief by SIGTERM, as its default action would have
without them. At exit, workers that no longer answer are stopped before
TensorFlow's shutdown waits on them. The bounds are measured in docs/pods.md's
fault table.
"""

import ctypes
import os
import select
import signal
import sys
import threading
import time

from tpu_compat import settings
from tpu_compat.pod import launch, logs
from tpu_compat.pod.errors import WorkerLostError, first_report, report

__all__ = ["failure_behind", "program_exiting", "watch"]

# How long a chief blocked in a TensorFlow call on a dead worker gets to
# raise the error itself before the process is ended.
_GRACE_SECONDS = 10.0
# How long Ctrl-C may wait for the main thread to leave a TensorFlow call.
_INTERRUPT_GRACE_SECONDS = 5.0
# Liveness: a worker whose gRPC server does not answer a health check within
# _HEARTBEAT_SECONDS is lost; one check every _HEARTBEAT_PERIOD. Both shrink
# with a short TPU_COMPAT_POD_TIMEOUT, so that a worker that stops answering is
# reported within it.
_HEARTBEAT_SECONDS = 5.0
_HEARTBEAT_PERIOD = 1.0
# How long a worker whose heartbeat failed may take to show its exit (which
# says more than "stopped answering") when it died.
_EXIT_SETTLE_SECONDS = 1.0

_watched = None      # the pod the monitor watches (one per process)
_exiting = threading.Event()
_arm_lock = threading.Lock()
_disarmed = []       # the main thread handles the failure: no async exception
_interrupted = []    # the pod was stopped because Ctrl-C could not get through
_heartbeats = []     # one _Heartbeat per worker of the watched pod
_terminate_lock = threading.Lock()


def watch(pod):
    """Starts the monitor of ``pod`` (a :class:`tpu_compat.pod.session.Pod`)."""
    global _watched  # pylint: disable=global-statement
    _watched = pod
    deadline, period = _heartbeat_timing()
    _heartbeats[:] = [_Heartbeat(task, address, deadline, period)
                      for task, address in enumerate(pod.addresses)]
    for heartbeat in _heartbeats:
        heartbeat.start()
    _Monitor(pod, _InterruptWatch.install()).start()


def _heartbeat_timing():
    """(deadline, period) of the health checks: together within TPU_COMPAT_POD_TIMEOUT."""
    timeout = settings.read("pod_timeout")
    return min(_HEARTBEAT_SECONDS, timeout / 2), min(_HEARTBEAT_PERIOD, timeout / 4)


def program_exiting():
    """The interpreter is exiting: stops the monitor and the heartbeats.

    TensorFlow's shutdown still talks to every worker, and would wait forever
    on one that no longer answers (stopped): such workers are stopped first
    (all of ours then), which makes those calls fail at once.
    """
    _exiting.set()
    pod = _watched
    if pod is None or not launch.worker_pids():
        return
    deadline, _ = _heartbeat_timing()
    if any(heartbeat.silence for heartbeat in _heartbeats) or any(
            launch.silent(address, deadline) for address in pod.addresses):
        logs.quiet_native_stderr()
        launch.stop_workers()


class _Heartbeat(threading.Thread):
    """Checks one worker's gRPC server until it fails to answer (``silence``: why)."""

    def __init__(self, task, address, deadline, period):
        super().__init__(daemon=True, name=f"tpu-compat-pod-heartbeat-{task}")
        self.task = task
        self.address = address
        self._deadline = deadline
        self._period = period
        self.silence = None

    def run(self):
        while not _exiting.is_set():
            why = launch.silent(self.address, self._deadline)
            if why is not None:
                self.silence = why
                return
            _exiting.wait(self._period)


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
    for heartbeat in _heartbeats:
        if heartbeat.silence is None:
            continue
        # A worker that died stops answering too (its port is closed): its exit
        # says more. One that did not answer in time is alive (stopped, wedged).
        died = not heartbeat.silence.startswith(launch.NO_ANSWER)
        settle = time.monotonic() + (_EXIT_SETTLE_SECONDS if pod.spawned and died else 0)
        while time.monotonic() < settle:
            exited = launch.exited_worker()
            if exited is not None:
                return exited
            time.sleep(0.05)
        return (f"{launch.worker_name(heartbeat.task, heartbeat.address)} stopped "
                f"answering ({heartbeat.silence})")
    return None


def _is_tensorflow_error(error):
    # tf.errors.OpError, once the program imported TensorFlow (this module never does).
    tensorflow = sys.modules.get("tensorflow")
    errors = getattr(tensorflow, "errors", None)
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
    if isinstance(error, KeyboardInterrupt):
        # Ctrl-C ended the program: it ends as Ctrl-C (by SIGINT), even when a
        # worker stopped answering meanwhile (issue 33: it became exit code 2);
        # program_exiting stops such workers before TensorFlow's shutdown.
        return None
    if isinstance(error, WorkerLostError):
        logs.quiet_native_stderr()
        return error
    reported = first_report()
    if reported is not None and not _interrupted:
        logs.quiet_native_stderr()
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
    logs.quiet_native_stderr()
    launch.stop_workers()
    return WorkerLostError(_lost_message(pod, lost))


def _lost_message(pod, lost):
    stopped = ("the pod is stopped" if pod.spawned else
               "the program is stopped (the other workers keep running)")
    return f"emulated pod: {lost} while the program was running; {stopped}"


def _terminate():
    """SIGTERM: stops and reaps the workers, then ends the chief by SIGTERM.

    Called by the monitor (which the signal's wakeup byte reaches even while
    the main thread is inside TensorFlow) and by the main thread's handler,
    whichever runs first; the other waits here until the process is gone.
    """
    with _terminate_lock:
        _exiting.set()
        logs.quiet_native_stderr()
        launch.stop_workers(grace=launch.STOP_GRACE_SECONDS)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        _die_by(signal.SIGTERM)


def _die_by(signum):
    """Ends this process by ``signum``'s default action, as if never handled."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signum, signal.SIG_DFL)
    else:
        # Only the main thread may call signal.signal; the C library's may be
        # called from any (SIG_DFL is 0).
        try:
            ctypes.CDLL(None).signal(int(signum), 0)
        except (OSError, AttributeError):
            os._exit(128 + signum)  # pylint: disable=protected-access
    os.kill(os.getpid(), signum)
    time.sleep(1.0)
    os._exit(128 + signum)  # pylint: disable=protected-access


class _InterruptWatch:
    """Bounds Ctrl-C and SIGTERM while the main thread waits inside TensorFlow.

    Python turns SIGINT into KeyboardInterrupt only when the main thread runs
    Python again; a step running on the pod (one TensorFlow call) keeps it in
    C++ until the step ends, however long that is. The C-level wakeup fd tells
    the monitor that SIGINT arrived; the handler (Python's, plus a note) tells
    it the main thread got it. If it does not within _INTERRUPT_GRACE_SECONDS,
    the monitor stops the workers: the step fails at once, and the program
    gets its KeyboardInterrupt (exit code 130 under ``tpu-compat run``).

    SIGTERM's default action ends the chief at once and leaves its workers to
    their pipes, which a stopped worker does not read: with SIGTERM's default
    disposition, the wakeup fd tells the monitor, which stops the workers and
    then ends the chief by SIGTERM (:func:`_terminate`).
    """

    def __init__(self, read_fd):
        self.read_fd = read_fd
        self.handler = None
        self.term_handler = None
        # Counts, not flags: the handler may run before the monitor reads the
        # wakeup byte of the same signal.
        self.arrived = 0    # SIGINTs the wakeup fd reported (monitor thread)
        self.delivered = 0  # SIGINTs the main thread took (the handler)
        self._terminated = False

    @classmethod
    def install(cls):
        # Only the main thread may set handlers; a program (or a library) with
        # its own SIGINT or SIGTERM handling or wakeup fd keeps it.
        if threading.current_thread() is not threading.main_thread():
            return None
        watch_int = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        watch_term = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        if not (watch_int or watch_term):
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

        def on_terminate(signum, frame):
            del signum, frame
            _terminate()

        if watch_int:
            signal.signal(signal.SIGINT, on_interrupt)
            watch_.handler = on_interrupt
        if watch_term:
            signal.signal(signal.SIGTERM, on_terminate)
            watch_.term_handler = on_terminate
        return watch_

    def wait(self, seconds):
        """Sleeps ``seconds``, counting the signals that arrive meanwhile."""
        ready, _, _ = select.select([self.read_fd], [], [], seconds)
        if ready:
            try:
                received = os.read(self.read_fd, 512)
            except OSError:
                return
            self.arrived += received.count(signal.SIGINT)
            self._terminated = self._terminated or signal.SIGTERM in received

    def pending(self):
        """Whether a SIGINT arrived that the main thread has not taken."""
        return (self.arrived > self.delivered
                and signal.getsignal(signal.SIGINT) is self.handler)

    def terminated(self):
        """Whether SIGTERM arrived while its handler is still ours."""
        return (self._terminated and self.term_handler is not None
                and signal.getsignal(signal.SIGTERM) is self.term_handler)


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
        while True:
            self._sleep(launch.POLL_SECONDS)
            if _exiting.is_set():
                return
            if self._interrupts is not None and self._interrupts.terminated():
                _terminate()
            if self._interrupt_stuck():
                self._stop_for_interrupt()
                return
            if self._interrupted_at is not None:
                continue  # Ctrl-C is on its way: it ends the run, within its grace
            lost = _lost_worker(self._pod)
            if lost and not _exiting.is_set():
                break
        logs.quiet_native_stderr()
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
        logs.quiet_native_stderr()
        launch.stop_workers(grace=launch.STOP_GRACE_SECONDS)
        self._end_after_grace(130)

    @staticmethod
    def _end_after_grace(code):
        # The main thread normally ends the program first (the failed step
        # raises); if it is still stuck in TensorFlow, the process ends here.
        time.sleep(_GRACE_SECONDS)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # pylint: disable=protected-access
