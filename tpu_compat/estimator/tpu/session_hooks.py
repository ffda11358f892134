"""The SessionRunHooks of TPUEstimator's TPU programs.

Each ``Session.run`` of a program runs one on-device loop of ``iterations``
steps; these hooks set that count (:class:`StopAtStepHook` in training,
:class:`SetIterationsHook` in evaluation), feed the host infeed queue before
each loop, log TF 1.15's TPU step rates, and initialize a real TPU's system.
"""

import logging

import tensorflow as tf

__all__ = ["ExamplesPerSecondHook", "InfeedHook", "LoopState", "SetIterationsHook",
           "StopAtStepHook", "TPUSystemInitHook", "system_hooks"]

_log = logging.getLogger("tensorflow")


class LoopState:
    """The number of on-device steps of the current and the next ``Session.run``."""

    def __init__(self, iterations):
        self.iterations = iterations


class InfeedHook(tf.compat.v1.train.SessionRunHook):
    """Enqueues one element per on-device step before each loop."""

    def __init__(self, enqueue_ops, loop_state):
        self._enqueue_ops = enqueue_ops
        self._state = loop_state

    def before_run(self, run_context):
        for _ in range(self._state.iterations):
            run_context.session.run(self._enqueue_ops)


class StopAtStepHook(tf.compat.v1.train.SessionRunHook):
    """Sets each loop's step count so that training ends exactly at the last step.

    ``iterations_per_loop`` steps per ``Session.run``; the last loop runs only
    the steps that remain (TF 1.15: 4, 4, 2 for 10 steps and 4 per loop).
    """

    def __init__(self, iterations_per_loop, state, iterations_var, num_steps=None,
                 last_step=None):
        self._per_loop = iterations_per_loop
        self._state = state
        self._iterations_var = iterations_var
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()
        self._setter = _Setter(self._iterations_var)

    def _set_next(self, session, global_step):
        count = max(1, min(self._per_loop, self._last_step - global_step))
        self._setter.set(session, count)
        self._state.iterations = count

    def after_create_session(self, session, coord):
        del coord
        global_step = int(session.run(self._global_step))
        if self._last_step is None:
            self._last_step = global_step + self._num_steps
        self._set_next(session, global_step)

    def after_run(self, run_context, run_values):
        del run_values
        global_step = int(run_context.session.run(self._global_step))
        if global_step >= self._last_step:
            run_context.request_stop()
        else:
            self._set_next(run_context.session, global_step)


class _Setter:
    """Sets a host variable from Python (an assign fed by a placeholder)."""

    def __init__(self, variable):
        self._value = tf.compat.v1.placeholder(variable.dtype, [])
        self._assign = variable.assign(self._value)

    def set(self, session, value):
        session.run(self._assign, {self._value: value})


class SetIterationsHook(tf.compat.v1.train.SessionRunHook):
    """Evaluation: all ``steps`` run in one loop (one Session.run), as in TF 1.15."""

    def __init__(self, count, state, iterations_var):
        self._count = count
        self._state = state
        self._iterations_var = iterations_var

    def begin(self):
        self._setter = _Setter(self._iterations_var)

    def after_create_session(self, session, coord):
        del coord
        self._setter.set(session, self._count)
        self._state.iterations = self._count


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
    """Logs and records ``global_step/sec`` and ``examples/sec`` (TF 1.15 TPU logging)."""

    def __init__(self, batch_size, every_n_steps, output_dir, steps_per_run):
        super().__init__(every_n_steps=every_n_steps, output_dir=output_dir)
        self._batch_size = batch_size
        self._set_steps_per_run(steps_per_run)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        steps_per_sec = elapsed_steps / elapsed_time
        examples_per_sec = self._batch_size * steps_per_sec
        if self._summary_writer is not None:
            summary = tf.compat.v1.Summary(value=[
                tf.compat.v1.Summary.Value(tag="global_step/sec",
                                           simple_value=steps_per_sec),
                tf.compat.v1.Summary.Value(tag="examples/sec",
                                           simple_value=examples_per_sec)])
            self._summary_writer.add_summary(summary, global_step)
        _log.info("global_step/sec: %g", steps_per_sec)
        _log.info("examples/sec: %g", examples_per_sec)


class TPUSystemInitHook(tf.compat.v1.train.SessionRunHook):
    """Real TPU only: initializes the TPU system in each new session (TF 1.15's
    TPUEstimator ran ``tpu.initialize_system()`` when its session started)."""

    def __init__(self, job=None):
        self._job = job

    def begin(self):
        from tpu_compat._tf_internals import native_tpu  # pylint: disable=import-outside-toplevel
        self._init_op = native_tpu.initialize_system(job=self._job)

    def after_create_session(self, session, coord):
        del coord
        session.run(self._init_op)


def system_hooks(tpu_job_name):
    """The TPU-system hooks of a real TPU run (none on the emulated TPU).

    ``tpu_job_name``: the TPUConfig's job of the TPU workers (None: TF's default).
    """
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    if backend_lib.get_backend().emulated:
        return []
    return [TPUSystemInitHook(job=tpu_job_name)]
