"""``TPUEstimatorSpec`` and its host calls (``eval_metrics``, ``host_call``).

A host call is ``(fn, tensors)``: ``tensors`` (a list, or a dict of keyword
arguments) are computed on every replica, concatenated along their batch
dimension across replicas on the host, and ``fn`` runs on the host CPU over
the result: ``metric_fn`` returns metrics, ``host_call``'s fn usually writes
summaries. On the CPU (``use_tpu=False``) ``fn`` runs directly on the tensors.
"""

import collections
import inspect

import tensorflow as tf

from tpu_compat._tf_internals import gen_summary_ops, summary_ops_v2

from tpu_compat.estimator import _inputs
from tpu_compat.estimator._spec import EstimatorSpec, check_metric_ops, validate_hooks
from tpu_compat.estimator.tpu import _ordering, scaffold_savers
from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["HostCall", "HostCallHook", "TPUEstimatorSpec", "call_metric_fn"]


class HostCall(collections.namedtuple("HostCall", ["name", "fn", "keys", "tensors"])):
    """One validated host call; ``keys`` is None when ``tensors`` was a list."""

    @classmethod
    def parse(cls, name, host_call):
        if not isinstance(host_call, (tuple, list)) or len(host_call) != 2:
            raise ValueError(f"TPUEstimatorSpec.{name} must be a (fn, tensors) pair, "
                             f"given: {host_call!r}")
        fn, tensors = host_call
        if not callable(fn):
            raise TypeError(f"TPUEstimatorSpec.{name}[0] must be callable, given: {fn!r}")
        if isinstance(tensors, dict):
            keys = list(tensors)
            values = [tensors[k] for k in keys]
        elif isinstance(tensors, (tuple, list)):
            keys, values = None, list(tensors)
            names = _inputs.fn_args(fn)
            try:
                varargs = any(p.kind == p.VAR_POSITIONAL
                              for p in inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                varargs = True
            if not varargs and len(values) != len(names):
                raise ValueError(
                    f"TPUEstimatorSpec.{name}: {len(values)} tensors given, but "
                    f"{getattr(fn, '__name__', 'the function')} takes {len(names)} "
                    f"arguments ({', '.join(names)})")
        else:
            raise ValueError(f"TPUEstimatorSpec.{name}[1] must be a list, tuple or "
                             f"dict of tensors, given: {tensors!r}")
        return cls(name, fn, keys, values)

    def call(self, tensors=None):
        tensors = self.tensors if tensors is None else tensors
        if self.keys is None:
            return self.fn(*tensors)
        return self.fn(**dict(zip(self.keys, tensors)))


def call_metric_fn(host_call, tensors=None):
    """Runs ``metric_fn`` and checks that it returned metrics (naming it if not)."""
    result = host_call.call(tensors)
    fn_name = getattr(host_call.fn, "__name__", "metric_fn")
    return check_metric_ops(
        result, f"TPUEstimatorSpec.eval_metrics: the metric_fn {fn_name!r} returned "
                f"a value that is not metrics; its result")


class HostCallHook(tf.compat.v1.train.SessionRunHook):
    """Initializes summary writers, runs host-call ops, flushes the writers at the end.

    ``fetches`` are run with every step (CPU: the host call ops themselves);
    ``after_run_ops``, if given, run ``runs_per_step()`` times after each step
    (TPU: one host call per on-device step, reading the step's tensors from
    the host-call queue). With ``every_n`` > 1 (TPUConfig's
    ``experimental_host_call_every_n_steps``) only the loop's steps 0, n, 2n,
    ... run them; the others' tensors are dequeued with ``skip_op``.
    """

    def __init__(self, fetches=None, after_run_ops=None, runs_per_step=None,
                 every_n=1, skip_op=None, queued_op=None):
        self._fetches = fetches
        self._after_run_ops = after_run_ops
        self._runs_per_step = runs_per_step
        self._every_n = every_n
        self._skip_op = skip_op
        # The host-call queue's size: each dequeue below waits for a step's
        # outfeed, so fewer queued steps than expected would wait forever.
        self._queued_op = queued_op

    def begin(self):
        self._init_ops = list(summary_ops_v2.summary_writer_initializer_op())
        # The writers' resources are the initializers' first inputs.
        self._flush_ops = [gen_summary_ops.flush_summary_writer(op.inputs[0])
                           for op in self._init_ops]

    def after_create_session(self, session, coord):
        del coord
        if self._init_ops:
            session.run(self._init_ops)

    def before_run(self, run_context):
        del run_context
        # The step count of *this* run: other hooks' after_run may already
        # set the next run's count before ours runs.
        self._pending = self._runs_per_step() if self._runs_per_step else 0
        if self._fetches is None:
            return None
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        del run_values
        if self._after_run_ops is None:
            return
        if self._queued_op is not None and self._pending:
            queued = int(run_context.session.run(self._queued_op))
            if queued < self._pending:
                raise RuntimeError(
                    f"TPUEstimator host calls: the loop ran {queued} step(s) but "
                    f"{self._pending} were expected; their host_call/eval_metrics "
                    f"would wait for the missing steps forever (a tpu_compat bug: "
                    f"please report it)")
        for step in range(self._pending):
            if step % self._every_n == 0:
                run_context.session.run(self._after_run_ops)
            else:
                run_context.session.run(self._skip_op)

    def end(self, session):
        if self._flush_ops:
            session.run(self._flush_ops)


_FIELDS = ("mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
           "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks",
           "prediction_hooks")


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", _FIELDS)):
    """What a TPUEstimator ``model_fn`` returns.

    Differs from EstimatorSpec where TPUs need it: metrics come as
    ``eval_metrics=(metric_fn, tensors)`` (run on the host over the tensors of
    all replicas), the Scaffold comes from ``scaffold_fn`` (called on the host,
    outside the replicated step), and ``host_call=(fn, tensors)`` runs on the
    host after every step.
    """

    def __new__(cls, mode, predictions=None, loss=None, train_op=None,
                eval_metrics=None, export_outputs=None, scaffold_fn=None,
                host_call=None, training_hooks=None, evaluation_hooks=None,
                prediction_hooks=None):
        if eval_metrics is not None:
            HostCall.parse("eval_metrics", eval_metrics)
        if host_call is not None:
            HostCall.parse("host_call", host_call)
        if scaffold_fn is not None and not callable(scaffold_fn):
            raise TypeError(f"TPUEstimatorSpec.scaffold_fn must be callable, given: "
                            f"{scaffold_fn!r}")
        return super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metrics=eval_metrics, export_outputs=export_outputs,
            scaffold_fn=scaffold_fn, host_call=host_call,
            training_hooks=validate_hooks(training_hooks, "TPUEstimatorSpec.training_hooks"),
            evaluation_hooks=validate_hooks(evaluation_hooks,
                                            "TPUEstimatorSpec.evaluation_hooks"),
            prediction_hooks=validate_hooks(prediction_hooks,
                                            "TPUEstimatorSpec.prediction_hooks"))

    def as_estimator_spec(self):
        """The equivalent EstimatorSpec for running on the CPU (host calls run inline)."""
        metric_ops = None
        if self.eval_metrics is not None:
            metric_ops = call_metric_fn(HostCall.parse("eval_metrics", self.eval_metrics))
        hooks = ()
        if self.host_call is not None:
            host_call = HostCall.parse("host_call", self.host_call)
            if self.train_op is not None:
                # The same step order as the TPU step (see _ordering).
                _ordering.reads_before_updates(tf.nest.flatten(host_call.tensors),
                                               self.train_op)
            ops = host_call.call()
            hooks = (HostCallHook(fetches=ops),)
        scaffold = get_scaffold(self.scaffold_fn)
        return EstimatorSpec(
            mode=self.mode, predictions=self.predictions, loss=self.loss,
            train_op=self.train_op, eval_metric_ops=metric_ops,
            export_outputs=self.export_outputs, scaffold=scaffold,
            training_hooks=self.training_hooks + hooks,
            evaluation_hooks=self.evaluation_hooks + hooks,
            prediction_hooks=self.prediction_hooks + hooks)


def get_scaffold(scaffold_fn):
    """Calls ``scaffold_fn`` (on the host); TF 1.15 refused a None result.

    A Saver it builds over the replicas' variables restores every copy
    (``scaffold_savers``: evaluating with moving averages).
    """
    if scaffold_fn is None:
        return None
    with scaffold_savers.distributed_variables_restore_every_copy():
        scaffold = scaffold_fn()
    if scaffold is None:
        raise ValueError("TPUEstimatorSpec.scaffold_fn returned None; it must return "
                         "a tf.compat.v1.train.Scaffold (e.g. "
                         "tf.compat.v1.train.Scaffold() after calling "
                         "init_from_checkpoint)")
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"TPUEstimatorSpec.scaffold_fn must return a "
                        f"tf.compat.v1.train.Scaffold, given: {scaffold!r}")
    return scaffold


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
