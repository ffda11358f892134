"""What ``evaluate`` and ``predict`` hand back: TF 1.15's metrics log and eval
summaries, and the predictions by key and by example.

Apart from ``estimator.py``: these shape results after the session has run,
and are TF 1.15's formats (its log line, its TensorBoard events).
"""

import logging

import tensorflow as tf

__all__ = ["batch_length", "dict_to_str", "select_keys", "write_summaries"]

_log = logging.getLogger("tensorflow")


def select_keys(predictions, keys):
    if keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys given, but the model_fn's predictions are not "
                         "a dict")
    keys = [keys] if isinstance(keys, str) else list(keys)
    unknown = [k for k in keys if k not in predictions]
    if unknown:
        raise ValueError(f"predict_keys {unknown} are not in the predictions "
                         f"({sorted(predictions)})")
    return {key: predictions[key] for key in keys}


def batch_length(values):
    lengths = {key: value.shape[0] for key, value in values.items()
               if getattr(value, "ndim", 0) > 0}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"predictions must all have the same batch size to yield "
                         f"single examples; sizes: {lengths}")
    return next(iter(lengths.values()))


def dict_to_str(dictionary):
    """``key = value, ...`` sorted by key, as TF 1.15's estimator logged a dict."""
    # '%s' (str), not an f-string: format() of a NumPy float32 prints its
    # float64 expansion (0.919775128364563), str() the float32 (0.9197751).
    return ", ".join("%s = %s" % (key, value) for key, value in sorted(dictionary.items())
                     if not isinstance(value, bytes))


def write_summaries(output_dir, results, global_step, checkpoint_path=None):
    """Logs the metrics and writes them as TensorBoard events, as TF 1.15's evaluate.

    tensorflow/estimator r1.15, tensorflow_estimator/python/estimator/
    estimator.py (``_write_dict_to_summary``, ``_write_checkpoint_path_to_summary``):
    "Saving dict for global step N: k = v, ..." at INFO, one scalar per
    metric at the evaluated checkpoint's global step in ``output_dir``
    (``model_dir/eval`` or ``eval_<name>``), then the checkpoint path as a
    string summary, "Saving 'checkpoint_path' summary for global step N: ...".
    """
    global_step = int(global_step)
    _log.info("Saving dict for global step %d: %s", global_step, dict_to_str(results))
    summary = tf.compat.v1.Summary()
    for key, value in results.items():
        if key == tf.compat.v1.GraphKeys.GLOBAL_STEP or value is None:
            continue
        try:
            summary.value.add(tag=key, simple_value=float(value))
        except (TypeError, ValueError):
            continue
    with tf.Graph().as_default():  # FileWriter refuses eager mode (TF 2 programs)
        writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
        writer.add_summary(summary, global_step)
        if checkpoint_path:
            _log.info("Saving '%s' summary for global step %d: %s", "checkpoint_path",
                      global_step, checkpoint_path)
            path_summary = tf.compat.v1.Summary()
            path_summary.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(
                checkpoint_path, dtype=tf.string))
            writer.add_summary(path_summary, global_step)
        writer.flush()
