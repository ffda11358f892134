"""Issue 36: the tf.contrib imports of a TF 1.13 TPU trainer (tensorflow/tpu's
resnet_main.py at ed449e1, the field runner's tpu-resnet-contrib) under
``upgrade --estimator-to-tf2``. Before: a TPC100 TODO on each, and the strict run
stopped at the first.

* ``async_checkpoint.AsyncCheckpointSaverHook`` is the driver's: its save_steps /
  save_secs are the driver's checkpoint schedule (no step-0 save, the last step
  always), replacing RunConfig's, as Estimator added no saver when a
  CheckpointSaverHook was given;
* ``evaluation.checkpoints_iterator`` is TF core's;
* ``contrib.summary`` in ``host_call`` is ``tf.compat.v2.summary``
  (``always_record_summaries()`` -> ``record_if(True)``, ``all_summary_ops()`` ->
  ``all_v2_summary_ops()``), unless a use has no TF 2 form (``family``).
The imports whose names all became the driver's are removed."""

import os

import pytest

from tpu_compat.migrate.estimator import to_tf2

V1 = "import tensorflow.compat.v1 as tf\n"
ESTIMATOR = "e = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, use_tpu=True)\n"
# resnet_main.py's imports and uses, as written in 2019
RESNET_2019 = (
    V1 + "from tensorflow.contrib import summary\n"
    "from tensorflow.contrib.tpu.python.tpu import async_checkpoint\n"
    "from tensorflow.contrib.training.python.training import evaluation\n"
    "def host_call_fn(gs, loss):\n"
    "  with summary.create_file_writer('d', max_queue=2).as_default():\n"
    "    with summary.always_record_summaries():\n"
    "      summary.scalar('loss', loss[0], step=gs)\n"
    "      return summary.all_summary_ops()\n"
    + ESTIMATOR +
    "hooks = [async_checkpoint.AsyncCheckpointSaverHook(checkpoint_dir='m', save_steps=100)]\n"
    "for ckpt in evaluation.checkpoints_iterator('m', timeout=5):\n"
    "  pass\n")


def test_resnet_2019_contrib_imports_become_tf2_and_the_drivers():
    migrated = to_tf2.migrate_text(RESNET_2019)
    removed = "# tpu_compat: `from tensorflow.contrib.{} import {}` removed (upgrade " \
              "--estimator-to-tf2): its names are tpu_estimator_tf2's\npass\n"
    assert migrated.text == (
        V1 + "from tensorflow.compat.v2 import summary\n"
        "import tpu_estimator_tf2\n"
        + removed.format("tpu.python.tpu", "async_checkpoint")
        + removed.format("training.python.training", "evaluation")
        + "def host_call_fn(gs, loss):\n"
        "  with summary.create_file_writer('d', max_queue=2).as_default():\n"
        "    with summary.record_if(True):\n"
        "      summary.scalar('loss', loss[0], step=gs)\n"
        "      return tpu_estimator_tf2.all_summary_ops()\n"
        "e = tpu_estimator_tf2.TPUStrategyEstimator(model_fn=model_fn, use_tpu=True)\n"
        "hooks = [tpu_estimator_tf2.AsyncCheckpointSaverHook(checkpoint_dir='m', "
        "save_steps=100)]\n"
        "for ckpt in tpu_estimator_tf2.checkpoints_iterator('m', timeout=5):\n"
        "  pass\n")
    assert not any(note.todo for note in migrated.notes)
    assert {note.rule for note in migrated.notes} >= {"TPC100", "TPC111", "TPC120", "TPC121"}


@pytest.mark.parametrize("use", [
    "summary.scalar('loss', l, 'family', step=gs)",     # contrib's 3rd positional: family
    "summary.scalar('loss', l, family='f', step=gs)",
    "summary.image('x', l, step=gs)",                   # no same-argument TF 2 form
    "writer = summary",                                 # the module itself, passed on
])
def test_contrib_summary_uses_without_a_tf2_form_keep_the_import(use):
    source = V1 + "from tensorflow.contrib import summary\n" + use + "\n" + ESTIMATOR
    text = to_tf2.migrate_text(source).text
    assert "from tensorflow.contrib import summary\n" in text and use in text


