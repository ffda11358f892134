"""Issue 36: ``tpu-compat upgrade --estimator-to-tf2`` turns a TPUEstimator program
into a TF 2 TPUStrategy program (the driver tpu_estimator_tf2.py written beside it).

The rewrites and TODOs as (before, after) text, and one whole program written as
TF 1.14/1.15 wrote it (tests/migrate_programs/tpu_estimator_mnist_legacy.py),
upgraded, run strict on the emulated TPU and compared with its legacy run under
``tpu-compat run``: losses, weights, eval metrics and global step, with 1, 2 and 8
replicas; and the migrated program continuing from the legacy program's
model_dir gives the legacy program's numbers."""

import math
import os
import re
import shutil

import pytest
from conftest import check_ok, parse_numbers, run_cli

from tpu_compat.migrate import report, upgrade
from tpu_compat.migrate.estimator import to_tf2

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrate_programs")
LEGACY = "tpu_estimator_mnist_legacy.py"
V1 = "import tensorflow.compat.v1 as tf\n"


REWRITES = [
    (V1 + "e = tf.estimator.tpu.TPUEstimator(model_fn=f, config=tf.estimator.tpu.RunConfig(\n"
          "    tpu_config=tf.estimator.tpu.TPUConfig(4, 8)))\n",
     V1 + "import tpu_estimator_tf2\n"
          "e = tpu_estimator_tf2.TPUStrategyEstimator(model_fn=f, "
          "config=tpu_estimator_tf2.RunConfig(\n"
          "    tpu_config=tpu_estimator_tf2.TPUConfig(4, 8)))\n"),
    # TF 1.13's contrib spelling and TF 1.x's `import tensorflow as tf`
    ("import tensorflow as tf\n"
     "e = tf.contrib.tpu.TPUEstimator(model_fn=f)\n"
     "o = tf.contrib.tpu.CrossShardOptimizer(o)\n"
     "p = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2\n"
     "train = m == tf.estimator.ModeKeys.TRAIN\n",
     "import tensorflow as tf\nimport tpu_estimator_tf2\n"
     "e = tpu_estimator_tf2.TPUStrategyEstimator(model_fn=f)\n"
     "o = tpu_estimator_tf2.CrossReplicaOptimizer(o)\n"
     "p = tpu_estimator_tf2.InputPipelineConfig.PER_HOST_V2\n"
     "train = m == tpu_estimator_tf2.ModeKeys.TRAIN\n"),
]


@pytest.mark.parametrize("before,after", REWRITES, ids=["compat.v1", "contrib"])
def test_rewrites(before, after):
    migrated = to_tf2.migrate_text(before)
    assert migrated.text == after
    assert migrated.notes and not any(note.todo for note in migrated.notes)
    assert to_tf2.migrate_text(after).notes == []    # a second run changes nothing


TODOS = [
    ("tf.estimator.tpu.TPUEstimatorSpec(mode, loss=l, prediction_hooks=[h])", "TPC071",
     "SessionRunHooks"),
    ("e.train(f, max_steps=3, saving_listeners=[l])", "TPC086", "train(saving_listeners=...)"),
]


@pytest.mark.parametrize("statement,rule,why", TODOS, ids=[t[2] for t in TODOS])
def test_todos(statement, rule, why):
    source = V1 + "e = tf.estimator.tpu.TPUEstimator(model_fn=f)\n\n\ndef g():\n    " + (
        statement + "\n")
    migrated = to_tf2.migrate_text(source)
    todos = [note for note in migrated.notes if note.todo]
    assert [note.rule for note in todos] == [rule] and why in todos[0].todo
    # the TODO line sits above the statement, at its indentation
    assert f"    # TODO(tpu_compat): {rule} {todos[0].todo}\n    " in migrated.text
    assert to_tf2.migrate_text(migrated.text).text == migrated.text


