"""TF 2.14-2.20's text GraphDef writes work with protobuf 7 (runtime/protobuf_text.py).

TF 2.21 no longer passes ``float_format``, so its own write_graph cannot show
the failure; these tests make TF 2.20's call (graph_io.py at r2.20:
``text_format.MessageToString(graph_def, float_format='')``) through the
module reference graph_io holds, as write_graph does. The version matrix's
TF 2.20 cells run the TPUEstimator example, which writes graph.pbtxt.
"""

import pytest
from google.protobuf import text_format

from tpu_compat._tf_internals import graph_io
from tpu_compat.patching.changes import Changes
from tpu_compat.runtime import protobuf_text

pytestmark = pytest.mark.requires_tf


def _graph_def():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    graph = tf.Graph()
    with graph.as_default():
        tf.constant([0.1, 1e-30, 3.4e38, -2.5], name="floats") * 3.0
    return graph.as_graph_def()


def _tf_2_20_text(graph_def):
    """What write_graph(as_text=True) of TF 2.14-2.20 asks protobuf for."""
    return graph_io.text_format.MessageToString(graph_def, float_format="")


@pytest.mark.skipif(not protobuf_text.float_format_removed(),
                    reason="this protobuf still has float_format: nothing to patch")
def test_tf_2_20_text_writes_work_with_protobuf_7_and_read_back_the_same_graph(tpu8):
    del tpu8
    graph_def = _graph_def()
    with pytest.raises(TypeError, match="float_format"):
        _tf_2_20_text(graph_def)
    changes = Changes()
    protobuf_text.write_graph_without_float_format(changes)
    try:
        text = _tf_2_20_text(graph_def)
        assert text == text_format.MessageToString(graph_def)
        assert text_format.Parse(text, type(graph_def)()) == graph_def
        # Only graph_io's reference changed.
        assert graph_io.text_format is not text_format
        assert text_format.MessageToString.__name__ == "MessageToString"
    finally:
        changes.undo()
    assert graph_io.text_format is text_format


def test_nothing_is_patched_where_protobuf_keeps_float_format(monkeypatch):
    def message_to_string(message, as_utf8=False, float_format=None):  # protobuf 3-6
        del message, as_utf8, float_format
        return ""
    older = type(text_format)("older_text_format")
    older.MessageToString = message_to_string
    monkeypatch.setattr(graph_io, "text_format", older)
    changes = Changes()
    protobuf_text.write_graph_without_float_format(changes)
    assert graph_io.text_format is older
    changes.undo()


def test_the_change_is_a_row_of_install_s_registry():
    from tpu_compat.patching import registry  # pylint: disable=import-outside-toplevel
    assert "protobuf text" in [patch.name for patch in registry.PATCHES]