def test_an_import_still_used_is_kept():
    """A name of the module the driver does not serve keeps the import (and its TODO)."""
    source = (V1 + "from tensorflow.contrib.training.python.training import evaluation\n"
              "evaluation.evaluate_repeatedly('m')\n" + ESTIMATOR)
    assert "from tensorflow.contrib.training.python.training import evaluation\n" in (
        to_tf2.migrate_text(source).text)


def _train(model_dir, hooks, max_steps):
    """A one-variable model_fn trained on the CPU to ``max_steps``; the checkpoints saved."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel

    def model_fn(features, labels, mode, params):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(features) * (w - 1.0)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_tf2.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    config = estimator_tf2.RunConfig(model_dir=str(model_dir),
                                     tpu_config=estimator_tf2.TPUConfig(iterations_per_loop=2))
    estimator = estimator_tf2.TPUStrategyEstimator(model_fn, config=config, train_batch_size=8,
                                                   use_tpu=False)
    estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([8])).repeat(),
                    hooks=hooks, max_steps=max_steps)
    state = tf.train.get_checkpoint_state(str(model_dir))
    return [os.path.basename(path) for path in state.all_model_checkpoint_paths]


@pytest.mark.requires_tf
def test_async_checkpoint_saver_hook_is_the_drivers_schedule(tmp_path, tpu8):
    """save_steps=3 to step 7 on the CPU (a Session.run a step): checkpoints at 3, 6 and
    the last step 7, none at step 0 (async_checkpoint.py, TF 1.15: `_save` skips step 0;
    `end` saves the last step); RunConfig's default (600 s) alone would save only step 7."""
    del tpu8
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    hook = estimator_tf2.AsyncCheckpointSaverHook(checkpoint_dir=str(tmp_path / "m"),
                                                  save_steps=3)
    assert _train(tmp_path / "m", [hook], 7) == ["model.ckpt-3", "model.ckpt-6", "model.ckpt-7"]
    assert hook.schedule(str(tmp_path / "m" / ".")) == (3, None)
    with pytest.raises(NotImplementedError, match=r"checkpoint_dir=.* is not migrated: the "
                                                  r"driver saves and restores model_dir"):
        hook.schedule(str(tmp_path / "elsewhere"))


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "exactly one of save_secs and save_steps"),
    ({"save_secs": 1, "save_steps": 1}, ValueError, "exactly one of save_secs and save_steps"),
    ({"save_steps": 1, "listeners": ["l"]}, NotImplementedError,
     r"AsyncCheckpointSaverHook.listeners=\['l'\] is not migrated"),
    ({"save_steps": 1, "checkpoint_basename": "x.ckpt"}, NotImplementedError,
     "AsyncCheckpointSaverHook.checkpoint_basename='x.ckpt' is not migrated"),
])
@pytest.mark.requires_tf
def test_async_checkpoint_saver_hook_bad_arguments(kwargs, error, match, tpu8):
    del tpu8
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    with pytest.raises(error, match=match):
        estimator_tf2.AsyncCheckpointSaverHook("m", **kwargs)


def test_estimator_spec_of_model_fn_is_the_drivers():
    """resnet_main.py's PREDICT branch returns tf.estimator.EstimatorSpec (for its CPU
    export): the driver's EstimatorSpec, no TODO (before: a TPC076 TODO)."""
    source = (V1 + "def model_fn(features, labels, mode, params):\n"
              "  return tf.estimator.EstimatorSpec(mode=mode, predictions={'p': features})\n"
              + ESTIMATOR)
    migrated = to_tf2.migrate_text(source)
    assert "  return tpu_estimator_tf2.EstimatorSpec(mode=mode, predictions={'p': features})\n" \
        in migrated.text
    assert [(n.rule, n.todo) for n in migrated.notes if n.line == 3] == [("TPC076", "")]


