"""Issue 36: SessionRunHooks of a migrated TPUEstimator program (``train(hooks=...)`` and
``TPUEstimatorSpec(training_hooks=...)``, as ELECTRA's ETAHook) run as TPUEstimator ran
them: ``begin`` once, ``before_run``/``after_run`` once per loop of iterations_per_loop
steps (the host's Session.run), ``request_stop`` ending training after that loop,
``end`` once; ``session.run`` of the global step reads the driver's.
Before: a TPC071/TPC086 TODO, and the driver refused hooks."""

import os
import time
import types

import pytest

from tpu_compat.migrate.estimator import to_tf2

V1 = "import tensorflow.compat.v1 as tf\n"


def test_hook_names_become_the_drivers_and_train_hooks_need_no_todo():
    source = (V1 + "class ETAHook(tf.estimator.SessionRunHook):\n"
              "  def before_run(self, run_context):\n"
              "    return tf.estimator.SessionRunArgs({})\n"
              "spec = tf.estimator.tpu.TPUEstimatorSpec(mode, loss=l, training_hooks=[ETAHook()])\n"
              "e = tf.estimator.tpu.TPUEstimator(model_fn=f, use_tpu=True)\n"
              "e.train(f, max_steps=3, hooks=[ETAHook()])\n")
    migrated = to_tf2.migrate_text(source)
    assert "class ETAHook(tpu_estimator_tf2.SessionRunHook):" in migrated.text
    assert "return tpu_estimator_tf2.SessionRunArgs({})" in migrated.text
    assert "tf.estimator" not in migrated.text and "TODO" not in migrated.text
    todo = to_tf2.migrate_text(source.replace("hooks=[ETAHook()])\n", "saving_listeners=[l])\n"))
    assert [(n.rule, n.todo) for n in todo.notes if n.todo] == [
        ("TPC086", "train(saving_listeners=...) is not migrated: TF 2 makes no Session.run "
                   "calls for hooks")]


def _train_with_hooks(model_dir, monkeypatch, use_tpu):
    """Trains to max_steps=10 in loops of 2 with a hook from train(hooks=...) and one
    from model_fn's training_hooks, each stopping at step 6; returns the hooks' calls."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute import TPUStrategy  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute.cluster_resolver import TPUClusterResolver  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    calls = []

    class StepHook(estimator_tf2.SessionRunHook):
        """ETAHook's reads (util/training_utils.py): the global step in begin, run in
        after_run and end; a fetch of it through SessionRunArgs; stops at step 6."""

        def __init__(self, name):
            self.name = name

        def begin(self):
            self.step = tf.compat.v1.train.get_or_create_global_step()
            calls.append((self.name, "begin"))

        def before_run(self, run_context):
            calls.append((self.name, "before_run"))
            return estimator_tf2.SessionRunArgs({"step": self.step})

        def after_run(self, run_context, run_values):
            step = run_context.session.run(self.step)
            calls.append((self.name, "after_run", int(run_values.results["step"]), int(step)))
            if step >= 6:
                run_context.request_stop()

        def end(self, session):
            calls.append((self.name, "end", int(session.run(self.step))))

    def model_fn(features, labels, mode, params):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(features) * (w - 1.0)
        if mode != estimator_tf2.ModeKeys.TRAIN:
            return estimator_tf2.TPUEstimatorSpec(mode, loss=loss)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_tf2.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                              training_hooks=[StepHook("spec")])

    config = estimator_tf2.RunConfig(model_dir=str(model_dir), tpu_config=estimator_tf2.TPUConfig(
        iterations_per_loop=2))
    estimator = estimator_tf2.TPUStrategyEstimator(model_fn, config=config, train_batch_size=8,
                                                   eval_batch_size=8,
                                                   use_tpu=use_tpu)
    if use_tpu:
        monkeypatch.setattr(estimator, "_strategy", TPUStrategy(TPUClusterResolver(tpu="")))
    estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([8])).repeat().unbatch()
                    .batch(params["batch_size"]), hooks=[StepHook("train")], max_steps=10)
    return calls, estimator


class _EvalRuns:
    """Counts evaluate's Session.runs; asks to stop after ``stop_after`` of them."""

    def __init__(self, stop_after):
        from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
        self.runs, self.stop_after, self.ended = 0, stop_after, False
        self.hook = type("EvalHook", (estimator_tf2.SessionRunHook,), {
            "after_run": lambda hook, context, values: self._after_run(context),
            "end": lambda hook, session: setattr(self, "ended", True)})()

    def _after_run(self, context):
        self.runs += 1
        if self.runs >= self.stop_after:
            context.request_stop()