def test_host_call_needs_no_todo():
    source = (V1 + "e = tf.estimator.tpu.TPUEstimator(model_fn=f)\n"
              "s = tf.estimator.tpu.TPUEstimatorSpec(mode, loss=l, host_call=(fn, [l]))\n")
    migrated = to_tf2.migrate_text(source)
    assert migrated.notes and not any(note.todo for note in migrated.notes)
    assert "host_call=(fn, [l])" in migrated.text


def test_from_imports_get_a_todo_custom_v1_optimizers_and_warm_starts_do_not():
    source = (V1 + "from tensorflow.compat.v1.estimator.tpu import TPUEstimatorSpec\n"
              "class AdamWeightDecay(tf.train.Optimizer):\n    pass\n"
              "e = tf.estimator.tpu.TPUEstimator(model_fn=f)\n"
              "def s():\n    tf.train.init_from_checkpoint(c, m)\n    return tf.train.Scaffold()\n"
              "tf.estimator.tpu.TPUEstimatorSpec(mode, loss=l, scaffold_fn=s)\n")
    migrated = to_tf2.migrate_text(source)
    todos = [note.todo for note in migrated.notes if note.todo]
    assert len(todos) == 1
    assert "`from tensorflow.compat.v1.estimator.tpu import ...` is not migrated" in todos[0]
    assert "    tpu_estimator_tf2.init_from_checkpoint(c, m)\n" in migrated.text
    assert "scaffold_fn=s)" in migrated.text     # the driver runs scaffold_fn


def test_bfloat16_scope_and_graph_mode_switch():
    """tf.tpu.bfloat16_scope becomes the driver's (TF's getter, written there); the
    program's disable_v2_behavior() goes (the driver's loop needs eager; model_fn
    still runs in a graph, the tf.function's), leaving a comment saying so."""
    source = (V1 + "e = tf.estimator.tpu.TPUEstimator(model_fn=f)\n"
              "with tf.tpu.bfloat16_scope():\n    x = g()\n"
              "if __name__ == '__main__':\n  tf.disable_v2_behavior()\n  app.run(main)\n")
    migrated = to_tf2.migrate_text(source)
    assert "with tpu_estimator_tf2.bfloat16_scope():\n" in migrated.text
    assert ("if __name__ == '__main__':\n  # tpu_compat: tf.disable_v2_behavior() removed "
            "(upgrade --estimator-to-tf2): the TF 2 driver runs model_fn in a tf.function, as "
            "TPUEstimator ran it in a graph\n  pass\n  app.run(main)\n") in migrated.text
    assert not any(note.todo for note in migrated.notes)
    assert {note.rule for note in migrated.notes} == {"TPC070", "TPC048"}
    assert to_tf2.migrate_text(migrated.text).text == migrated.text
    # a program without a TPUEstimator keeps its switch
    alone = V1 + "tf.compat.v1.disable_eager_execution()\n"
    assert to_tf2.migrate_text(alone).notes == []


@pytest.mark.requires_tf
def test_the_drivers_bfloat16_scope_is_tfs(tpu8):
    """The same float32 variables by the same names, read as bfloat16, as under
    tf.compat.v1.tpu.bfloat16_scope (both built in a TF 1 graph)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    built = []
    for scope in (estimator_tf2.bfloat16_scope, tf.compat.v1.tpu.bfloat16_scope):
        with tf.Graph().as_default():
            with scope():
                w = tf.compat.v1.get_variable("w", [2], tf.bfloat16)
                b = tf.compat.v1.get_variable("b", [2], tf.float32)
            built.append((w.dtype, b.dtype, [(v.name, v.dtype) for v in tf.compat.v1.global_variables()]))
    assert built[0] == built[1]
    assert (built[0][0], built[0][1].base_dtype) == (tf.bfloat16, tf.float32)
    assert [dtype.base_dtype for _, dtype in built[0][2]] == [tf.float32, tf.float32]


def test_cross_replica_sum_in_a_programs_module_becomes_the_drivers():
    """SimCLR's resnet.py and objective.py, EfficientNet's utils.py: the batch-norm and
    concat sums of a TPUEstimator program's modules, group_assignment kept."""
    source = (V1 + "def average(t, groups):\n"
              "  return tf.tpu.cross_replica_sum(t, groups) / 8.0\n")
    migrated = to_tf2.migrate_text(source, helper=True)
    assert "  return tpu_estimator_tf2.cross_replica_sum(t, groups) / 8.0\n" in migrated.text
    assert [(n.rule, n.todo) for n in migrated.notes] == [("TPC042", "")]


