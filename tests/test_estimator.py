"""tf.estimator / TPUEstimator (tpu_compat.estimator): parity, contracts, errors, routing.

The parity runs execute tests/scenarios/estimator_parity.py, a TPUEstimator
program, once with use_tpu=False (the single-device reference) and on 1, 2
and 8 emulated cores; every reported number must agree. The rest runs in
process: Estimators build their own graphs, so the eager test process is not
disturbed.
"""

import sys
import warnings

import pytest

from tpu_compat import legacy_api
from tpu_compat.migrate import upgrade
from conftest import check_ok, lazy_runs, parse_numbers, run_scenario

SCENARIO = "estimator_parity.py"
REPLICAS = (1, 2, 8)
# TF 1.15 reported the loss of replica 0 (its own share of the batch) from
# evaluate on the TPU; that one number depends on the replica count.
REPLICA_DEPENDENT = ("eval_on_tpu_replica0_loss",)


@pytest.fixture(scope="module")
def runs():
    # Made when first asked for ("cpu", a replica count, or "N_stdout"), so the
    # replica count CI leaves to the slow set starts no process.
    stdouts = {}

    def make(key):
        if key == "cpu":
            return parse_numbers(check_ok(run_scenario(SCENARIO, 1, "cpu")).stdout)
        if isinstance(key, str):  # "N_stdout"
            replicas = int(key.split("_")[0])
            results[replicas]  # pylint: disable=pointless-statement
            return stdouts[replicas]
        extra = ("--errors",) if key == 8 else ()
        stdouts[key] = check_ok(run_scenario(SCENARIO, key, "tpu", *extra)).stdout
        return parse_numbers(stdouts[key])

    results = lazy_runs(make)
    return results


@pytest.mark.requires_tf
# 1 and 8 in CI, with test_parity's 1, 2 and 8 for the replica rules themselves.
@pytest.mark.whole_program(ci_replicas=(1, 8))
@pytest.mark.parametrize("replicas", REPLICAS)
def test_tpu_runs_equal_the_single_device_reference(runs, replicas):
    reference, numbers = runs["cpu"], runs[replicas]
    compared = [key for key in reference
                if key not in REPLICA_DEPENDENT and not key.startswith("error")]
    assert len(compared) > 30
    for key in compared:
        assert numbers[key] == pytest.approx(reference[key], rel=1e-5, abs=1e-5), key


@pytest.mark.requires_tf
def test_what_the_parity_program_checks_within_a_run(runs):
    for numbers in (runs["cpu"], runs[8]):
        # global_step ends exactly at max_steps, whatever iterations_per_loop
        # (1, 4, and 3 which leaves a partial last loop).
        for prefix in ("train_ipl1", "train_ipl4", "train_ipl3", "train_per_host_v2",
                       "resume"):
            assert numbers[f"{prefix}_global_step"] == 10
        assert numbers["eval_on_tpu_global_step"] == 10
        assert numbers["predict_count"] == 20          # 8 + 8 + a padded 4
        assert numbers["export_max_abs_diff"] < 1e-5   # SavedModel == predict()
        assert numbers["init_w_diff"] == 0             # scaffold_fn init_from_checkpoint
        assert numbers["host_call_events"] == 7        # one host call per step ...
        assert numbers["host_call_last_step"] == 6     # ... with its own global step
    # Resuming (5 + 5 steps, the input restarting) differs from 10 straight steps.
    assert runs["cpu"]["resume_w_sum"] != pytest.approx(runs["cpu"]["train_ipl4_w_sum"])
    # One replica holds the whole batch: its loss is the reference loss.
    assert runs[1]["eval_on_tpu_replica0_loss"] == pytest.approx(
        runs["cpu"]["eval_on_cpu_replica0_loss"], rel=1e-5)


