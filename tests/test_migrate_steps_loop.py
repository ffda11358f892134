"""TF 1.15's ``extended.experimental_run_steps_on_iterator`` (TPC012), run as the
era's whole program (tests/migrate_programs/tpu_steps_loop_legacy.py) and
checked against a NumPy reference computed independently of TensorFlow.

What the era computed (tensorflow r1.15):

* tensorflow/python/distribute/tpu_strategy.py ``_experimental_run_steps_on_iterator``:
  ``iterations`` steps per ``Session.run`` of ``run_op`` (one when
  ``steps_per_run == 1``), each replica on its slice of the global batch;
  ``last_step_outputs`` hold the last step's outputs, a ``reduce_op`` output
  reduced across replicas (input_lib.py ``MultiStepContext.set_last_step_output``:
  ``strategy.reduce`` in cross-replica context, a ``merge_call`` in a replica).
* tensorflow/python/distribute/distribute_lib.py ``get_loss_reduction``: ``SUM``
  unless inside the Estimator's ``_scale_loss_for_estimator_enabled``; so a
  ``tf.compat.v1.train.Optimizer`` does not scale a replica's loss, and the
  strategy SUMS the replicas' gradients (training/optimizer.py
  ``_distributed_apply``). Each replica's loss is the mean of its slice: the
  update is N times the full-batch mean gradient, i.e. full-batch SGD with the
  learning rate times N.

Last session a hand-written TF 2 "equivalent" printed loss_0 0.1375 where the
legacy program under tpu-compat printed 0.7015 (8 replicas, 2 iterations per
call): 0.1375 is the first step's loss at w = 0, 0.7015 the second step's loss
after one summed-gradient update, the era's number (the reference below
reproduces both). The emulation was right: 0.1375 is what a loop prints that
reports its first step's loss, or runs one step per call, not the era's
last-step output of a two-step call.
"""

import os

import numpy as np
import pytest
from conftest import check_ok, lazy_runs, parse_numbers, run_cli

pytestmark = pytest.mark.requires_tf

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrate_programs")
LEGACY = os.path.join(PROGRAMS, "tpu_steps_loop_legacy.py")
# The program's defaults (its flags): 4 steps per call, 3 calls, global batch 16.
ITERATIONS, LOOPS, BATCH, LEARNING_RATE = 4, 3, 16, 0.1


def era_reference(replicas, iterations=ITERATIONS, loops=LOOPS, batch=BATCH,
                  learning_rate=LEARNING_RATE):
    """The program's printed numbers as TF 1.15 computed them, in float64 NumPy:
    per call ``iterations`` SGD steps on consecutive global batches of the
    repeated data, the replicas' mean-loss gradients summed; ``loss_k`` the mean
    over replicas of the last step's replica losses (= the global batch's mean
    loss, before that step's update)."""
    x = np.arange(64 * 4, dtype=np.float64).reshape(64, 4) / 256.0
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]])
    w = np.zeros((4, 1))
    numbers, step = {"replicas": replicas}, 0
    for index in range(loops):
        for _ in range(iterations):
            start = (step * batch) % len(x)
            features, labels = x[start:start + batch], y[start:start + batch]
            residual = features @ w - labels
            loss = float(np.mean(residual ** 2))
            mean_gradient = 2 * features.T @ residual / batch
            w = w - learning_rate * replicas * mean_gradient  # the replicas' sum
            step += 1
        numbers[f"loss_{index}"] = loss
    numbers["w_sum"] = float(w.sum())
    return numbers


def test_reference_reproduces_both_numbers_of_the_report():
    """The two numbers last session saw, from the reference alone: the era's
    second-step loss (0.7015) and the first step's loss at w = 0 (0.1375)."""
    assert era_reference(8, iterations=2)["loss_0"] == pytest.approx(0.7015, abs=5e-5)
    assert era_reference(8, iterations=1)["loss_0"] == pytest.approx(0.1375, abs=5e-5)