@pytest.mark.requires_tf
def test_the_drivers_cross_replica_sum_is_the_sum_over_each_group(tpu8):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute import TPUStrategy  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute.cluster_resolver import TPUClusterResolver  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
    strategy = TPUStrategy(TPUClusterResolver(tpu=""))

    def step():
        replica = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        x = tf.stack([replica + 1.0, 10.0 * replica])
        return (estimator_tf2.cross_replica_sum(x),
                estimator_tf2.cross_replica_sum(x, [[0, 1, 2, 3], [4, 5, 6, 7]]),
                estimator_tf2.cross_replica_sum(x, [[0, 2, 4, 6], [1, 3, 5, 7]]))

    results = tf.function(lambda: strategy.run(step))()
    local = [[r.numpy().tolist() for r in strategy.experimental_local_results(t)] for t in results]
    assert local[0] == [[36.0, 280.0]] * 8
    assert local[1] == [[10.0, 60.0]] * 4 + [[26.0, 220.0]] * 4
    assert local[2] == [[16.0, 120.0], [20.0, 160.0]] * 4
    with pytest.raises(ValueError, match=r"group_assignment \[\[0, 1\]\] must split replicas 0..7"):
        strategy.run(lambda: estimator_tf2.cross_replica_sum(tf.constant(1.0), [[0, 1]]))


def test_a_program_without_tpu_estimator_is_left_alone():
    source = V1 + "o = tf.tpu.CrossShardOptimizer(o)\nm = tf.estimator.ModeKeys.TRAIN\n"
    assert to_tf2.migrate_text(source).notes == []
    assert to_tf2.upgrade_bytes("x.py", source.encode()) is None
    assert upgrade.upgrade_bytes("x.py", source.encode()).companions == {}


def test_upgrade_outcomes_and_the_driver_beside_the_program():
    path = os.path.join(PROGRAMS, LEGACY)
    result = to_tf2.upgrade_file(path)
    assert result.error is None and result.changed and report.legacy_free(result)
    assert {o.finding.rule for o in result.outcomes} == {
        "TPC070", "TPC071", "TPC072", "TPC073", "TPC078", "TPC043"}
    driver = result.companions[to_tf2.DRIVER_MODULE + ".py"]
    assert b"tpu_compat" not in driver.split(b'"""', 2)[2]   # only in its docstring
    assert b"import tensorflow as tf" in driver
    code = result.output.decode("utf-8").split('"""', 2)[2]   # after the docstring
    assert "tf.estimator" not in code and "CrossShardOptimizer" not in code


_LOSS = re.compile(r"\bloss = ([-+.\deE]+), step = (\d+)")


def _losses(stderr):
    """{step: loss} of the `loss = X, step = N` lines of a run (TPUEstimator's
    LoggingTensorHook, the driver's log)."""
    return {int(step): float(loss) for loss, step in _LOSS.findall(stderr)}


def _run(program, model_dir, replicas, *flags, strict=False):
    extra = ["--warnings", "error", "--strict", "on"] if strict else []
    result = check_ok(run_cli("run", "--replicas", str(replicas), *extra, str(program),
                              f"--model_dir={model_dir}", f"--num_shards={replicas}", *flags))
    return parse_numbers(result.stdout), _losses(result.stderr), result.stderr


def assert_same_numbers(numbers, losses, migrated_numbers, migrated_losses):
    """The legacy run's printed numbers and logged losses, and the migrated run's, are
    the same keys and steps with the same values (verify's tolerances)."""
    assert set(numbers) == set(migrated_numbers)
    for key, value in numbers.items():
        assert math.isclose(value, migrated_numbers[key], rel_tol=1e-5, abs_tol=1e-6), (
            key, value, migrated_numbers[key])
    assert losses and set(losses) == set(migrated_losses)
    for step, loss in losses.items():
        assert math.isclose(loss, migrated_losses[step], rel_tol=1e-5), (step, losses,
                                                                         migrated_losses)