@pytest.mark.requires_tf
@pytest.mark.parametrize("key,argument", [
    ("error_batch", "train_batch_size=20 is not divisible by the number of TPU replicas (8)"),
    ("error_estimator_spec", "needs a tf.estimator.tpu.TPUEstimatorSpec"),
    ("error_metric_fn", "the metric_fn 'metric_fn' returned a value that is not metrics"),
    ("error_checkpoint", "variables missing from the checkpoint: 'extra'"),
    ("error_cross_shard", "CrossShardOptimizer must be used for model training on TPUs"),
])
def test_bad_input_gets_an_error_naming_the_argument(runs, key, argument):
    assert runs[8][key] == 1
    assert argument in runs["8_stdout"]


# -- in process ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def estimator_lib(tpu8):
    del tpu8
    from tpu_compat import estimator  # pylint: disable=import-outside-toplevel
    return estimator


def _config(estimator_lib, model_dir, mode, iterations_per_loop=1):
    tpu = estimator_lib.tpu
    return tpu.RunConfig(model_dir=str(model_dir), tpu_config=tpu.TPUConfig(
        iterations_per_loop=iterations_per_loop, per_host_input_for_training=mode))


@pytest.mark.requires_tf
@pytest.mark.parametrize("mode,calls,input_batch,model_batch", [
    (False, 8, 2, 2),                       # PER_SHARD_V1: once per core
    (True, 1, 16, 2),                       # PER_HOST_V1: the host's whole batch
    ("PER_HOST_V2", 1, 2, 2),               # PER_HOST_V2: one core's batch
    ("BROADCAST", 1, 16, 16),               # every core gets the whole batch
])
def test_input_fn_calls_and_batch_sizes_per_input_pipeline_mode(
        estimator_lib, tmp_path, mode, calls, input_batch, model_batch):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat import lowlevel  # pylint: disable=import-outside-toplevel
    tpu = estimator_lib.tpu
    per_core = mode is False
    if isinstance(mode, str):
        mode = getattr(tpu.config.InputPipelineConfig, mode)
    seen_inputs, seen_models = [], []
    data = np.arange(64 * 2, dtype=np.float32).reshape(64, 2)

    def input_fn(params):
        context = params["context"]
        seen_inputs.append((params["batch_size"], context.current_input_fn_deployment()[1:]))
        dataset = tf.data.Dataset.from_tensor_slices(data).repeat().batch(
            params["batch_size"], drop_remainder=True)
        if per_core:  # TF 1.15 took only tensors from a per-core input_fn
            return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next(), None
        return dataset

    def model_fn(features, labels, mode, params):
        del labels
        seen_models.append((params["batch_size"], params["use_tpu"]))
        weight = tf.compat.v1.get_variable("w", [2], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features - weight))
        optimizer = lowlevel.CrossShardOptimizer(  # what install() routes
            tf.compat.v1.train.GradientDescentOptimizer(0.1))
        return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = tpu.TPUEstimator(model_fn=model_fn, train_batch_size=16,
                                     config=_config(estimator_lib, tmp_path, mode))
        estimator.train(input_fn, max_steps=2)
    assert len(seen_inputs) == calls
    assert {batch for batch, _ in seen_inputs} == {input_batch}
    # (invocation index, total invocations, replicas fed by this one)
    assert [deployment for _, deployment in seen_inputs] == [
        (index, calls, 1 if calls == 8 else 8) for index in range(calls)]
    assert set(seen_models) == {(model_batch, True)}
    assert estimator.get_variable_value("global_step") == 2


@pytest.mark.requires_tf
def test_sliced_evaluation_gives_each_replica_its_slice(estimator_lib, tmp_path):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tpu = estimator_lib.tpu
    seen = []

    def input_fn(params):
        data = np.arange(64, dtype=np.float32).reshape(32, 2)
        return tf.data.Dataset.from_tensor_slices((data, data[:, :1])).batch(
            params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        seen.append((params["batch_size"], features.shape[0]))
        weight = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, weight) - labels))
        return tpu.TPUEstimatorSpec(mode, loss=loss)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = tpu.RunConfig(model_dir=str(tmp_path), tpu_config=tpu.TPUConfig(
            eval_training_input_configuration=tpu.InputPipelineConfig.SLICED))
        tpu.TPUEstimator(model_fn=model_fn, train_batch_size=16, eval_batch_size=16,
                         config=config).evaluate(input_fn, steps=2)
    assert set(seen) == {(2, 2)}  # 16 examples, sliced over 8 replicas


