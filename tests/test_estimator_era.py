"""TPUEstimator as each era's TensorFlow ran whole programs (issue 22, section 2).

Two programs, each written the way its era wrote TPUEstimator code, run under
``tpu-compat run`` in a subprocess on 8 emulated cores:

* tests/scenarios/estimator_tf1_flags.py (``--tf1``): argparse flags passed
  whole as ``params=vars(args)``, ``TPUClusterResolver(tpu=...)``, a
  ``session_config`` with ``log_device_placement`` and no soft placement,
  ``tf.logging`` at INFO, a model_fn that logs and prints. Checked against the
  same program with ``use_tpu=False`` (the single-device reference).
* tests/scenarios/estimator_tf2_flags.py (a TF 2 program): absl flags as
  ``params=FLAGS.flag_values_dict()`` and training without
  ``CrossShardOptimizer``, as tensorflow_estimator 2.x allowed; checked
  against a NumPy reference of what the TPU computed.
"""

import collections
import glob
import os
import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

REPLICAS = 8
TF1_PROGRAM = "estimator_tf1_flags.py"
TF2_PROGRAM = "estimator_tf2_flags.py"
# The numbers that do not depend on where the program ran. (evaluate's
# 'loss' on the TPU is replica 0's, as TF 1.15 reported it.)
SHARED_KEYS = ("w0", "w1", "w2", "w3", "b", "eval_mse", "eval_mean_prediction",
               "eval_global_step")
PLACEMENT = re.compile(r"^(\S+): \((\w+)\): (\S+)$")
LOG = re.compile(r"INFO:tensorflow:(.*)$")


def _tf_log_lines(stderr):
    """The messages logged through the 'tensorflow' logger (one per record)."""
    return [match.group(1) for match in map(LOG.search, stderr.splitlines()) if match]


@pytest.fixture(scope="module")
def tf1_runs(tmp_path_factory):
    runs = {}
    for name, flags in (("tpu", ("--use_tpu", "--no_soft_placement")), ("cpu", ()),
                        ("tpu_one_step_per_loop", ("--use_tpu", "--iterations_per_loop", "1"))):
        model_dir = str(tmp_path_factory.mktemp(f"tf1_{name}"))
        result = check_ok(run_scenario(TF1_PROGRAM, REPLICAS, *flags,
                                       "--model_dir", model_dir, tf1=True))
        runs[name] = {"result": result, "numbers": parse_numbers(result.stdout),
                      "model_dir": model_dir}
    return runs


# -- 1. params from flags -------------------------------------------------------

def test_flags_passed_whole_as_params_construct_and_run(tf1_runs):
    # vars(args) holds 'use_tpu': TF 1.13-1.15 overwrote it, so does this.
    numbers = tf1_runs["tpu"]["numbers"]
    assert numbers["eval_global_step"] == 8


@pytest.mark.usefixtures("tpu8")  # in process: the 8-core layout first
def test_only_batch_size_and_context_are_reserved():
    from tpu_compat.estimator import tpu as tpu_lib

    def construct(params):
        config = tpu_lib.RunConfig(tpu_config=tpu_lib.TPUConfig(iterations_per_loop=2))
        return tpu_lib.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                                    config=config, params=params, use_tpu=False,
                                    train_batch_size=8)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy-API warnings of the names
        estimator = construct({"use_tpu": "from the flags", "learning_rate": 0.1})
        assert estimator.params["use_tpu"] == "from the flags"
        for key in ("batch_size", "context"):
            with pytest.raises(ValueError) as error:
                construct({key: 1, "use_tpu": True})
            message = str(error.value)
            assert f"params must not contain ['{key}']" in message
            assert "['batch_size', 'context'] are reserved keys" in message


# -- 2. eight devices, not one ----------------------------------------------------

def test_each_replica_runs_on_its_own_core_without_soft_placement(tf1_runs):
    on_core, elsewhere = collections.Counter(), []
    for line in tf1_runs["tpu"]["result"].stdout.splitlines():
        match = PLACEMENT.match(line.strip())
        if not match:
            continue
        name, _, device = match.groups()
        replica = re.search(r"(?:^|/)replica_(\d+)(?:/|$)", name)
        if replica is None:
            continue
        if device.endswith(f"/device:CPU:{replica.group(1)}"):
            on_core[int(replica.group(1))] += 1
        else:
            elsewhere.append(line)
    assert not elsewhere, elsewhere[:5]
    # Replica 0's ops carry no replica_ prefix; replicas 1-7 each ran many ops.
    assert sorted(on_core) == list(range(1, REPLICAS))
    assert min(on_core.values()) > 50