def _assert_same(legacy, migrated):
    numbers, losses, _ = legacy
    migrated_numbers, migrated_losses, stderr = migrated
    assert {"eval_accuracy", "eval_loss", "eval_mean_logit", "global_step",
            "hidden/kernel_sum", "logits/bias_sum"} <= set(numbers)
    assert_same_numbers(numbers, losses, migrated_numbers, migrated_losses)
    assert f"Saving dict for global step {int(numbers['global_step'])}: accuracy = " in stderr


@pytest.fixture(scope="module")
def migrated_program(tmp_path_factory):
    """The legacy program and its upgrade (`tpu-compat upgrade --estimator-to-tf2
    --output`), which writes the driver beside the upgraded program."""
    root = tmp_path_factory.mktemp("estimator_tf2")
    legacy = root / "legacy" / LEGACY
    legacy.parent.mkdir()
    shutil.copy(os.path.join(PROGRAMS, LEGACY), legacy)
    out = root / "migrated"
    result = run_cli("upgrade", "--estimator-to-tf2", str(legacy), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "(8 rewrites, 0 TODOs)" in result.stderr
    assert (out / "tpu_estimator_tf2.py").is_file()
    return root, legacy, out / LEGACY


@pytest.mark.requires_tf
@pytest.mark.slow
def test_one_replica_sgd_gives_the_legacy_numbers(migrated_program):
    root, legacy, migrated = migrated_program
    flags = ("--optimizer=sgd",)
    _assert_same(_run(legacy, root / "l1", 1, *flags),
                 _run(migrated, root / "m1", 1, *flags, strict=True))


@pytest.mark.requires_tf
# 2 replicas in CI (its four runs, each a quarter of 8's graph); this file's
# test_bert_style_program_eight_replicas keeps a migrated program on 8 in CI.
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [2, 8])
def test_momentum_and_a_restored_legacy_model_dir(migrated_program, replicas):
    """2 or 8 replicas with MomentumOptimizer: the same numbers; then the migrated
    program continues from the legacy program's model_dir (checkpoint at step 10,
    slots and global_step by their TF 1 names) to step 14 exactly as the legacy one
    does, and writes model.ckpt-14 that TF 2 reads."""
    root, legacy, migrated = migrated_program
    legacy_dir, resumed_dir = root / f"l{replicas}", root / f"r{replicas}"
    _assert_same(_run(legacy, legacy_dir, replicas),
                 _run(migrated, root / f"m{replicas}", replicas, strict=True))
    shutil.copytree(legacy_dir, resumed_dir)
    resumed = _run(migrated, resumed_dir, replicas, "--train_steps=14", strict=True)
    assert "Restoring parameters from " in resumed[2] and "model.ckpt-10" in resumed[2]
    _assert_same(_run(legacy, legacy_dir, replicas, "--train_steps=14"), resumed)
    assert set(resumed[1]) == {14}            # one loop of 4 steps after step 10

    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    written = tf.train.latest_checkpoint(str(resumed_dir))
    assert written.endswith("model.ckpt-14")
    names = dict(tf.train.list_variables(written))
    assert names == dict(tf.train.list_variables(str(legacy_dir)))
    assert tf.train.load_checkpoint(written).get_tensor("global_step") == 14


