"""Which rounded ops of one replica step move its numbers (``numerics-diff --ops-at-step``).

With ``--numerics tpu`` and ``TPU_COMPAT_NUMERICS_OPS=STEP:FILE``, every op
:mod:`tpu_compat.fidelity.numerics` rounds in a replica step that replica 0
builds is also computed with its operands as given (exact float32), and its
*local contribution* is kept for replica 0's STEP-th replica step (1-based):
``max |y_rounded - y_exact| / max |y_exact|`` over its output, on the same
inputs. FILE (JSON, written atomically at exit) lists those ops with their
type, name, pass (forward or backward) and the user's line.

Counting executions, not traces: a replica step is traced once and run many
times (``tf.function`` loops, Keras ``steps_per_execution``, TF 1.x session
loops), so a Python counter in the op wrapper would count traces. Instead,
each replica function replica 0 builds starts with a *step marker*, a
``tf.py_function`` that counts on the host each time the step *runs* and
returns the count; each recorded op's record (another ``tf.py_function``)
takes that count as an input, so it is filed under the step it ran in even
when steps overlap, and the op's output is returned through an ``Identity``
that depends on the record, so TF 1.x sessions run it too. The record and
the exact op sit in a ``tf.cond`` on the count (v1 control flow in a TF 1.x
graph, inside its while loops and their gradients too), so other steps pay one
host call (the marker's), not one per op; eager runs build nothing off the
chosen step. Those ops are marked as host ops (the
fidelity checks and the lint leave them out); none of them feeds a value into
the program, so its numbers stay what ``--numerics tpu`` gives. Without the
variable nothing here is built, and without ``--numerics tpu`` nothing here
is called.

Not counted: replica functions that reach TensorFlow's mirrored machinery
without the emulated TPU's replica wrapper (a ``tf.function`` passed to
``strategy.run`` eagerly under ``--fidelity cpu``), ops built outside a
counted step, and emulated pods (replica 0 runs on a worker process, which
cannot call back into the program's Python). In a TF 1.x graph a step whose
replica 0 runs no rounded op is not counted (nothing there runs its marker).
"""

import atexit
import contextlib
import functools
import json
import threading

import tensorflow as tf

from tpu_compat import _atomic, _callsite, settings
from tpu_compat._tf_internals import distribute_lib, ops
from tpu_compat.fidelity import compile_checks, tpu_semantics

__all__ = ["Recorder", "configure", "record", "recorder", "replica_step"]

_recorder = None  # the process's Recorder, when TPU_COMPAT_NUMERICS_OPS is set


class Recorder:
    """The ops of replica 0's step ``step`` and how far their rounding moved them."""

    def __init__(self, step, path):
        self.step = step
        self.path = path
        self._lock = threading.Lock()
        self._steps_run = 0
        self._sites = []  # per recorded op instance: its description
        self._found = {}  # op instance -> [max |diff|, max |exact|, executions]
        self._pods_skipped = False

    # -- the host side: called by the py_functions when the step runs ----------------

    def _begin_step(self):
        with self._lock:
            self._steps_run += 1
            return self._steps_run

    def _record(self, site, step, difference, magnitude):
        step = int(step)
        if step == self.step:
            with self._lock:
                found = self._found.setdefault(site, [0.0, 0.0, 0])
                found[0] = _larger(found[0], float(difference))
                found[1] = _larger(found[1], float(magnitude))
                found[2] += 1
        return step

    # -- the report -----------------------------------------------------------------

    def report(self):
        """What FILE holds: the step, how many ran, and its ops, largest first."""
        with self._lock:
            found = dict(self._found)
            steps_run = self._steps_run
        rows = []
        for site, (difference, magnitude, executions) in found.items():
            row = dict(self._sites[site])
            row.update(max_abs_diff=difference, max_abs_exact=magnitude,
                       executions=executions, relative=_relative(difference, magnitude))
            rows.append(row)
        # A non-finite output (inf, nan) is listed first: it moved the most.
        rows.sort(key=lambda row: -(row["relative"] if row["relative"] == row["relative"]
                                    else float("inf")))
        report = {"step": self.step, "steps_run": steps_run, "ops": rows}
        if self._pods_skipped:
            report["not_recorded"] = "replica 0 runs on an emulated pod's worker"
        return report

    def write(self):
        # Python's json writes and reads inf and nan (as Infinity and NaN).
        data = json.dumps(self.report(), indent=1).encode("utf-8")
        _atomic.atomic_write(self.path, data)

    # -- building: the marker and the records ----------------------------------------

    def marker(self):
        """The step marker of the replica function being built, or None."""
        context = distribute_lib.get_replica_context()
        if context is None or _replica_id(context) != 0:
            return None
        if getattr(context.strategy.extended, "num_hosts", 1) > 1:
            self._pods_skipped = True
            return None
        with _host_ops():
            return tf.py_function(self._begin_step, [], tf.int64,
                                  name="tpu_compat_numerics_step")

    def record(self, op_type, rounded, exact_fn, marker, caller):
        """``rounded`` (an op's output), after recording its contribution.

        ``caller``: the frames that asked for the step (its replica runs in
        a thread of its own, whose stack starts at ``threading``).
        """
        eager = isinstance(marker, ops.EagerTensor)
        if eager != isinstance(rounded, ops.EagerTensor) or (
                not eager and not _reaches(rounded.graph, marker.graph)):
            return rounded  # built where the step's marker cannot reach: not counted
        if eager and int(marker) != self.step:
            return rounded  # eager: this run is not the chosen step, nothing to build
        site = self._site(op_type, rounded, caller)

        def recorded():
            exact = exact_fn()
            difference = tf.reduce_max(tf.abs(tf.cast(rounded, tf.float32)
                                              - tf.cast(exact, tf.float32)))
            magnitude = tf.reduce_max(tf.abs(tf.cast(exact, tf.float32)))
            return tf.py_function(functools.partial(self._record, site),
                                  [marker, difference, magnitude], tf.int64,
                                  name="tpu_compat_numerics_record")

        with _host_ops(), ops.name_scope("tpu_compat_numerics_ops"):
            if eager:
                done = recorded()
            else:
                # Only the chosen step computes the exact op and calls back
                # (a py_function run costs ~0.5 ms).
                done = tf.cond(tf.equal(marker, self.step), recorded,
                               lambda: tf.identity(marker))
        with ops.control_dependencies([done]):
            return tf.identity(rounded)

    def _site(self, op_type, rounded, caller):
        """The op instance's number in :attr:`_sites`: its type, name, pass and line."""
        graph = None if isinstance(rounded, ops.EagerTensor) else rounded.graph
        # TF 1.x gradients build each gradient op under the forward op
        # (TF 2.21's tensorflow/python/ops/gradients_util.py, `_original_op`):
        # its line is the user's. GradientTape's backward ops carry the
        # forward op's name scope under `gradient_tape/` (TF 2.21's
        # tensorflow/python/eager/backprop.py, `gradient_name_scope`).
        forward = getattr(graph, "_default_original_op", None) if graph else None
        if graph is None:
            scope = ops.get_name_scope()
            name = f"{scope}/{op_type}" if scope else op_type
            frames = _callsite.current_frames()
        else:
            name = rounded.op.name
            frames = (forward if forward is not None else rounded.op).traceback
        # A Keras step's ops have no user frame in the replica's thread: the
        # line that asked for the step (`model.fit`) is the user's then.
        filename, line = _callsite.user_location(frames, caller)
        backward = forward is not None or any(
            tpu_semantics.GRADIENT_SCOPE.match(scope) for scope in name.split("/")[:-1])
        with self._lock:
            self._sites.append({"op": op_type, "name": name, "file": filename,
                                "line": line, "pass": "backward" if backward else "forward"})
            return len(self._sites) - 1


