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


@pytest.mark.requires_tf
def test_hooks_run_once_per_loop_and_can_stop_training(tmp_path, tpu8, monkeypatch):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
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
        loss = tf.reduce_mean(features) * w
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_tf2.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                              training_hooks=[StepHook("spec")])

    config = estimator_tf2.RunConfig(model_dir=str(tmp_path), tpu_config=estimator_tf2.TPUConfig(
        iterations_per_loop=2))
    # RunConfig's default save_checkpoints_secs=600 on a clock that gains 400 s a reading:
    # the loops end at 800 s (saved: step 4) and 400 s after that (not saved: step 6)
    clock = iter(range(400, 10**6, 400))
    monkeypatch.setattr(estimator_tf2, "time", types.SimpleNamespace(
        monotonic=lambda: next(clock), time=time.time))     # the driver's readings only
    # one replica: the loop (and so the hooks' rhythm) is the same with 8, and cheaper
    estimator = estimator_tf2.TPUStrategyEstimator(model_fn, config=config, train_batch_size=8,
                                                   use_tpu=False)
    estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([8])).repeat().unbatch()
                    .batch(params["batch_size"]), hooks=[StepHook("train")], max_steps=10)
    # train's hooks, then model_fn's; loops of 2 steps; stopped after the loop reaching 6
    per_loop = [[(n, "before_run") for n in ("train", "spec")]
                + [(n, "after_run", s, s) for n in ("train", "spec")] for s in (2, 4, 6)]
    assert calls == ([("train", "begin"), ("spec", "begin")] + sum(per_loop, [])
                     + [("train", "end", 6), ("spec", "end", 6)])
    saved = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [os.path.basename(path) for path in saved] == ["model.ckpt-4", "model.ckpt-6"]

    with tf.Graph().as_default():
        graph_tensor = tf.constant(1.0)     # a tensor of a graph: no value outside it

    class GraphFetch(estimator_tf2.SessionRunHook):
        def before_run(self, run_context):
            return estimator_tf2.SessionRunArgs(graph_tensor)
    with pytest.raises(NotImplementedError, match="SessionRunHook fetch .* is not migrated"):
        estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([8])).repeat().unbatch()
                        .batch(params["batch_size"]), hooks=[GraphFetch()], max_steps=12)