def legacy_numbers(replicas):
    run = run_cli("run", "--tf1", "--replicas", str(replicas), LEGACY,
                  env={"TPU_COMPAT_WARNINGS": "ignore"})
    return parse_numbers(check_ok(run).stdout)


@pytest.fixture(scope="module")
def legacy_runs():
    return lazy_runs(legacy_numbers)


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", (1, 2, 8))
def test_legacy_steps_loop_computes_the_eras_numbers(legacy_runs, replicas):
    numbers = legacy_runs[replicas]
    want = era_reference(replicas)
    assert set(numbers) == set(want)
    for key, value in want.items():
        assert numbers[key] == pytest.approx(value, rel=1e-4, abs=1e-6), (key, numbers, want)
    assert numbers["loss_2"] < numbers["loss_0"]  # it trained


# -- the rewrite (graph_loop's TPC012 and TPC019, rewrites/_steps_loop.py) --------

from migrate_check import assert_rewritten, assert_todo, upgraded as _upgrade  # noqa: E402
from tpu_compat.migrate import report, upgrade  # noqa: E402  (the rewrite's tests below)
from tpu_compat.migrate.rewrites import _steps_loop  # noqa: E402

TF = "import tensorflow as tf\n"
STRATEGY = "s = tf.distribute.experimental.TPUStrategy(r, steps_per_run=N)\n"
SESSION = "sess = tf.Session()\n"


def _helper():
    lines = _steps_loop.helper_source("tf").splitlines(keepends=True)
    return "".join(lines[2:])  # the source opens with the two blank lines it is given


REWRITES = [
    # the era's loop on the module's TPU strategy, iterations = its steps_per_run
    (TF + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(\n"
     "    step_fn, it, iterations=N, initial_loop_values={'loss': l})\n" + SESSION,
     TF + "\n\n" + _helper() + "\n\n" + "s = tf.compat.v2.distribute.TPUStrategy(r)\n"
     "ctx = _run_steps_on_iterator(\n    s, step_fn, it, iterations=N, initial_loop_values={'loss': l})\n"
     + SESSION),
    # positional iterations, both 1 (absent steps_per_run is 1)
    (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, 1)\n" + SESSION,
     TF + "\n\n" + _helper() + "\n\n" + "s = tf.distribute.TPUStrategy(r)\n"
     "ctx = _run_steps_on_iterator(s, f, it, 1)\n" + SESSION),
    # iterations reads the strategy's own steps_per_run: TF 2's class has none, so
    # it becomes the constructor's value, a name assigned once at module level ...
    (TF + "N = 4\n" + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(\n"
     "    step_fn, it, iterations=s.steps_per_run)\n" + SESSION,
     TF + "\n\n" + _helper() + "\n\n" + "N = 4\ns = tf.compat.v2.distribute.TPUStrategy(r)\n"
     "ctx = _run_steps_on_iterator(\n    s, step_fn, it, iterations=N)\n" + SESSION),
    # ... a literal, read through .extended ...
    (TF + "s = tf.distribute.experimental.TPUStrategy(r, 8)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, s.extended.steps_per_run)\n"
     + SESSION,
     TF + "\n\n" + _helper() + "\n\n" + "s = tf.compat.v2.distribute.TPUStrategy(r)\n"
     "ctx = _run_steps_on_iterator(s, f, it, 8)\n" + SESSION),
    # ... or 1, TF 1.15's value when steps_per_run was not given (TF 2's V2 class
    # would read 1 here too, but TF 2.21's TPUStrategy has no .steps_per_run)
    (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, s.steps_per_run)\n" + SESSION,
     TF + "\n\n" + _helper() + "\n\n" + "s = tf.distribute.TPUStrategy(r)\n"
     "ctx = _run_steps_on_iterator(s, f, it, 1)\n" + SESSION),
    # call_for_each_replica -> run (same parameters), in a graph program
    (TF + "sess = tf.Session()\nd = tf.distribute.MirroredStrategy()\n"
     "out = d.extended.call_for_each_replica(fn, args=(x,))\n",
     TF + "sess = tf.Session()\nd = tf.distribute.MirroredStrategy()\nout = d.run(fn, args=(x,))\n"),
    (TF + "tf.compat.v1.disable_eager_execution()\nd = tf.distribute.MirroredStrategy()\n"
     "out = d.extended.call_for_each_replica(fn, (x,), {'k': 1})\n",
     TF + "tf.compat.v1.disable_eager_execution()\nd = tf.distribute.MirroredStrategy()\n"
     "out = d.run(fn, (x,), {'k': 1})\n"),
]