def test_numbers_equal_the_single_device_reference(tf1_runs):
    tpu, cpu = tf1_runs["tpu"]["numbers"], tf1_runs["cpu"]["numbers"]
    for key in SHARED_KEYS:
        assert tpu[key] == pytest.approx(cpu[key], rel=1e-5, abs=1e-6), key


def test_evaluation_runs_all_its_steps_with_one_step_per_loop(tf1_runs):
    # Issue 34 (field runner: BERT's run_classifier, --iterations_per_loop=1):
    # evaluate(steps=2) runs its steps in one loop; the strategy's
    # steps_per_run=1 quirk cut that loop to one step, and the eval metrics'
    # host call waited for the second step's outfeed forever.
    ipl1, cpu = tf1_runs["tpu_one_step_per_loop"]["numbers"], tf1_runs["cpu"]["numbers"]
    for key in SHARED_KEYS:
        assert ipl1[key] == pytest.approx(cpu[key], rel=1e-5, abs=1e-6), key


# -- 4. log lines and eval summaries ------------------------------------------------

def test_training_logs_loss_step_and_steps_per_second(tf1_runs):
    lines = _tf_log_lines(tf1_runs["tpu"]["result"].stderr)
    logged = [re.match(r"loss = (\S+), step = (\d+)(?: \(\S+ sec\))?$", line)
              for line in lines]
    logged = [(float(m.group(1)), int(m.group(2))) for m in logged if m]
    # log_step_count_steps=4, iterations_per_loop=2: every 2 loops, as TF 1.15
    # (the step after the loop: 2, then 6).
    assert [step for _, step in logged] == [2, 6]
    assert all(np.isfinite(loss) and loss > 0 for loss, _ in logged)
    rates = [float(m.group(1)) for m in
             (re.match(r"global_step/sec: (\S+)$", line) for line in lines) if m]
    assert rates and all(rate > 0 for rate in rates)


def test_evaluate_logs_the_saved_dict(tf1_runs):
    for run in ("tpu", "cpu"):
        lines = _tf_log_lines(tf1_runs[run]["result"].stderr)
        saved = [line for line in lines if line.startswith("Saving dict for global step")]
        assert len(saved) == 1, lines
        match = re.match(r"Saving dict for global step (\d+): (.*)$", saved[0])
        assert int(match.group(1)) == 8
        pairs = dict(pair.split(" = ") for pair in match.group(2).split(", "))
        assert list(pairs) == ["global_step", "loss", "mean_prediction", "mse"]
        numbers = tf1_runs[run]["numbers"]
        for key, value in pairs.items():
            assert float(value) == pytest.approx(numbers["eval_" + key], rel=1e-6), key


def test_eval_summaries_land_in_model_dir_eval_for_tensorboard(tf1_runs):
    for run in ("tpu", "cpu"):
        model_dir, numbers = tf1_runs[run]["model_dir"], tf1_runs[run]["numbers"]
        scalars, paths = {}, []
        for path in glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    if value.tag == "checkpoint_path":
                        paths.append((event.step, tf.make_ndarray(value.tensor).item()))
                    else:
                        scalars[value.tag] = (event.step, value.simple_value)
        assert sorted(scalars) == ["loss", "mean_prediction", "mse"]
        for tag, (step, value) in scalars.items():
            assert step == 8
            assert value == pytest.approx(numbers["eval_" + tag], rel=1e-6), tag
        assert [(step, os.path.basename(path.decode())) for step, path in paths] == [
            (8, "model.ckpt-8")]


# -- 5. model_fn once per replica: its log lines once per mode -------------------------

def test_model_fn_logs_and_prints_once_per_mode(tf1_runs):
    result = tf1_runs["tpu"]["result"]
    lines = _tf_log_lines(result.stderr)
    for mode in ("train", "eval"):
        assert lines.count(f"model_fn: building the {mode} graph") == 1, mode
        assert result.stdout.splitlines().count(f"model_fn print: {mode}") == 1, mode
    # The Python function itself still runs once per replica (docs/estimator.md).
    assert tf1_runs["tpu"]["numbers"]["model_fn_calls_train"] == REPLICAS
    assert tf1_runs["cpu"]["numbers"]["model_fn_calls_train"] == 1


# -- 3. CrossShardOptimizer, as each era decided --------------------------------------

def _tf2_data():
    rng = np.random.RandomState(7)
    x = rng.randn(1024, 4).astype(np.float32)
    y = x.dot(np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)) + 0.25
    return x, y