@pytest.mark.requires_tf
def test_the_driver_refuses_what_it_does_not_migrate_by_name():
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    with pytest.raises(NotImplementedError, match="TPUEstimatorSpec.prediction_hooks"):
        estimator_tf2.TPUEstimatorSpec("infer", predictions={}, prediction_hooks=[object()])
    # host_call is migrated (test_migrate_estimator_host_call.py); a malformed one is
    # named
    with pytest.raises(ValueError, match=r"TPUEstimatorSpec.host_call must be a \(fn, "):
        estimator_tf2.TPUEstimatorSpec("train", loss=1.0, host_call=[object()])
    with pytest.raises(TypeError, match=r"TPUEstimatorSpec.host_call\[0\] must be callable"):
        estimator_tf2.TPUEstimatorSpec("train", loss=1.0, host_call=(1, []))
    with pytest.raises(ValueError, match="experimental_host_call_every_n_steps must be"):
        estimator_tf2.TPUConfig(experimental_host_call_every_n_steps=0)
    estimator = estimator_tf2.TPUStrategyEstimator(lambda features: None, model_dir="d")
    with pytest.raises(NotImplementedError, match="TPUEstimator.predict hooks"):
        next(estimator.predict(input_fn=None, hooks=[object()]))
    # export is migrated (test_migrate_estimator_keras.py); without a checkpoint it says so
    with pytest.raises(ValueError, match="Couldn't find trained model at d"):
        estimator.export_saved_model("out", None)


@pytest.mark.requires_tf
def test_train_skips_when_model_dir_reached_max_steps(tmp_path, tpu8):
    """Estimator.train's early return (tensorflow_estimator r1.15 estimator.py): with
    model_dir's checkpoint at max_steps, train() neither calls input_fn nor trains, so
    a program re-run on a finished model_dir goes on to evaluate (mnist_tpu.py)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    step = tf.Variable(4, dtype=tf.int64)
    tf.compat.v1.train.Saver(var_list={"global_step": step}).save(None, str(tmp_path / "model.ckpt-4"))
    estimator = estimator_tf2.TPUStrategyEstimator(lambda features: None, model_dir=str(tmp_path),
                                                   use_tpu=False, train_batch_size=8)

    def input_fn(params):
        raise AssertionError("input_fn called")
    assert estimator.train(input_fn, max_steps=4) is estimator
    assert estimator.train(input_fn, max_steps=3) is estimator
    with pytest.raises(ValueError, match="max_steps must be > 0, got 0"):
        estimator.train(input_fn, max_steps=0)
    with pytest.raises(AssertionError, match="input_fn called"):
        estimator.train(input_fn, max_steps=5)


@pytest.mark.requires_tf
def test_sliced_evaluation_input_is_the_hosts_batch_split(monkeypatch):
    """SimCLR's TPUConfig(eval_training_input_configuration=SLICED): input_fn once with
    the whole eval batch, split across the replicas (PER_HOST_V1's split on one host);
    training keeps per_host_input_for_training."""
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    pipelines = estimator_tf2.InputPipelineConfig
    config = estimator_tf2.RunConfig(tpu_config=estimator_tf2.TPUConfig(
        per_host_input_for_training=pipelines.PER_HOST_V2,
        eval_training_input_configuration=pipelines.SLICED), model_dir="d")
    estimator = estimator_tf2.TPUStrategyEstimator(lambda features: None, config=config,
                                                   train_batch_size=16, eval_batch_size=16)
    chosen = []
    monkeypatch.setattr(estimator_tf2, "_replica_batches",
                        lambda input_fn, params, pipeline, replicas, batch: chosen.append(pipeline))
    monkeypatch.setattr(estimator_tf2.TPUStrategyEstimator, "strategy", property(
        lambda self: type("S", (), {"distribute_datasets_from_function": lambda s, f: f})()))
    estimator._dataset(None, estimator_tf2.ModeKeys.EVAL, 8)
    estimator._dataset(None, estimator_tf2.ModeKeys.TRAIN, 8)
    assert chosen == [pipelines.PER_HOST_V1, pipelines.PER_HOST_V2]


@pytest.mark.requires_tf
def test_an_input_fn_returning_an_iterators_tensors_feeds_each_step_the_next_batch(tpu8):
    """SimCLR's data.py returns ``make_one_shot_iterator(dataset).get_next()``; TPUEstimator
    ran it again each step: the driver's dataset gives the next batch each time, then ends."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8

    def input_fn(params):
        dataset = tf.data.Dataset.range(6).batch(params["batch_size"])
        batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        return batch, {"labels": batch * 10}

    dataset = estimator_tf2._input_dataset(input_fn, {"batch_size": 2})
    got = [(f.numpy().tolist(), l["labels"].numpy().tolist()) for f, l in dataset]
    assert got == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4, 5], [40, 50])]

    def shuffled_input_fn(params):
        dataset = tf.data.Dataset.range(6).shuffle(6).batch(params["batch_size"])
        return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

    with pytest.raises(ValueError, match="return the dataset itself from input_fn"):
        estimator_tf2._input_dataset(shuffled_input_fn, {"batch_size": 2})


