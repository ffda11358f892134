"""The Keras TPU model specialized for one per-core batch size: static shapes, as XLA needs.

TF 1.13's keras_support.py (tensorflow/tensorflow r1.13,
tensorflow/contrib/tpu/python/tpu/keras_support.py, ``TPUFunction.
_specialize_model`` and ``_tpu_model_ops_for_input_specs``: "XLA requires
every operation in the graph has a fixed shape. To handle varying batch
sizes we recompile a new sub-graph for each unique input shape") cloned the
model on each core over the infeed's static per-core tensors. The TPU copy
here is a tf_keras model whose replicas tf_keras clones on placeholders of the
model's own input shape, ``(None, ...)``: inside an RNN's while loop TF 2.21
then differentiates on dynamic shapes (Shape values pushed on stacks and
popped in the backward loop), which a TPU could not compile and
``--fidelity tpu`` rightly refuses. The era never built that graph, so the
TPU copy is called here on static-batch Input layers (the same layers, so the
same variables and optimizer slots) for each per-core batch size, one model
per size, cached as the era cached its compilations.
"""

import tensorflow as tf

from tpu_compat.keras.tpu_clone import clone_metrics, compile_arguments, program_keras

__all__ = ["SpecializedModels"]


class SpecializedModels:
    """The TPU copy's specializations, one per per-core batch size.

    ``base`` is the compiled TPU copy (dynamic batch); ``scope`` opens the
    strategy's scope the copies are built in.
    """

    def __init__(self, scope):
        self._scope = scope
        self._models = {}

    def clear(self):
        """After ``compile``: later specializations take the new loss and optimizer."""
        self._models.clear()

    def for_batch(self, base, per_core_batch):
        """``base`` on static ``(per_core_batch, ...)`` inputs, sharing its layers;
        ``base`` itself when the batch is unknown, ``base`` is not compiled or
        already has a static batch (a stateful RNN's ``batch_input_shape``)."""
        if (per_core_batch is None or getattr(base, "optimizer", None) is None
                or not base.inputs
                or all(t.shape.as_list()[0] is not None for t in base.inputs)):
            return base
        model = self._models.get(per_core_batch)
        if model is None:
            model = self._models[per_core_batch] = self._build(base, per_core_batch)
        return model

    def _build(self, base, per_core_batch):
        keras = program_keras()
        # Compiling under a strategy in graph mode opens a new Keras session,
        # where base's variables and optimizer slots would start over: the
        # session they hold their values in is kept (Keras initializes the
        # new model's metric variables in it).
        graph_mode = not tf.compat.v1.executing_eagerly_outside_functions()
        session = tf.compat.v1.keras.backend.get_session() if graph_mode else None
        with self._scope():
            inputs = [keras.Input(batch_shape=(per_core_batch,) + tuple(t.shape[1:]),
                                  dtype=t.dtype, name=layer.name)
                      for t, layer in zip(base.inputs, base._input_layers)]  # pylint: disable=protected-access
            # clone_function returning the layer itself: the layers (and their
            # variables) are base's, called again on the static inputs.
            model = keras.models.clone_model(base, input_tensors=inputs,
                                             clone_function=lambda layer: layer)
            arguments = compile_arguments(base)
            # The same optimizer object: its slots and step count are base's.
            model.compile(base.optimizer, arguments["loss"],
                          metrics=clone_metrics(arguments["metrics"]),
                          loss_weights=arguments["loss_weights"])
        if session is not None:
            tf.compat.v1.keras.backend.set_session(session)
        return model