@pytest.mark.parametrize("before,after", REWRITES, ids=[b for b, _ in REWRITES])
def test_rewrites(before, after):
    assert_rewritten(before, after)


TODOS = [
    # TF 1.15's TPU loop ran one step when steps_per_run was 1: not the same count
    (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, iterations=4)\n" + SESSION,
     "TPC012", "iterations (4) is not the strategy's steps_per_run (1)"),
    (TF + "ctx = strategy.extended.experimental_run_steps_on_iterator(f, it, 4)\n" + SESSION,
     "TPC012", "cannot tell the strategy's steps_per_run"),
    (TF + STRATEGY + "e = s.extended\nctx = e.experimental_run_steps_on_iterator(f, it, N)\n"
     + SESSION, "TPC012", "not `<strategy>.extended`"),
    (TF + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(*a)\n" + SESSION,
     "TPC012", "a reference, not a call"),
    (TF + STRATEGY + "def _run_steps_on_iterator():\n    pass\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n" + SESSION,
     "TPC012", "already names _run_steps_on_iterator"),
    ("from tensorflow import distribute\ns = distribute.experimental.TPUStrategy(r, steps_per_run=N)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n"
     "import tensorflow.compat.v1\ntensorflow.compat.v1.Session()\n",
     "TPC012", "no module-level `import tensorflow as tf`"),
    # eager code: no graph loop to write
    (TF + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n",
     "TPC012", "not a graph program"),
    (TF + "d = tf.distribute.MirroredStrategy()\n"
     "out = d.extended.call_for_each_replica(fn, args=(x,))\n", "TPC019", "not a graph program"),
    (TF + SESSION + "d = tf.distribute.MirroredStrategy()\n"
     "out = d.extended.call_for_each_replica(fn, args=(x,), extra=1)\n",
     "TPC019", "only call_for_each_replica(fn, args, kwargs)"),
    # iterations reads steps_per_run, whose expression is not safe to repeat at the
    # call: an attribute (FLAGS may change), a module-level name bound twice or
    # through `global`, a name the call's scope shadows
    (TF + "s = tf.distribute.experimental.TPUStrategy(r, steps_per_run=FLAGS.steps)\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, s.steps_per_run)\n" + SESSION,
     "TPC012", "given as `FLAGS.steps`, which cannot be repeated at the call"),
    (TF + "N = 4\n" + STRATEGY + "N = 2\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, s.steps_per_run)\n" + SESSION,
     "TPC012", "given as `N`, which cannot be repeated"),
    (TF + "N = 4\n" + STRATEGY + "def more():\n    global N\n    N += 1\n"
     "ctx = s.extended.experimental_run_steps_on_iterator(f, it, s.steps_per_run)\n" + SESSION,
     "TPC012", "given as `N`, which cannot be repeated"),
    (TF + "N = 4\n" + STRATEGY + "def loop(N):\n"
     "    return s.extended.experimental_run_steps_on_iterator(f, it, s.steps_per_run)\n"
     + SESSION, "TPC012", "given as `N`, which cannot be repeated"),
    # ... or of a strategy that is not (only) the module's TPU strategy
    (TF + "N = 4\nstrategy = tf.distribute.experimental.TPUStrategy(r, steps_per_run=N)\n"
     "def loop(strategy):\n    return strategy.extended.experimental_run_steps_on_iterator(\n"
     "        f, it, strategy.steps_per_run)\n" + SESSION,
     "TPC012", "the steps_per_run of `strategy`, which is not (only) the module's TPU strategy"),
    # every other read of the strategy's steps_per_run keeps its TODO, and so does
    # the class (TF 2's has no steps_per_run) while the loop is rewritten
    (TF + "N = 4\n" + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n"
     "print(s.steps_per_run, s.extended.steps_per_run)\n" + SESSION, "TPC008", "manual"),
    (TF + "N = 4\n" + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n"
     "print(s.extended.steps_per_run)\n" + SESSION, "TPC005", "(.extended)"),
    (TF + "N = 4\n" + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n"
     "print(s.steps_per_run)\n" + SESSION, "TPC005", ", .steps_per_run)"),
    # only a strategy's `extended` had steps_per_run: marked whatever holds it
    (TF + "def steps(d):\n    return d.extended.steps_per_run\n", "TPC008", "manual"),
    # a strategy whose .extended is read for something else keeps its class's TODO
    (TF + STRATEGY + "ctx = s.extended.experimental_run_steps_on_iterator(f, it, N)\n"
     "n = s.extended.worker_devices\n" + SESSION, "TPC005", ".extended"),
]