def _larger(kept, value):
    """The larger of the two; nan, once seen, is kept (Python's max drops it)."""
    return value if value != value or value > kept else kept


def _relative(difference, magnitude):
    if difference == 0:
        return 0.0
    return difference / magnitude if magnitude else float("inf")


def _replica_id(context):
    replica = context._replica_id_in_sync_group  # pylint: disable=protected-access
    return replica if isinstance(replica, int) else tf.get_static_value(replica)


@contextlib.contextmanager
def _host_ops():
    """Marks the ops built inside as host ops: no part of the TPU's program."""
    graph = None if tf.executing_eagerly() else ops.get_default_graph()
    before = len(graph.get_operations()) if graph is not None else 0
    yield
    if graph is not None:
        compile_checks.mark_host_ops(graph.get_operations()[before:])


def _reaches(graph, marker_graph):
    """Whether ``graph`` can use a tensor of ``marker_graph`` (it or a function in it)."""
    while graph is not None:
        if graph is marker_graph:
            return True
        graph = getattr(graph, "outer_graph", None)
    return False


# -- the module's switch: configured once by numerics.install ---------------------------

def configure():
    """Starts recording when ``TPU_COMPAT_NUMERICS_OPS`` is set (validated, naming it)."""
    global _recorder
    chosen = settings.read("numerics_ops")
    if chosen is None or _recorder is not None:
        return
    _recorder = Recorder(*chosen)
    atexit.register(_recorder.write)


def recorder():
    """The process's :class:`Recorder`, or None: one global read when off."""
    return _recorder


_building = threading.local()  # per thread: each replica is built in its own thread


def _current_step():
    """(marker, caller's frames) of the replica function being built, or None."""
    stack = getattr(_building, "steps", None)
    return stack[-1] if stack else None


def replica_step(fn):
    """``fn`` (a replica function) starting with a step marker when recording."""
    if _recorder is None:
        return fn

    caller = _callsite.current_frames()  # of the thread that asks for the step

    @functools.wraps(fn)
    def counted_fn(*args, **kwargs):
        recording = _recorder
        marker = recording.marker() if recording is not None else None
        stack = _building.__dict__.setdefault("steps", [])
        stack.append(None if marker is None else (marker, caller))
        try:
            return fn(*args, **kwargs)
        finally:
            stack.pop()

    return counted_fn


def record(op_type, rounded, exact_fn):
    """``rounded``, recorded when replica 0's step being built is counted."""
    step = _current_step()
    if _recorder is None or step is None:
        return rounded
    return _recorder.record(op_type, rounded, exact_fn, *step)