BERT = "tpu_estimator_bert_legacy.py"


@pytest.fixture(scope="module")
def bert_program(tmp_path_factory, tpu8):
    """The BERT-style program, its upgrade, and a 'pre-trained' checkpoint for its
    init_checkpoint warm start (BERT's names, plus one the model lacks, as BERT's
    pre-training heads): word embeddings near 0.5, so the warm start shows in the
    embeddings' sum (about 256; a fresh initializer's is about 0)."""
    del tpu8    # TensorFlow in this process (the Saver): the 8-device layout first
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    root = tmp_path_factory.mktemp("bert_tf2")
    legacy = root / "legacy" / BERT
    legacy.parent.mkdir()
    shutil.copy(os.path.join(PROGRAMS, BERT), legacy)
    out = root / "migrated"
    result = run_cli("upgrade", "--estimator-to-tf2", str(legacy), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "(10 rewrites, 0 TODOs)" in result.stderr
    rng = np.random.RandomState(7)
    pretrained = {
        "bert/embeddings/word_embeddings": 0.5 + rng.normal(0, 0.1, [32, 16]),
        "bert/pooler/dense/kernel": rng.normal(0, 0.3, [16, 16]),
        "bert/pooler/dense/bias": rng.normal(0, 0.1, [16]),
        "cls/predictions/output_bias": np.zeros([32])}
    saver = tf.compat.v1.train.Saver(var_list={
        name: tf.Variable(value.astype(np.float32)) for name, value in pretrained.items()})
    init = saver.save(None, str(root / "pretrained" / "bert_model.ckpt"))
    return root, legacy, out / BERT, init


def _run_bert(program, output_dir, replicas, init, *flags, strict=False):
    extra = ["--warnings", "error", "--strict", "on"] if strict else []
    result = check_ok(run_cli("run", "--replicas", str(replicas), *extra, str(program),
                              f"--output_dir={output_dir}", f"--num_tpu_cores={replicas}",
                              f"--init_checkpoint={init}", *flags))
    return parse_numbers(result.stdout), _losses(result.stderr), result.stderr


def _assert_bert_same(legacy, migrated):
    numbers, losses, _ = legacy
    migrated_numbers, migrated_losses, stderr = migrated
    assert {"eval_accuracy", "eval_loss", "loss", "global_step", "output_weights_sum",
            "bert/embeddings/word_embeddings_sum"} <= set(numbers)
    assert_same_numbers(numbers, losses, migrated_numbers, migrated_losses)
    # the warm start ran: the pre-trained embeddings (sum ~256), not fresh ones (~0)
    assert abs(migrated_numbers["bert/embeddings/word_embeddings_sum"] - 256) < 10
    assert "Warm-started 3 variables from " in stderr
    assert "Saving dict for global step " in stderr


@pytest.mark.requires_tf
def test_bert_style_program_eight_replicas(bert_program):
    """AdamWeightDecayOptimizer (apply_gradients overridden) under CrossShardOptimizer,
    warmup + polynomial decay, the hand-made global step increment and scaffold_fn's
    init_from_checkpoint: the migrated program, strict, gives the legacy numbers.
    Six steps in two loops of iterations_per_loop=3 with two warmup steps: the
    learning rate reads global_step unordered against the hand-made increment,
    which the legacy run orders as a TPU did (each step sees the global step it
    started with; tests/test_estimator_step_order.py) and the migrated
    tf.function as written."""
    root, legacy, migrated, init = bert_program
    flags = ("--iterations_per_loop=3", "--num_train_steps=6", "--num_warmup_steps=2")
    legacy_run = _run_bert(legacy, root / "l8", 8, init, *flags)
    assert set(legacy_run[1]) == {3, 6}          # two loops of three steps
    _assert_bert_same(legacy_run, _run_bert(migrated, root / "m8", 8, init, *flags,
                                            strict=True))


@pytest.mark.requires_tf
@pytest.mark.slow
def test_bert_style_program_one_replica(bert_program):
    """1 replica, six steps in two loops of three, as with 8 replicas."""
    root, legacy, migrated, init = bert_program
    flags = ("--iterations_per_loop=3", "--num_train_steps=6", "--num_warmup_steps=2")
    _assert_bert_same(_run_bert(legacy, root / "l1", 1, init, *flags),
                      _run_bert(migrated, root / "m1", 1, init, *flags, strict=True))


# -- a TPUEstimator program's own modules (issue 36, the field programs) --------------------

OPTIMIZATION = ("import tensorflow as tf\n"
                "def create_optimizer(loss, use_tpu):\n"
                "  optimizer = tf.train.AdamOptimizer(0.1)\n"
                "  if use_tpu:\n"
                "    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)\n"
                "  return optimizer.minimize(loss)\n")
OPTIMIZATION_TF2 = OPTIMIZATION.replace(
    "import tensorflow as tf\n", "import tensorflow as tf\nimport tpu_estimator_tf2\n").replace(
    "tf.compat.v1.tpu.CrossShardOptimizer", "tpu_estimator_tf2.CrossReplicaOptimizer")


def test_a_module_of_a_tpu_estimator_program_gets_the_drivers_names():
    """BERT's optimization.py wraps its optimizer in CrossShardOptimizer for
    run_pretraining.py's model_fn: alone it is left alone, as a helper of the program
    its CrossShardOptimizer becomes the driver's (before: a TPC043 TODO, and the strict
    run stopped at the deprecated name)."""
    assert to_tf2.migrate_text(OPTIMIZATION).notes == []
    migrated = to_tf2.migrate_text(OPTIMIZATION, helper=True)
    assert migrated.text == OPTIMIZATION_TF2
    assert [(n.rule, n.todo) for n in migrated.notes] == [("TPC043", "")]
    assert to_tf2.migrate_text(OPTIMIZATION_TF2, helper=True).notes == []


def test_upgrade_migrates_the_programs_modules_when_it_holds_the_program(tmp_path):
    """`upgrade --estimator-to-tf2` of the program and its module: both get the driver's
    names (and the module the driver beside it); the module alone stays the ordinary upgrade's."""
    program = tmp_path / "run_pretraining.py"
    program.write_text(V1 + "import optimization\n"
                       "e = tf.estimator.tpu.TPUEstimator(model_fn=f, use_tpu=True)\n")
    (tmp_path / "optimization.py").write_text(OPTIMIZATION)
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "optimization.py").write_text(OPTIMIZATION)
    result = run_cli("upgrade", "--estimator-to-tf2", "--in-place", "--force", str(alone))
    assert result.returncode == 0, result.stderr
    assert "tpu_estimator_tf2" not in (alone / "optimization.py").read_text()
    result = run_cli("upgrade", "--estimator-to-tf2", "--in-place", "--force",
                     str(program), str(tmp_path / "optimization.py"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "optimization.py").read_text() == OPTIMIZATION_TF2
    assert "tpu_estimator_tf2.TPUStrategyEstimator(" in program.read_text()
    assert (tmp_path / "tpu_estimator_tf2.py").read_bytes() == to_tf2.driver_source()


def test_tf1_makes_a_tf1_programs_import_compat_v1_so_it_runs_without_tf1(tmp_path):
    """A TF 1.x program (BERT: `import tensorflow as tf`, tf.flags, tf.train.Optimizer)
    ran with `tpu-compat run --tf1`, which turns TF 2 behaviour off for the process and
    with it the driver's tf.function loop. `--estimator-to-tf2 --from-tf1` makes its imports
    compat.v1 (before: the strict run needed --tf1 and the driver could not run)."""
    program = tmp_path / "run_pretraining.py"
    program.write_text("import tensorflow as tf  # TF 1.15\nimport modeling\n"
                       "flags = tf.flags\n"
                       "e = tf.contrib.tpu.TPUEstimator(model_fn=f, use_tpu=True)\n")
    (tmp_path / "modeling.py").write_text("import os\nimport tensorflow as tf\n"
                                          "def f():\n  import tensorflow as tf\n"
                                          "  h = x.shape[-1].value + y.get_shape()[1].value\n")
    assert run_cli("upgrade", "--from-tf1", "--in-place", "--force", str(program)).returncode == 2
    result = run_cli("upgrade", "--estimator-to-tf2", "--from-tf1", "--in-place", "--force",
                     str(program), str(tmp_path / "modeling.py"))
    assert result.returncode == 0, result.stderr
    text = program.read_text()
    assert text.startswith("import tensorflow.compat.v1 as tf  # TF 1.15\n")
    assert "tpu_estimator_tf2.TPUStrategyEstimator(model_fn=f" in text
    assert (tmp_path / "modeling.py").read_text() == (
        "import os\nimport tensorflow.compat.v1 as tf\n"
        "def f():\n  import tensorflow.compat.v1 as tf\n"
        "  h = x.shape[-1] + y.get_shape()[1]\n")   # BERT's run_classifier.py:593
    assert not (tmp_path / "tpu_estimator_tf2.py").read_bytes() == b""


LAYER_NORM = ("import tensorflow as tf\n"
              "def layer_norm(x, name=None):\n"
              "  return tf.contrib.layers.layer_norm(\n"
              "      inputs=x, begin_norm_axis=-1, begin_params_axis=-1, scope=name)\n")


def test_contrib_layer_norm_in_a_programs_module_becomes_the_drivers():
    """BERT's modeling.py: tf.contrib.layers.layer_norm was a TPC067 TODO (Keras'
    LayerNormalization names its variables otherwise), and the strict run stopped at
    the contrib name; the driver's keeps LayerNorm/beta and gamma."""
    migrated = to_tf2.migrate_text(LAYER_NORM, helper=True)
    assert migrated.text == LAYER_NORM.replace(
        "import tensorflow as tf\n", "import tensorflow as tf\nimport tpu_estimator_tf2\n").replace(
        "tf.contrib.layers.layer_norm(", "tpu_estimator_tf2.layer_norm(")
    assert [(n.rule, n.todo) for n in migrated.notes] == [("TPC067", "")]


@pytest.mark.requires_tf
def test_the_drivers_layer_norm_is_contribs():
    """Same variables (names, shapes) and outputs as tf.contrib.layers.layer_norm as
    tpu_compat serves it (TF 1.15's), on the same inputs and parameters."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.contrib import _layers  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    x = np.random.RandomState(3).normal(2.0, 3.0, [4, 5, 6]).astype(np.float32)
    results = []
    for layer_norm in (_layers.layer_norm, estimator_tf2.layer_norm):
        with tf.Graph().as_default(), tf.compat.v1.Session() as session:
            out = layer_norm(tf.constant(x), begin_norm_axis=-1, begin_params_axis=-1,
                             scope="encoder/LayerNorm")
            variables = tf.compat.v1.global_variables()
            session.run(tf.compat.v1.global_variables_initializer())
            session.run([v.assign(v + 0.25 * (i + 1)) for i, v in enumerate(variables)])
            results.append(([(v.name, v.shape.as_list()) for v in variables], session.run(out)))
    assert results[0][0] == results[1][0] == [("encoder/LayerNorm/beta:0", [6]),
                                              ("encoder/LayerNorm/gamma:0", [6])]
    np.testing.assert_array_equal(results[0][1], results[1][1])