def _sgd_reference(rows, steps=10, lr=0.05, batch=32):
    """Plain SGD on the mean squared error, on ``rows`` of each global batch."""
    x, y = (a.astype(np.float64) for a in _tf2_data())
    w, b = np.zeros((4, 1)), np.zeros(1)
    for step in range(steps):
        xs = x[step * batch:(step + 1) * batch][rows]
        ys = y[step * batch:(step + 1) * batch][rows]
        error = xs @ w + b - ys
        w -= lr * 2 * xs.T @ error / len(xs)
        b -= lr * 2 * error.mean(axis=0)
    return w.ravel(), b


@pytest.mark.parametrize("iterations", [4, 1])
def test_tf2_program_without_cross_shard_optimizer_trains_as_the_tpu_did(
        tmp_path, iterations):
    result = check_ok(run_scenario(TF2_PROGRAM, REPLICAS, "--use_tpu",
                                   "--model_dir", str(tmp_path),
                                   "--iterations", str(iterations)))
    numbers = parse_numbers(result.stdout)
    # Each core applied its own gradient to its own copy; the TPU kept replica
    # 0's copy after each loop: training on replica 0's 4 of every 32 rows.
    weights, bias = _sgd_reference(slice(0, 32 // REPLICAS))
    assert numbers["global_step"] == 10
    for index, value in enumerate(weights):
        assert numbers[f"w{index}"] == pytest.approx(value, rel=1e-5, abs=1e-6)
    assert numbers["b"] == pytest.approx(bias[0], rel=1e-5, abs=1e-6)
    # ... which is not the whole batch's model.
    whole, _ = _sgd_reference(slice(0, 32))
    assert abs(numbers["w1"] - whole[1]) > 0.1
    assert "each of the 8 replicas applies only the gradient of its own 1/8" in result.stderr
    # absl logging in model_fn: once per mode.
    assert result.stderr.count("model_fn building mode=train") == 1


def test_the_same_program_as_tf1_fails_as_tf_1_15_did(tmp_path):
    result = run_scenario(TF2_PROGRAM, REPLICAS, "--use_tpu", "--model_dir",
                          str(tmp_path), tf1=True)
    assert result.returncode != 0
    assert "CrossShardOptimizer must be used for model training on TPUs" in result.stderr


def test_tf2_program_on_the_cpu_trains_on_the_whole_batch(tmp_path):
    numbers = parse_numbers(check_ok(run_scenario(
        TF2_PROGRAM, REPLICAS, "--model_dir", str(tmp_path))).stdout)
    weights, bias = _sgd_reference(slice(0, 32))
    for index, value in enumerate(weights):
        assert numbers[f"w{index}"] == pytest.approx(value, rel=1e-5, abs=1e-6)
    assert numbers["b"] == pytest.approx(bias[0], rel=1e-5, abs=1e-6)


# -- why model_fn is not traced once (docs/estimator.md) ---------------------------------

def _trace_model_fn_once_per_strategy(create_variables_first):
    """Builds a two-replica step whose model_fn is a tf.function traced once."""
    from tensorflow.python.ops import control_flow_util
    saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = False  # as Estimator graphs are built
    try:
        with tf.Graph().as_default():
            strategy = tf.compat.v1.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

            def model_fn(features):
                weight = tf.compat.v1.get_variable(
                    "w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
                loss = tf.reduce_mean(tf.matmul(features, weight))
                return tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)

            traced = tf.function(model_fn)
            with strategy.scope():
                if create_variables_first:
                    tf.compat.v1.get_variable(
                        "w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
                    tf.compat.v1.get_variable_scope().reuse_variables()
                def per_replica(features):
                    # Each replica calls the one traced function (as a TPU
                    # replicated its one trace).
                    return traced(features)

                strategy.extended.call_for_each_replica(per_replica, args=(tf.ones([4, 2]),))
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved


@pytest.mark.usefixtures("tpu8")  # in process: the 8-core layout first
def test_a_model_fn_traced_once_cannot_create_its_variables():
    with pytest.raises(Exception, match="Unable to lift tensor"):
        _trace_model_fn_once_per_strategy(create_variables_first=False)


@pytest.mark.usefixtures("tpu8")  # in process: the 8-core layout first
def test_a_model_fn_traced_once_cannot_sum_its_gradients():
    with pytest.raises(RuntimeError, match="merge_call` called while defining a new graph"):
        _trace_model_fn_once_per_strategy(create_variables_first=True)