@pytest.mark.parametrize("before,rule,why", TODOS, ids=[b for b, _, _ in TODOS])
def test_todos(before, rule, why):
    assert_todo(before, rule, why)


NOOPS = [
    TF + "ctx = s.experimental_run_steps_on_iterator_v2(f, it)\n" + SESSION,
    # what the rewrite writes is not legacy again
    TF + "N = 4\ns = tf.distribute.TPUStrategy(r)\n"
    "ctx = _run_steps_on_iterator(s, f, it, iterations=N)\n" + SESSION,
    TF + SESSION + "out = s.run(fn, args=(x,))\n",
]


@pytest.mark.parametrize("source", NOOPS)
def test_noops(source):
    assert _upgrade(source) == (source, [])


# -- the whole program: upgraded, run strict, the legacy run's numbers -------------

@pytest.fixture(scope="module")
def migrated_program(tmp_path_factory):
    """tests/migrate_programs/tpu_steps_loop_legacy.py upgraded (legacy free) and its text."""
    result = upgrade.upgrade_file(LEGACY)
    assert result.error is None, result.error
    assert result.changed and report.legacy_free(result), result.outcomes
    path = tmp_path_factory.mktemp("steps_loop") / "tpu_steps_loop_migrated.py"
    path.write_bytes(result.output)
    return str(path), result.output.decode("utf-8")