@pytest.mark.requires_tf
def test_estimator_spec_where_tpu_estimator_took_it(tpu8, tmp_path):
    """TPUEstimator (r1.15 tpu_estimator.py) took an EstimatorSpec on the CPU and in TPU
    training, refused it in TPU evaluation and prediction, and refused
    training_chief_hooks; the driver does the same, and refuses eval_metric_ops by name."""
    del tpu8
    from tpu_compat.migrate.estimator import estimator_tf2 as driver  # pylint: disable=import-outside-toplevel

    def model_fn(features, labels, mode, params):
        return driver.EstimatorSpec(mode, predictions={"p": features})

    def call(use_tpu, mode):
        estimator = driver.TPUStrategyEstimator(
            model_fn, model_dir=str(tmp_path), use_tpu=use_tpu, train_batch_size=8,
            eval_batch_size=8, predict_batch_size=8)
        return estimator._call_model_fn(1.0, None, mode, 1)  # pylint: disable=protected-access

    assert call(False, driver.ModeKeys.PREDICT).predictions == {"p": 1.0}
    assert call(True, driver.ModeKeys.TRAIN).predictions == {"p": 1.0}
    for mode, what in ((driver.ModeKeys.PREDICT, "prediction"), (driver.ModeKeys.EVAL, "evaluation")):
        with pytest.raises(RuntimeError, match=f"estimator_spec used by TPU {what} must have type "
                                               f"`TPUEstimatorSpec`"):
            call(True, mode)
    with pytest.raises(ValueError, match="training_chief_hooks returned by EstimatorSpec"):
        driver.EstimatorSpec("train", training_chief_hooks=["h"])
    with pytest.raises(NotImplementedError,
                       match=r"EstimatorSpec.eval_metric_ops=\['acc'\] is not migrated"):
        driver.EstimatorSpec("eval", eval_metric_ops={"acc": None})


def test_a_contrib_import_guarded_by_import_error_raises_it_as_tf2_does():
    """mnasnet_main.py's quantized training and the trainers' Bigtable input import
    contrib in a `try` whose `except ImportError` logs "not supported in TensorFlow
    2.x" and re-raises: the import becomes TF 2's ImportError, so that handler runs
    (before: a TPC100 TODO each; a strict run stopped at the import instead)."""
    source = (V1 + "def model_fn(features, labels, mode, params):\n"
              "  try:\n"
              "    from tensorflow.contrib import quantize  # pylint: disable=g-import\n"
              "  except ImportError as e:\n"
              "    raise e\n"
              "  try:\n"
              "    from tensorflow.contrib import cloud\n"
              "  except ValueError:\n"
              "    pass\n" + ESTIMATOR)
    migrated = to_tf2.migrate_text(source)
    assert ("  try:\n    raise ImportError(\"No module named 'tensorflow.contrib' "
            "(tensorflow.contrib.quantize: TF 2 has no tf.contrib; upgrade "
            "--estimator-to-tf2)\")\n  except ImportError as e:\n") in migrated.text
    # not an ImportError handler: the import stays (the ordinary upgrade's TODO)
    assert "    from tensorflow.contrib import cloud\n  except ValueError:\n" in migrated.text
    assert [(n.line, n.rule) for n in migrated.notes if n.rule == "TPC100"] == [(4, "TPC100")]
    with pytest.raises(ImportError, match="tensorflow.contrib.quantize: TF 2 has no tf.contrib"):
        exec(migrated.text.split("\n")[4].strip())      # pylint: disable=exec-used