@pytest.mark.requires_tf
def test_per_core_input_refuses_datasets_as_tf115_did(estimator_lib, tmp_path):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tpu = estimator_lib.tpu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = tpu.TPUEstimator(
            model_fn=lambda features, labels, mode, params: None, train_batch_size=8,
            config=_config(estimator_lib, tmp_path, False))
        with pytest.raises(TypeError, match="per_host_input_for_training=False"):
            estimator.train(lambda params: tf.data.Dataset.range(8).batch(1), max_steps=1)


@pytest.mark.requires_tf
@pytest.mark.parametrize("build,message", [
    (lambda t: t.TPUConfig(iterations_per_loop=0), "iterations_per_loop must be a positive int"),
    (lambda t: t.TPUConfig(iterations_per_loop="60s"), "iterations_per_loop='60s'"),
    (lambda t: t.TPUConfig(per_host_input_for_training=7), "per_host_input_for_training"),
    (lambda t: t.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1),
     "save_checkpoints_steps and save_checkpoints_secs"),
    (lambda t: t.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                              config=None), "config must be a tf.estimator.tpu.RunConfig"),
    (lambda t: t.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                              config=t.RunConfig()), "train_batch_size cannot be None"),
    (lambda t: t.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                              config=t.RunConfig(), train_batch_size=8,
                              params={"batch_size": 2}), "reserved keys"),
    (lambda t: t.TPUEstimator(model_fn=lambda features, labels, mode: None,
                              config=t.RunConfig(), train_batch_size=8), "'params' argument"),
])
def test_configuration_errors_name_the_argument(estimator_lib, build, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=message.replace("(", r"\(")
                           .replace(")", r"\)").replace(".", r"\.")):
            build(estimator_lib.tpu)


@pytest.mark.requires_tf
def test_batch_size_rules_match_tf115(estimator_lib):
    tpu = estimator_lib.tpu
    from tpu_compat.estimator.tpu import context  # pylint: disable=import-outside-toplevel
    from tpu_compat.estimator._spec import ModeKeys as modes  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = tpu.RunConfig(tpu_config=tpu.TPUConfig(per_host_input_for_training=True))
    ctx = context.InternalContext(config, 64, 32, 16, use_tpu=True, eval_on_tpu=False,
                                  num_replicas_fn=lambda: 8)
    with ctx.with_mode(modes.TRAIN):
        assert (ctx.batch_size_for_input_fn, ctx.batch_size_for_model_fn) == (64, 8)
    with ctx.with_mode(modes.EVAL):  # eval_on_tpu=False: the CPU, global batch
        assert (ctx.batch_size_for_input_fn, ctx.batch_size_for_model_fn) == (32, 32)
    with ctx.with_mode(modes.PREDICT):
        assert (ctx.batch_size_for_input_fn, ctx.batch_size_for_model_fn) == (16, 2)
    with ctx.with_mode(modes.PREDICT, is_export_mode=True):
        assert ctx.is_running_on_cpu()


@pytest.mark.requires_tf
def test_canned_estimators_and_cluster_training_are_one_clear_error(
        estimator_lib, monkeypatch):
    with pytest.raises(estimator_lib.UnsupportedEstimatorAPIError,
                       match="tf.estimator.DNNClassifier is a canned estimator"):
        with pytest.warns(Warning):
            estimator_lib.DNNClassifier(hidden_units=[4])
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"chief": ["a:1"], "worker": ["b:1"]}}')
    with pytest.raises(estimator_lib.UnsupportedEstimatorAPIError,
                       match="train_and_evaluate across a cluster"):
        with pytest.warns(Warning):
            estimator_lib.train_and_evaluate(None, None, None)