def _eval_input_fn(params):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return tf.data.Dataset.from_tensors(tf.ones([8])).repeat().unbatch().batch(params["batch_size"])


def _expected(steps):
    """train's hooks, then model_fn's; one before/after_run pair per Session.run."""
    runs = [[(n, "before_run") for n in ("train", "spec")]
            + [(n, "after_run", s, s) for n in ("train", "spec")] for s in steps]
    return ([("train", "begin"), ("spec", "begin")] + sum(runs, [])
            + [("train", "end", steps[-1]), ("spec", "end", steps[-1])])


@pytest.mark.requires_tf
def test_hooks_see_each_step_on_the_cpu_and_can_stop_training(tmp_path, tpu8, monkeypatch):
    """use_tpu=False: TPUEstimator ran each step as a Session.run, so the hooks run around
    each step; the stop at step 6 ends training there. RunConfig's default
    save_checkpoints_secs=600 on a clock that gains 400 s a reading saves at steps 2, 4
    and 6 (800 s after the start, then after each save), not at 1, 3, 5 (400 s)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
    clock = iter(range(400, 10**6, 400))
    monkeypatch.setattr(estimator_tf2, "time", types.SimpleNamespace(
        monotonic=lambda: next(clock), time=time.time))     # the driver's readings only
    calls, estimator = _train_with_hooks(tmp_path, monkeypatch, use_tpu=False)
    assert calls == _expected([1, 2, 3, 4, 5, 6])
    saved = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [os.path.basename(path) for path in saved] == [
        "model.ckpt-2", "model.ckpt-4", "model.ckpt-6"]

    # evaluate's hooks: one Session.run a step on the CPU; a stop after 2 ends it there
    runs = _EvalRuns(stop_after=2)
    results = estimator.evaluate(_eval_input_fn, steps=3, hooks=[runs.hook])
    assert (runs.runs, runs.ended, results["global_step"]) == (2, True, 6)
    np.testing.assert_allclose(results["loss"], -0.6 - 1.0, rtol=1e-6)    # w: 6 steps of -0.1

    with tf.Graph().as_default():
        graph_tensor = tf.constant(1.0)     # a tensor of a graph: no value outside it

    class GraphFetch(estimator_tf2.SessionRunHook):
        def before_run(self, run_context):
            return estimator_tf2.SessionRunArgs(graph_tensor)
    with pytest.raises(NotImplementedError, match="SessionRunHook fetch .* is not migrated"):
        estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([8])).repeat().unbatch()
                        .batch(params["batch_size"]), hooks=[GraphFetch()], max_steps=12)


@pytest.mark.requires_tf
@pytest.mark.slow       # 8 replicas traced: ~27 s at load 18; the CPU test above keeps the hooks' calls
def test_hooks_run_once_per_loop_on_the_tpu(tmp_path, tpu8, monkeypatch):
    """8 replicas: the host's Session.run is one loop of iterations_per_loop=2 steps, so
    the hooks run around each loop (global steps 2, 4, 6) and the stop ends at 6."""
    del tpu8
    calls, estimator = _train_with_hooks(tmp_path, monkeypatch, use_tpu=True)
    assert calls == _expected([2, 4, 6])
    # evaluate on the TPU: one Session.run of all its steps, so one run for the hooks
    runs = _EvalRuns(stop_after=2)
    estimator.evaluate(_eval_input_fn, steps=3, hooks=[runs.hook])
    assert (runs.runs, runs.ended) == (1, True)