def test_a_module_of_the_program_with_only_a_guarded_import():
    """imagenet_input.py (no estimator names): as a module of the program (``helper``)
    its guarded contrib.cloud import is rewritten, with no driver import it would not use."""
    source = ("def make_source_dataset():\n  try:\n"
              "    from tensorflow.contrib.cloud import BigtableClient\n"
              "  except ImportError as e:\n    raise e\n")
    assert to_tf2.migrate_text(source).text == source          # not a module of the program
    text = to_tf2.migrate_text(source, helper=True).text
    assert "raise ImportError(\"No module named 'tensorflow.contrib' (tensorflow.contrib.cloud:" \
        in text and "tpu_estimator_tf2" not in text


AUTOAUGMENT = ("import tensorflow.compat.v1 as tf\n"
               "from tensorflow.contrib import image as contrib_image\n"
               "from tensorflow.contrib import training as contrib_training\n"
               "def rotate(image, radians):\n"
               "  return contrib_image.rotate(image, radians)\n"
               "def translate_x(image, pixels):\n"
               "  return contrib_image.translate(image, [-pixels, 0])\n"
               "def shear_x(image, level):\n"
               "  return contrib_image.transform(image, [1., level, 0., 0., 1., 0., 0., 0.])\n"
               "hparams = contrib_training.HParams(cutout_const=100, translate_const=250)\n")


def test_autoaugment_contrib_image_and_hparams_are_the_drivers():
    """EfficientNet's autoaugment.py (a module of the program): contrib.image's
    transform/rotate/translate and contrib.training.HParams become the driver's and
    both contrib imports go (before: 2 TPC100 and 2 TPC068 TODOs)."""
    text = to_tf2.migrate_text(AUTOAUGMENT, helper=True).text
    for call in ("tpu_estimator_tf2.image_rotate(image, radians)",
                 "tpu_estimator_tf2.image_translate(image, [-pixels, 0])",
                 "tpu_estimator_tf2.image_transform(image, [1., level, 0.",
                 "tpu_estimator_tf2.HParams(cutout_const=100, translate_const=250)"):
        assert call in text
    assert "\nfrom tensorflow.contrib" not in text and "import tpu_estimator_tf2\n" in text
    assert "# tpu_compat: `from tensorflow.contrib import image` removed" in text


@pytest.mark.requires_tf
def test_contrib_image_ops_and_hparams_in_the_driver(tpu8):
    """TF 1.15 contrib/image/python/ops/image_ops.py: rotate is counterclockwise about
    the center, translate moves by [dx, dy], transform maps output to input pixels;
    the empty space is 0 (NEAREST). HParams: the keyword values, read as attributes."""
    del tpu8
    import numpy as np  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2 as driver  # pylint: disable=import-outside-toplevel
    image = np.arange(1, 13, dtype=np.uint8).reshape(3, 4)[:, :3].reshape(3, 3, 1)
    np.testing.assert_array_equal(driver.image_rotate(image, np.pi / 2).numpy(),
                                  np.rot90(image, 1))
    shifted = np.zeros_like(image)
    shifted[:, 1:] = image[:, :-1]
    np.testing.assert_array_equal(driver.image_translate(image, [1, 0]).numpy(), shifted)
    np.testing.assert_array_equal(driver.image_translate(image[None], [[1, 0]]).numpy(),
                                  shifted[None])
    sheared = driver.image_transform(image[:, :, 0], [1., 1., 0., 0., 1., 0., 0., 0.]).numpy()
    expected = np.zeros((3, 3), np.uint8)      # output (x, y) reads input (x + y, y)
    for y in range(3):
        for x in range(3 - y):
            expected[y, x] = image[y, x + y, 0]
    np.testing.assert_array_equal(sheared, expected)
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    assert driver.checkpoints_iterator is tf.compat.v1.train.checkpoints_iterator
    assert driver.all_summary_ops is tf.compat.v1.summary.all_v2_summary_ops
    hparams = driver.HParams(cutout_const=100, translate_const=250)
    assert (hparams.cutout_const, hparams.values()) == (
        100, {"cutout_const": 100, "translate_const": 250})
    with pytest.raises(TypeError, match="rank 2, 3 or 4, given rank 1"):
        driver.image_rotate(np.zeros(3), 1.0)
