"""Issue 36: a migrated TPUEstimator program's ``export_saved_model`` with a plain
serving input fn (placeholders): the TF 2 driver writes Estimator's serving graph
(model_fn in PREDICT mode on the CPU, the checkpoint's variables) as a SavedModel that
``tf.saved_model.load`` serves with the predictions ``predict`` gives.
Before: a TPC070 TODO, and the driver refused the call."""

import pytest

from tpu_compat.migrate.estimator import to_tf2

V1 = "import tensorflow.compat.v1 as tf\n"
EXPORTING = (V1 + "def serving_input_fn():\n"
             "  x = tf.placeholder(tf.float32, [None, 3])\n"
             "  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})\n"
             "spec = tf.estimator.tpu.TPUEstimatorSpec(mode, predictions=p, export_outputs={\n"
             "    'serving_default': tf.estimator.export.PredictOutput(p)})\n"
             "e = tf.estimator.tpu.TPUEstimator(model_fn=f, use_tpu=True)\n"
             "e.export_saved_model('out', serving_input_fn)\n")


def test_export_names_become_the_drivers_and_need_no_todo():
    migrated = to_tf2.migrate_text(EXPORTING)
    assert "tpu_estimator_tf2.ServingInputReceiver({'x': x}, {'x': x})" in migrated.text
    assert "tpu_estimator_tf2.PredictOutput(p)" in migrated.text
    assert "tf.estimator" not in migrated.text and "TODO" not in migrated.text
    assert not any(note.todo for note in migrated.notes)


@pytest.mark.requires_tf
def test_the_export_loads_in_tf2_and_predicts_what_predict_gives(tmp_path, tpu8):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
    rng = np.random.RandomState(5)
    x = rng.normal(size=[8, 3]).astype(np.float32)
    seen = {}

    def model_fn(features, labels, mode, params):
        seen[mode] = (params.get("use_tpu"), params.get("batch_size"))
        logits = tf.compat.v1.layers.dense(features["x"], 2, name="hidden")
        predictions = {"logits": logits, "classes": tf.argmax(logits, axis=1)}
        return estimator_tf2.TPUEstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": estimator_tf2.PredictOutput(predictions)})

    estimator = estimator_tf2.TPUStrategyEstimator(
        model_fn, model_dir=str(tmp_path / "model"), use_tpu=False, predict_batch_size=4)
    # the checkpoint a TPUEstimator run would have left: model_fn's variables by name
    kernel, bias = rng.normal(size=[3, 2]).astype(np.float32), np.float32([0.5, -0.5])
    tf.compat.v1.train.Saver(var_list={
        "hidden/kernel": tf.Variable(kernel), "hidden/bias": tf.Variable(bias),
        "global_step": tf.Variable(7, dtype=tf.int64)}).save(None, str(tmp_path / "model" / "model.ckpt-7"))

    path = estimator.export_saved_model(str(tmp_path / "export"), lambda: (
        estimator_tf2.ServingInputReceiver(*[{"x": tf.compat.v1.placeholder(tf.float32, [None, 3])}] * 2)))
    assert seen[estimator_tf2.ModeKeys.PREDICT] == (False, 4)     # TPUEstimator's CPU export
    served = tf.saved_model.load(path.decode()).signatures["serving_default"](x=tf.constant(x))
    np.testing.assert_allclose(served["logits"].numpy(), x @ kernel + bias, rtol=1e-6)

    predicted = list(estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"x": x}).batch(params["batch_size"])))
    np.testing.assert_array_equal(served["logits"].numpy(), [p["logits"] for p in predicted])
    np.testing.assert_array_equal(served["classes"].numpy(), [p["classes"] for p in predicted])
