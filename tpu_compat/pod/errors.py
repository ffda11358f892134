"""The pod's errors, and the one line printed about them.

A lost worker may be noticed by two threads at once: the monitor
(:mod:`.faults`) and the main thread, where the failed step raises and the
runner reports it. Whichever is first prints the line; :func:`report` makes
the other one silent.
"""

import sys
import threading

__all__ = ["PodError", "WorkerLostError", "first_report", "report"]

_report_lock = threading.Lock()
_reported = []       # the one error line printed about the pod


class PodError(RuntimeError):
    """A pod worker failed: did not start, lost its port, or died."""


class WorkerLostError(PodError):
    """A worker went away while the program ran (raised in the main thread)."""

    def __init__(self, *args):
        # Raised by the monitor as a class (an async exception): the message is
        # the line it printed.
        super().__init__(*(args or _reported[-1:] or ("emulated pod: a worker went away",)))


def report(message):
    """Prints ``tpu-compat: error: MESSAGE`` unless a pod error was already printed."""
    with _report_lock:
        if _reported:
            return
        _reported.append(message)
    print(f"tpu-compat: error: {message}", file=sys.stderr, flush=True)


def first_report():
    """The line :func:`report` printed, or None."""
    with _report_lock:
        return _reported[0] if _reported else None
