"""Issue 36's third whole program: a TPUEstimator program with ``eval_metrics`` and
``host_call`` (tests/migrate_programs/tpu_estimator_resnet_legacy.py, the TPU
ResNet's host_call: tf.compat.v2 summaries of the step's global step, loss,
learning rate and epoch, reshaped to [1] for the outfeed), upgraded with
``--estimator-to-tf2``, run strict, and compared with its legacy run under
``tpu-compat run``: losses, eval metrics, weights, global step, the summary
events both write to model_dir (tags, steps, values), and ``predict``'s
per-image predictions (a padded last batch), with 2, 8 and 1 replicas.

TF 2.21's wheel has no TensorBoard, which ``tf.summary.scalar`` needs; where it
is not installed, a stand-in ``tensorboard.summary.v2.scalar`` of the same
behaviour (a float32 tensor summary of the scalars plugin) is put on both runs'
path."""

import glob
import importlib.util
import math
import os
import shutil

import pytest
from conftest import REPO_ROOT, check_ok, parse_numbers, run_cli

from test_migrate_estimator_tf2 import _losses, assert_same_numbers

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrate_programs")
RESNET = "tpu_estimator_resnet_legacy.py"
TAGS = {"loss", "mean_replica_loss", "learning_rate", "current_epoch"}

_SCALAR = '''
import tensorflow as tf
from tensorflow.core.framework import summary_pb2


def scalar(name, data, step=None, description=None):
    metadata = summary_pb2.SummaryMetadata(
        summary_description=description or "",
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    with tf.summary.experimental.summary_scope(
            name, "scalar_summary", values=[data, step]) as (tag, _):
        return tf.summary.write(tag=tag, tensor=tf.cast(data, tf.float32), step=step,
                                metadata=metadata)
'''


def _python_path(root):
    """PYTHONPATH for the runs: the repository, and a stand-in TensorBoard if
    the real one is not installed."""
    entries = [REPO_ROOT]
    if importlib.util.find_spec("tensorboard") is None:
        package = root / "tensorboard_stand_in" / "tensorboard"
        (package / "summary").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "summary" / "__init__.py").write_text("")
        (package / "summary" / "v2.py").write_text(_SCALAR)
        entries.append(str(package.parent))
    entries += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(entries)


