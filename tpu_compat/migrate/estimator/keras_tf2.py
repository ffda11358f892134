"""Keras layers in a TPUEstimator ``model_fn``, for the TF 2 driver (``--estimator-to-tf2``).

TPUEstimator programs of TF 1.13-1.15 built their model from Keras layers inside
``model_fn`` (tensorflow/tpu's cifar_keras.py: ``layers = tf.contrib.keras.layers``,
``v = layers.Input(tensor=features)``, then Conv2D/Dense calls). The driver runs
``model_fn`` under ``track_tf1_style_variables``, which keeps such layers' variables
by their TF 1 names (``conv2d/kernel``), so the layer calls need no change. Two
spellings do:

* ``from tensorflow.contrib import keras as k``: contrib.keras was TF 1.x's alias of
  ``tf.keras``, i.e. ``tf.compat.v1.keras`` (Keras 2: tf_keras, with
  ``TF_USE_LEGACY_KERAS=1``, as ``tpu-compat run`` sets it).
* ``Input(tensor=t)``: in a TF 1 graph it returned ``t`` itself, marked as the
  functional model's input (keras/engine/input_layer.py, TF 1.15: InputLayer keeps
  ``input_tensor`` as its node's output and ``Input`` returns that output). Inside
  the driver's ``tf.function`` Keras 2 returns a symbolic KerasTensor instead, which
  the program's plain TF ops on it (the loss) refuse; ``t`` is what TF 1 gave.
"""

from typing import List, Tuple

import libcst as cst
from libcst import metadata

from tpu_compat.migrate.analysis import dotted as _dotted, qualified_names

__all__ = ["KerasForTF2"]

_KERAS = ("tensorflow.keras", "tensorflow.compat.v1.keras", "tensorflow.contrib.keras",
          "tf_keras")
_LAYERS = {f"{keras}.layers" for keras in _KERAS}
_INPUTS = {f"{module}.Input" for module in _KERAS + tuple(_LAYERS)}
# Input's arguments that change nothing when `tensor` is given (the layer's name).
_INPUT_KEEPS_TENSOR = {"tensor", "name"}

_CONTRIB_KERAS_IMPORT = "--estimator-to-tf2: tensorflow.contrib.keras is tf.compat.v1.keras"
_INPUT_IS_TENSOR = ("--estimator-to-tf2: keras Input(tensor=t) is t, as in a TF 1 graph "
                    "(in the driver's tf.function Keras would return a symbolic tensor)")


class KerasForTF2(cst.CSTTransformer):
    """The two rewrites; ``notes``: (line, column, rule, what) of each, in the input's
    positions (each rewrite stays on its line, so later passes keep the numbers)."""

    METADATA_DEPENDENCIES = (metadata.QualifiedNameProvider, metadata.PositionProvider)

    def __init__(self):
        super().__init__()
        self.notes: List[Tuple[int, int, str, str]] = []
        self._layer_aliases = set()     # `layers = tf.contrib.keras.layers`

    def _note(self, node, rule, what):
        position = self.get_metadata(metadata.PositionProvider, node)
        self.notes.append((position.start.line, position.start.column + 1, rule, what))

    def leave_ImportFrom(self, original, updated):
        module = _dotted(original.module) if original.module is not None else None
        if module != "tensorflow.contrib" or not isinstance(original.names, (list, tuple)):
            return updated
        names = [alias for alias in original.names if isinstance(alias.name, cst.Name)]
        if len(names) != len(original.names) or any(a.name.value != "keras" for a in names):
            return updated      # contrib modules besides keras: the ordinary upgrade's
        self._note(original, "TPC104", _CONTRIB_KERAS_IMPORT)
        return updated.with_changes(module=cst.parse_expression("tensorflow.compat.v1"))

    def visit_Assign(self, node):
        if qualified_names(self, node.value) & _LAYERS:
            self._layer_aliases.update(target.target.value for target in node.targets
                                       if isinstance(target.target, cst.Name))

    def _is_input(self, func):
        if qualified_names(self, func) & _INPUTS:
            return True
        return (isinstance(func, cst.Attribute) and func.attr.value == "Input"
                and isinstance(func.value, cst.Name) and func.value.value in self._layer_aliases)

    def leave_Call(self, original, updated):
        keywords = {a.keyword.value: a for a in original.args if a.keyword is not None}
        if ("tensor" not in keywords or len(keywords) != len(original.args)
                or not set(keywords) <= _INPUT_KEEPS_TENSOR or not self._is_input(original.func)):
            return updated
        self._note(original, "TPC070", _INPUT_IS_TENSOR)
        tensor = next(a for a in updated.args if a.keyword and a.keyword.value == "tensor")
        return tensor.value
