"""The few ``tf.contrib`` names that need code rather than a re-export.

* ``tf.contrib.data.batch_and_drop_remainder``: a ``Dataset.apply``
  transformation; TF 2.21 has only ``batch(..., drop_remainder=True)``.
* ``tf.contrib.layers.l2_regularizer``: ``scale * tf.nn.l2_loss(w)``, half of
  what ``tf.keras.regularizers.l2(scale)`` gives.
* ``tf.contrib.cloud.configure_gcs``: sent GCS credentials to a remote TPU
  worker; the emulated TPU's workers are this host, which reads GCS with its
  own credentials, so there is nothing to send.
"""

import json
import numbers

import tensorflow as tf

from tpu_compat import deprecation

__all__ = ["BlockCacheParams", "batch_and_drop_remainder", "configure_gcs", "l2_regularizer"]


def batch_and_drop_remainder(batch_size):
    """The ``Dataset.apply`` form of ``batch(batch_size, drop_remainder=True)``.

    TF 1.15: tensorflow/tensorflow r1.15, tensorflow/contrib/data/python/ops/
    batching.py (``batch_and_drop_remainder`` returns a function of the
    dataset that batches it dropping the last partial batch, so the batch
    dimension is static: what TPU input pipelines needed).
    """
    def _apply(dataset):
        return dataset.batch(batch_size, drop_remainder=True)
    return _apply


def l2_regularizer(scale, scope=None):
    """TF 1.x contrib's L2 regularizer: ``scale * sum(w ** 2) / 2``.

    TF 1.15: tensorflow/tensorflow r1.15, tensorflow/contrib/layers/python/
    layers/regularizers.py: an integer scale is refused, a negative one too,
    a scale of 0 gives a regularizer returning None, and the penalty is
    ``multiply(scale, nn.l2_loss(weights))`` in the name scope
    ``scope or "l2_regularizer"``, the scale converted to the weights' dtype.
    """
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"l2_regularizer: scale cannot be an integer: {scale!r} "
                         f"(pass a float, e.g. {float(scale)!r})")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"l2_regularizer: scale must be >= 0, got {scale!r}")
        if scale == 0.0:
            return lambda _: None

    def l2(weights):
        with tf.name_scope(scope or "l2_regularizer") as name:
            my_scale = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype,
                                            name="scale")
            return tf.multiply(my_scale, tf.nn.l2_loss(weights), name=name)
    return l2


class BlockCacheParams:
    """``tf.contrib.cloud.BlockCacheParams``: the GCS block cache sizes.

    TF 1.15: tensorflow/tensorflow r1.15, tensorflow/contrib/cloud/python/ops/
    gcs_config_ops.py (max_bytes, block_size, max_staleness; all optional).
    """

    def __init__(self, block_size=None, max_bytes=None, max_staleness=None):
        self.block_size = block_size or 0
        self.max_bytes = max_bytes or 0
        self.max_staleness = max_staleness or 0


def configure_gcs(session, credentials=None, block_cache=None, device=None):
    """``tf.contrib.cloud.configure_gcs`` on the emulated TPU: checks, warns, sends nothing.

    TF 1.15 (tensorflow/tensorflow r1.15, tensorflow/contrib/cloud/python/ops/
    gcs_config_ops.py) ran two ops in ``session`` on ``device``: one handing
    the credentials (a JSON string, or a dict it serialized) to the GCS file
    system of the TPU worker, one setting its block cache. Colab notebooks
    called it so that the remote TPU host could read the user's bucket. The
    emulated TPU's devices are this process's: TensorFlow's GCS file system
    here uses the host's own credentials (GOOGLE_APPLICATION_CREDENTIALS or
    gcloud's), so there is no worker to configure. The arguments are checked
    as TF 1.15 checked them; nothing else happens, and a warning says so.
    On a real TPU the ops are gone from TensorFlow 2.21 as well: the TPU VM
    reads GCS with its service account.
    """
    del session, device
    if credentials is not None and not isinstance(credentials, (str, bytes, dict)):
        raise ValueError(f"configure_gcs: credentials must be a JSON string or a dict, "
                         f"got {type(credentials).__name__}")
    if isinstance(credentials, dict):
        json.dumps(credentials)  # TF 1.15 serialized it: unserializable fails here too
    if block_cache is not None and not isinstance(block_cache, BlockCacheParams):
        raise ValueError("configure_gcs: block_cache must be an instance of "
                         "tf.contrib.cloud.BlockCacheParams or None")
    if credentials or block_cache:
        deprecation.warn_user(UserWarning(
            "tf.contrib.cloud.configure_gcs: nothing is sent. The emulated TPU runs in "
            "this process, whose GCS file system uses this host's credentials "
            "(GOOGLE_APPLICATION_CREDENTIALS or gcloud auth application-default login)."))
