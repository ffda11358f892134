"""GraphDefs written as text under TensorFlow 2.14-2.20 with protobuf 7.

``graph_io.write_graph`` (tensorflow/python/framework/graph_io.py, r2.14 to
r2.20) writes a text GraphDef with ``text_format.MessageToString(graph_def,
float_format='')``. protobuf 7 removed ``float_format`` from
``MessageToString``, so with it every text write raises ``TypeError``:
``tf.io.write_graph`` / ``tf.compat.v1.train.write_graph``, and the
graph.pbtxt that a ``MonitoredTrainingSession``'s ``CheckpointSaverHook``
writes when its session is created, which stops every TF 1.x Estimator and
TPUEstimator ``train``. TF 2.21's write_graph passes no ``float_format``.

pip pairs them: TF 2.20 asks for ``protobuf>=5.28`` with no upper bound, and
the version matrix's Python 3.10 x TF 2.20 cell got protobuf 7.36 and failed
in the TPUEstimator example (docs/tf_versions.md).

``float_format=''`` formatted each float with ``format(value, '')``;
protobuf 7 writes the shortest text that reads back as the same value. The
text of a float may differ, the values read back do not. So where protobuf's
``MessageToString`` has no ``float_format``, graph_io's ``text_format`` is a
copy of the module whose ``MessageToString`` drops that argument; nothing
else changes, and with an older protobuf nothing is patched.
"""

import inspect
import types

from google.protobuf import text_format

from tpu_compat._tf_internals import graph_io

__all__ = ["float_format_removed", "write_graph_without_float_format"]


def float_format_removed(module=text_format):
    return "float_format" not in inspect.signature(module.MessageToString).parameters


def _without_float_format(message_to_string):
    def tolerant_message_to_string(message, *args, float_format=None, **kwargs):
        del float_format  # protobuf 7's default: the shortest text of the same value
        return message_to_string(message, *args, **kwargs)

    tolerant_message_to_string.__wrapped__ = message_to_string
    return tolerant_message_to_string


def write_graph_without_float_format(changes):
    """graph_io's text_format accepts (and drops) float_format where protobuf removed it."""
    if not float_format_removed(graph_io.text_format):
        return
    tolerant = types.ModuleType(text_format.__name__, text_format.__doc__)
    tolerant.__dict__.update(vars(graph_io.text_format))
    tolerant.MessageToString = _without_float_format(graph_io.text_format.MessageToString)
    changes.replace(graph_io, "text_format", tolerant)