@pytest.mark.requires_tf
def test_install_routes_tf_estimator_and_uninstall_restores(tpu8):
    del tpu8
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tpu_compat  # pylint: disable=import-outside-toplevel
    from tpu_compat import estimator  # pylint: disable=import-outside-toplevel
    assert not hasattr(tf.compat.v1, "estimator")
    with tpu_compat.install():
        assert tf.compat.v1.estimator is estimator
        assert tf.estimator is estimator and tf.compat.v2.estimator is estimator
        assert tf.compat.v1.estimator.tpu.TPUEstimator is estimator.tpu.TPUEstimator
        assert sys.modules["tensorflow.compat.v1.estimator.tpu"] is estimator.tpu
    assert not hasattr(tf.compat.v1, "estimator") and not hasattr(tf, "estimator")
    assert "tensorflow.compat.v1.estimator" not in sys.modules


@pytest.mark.requires_tf
def test_legacy_names_warn_at_the_users_line(estimator_lib):
    with pytest.warns(Warning) as caught:
        estimator_lib.tpu.TPUConfig(iterations_per_loop=10)
        _ = estimator_lib.ModeKeys.TRAIN
    rules = {str(w.message).rsplit("[", 1)[-1].rstrip("]"): w.filename for w in caught}
    assert rules == {"TPC073": __file__, "TPC078": __file__}


def test_upgrade_leaves_a_todo_naming_the_migration_path():
    source = ("import tensorflow as tf\n"
              "estimator = tf.estimator.tpu.TPUEstimator(model_fn=f, config=c)\n")
    result = upgrade.upgrade_bytes("snippet.py", source.encode())
    text = result.output.decode()
    assert (f"# TODO(tpu_compat): TPC070 {legacy_api.get('TPC070').replacement}\n"
            in text)
    assert "custom training loop" in text and "steps_per_execution" in text


# -- real TPU: contracts over a stand-in ----------------------------------------------

class _Backend:
    def __init__(self, emulated):
        self.emulated = emulated


class _StandInStrategy:
    """Records how the estimator replicates; answers like a strategy would."""

    def __init__(self, emulated):
        self.tpu_compat_backend = _Backend(emulated)
        self.calls = []
        outer = self

        class Extended:
            def call_for_each_replica(self, fn, args):
                outer.calls.append(("call_for_each_replica", args))
                return fn(*args)
        self.extended = Extended()

    def run(self, fn, args):
        self.calls.append(("run", args))
        return fn(*args)


@pytest.mark.requires_tf
@pytest.mark.parametrize("emulated,method", [(False, "run"), (True, "call_for_each_replica")])
def test_a_real_tpu_replicates_through_strategy_run(estimator_lib, emulated, method):
    del estimator_lib
    from tpu_compat.estimator.tpu import replica_step  # pylint: disable=import-outside-toplevel
    strategy = _StandInStrategy(emulated)
    result = replica_step.replicate(strategy, lambda x, y: x + y, [(1, 2)])
    assert result == 3
    assert [name for name, _ in strategy.calls] == [method]


@pytest.mark.requires_tf
def test_a_real_tpu_session_initializes_the_tpu_system(estimator_lib, monkeypatch):
    del estimator_lib
    from tpu_compat.estimator.tpu import session_hooks  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel

    assert session_hooks.system_hooks("tpu_worker") == []
    monkeypatch.setattr(backend_lib, "get_backend", lambda: _Backend(False))
    (hook,) = session_hooks.system_hooks("tpu_worker")
    assert isinstance(hook, session_hooks.TPUSystemInitHook) and hook._job == "tpu_worker"  # pylint: disable=protected-access