@pytest.fixture(scope="module")
def resnet_program(tmp_path_factory, tpu8):
    """The legacy program, its upgrade, and the runs' PYTHONPATH."""
    del tpu8    # TensorFlow in this process (the event reader): the 8-device layout first
    root = tmp_path_factory.mktemp("host_call_tf2")
    legacy = root / "legacy" / RESNET
    legacy.parent.mkdir()
    shutil.copy(os.path.join(PROGRAMS, RESNET), legacy)
    out = root / "migrated"
    result = run_cli("upgrade", "--estimator-to-tf2", str(legacy), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "(10 rewrites, 0 TODOs)" in result.stderr     # host_call, predict: no TODO
    assert "host_call=host_call" in (out / RESNET).read_text()
    return root, legacy, out / RESNET, _python_path(root)


def _summaries(model_dir):
    """{(tag, step): value} of the tensor summaries of the scalars plugin written to
    model_dir (the host_call's; TPUEstimator's own hooks write simple values)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    found = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars":
                    key = (value.tag, event.step)
                    assert key not in found, f"{key} written twice in {model_dir}"
                    found[key] = float(tf.make_ndarray(value.tensor))
    return found


def _run(program, model_dir, replicas, path, strict=False):
    extra = ["--warnings", "error", "--strict", "on"] if strict else []
    result = check_ok(run_cli("run", "--replicas", str(replicas), *extra, str(program),
                              f"--model_dir={model_dir}", f"--num_cores={replicas}",
                              env={"PYTHONPATH": path}))
    return (parse_numbers(result.stdout), _losses(result.stderr), result.stderr,
            _summaries(model_dir))


def _assert_same(legacy, migrated, steps=8):
    numbers, losses, _, summaries = legacy
    migrated_numbers, migrated_losses, stderr, migrated_summaries = migrated
    assert {"eval_top_1_accuracy", "eval_top_5_accuracy", "eval_loss", "eval_global_step",
            "global_step", "conv/kernel_sum", "logits/kernel_sum"} <= set(numbers)
    assert_same_numbers(numbers, losses, migrated_numbers, migrated_losses)
    assert "Saving dict for global step 8: " in stderr
    # predict: 20 images in steps of 16 (the last padded), one dict per image
    assert numbers["predictions"] == 20 and "prediction_19_top_probability" in numbers
    # host_call ran once per step with the step's own global step (0..7, as the
    # TPU's reads gave it), writing the same tags, steps and values
    assert set(summaries) == {(tag, step) for tag in TAGS for step in range(steps)}
    assert set(summaries) == set(migrated_summaries)
    for key, value in summaries.items():
        assert math.isclose(value, migrated_summaries[key], rel_tol=1e-5, abs_tol=1e-7), (
            key, value, migrated_summaries[key])
    assert [summaries[("learning_rate", s)] for s in range(4)] == pytest.approx(
        [0.05, 0.1, 0.15, 0.2])


@pytest.mark.requires_tf
# 2 replicas in CI (a quarter of 8's graph, the same claims: each replica's loss
# reaches the host); a migrated TPUEstimator program on 8 replicas in CI:
# test_migrate_estimator_tf2.py's test_bert_style_program_eight_replicas, and the
# legacy host_call on 8: test_estimator.py's parity run.
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [2, 8])
def test_host_call_and_eval_metrics_several_replicas(resnet_program, replicas):
    root, legacy, migrated, path = resnet_program
    legacy_run = _run(legacy, root / f"l{replicas}", replicas, path)
    _assert_same(legacy_run, _run(migrated, root / f"m{replicas}", replicas, path,
                                  strict=True))
    # the host saw every replica's loss: their mean is not replica 0's
    summaries = legacy_run[3]
    assert any(abs(summaries[("mean_replica_loss", s)] - summaries[("loss", s)]) > 1e-3
               for s in range(8))


@pytest.mark.requires_tf
@pytest.mark.slow
def test_host_call_and_eval_metrics_one_replica(resnet_program):
    root, legacy, migrated, path = resnet_program
    legacy_run = _run(legacy, root / "l1", 1, path)
    _assert_same(legacy_run, _run(migrated, root / "m1", 1, path, strict=True))
    summaries = legacy_run[3]
    assert all(summaries[("mean_replica_loss", s)] == summaries[("loss", s)]
               for s in range(8))


def _tiny_estimator(model_dir, every_n, host_tensor):
    """A use_tpu=False TPUStrategyEstimator whose host_call writes the step's global
    step with tf.summary.write (no TensorBoard needed)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    v1 = tf.compat.v1

    def host_call_fn(gs):
        with tf.summary.create_file_writer(str(model_dir)).as_default():
            tf.summary.write("gs", gs[0], step=tf.cast(gs[0], tf.int64))

    def model_fn(features, labels, mode, params):
        del labels, params
        w = v1.get_variable("w", [2], initializer=v1.zeros_initializer())
        loss = tf.reduce_sum(tf.square(features - w))
        global_step = v1.train.get_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step)
        return estimator_tf2.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op,
            host_call=(host_call_fn, [host_tensor(global_step)]))

    def input_fn(params):
        data = np.arange(64, dtype=np.float32).reshape(32, 2)
        return tf.data.Dataset.from_tensor_slices(data).repeat().batch(params["batch_size"])

    config = estimator_tf2.RunConfig(model_dir=str(model_dir), tpu_config=estimator_tf2.TPUConfig(
        iterations_per_loop=4, experimental_host_call_every_n_steps=every_n))
    return estimator_tf2.TPUStrategyEstimator(model_fn, config=config, use_tpu=False,
                                              train_batch_size=4), input_fn


@pytest.mark.requires_tf
def test_host_call_every_n_steps_and_a_scalar_host_tensor(tmp_path, tpu8):
    """experimental_host_call_every_n_steps=2 with 4-step loops: the host call runs for
    each loop's steps 0 and 2 (global steps 0, 2, 4, 6 of 8), as TPUEstimator's
    host-call hook ran it; a scalar host tensor is an error naming it."""
    del tpu8
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    estimator, input_fn = _tiny_estimator(tmp_path / "every2", 2,
                                          lambda step: tf.reshape(step, [1]))
    estimator.train(input_fn, max_steps=8)
    steps = []
    for path in sorted(glob.glob(str(tmp_path / "every2" / "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                assert value.tag == "gs"
                assert int(tf.make_ndarray(value.tensor)) == event.step
                steps.append(event.step)
    assert steps == [0, 2, 4, 6]
    estimator, input_fn = _tiny_estimator(tmp_path / "scalar", 1, lambda step: step)
    with pytest.raises(ValueError, match="host_call: tensor 0 is a scalar"):
        estimator.train(input_fn, max_steps=4)
