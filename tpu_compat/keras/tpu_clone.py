"""What the Keras TPU model's two copies take from the model given to ``keras_to_tpu_model``.

keras_support.py (tensorflow/tensorflow r1.12/r1.13, tensorflow/contrib/tpu/python/
tpu/keras_support.py) cloned the user's model twice, as the CPU model and as the
TPU model, each compiled with the user's loss, metrics and loss weights and a
fresh copy of the optimizer (``_clone_optimizer``). These are those copies, apart
from :mod:`tpu_compat.keras.tpu_model`, which decides when to make them.
"""

import tensorflow as tf

__all__ = ["clone_metrics", "clone_optimizer", "compile_arguments", "program_keras",
           "tf_optimizer"]


def program_keras():
    """The Keras the program's ``tf.keras`` is (tf_keras under TF_USE_LEGACY_KERAS=1)."""
    return tf.keras


def compile_arguments(model):
    """The loss, metrics and loss weights ``model`` was compiled with (v1 or v2 Model)."""
    metrics = getattr(model, "_compile_metrics", None)
    if metrics is None:
        compiled = getattr(model, "compiled_metrics", None)
        metrics = getattr(compiled, "_user_metrics", None) if compiled else None
    return {"loss": model.loss, "metrics": metrics,
            "loss_weights": getattr(model, "loss_weights", None)}


def clone_metrics(metrics):
    keras = program_keras()
    if metrics is None:
        return None
    def clone(metric):
        if isinstance(metric, keras.metrics.Metric):
            return type(metric).from_config(metric.get_config())
        return metric
    if isinstance(metrics, dict):
        return {key: clone_metrics(value) for key, value in metrics.items()}
    if isinstance(metrics, (list, tuple)):
        return [clone(metric) for metric in metrics]
    return clone(metrics)


def tf_optimizer(optimizer):
    """The ``tf.compat.v1.train.Optimizer`` behind ``optimizer``, or None."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return optimizer
    inner = getattr(optimizer, "optimizer", None)
    if type(optimizer).__name__ == "TFOptimizer" and isinstance(
            inner, tf.compat.v1.train.Optimizer):
        return inner
    return None


def clone_optimizer(optimizer):
    """A fresh copy for the TPU model (keras_support.py's clone_optimizer).

    A ``tf.train`` optimizer is shared, as the era wrapped the same object; a Keras
    optimizer is rebuilt from its config.
    """
    wrapped = tf_optimizer(optimizer)
    if wrapped is not None:
        return wrapped
    if isinstance(optimizer, str):
        return optimizer
    return type(optimizer).from_config(optimizer.get_config())