def test_the_programs_read_the_settings_the_estimator_was_built_with(estimator_lib, tmp_path):
    """The TPU programs read ProgramSettings, fixed in TPUEstimator's constructor."""
    import dataclasses  # pylint: disable=import-outside-toplevel
    tpu = estimator_lib.tpu
    config = tpu.RunConfig(
        model_dir=str(tmp_path), log_step_count_steps=7, save_summary_steps=0,
        tpu_config=tpu.TPUConfig(iterations_per_loop=3, tpu_job_name="tpu_worker",
                                 experimental_host_call_every_n_steps=2))
    estimator = tpu.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                                 config=config, train_batch_size=16, params={"lr": 0.1},
                                 batch_axis=(0, 0))
    settings = estimator._program_settings  # pylint: disable=protected-access
    assert (settings.tpu_job_name, settings.host_call_every_n_steps,
            settings.iterations_per_loop, settings.log_every_n_steps, settings.batch_axis,
            settings.params, settings.model_dir, settings.summary_dir) == (
                "tpu_worker", 2, 3, 7, (0, 0), {"lr": 0.1}, str(tmp_path), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.iterations_per_loop = 4


@pytest.mark.requires_tf
def test_model_fn_estimator_trains_evaluates_predicts_exports_and_warm_starts(
        estimator_lib, tmp_path):
    """tf.estimator.Estimator from a TF 2 (eager) program: its own graphs, hooks, export."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    v1 = tf.compat.v1
    features = np.arange(32, dtype=np.float32).reshape(16, 2) / 16.0
    labels = features.sum(axis=1, keepdims=True)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": features}, labels)).batch(4)

    def model_fn(features, labels, mode, params):
        w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
        prediction = tf.matmul(features["x"], w)
        if mode == estimator_lib.ModeKeys.PREDICT:
            return estimator_lib.EstimatorSpec(mode, predictions={"y": prediction})
        loss = v1.losses.mean_squared_error(labels, prediction)
        train_op = v1.train.GradientDescentOptimizer(params["lr"]).minimize(
            loss, global_step=v1.train.get_global_step())
        return estimator_lib.EstimatorSpec(
            mode, loss=loss, train_op=train_op,
            eval_metric_ops={"mae": v1.metrics.mean_absolute_error(labels, prediction)})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = estimator_lib.RunConfig(save_checkpoints_steps=2, keep_checkpoint_max=2)
        estimator = estimator_lib.Estimator(model_fn, str(tmp_path / "m"), config,
                                            params={"lr": 0.5})
        estimator.train(input_fn, hooks=[estimator_lib.StopAtStepHook(num_steps=3)])
        assert estimator.get_variable_value("global_step") == 3
        estimator.train(input_fn, max_steps=3)  # already there: skipped
        estimator.train(input_fn)  # one pass over the data: 4 more steps
        assert estimator.get_variable_value("global_step") == 7
        result = estimator.evaluate(input_fn)
        assert set(result) == {"mae", "loss", "global_step"} and result["global_step"] == 7
        predictions = np.array([p["y"][0] for p in estimator.predict(input_fn)])
        w = estimator.get_variable_value("w")
        np.testing.assert_allclose(predictions, features.dot(w)[:, 0], rtol=1e-6)
        export_dir = estimator.export_saved_model(
            str(tmp_path / "export"),
            estimator_lib.export.build_raw_serving_input_receiver_fn(
                {"x": tf.TensorSpec([None, 2], tf.float32)}))
        served = tf.saved_model.load(export_dir.decode()).signatures["serving_default"](
            x=tf.constant(features))["y"].numpy()[:, 0]
        np.testing.assert_allclose(served, predictions, rtol=1e-6)
        warm = estimator_lib.Estimator(
            model_fn, str(tmp_path / "warm"), params={"lr": 0.0},
            warm_start_from=estimator.latest_checkpoint())
        warm.train(input_fn, steps=1)
        np.testing.assert_array_equal(warm.get_variable_value("w"), w)
        assert len(v1.train.get_checkpoint_state(str(tmp_path / "m"))
                   .all_model_checkpoint_paths) == 2  # keep_checkpoint_max
