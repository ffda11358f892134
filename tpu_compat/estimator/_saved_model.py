"""Writing an Estimator's SavedModel, laid out as TF 1.15's ``export_saved_model`` did.

A timestamped directory under ``export_dir_base`` (written in a temporary
directory, then renamed), one meta graph tagged ``serve`` whose signatures map
the serving receiver's tensors to the ``model_fn``'s predictions or
``export_outputs``, the checkpoint's variables, and ``assets.extra``. Apart
from ``estimator.py``: the Estimator decides what the serving graph is; this
module only writes it. Era source: tensorflow/estimator r1.15,
tensorflow_estimator/python/estimator/estimator.py (``_export_all_saved_models``).
"""

import os

import tensorflow as tf

from tpu_compat._tf_internals import export_utils

from tpu_compat.estimator._spec import ModeKeys
from tpu_compat.estimator.graphs import estimator_graph

__all__ = ["write"]


def write(export_dir_base, build_serving_model, checkpoint_path, session_config,
          as_text=False, assets_extra=None):
    """Writes the SavedModel; returns its directory as bytes (as TF 1.15 did).

    ``build_serving_model(graph)`` builds the serving graph in ``graph`` (an
    :func:`estimator_graph`) and returns ``(receiver, spec)``: the serving
    input receiver and the ``model_fn``'s PREDICT spec.
    """
    export_dir = export_utils.get_timestamped_export_dir(os.fsdecode(export_dir_base))
    temp_dir = export_utils.get_temp_export_dir(export_dir)
    builder = tf.compat.v1.saved_model.Builder(temp_dir)
    with estimator_graph() as graph:
        receiver, spec = build_serving_model(graph)
        outputs = export_utils.export_outputs_for_mode(
            mode=ModeKeys.PREDICT, serving_export_outputs=spec.export_outputs,
            predictions=spec.predictions)
        signatures = export_utils.build_all_signature_defs(
            receiver.receiver_tensors, outputs,
            getattr(receiver, "receiver_tensors_alternatives", None),
            serving_only=True)
        with tf.compat.v1.Session(config=session_config) as session:
            saver = spec.scaffold.saver or tf.compat.v1.train.Saver(sharded=True)
            saver.restore(session, checkpoint_path)
            local_init = (spec.scaffold.local_init_op
                          or tf.compat.v1.train.Scaffold.default_local_init_op())
            builder.add_meta_graph_and_variables(
                session, [tf.saved_model.SERVING], signature_def_map=signatures,
                assets_collection=tf.compat.v1.get_collection(
                    tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
                main_op=local_init, saver=saver, strip_default_attrs=True)
    builder.save(as_text)
    if assets_extra:
        extra_dir = os.path.join(temp_dir, "assets.extra")
        for destination, source in assets_extra.items():
            target = os.path.join(extra_dir, destination)
            tf.io.gfile.makedirs(os.path.dirname(target))
            tf.io.gfile.copy(source, target, overwrite=True)
    tf.io.gfile.rename(temp_dir, export_dir)
    return os.fsencode(export_dir)
