"""Replica 0 speaks for all: what ``model_fn`` logs and prints, once per mode.

A TPU traced ``model_fn`` once per mode and replicated the computation, so a
``tf.logging.info`` or ``print`` in ``model_fn`` (or in the layers it builds)
appeared once. The emulated TPU builds each replica's ops by calling
``model_fn`` once per replica (MirroredStrategy's ``call_for_each_replica``
runs it in one thread per replica; see docs/estimator.md, "model_fn runs
once per replica"), which would repeat every line N times. While a TPU
program is built, log records and ``sys.stdout``/``sys.stderr`` writes made
by replicas other than 0, in their own threads, are dropped. Other Python
side effects (a counter, a list) still happen once per replica.
"""

import contextlib
import logging
import sys
import threading

import tensorflow as tf

__all__ = ["first_replica_speaks", "quiet_replica"]

_state = threading.local()  # .quiet: this thread builds a replica other than 0


def _is_quiet():
    return getattr(_state, "quiet", False)


class _DropQuietReplicas(logging.Filter):
    def filter(self, record):
        return not _is_quiet()


class _QuietStream:
    """``sys.stdout``/``sys.stderr`` stand-in that drops a quiet replica's writes."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        if _is_quiet():
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


_FILTER = _DropQuietReplicas()
_LOGGERS = ("", "tensorflow", "absl")  # root: named loggers' records reach its handlers


@contextlib.contextmanager
def first_replica_speaks():
    """While a TPU program is built: replicas other than 0 log and print nothing."""
    handlers = {handler for name in _LOGGERS for handler in logging.getLogger(name).handlers}
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for handler in handlers:
        handler.addFilter(_FILTER)
    for logger in loggers:  # records of loggers without handlers of their own
        logger.addFilter(_FILTER)
    saved = {"stdout": sys.stdout, "stderr": sys.stderr}
    sys.stdout, sys.stderr = _QuietStream(sys.stdout), _QuietStream(sys.stderr)
    try:
        yield
    finally:
        for name, stream in saved.items():
            # Restore only our own stand-in: a model_fn that redirected the
            # stream itself keeps its redirection.
            if isinstance(getattr(sys, name), _QuietStream):
                setattr(sys, name, stream)
        for handler in handlers:
            handler.removeFilter(_FILTER)
        for logger in loggers:
            logger.removeFilter(_FILTER)


def _replica_id():
    context = tf.distribute.get_replica_context()
    if context is None:
        return None
    return tf.get_static_value(context.replica_id_in_sync_group)


@contextlib.contextmanager
def quiet_replica():
    """Inside a replica's call: silence it unless it is replica 0 (or unknown)."""
    replica = _replica_id()
    saved = _is_quiet()
    _state.quiet = replica is not None and int(replica) != 0
    try:
        yield
    finally:
        _state.quiet = saved
