"""Keras TPU programs of TF 1.15 (eager), 2.0/2.1 and 2.2/2.3, against one device.

usage: tpu-compat run --replicas N keras_eager_eras.py

Each era's program builds and compiles the same model in its strategy's scope
and fits it (10 steps per epoch, 2 epochs), recording at every train-batch end
the batch index, the loss and the optimizer's step counter (a variable on the
devices):

* ``tf115``: ``tf.compat.v1.distribute.experimental.TPUStrategy(resolver,
  steps_per_run=4)``, fit of a dataset and of NumPy arrays, evaluate, predict,
  then ``model.save``/``load_model`` and ``save_weights``/``load_weights`` into
  models with no strategy;
* ``tf21``: ``tf.distribute.experimental.TPUStrategy(resolver)``;
* ``tf23``: the same with ``compile(..., experimental_steps_per_execution=4)``;
* ``reference``: no strategy.

Finally imports Keras 3 (``tpu-compat run`` chose tf-keras, so TensorFlow has
not imported it) to show that ``install()`` patches a Keras imported later,
and uninstalls. Prints ``RESULT {json}``.
"""
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 16
STEPS_PER_EPOCH = 10
EPOCHS = 2
STEPS_PER_RUN = 4
LEARNING_RATE = 0.05

rng = np.random.RandomState(7)
features = rng.randn(GLOBAL_BATCH * STEPS_PER_EPOCH, 8).astype(np.float32)
labels = (features.dot(rng.randn(8, 1)) + 0.3 * np.sin(features[:, :1])).astype(np.float32)
initial_weights = [(0.3 * rng.randn(8, 4)).astype(np.float32), np.zeros(4, np.float32),
                   (0.3 * rng.randn(4, 1)).astype(np.float32), np.zeros(1, np.float32)]


def new_model():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(4, activation="tanh", input_shape=(8,)),
        tf.keras.layers.Dense(1)])
    model.set_weights(initial_weights)
    return model


def train_dataset():
    return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(
        GLOBAL_BATCH, drop_remainder=True)


def eval_dataset():
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        GLOBAL_BATCH, drop_remainder=True)


class BatchRecorder(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append({"batch": int(batch), "loss": float(logs["loss"]),
                           "iterations": int(self.model.optimizer.iterations.numpy())})


def as_lists(weights):
    return [w.tolist() for w in weights]


def fit_and_record(model):
    recorder = BatchRecorder()
    history = model.fit(train_dataset(), epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH,
                        callbacks=[recorder], verbose=0)
    return {"history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
            "calls": recorder.calls, "weights": as_lists(model.get_weights()),
            "steps_per_execution": int(model.steps_per_execution.numpy())}


def compile_model(model, **extra):
    model.compile(tf.keras.optimizers.SGD(LEARNING_RATE), "mse", metrics=["mae"], **extra)


def tf115_program(strategy, directory):
    """TF 1.15 code with eager execution: the v1 strategy and steps_per_run."""
    with strategy.scope():
        model = new_model()
        compile_model(model)
    result = fit_and_record(model)
    result["evaluate"] = [float(v) for v in model.evaluate(eval_dataset(), verbose=0)]
    result["predict"] = model.predict(eval_dataset(), verbose=0).tolist()
    model.save(os.path.join(directory, "model.h5"))
    model.save_weights(os.path.join(directory, "weights"))
    with strategy.scope():
        numpy_model = new_model()
        compile_model(numpy_model)
    numpy_model.fit(features, labels, batch_size=GLOBAL_BATCH, epochs=EPOCHS,
                    shuffle=False, verbose=0)
    result["numpy_weights"] = as_lists(numpy_model.get_weights())
    return result


def loaded_without_strategy(directory):
    fresh = new_model()
    fresh.load_weights(os.path.join(directory, "weights"))
    return {"load_model": as_lists(
                tf.keras.models.load_model(os.path.join(directory, "model.h5")).get_weights()),
            "load_weights": as_lists(fresh.get_weights())}


def tf21_program(strategy):
    with strategy.scope():
        model = new_model()
        compile_model(model)
    return fit_and_record(model)


def tf23_program(strategy):
    with strategy.scope():
        model = new_model()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compile_model(model, experimental_steps_per_execution=STEPS_PER_RUN)
    result = fit_and_record(model)
    result["warnings"] = [{"message": str(w.message), "file": os.path.basename(w.filename),
                           "line": w.lineno} for w in caught
                          if "experimental_steps_per_execution" in str(w.message)]
    return result


def reference_program():
    model = new_model()
    compile_model(model)
    result = fit_and_record(model)
    result["evaluate"] = [float(v) for v in model.evaluate(eval_dataset(), verbose=0)]
    result["predict"] = model.predict(eval_dataset(), verbose=0).tolist()
    numpy_model = new_model()
    compile_model(numpy_model)
    numpy_model.fit(features, labels, batch_size=GLOBAL_BATCH, epochs=EPOCHS,
                    shuffle=False, verbose=0)
    result["numpy_weights"] = as_lists(numpy_model.get_weights())
    return result


def keras3_patched_on_import_then_uninstalled():
    import importlib.util  # pylint: disable=import-outside-toplevel
    import tpu_compat  # pylint: disable=import-outside-toplevel
    from tf_keras.src.engine import training  # pylint: disable=import-outside-toplevel
    already = "keras" in sys.modules
    import keras  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    if importlib.util.find_spec("keras.src.trainers") is None:
        # TF 2.15 and older: `keras` is Keras 2, which tpu_compat leaves alone
        # (tf.keras is tf_keras under TF_USE_LEGACY_KERAS=1).
        from keras.src.engine import training as keras2_training  # pylint: disable=import-outside-toplevel
        left_alone = not hasattr(keras2_training.Model.compile, "__tpu_compat_added__")
        tpu_compat.uninstall()
        return {"keras_is_keras3": False, "keras3_imported_before": already,
                "keras2_left_alone": left_alone,
                "tf_keras_restored": not hasattr(training.Model.compile, "__tpu_compat_added__")}
    from keras.src.trainers import trainer  # pylint: disable=import-outside-toplevel
    patched = getattr(trainer.Trainer.compile, "__tpu_compat_added__", False)
    tpu_compat.uninstall()
    return {"keras_is_keras3": True, "keras3_imported_before": already,
            "keras3_patched_on_import": patched,
            "keras3_restored": not hasattr(trainer.Trainer.compile, "__tpu_compat_added__"),
            "tf_keras_restored": not hasattr(training.Model.compile, "__tpu_compat_added__")}


resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
results = {"keras": tf.keras.__name__}
with tempfile.TemporaryDirectory() as saved:
    v1_strategy = tf.compat.v1.distribute.experimental.TPUStrategy(
        resolver, steps_per_run=STEPS_PER_RUN)
    results["tf115"] = tf115_program(v1_strategy, saved)
    results["tf115"]["saved"] = loaded_without_strategy(saved)
results["tf21"] = tf21_program(tf.distribute.experimental.TPUStrategy(resolver))
results["tf23"] = tf23_program(tf.distribute.experimental.TPUStrategy(resolver))
results["reference"] = reference_program()
results["replicas"] = v1_strategy.num_replicas_in_sync
results.update(keras3_patched_on_import_then_uninstalled())
print("RESULT " + json.dumps(results))