@pytest.fixture(scope="module")
def migrated_runs(migrated_program):
    def numbers(replicas):
        run = run_cli("run", "--tf1", "--replicas", str(replicas), "--warnings", "error",
                      "--strict", "on", migrated_program[0])
        return parse_numbers(check_ok(run).stdout)
    return lazy_runs(numbers)


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", (1, 2, 8))
def test_steps_loop_program_migrates_and_runs_strict_with_the_same_numbers(
        migrated_program, migrated_runs, legacy_runs, replicas):
    """The era's multi-step Session loop, upgraded: TF 2's class, the helper loop
    with the program's own step_fn(ctx, inputs), strategy.run, the initializable
    iterator; under `--warnings error --strict on` it prints the legacy run's
    numbers, which are the era's (the NumPy reference above)."""
    _, text = migrated_program
    code = text.split('"""', 2)[2]  # the docstring still tells the program's story
    for new in ("strategy = tf.compat.v2.distribute.TPUStrategy(\n        resolver)",
                "loop = _run_steps_on_iterator(\n            strategy, step_fn, iterator,",
                "strategy.run(\n                replica_step, args=(inputs,))",
                ".make_initializable_iterator()", "session.run(iterator.initializer)",
                "def _run_steps_on_iterator(strategy, fn, iterator, iterations=1,"):
        assert new in code, (new, code)
    program = code.split("def main", 1)[1]
    assert ".extended" not in program and "steps_per_run=" not in program
    numbers, legacy = migrated_runs[replicas], legacy_runs[replicas]
    assert set(numbers) == set(legacy) and numbers["replicas"] == replicas
    for key, value in legacy.items():
        assert numbers[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (key, numbers, legacy)
    want = era_reference(replicas)
    assert numbers["loss_0"] == pytest.approx(want["loss_0"], rel=1e-4)


def test_call_for_each_replica_stays_inside_a_loop_left_to_the_era():
    """A step function of TF 1.15's TPU loop ran inside tpu.replicate, where
    call_for_each_replica only entered the replica context: with the loop kept
    (a TODO), `run` there would replicate again, so both keep their TODO."""
    source = (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n"
              "def step(ctx, inputs):\n    return s.extended.call_for_each_replica(f, args=(inputs,))\n"
              "ctx = s.extended.experimental_run_steps_on_iterator(step, it, 4)\n" + SESSION)
    out, outcomes = _upgrade(source)
    actions = {o.finding.rule: (o.action, o.detail) for o in outcomes}
    assert actions["TPC012"][0] == upgrade.TODO
    assert actions["TPC019"] == (upgrade.TODO, "the module's experimental_run_steps_on_iterator "
                                               "keeps its TODO")
    assert "s.extended.call_for_each_replica(f, args=(inputs,))" in out


@pytest.mark.parametrize("tf_name", ["tensorflow.compat.v1", "tensorflow"])
def test_the_helper_is_tensorflow_api_only(tpu8, tf_name):
    """The helper upgrade writes runs on TensorFlow alone (no tpu_compat), in a TF 1
    graph, under either spelling of TF: `iterations` steps per run_op, a step that
    sets no output (the loop's one variable), a reduced output, and a replica's
    output without reduce_op kept as the replicas' values."""
    del tpu8  # TensorFlow's devices as the suite sets them; the helper uses none of tpu_compat
    import importlib  # pylint: disable=import-outside-toplevel
    tf = importlib.import_module(tf_name)
    namespace = {"tf": tf}
    exec(_steps_loop.helper_source("tf"), namespace)  # pylint: disable=exec-used
    run_steps = namespace[_steps_loop.HELPER_NAME]
    v1 = importlib.import_module("tensorflow.compat.v1")
    with v1.Graph().as_default():
        strategy = v1.distribute.get_strategy()
        counter = v1.get_variable("counter", [], v1.float32, v1.zeros_initializer(),
                                  use_resource=True)
        iterator = v1.data.make_initializable_iterator(
            v1.data.Dataset.range(100).map(lambda x: v1.cast(x, v1.float32)))

        def quiet(ctx, value):
            del ctx
            return counter.assign_add(value)

        def reporting(ctx, value):
            ctx.set_last_step_output("sum", value * 2, reduce_op=v1.distribute.ReduceOp.SUM)
            ctx.set_last_step_output("values", value)
            ctx.set_non_tensor_output("kind", "reporting")
            return counter.assign_add(1.0)

        first = run_steps(strategy, quiet, iterator, 3)
        second = run_steps(strategy, reporting, iterator, iterations=2,
                           initial_loop_values={"sum": 0.0, "values": [0.0]})
        with v1.Session() as session:
            session.run([iterator.initializer, v1.global_variables_initializer()])
            session.run(first.run_op)
            assert session.run(counter) == 0 + 1 + 2  # elements 0, 1, 2
            _, outputs = session.run([second.run_op, second.last_step_outputs])
            assert outputs == {"sum": 8.0, "values": [4.0]}  # elements 3, 4: the last
            assert session.run(counter) == 5.0
        # the default strategy runs the step in its replica context: a merge_call
        assert second.non_tensor_outputs == {"kind": ("reporting",)}
