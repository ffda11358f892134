"""The era's input rules of the Keras TPU model: global batches split across the cores.

keras_support.py (tensorflow/tensorflow r1.12/r1.13, tensorflow/contrib/tpu/python/
tpu/keras_support.py): ``fit(x, y, batch_size=G)`` took ``G`` as the GLOBAL batch
(``TPUNumpyInfeedManager``), ``fit(input_fn, ...)`` pulled one batch per core per
step (``TPUDatasetInfeedManager``), and both refused what they could not split,
with the messages kept here. :mod:`tpu_compat.keras.tpu_model` applies them.
"""

import tensorflow as tf

__all__ = ["KERAS_FIT_BATCH_SIZE", "check_divides", "check_numpy_batches",
           "even_per_core_batch", "first_array",
           "global_batches", "per_core_batch", "validate_shapes"]

# keras_support.py's _pipeline_fit: `if batch_size is None and steps_per_epoch is None:
# batch_size = 32`.
KERAS_FIT_BATCH_SIZE = 32


def validate_shapes(model):
    """keras_support.py's validate_shapes: no unknown non-batch dimension."""
    for layer in model.layers:
        for attribute in ("input_shape", "output_shape"):
            try:
                shapes = getattr(layer, attribute)
            except (AttributeError, RuntimeError):
                continue
            shapes = [shapes] if isinstance(shapes, tuple) else list(shapes)
            for shape in shapes:
                if any(dim is None for dim in tuple(shape)[1:]):
                    raise ValueError(
                        f"keras_to_tpu_model: layer {layer.name} has a variable shape in "
                        f"a non-batch dimension (input shape {layer.input_shape}, output "
                        f"shape {layer.output_shape}); TPU models must have constant "
                        f"shapes for all operations (specify input_length for "
                        f"RNN/TimeDistributed layers)")


def check_divides(batch, cores, argument):
    if cores > 1 and batch % cores:
        raise ValueError(
            f"{argument} must be divisible by the number of TPU cores in use "
            f"({batch} vs {cores}): the Keras TPU model splits each global batch "
            f"evenly across the cores; use a multiple of {cores}")


def check_numpy_batches(count, batch_size, cores, argument="batch_size"):
    """Every batch of ``count`` samples in batches of ``batch_size`` splits evenly.

    keras_support.py's TPUNumpyInfeedManager asserted it per batch, so a partial
    last batch that does not divide failed there too.
    """
    check_divides(batch_size, cores, argument)
    remainder = count % batch_size
    if remainder and cores > 1 and remainder % cores:
        raise ValueError(
            f"{argument}: the last batch has {remainder} samples ({count} samples in "
            f"batches of {batch_size}), which is not divisible by the number of TPU "
            f"cores in use ({cores}); use a sample count whose remainder is a "
            f"multiple of {cores}")


def first_array(x):
    return tf.nest.flatten(x)[0]


def global_batches(input_fn, cores, argument):
    """The dataset ``input_fn()`` returns, each ``cores`` consecutive batches as one.

    keras_support.py's TPUDatasetInfeedManager: core ``i`` of a step gets the step's
    ``i``-th ``get_next()``; tf_keras splits a global batch into contiguous per-replica
    slices, so concatenating ``cores`` batches in order gives core ``i`` the same
    batch. The era's shape checks (``_verify_dataset_shape``) come first.
    """
    dataset = input_fn()
    if not isinstance(dataset, tf.data.Dataset):
        raise ValueError(f"The function passed as the `{argument}` parameter did not "
                         f"return a `tf.data.Dataset` (got {type(dataset).__name__}).")
    spec = dataset.element_spec
    if not isinstance(spec, tuple):
        raise ValueError(f"The dataset must return a tuple of tf.Tensors, instead it "
                         f"returns: {spec}")
    if len(spec) != 2:
        raise ValueError(f"The dataset must return a 2-element tuple, got {len(spec)} "
                         f"elements instead ({spec}).")
    for index, item in enumerate(spec):
        if not isinstance(item, tf.TensorSpec):
            raise ValueError(f"The dataset returned a non-Tensor type ({item}) at "
                             f"index {index}.")
        if item.shape.rank == 0:
            raise ValueError(f"The dataset returns a scalar tensor in tuple index "
                             f"{index}. Did you forget to batch? (Output shapes: {spec}).")
        for dim_index, dim in enumerate(item.shape.as_list()):
            if dim is None:
                hint = (" Hint: did you use `ds.batch(BATCH_SIZE, drop_remainder=True)`?"
                        if dim_index == 0 else "")
                raise ValueError(
                    f"The Keras-TPU integration for `tf.data` currently requires static "
                    f"shapes. The provided dataset only has a partially defined shape. "
                    f"(Dimension {dim_index} of output tensor {index} is not statically "
                    f"known for output shapes: {spec}.){hint}")
    if cores == 1:
        return dataset

    def merge(x, y):
        return tuple(tf.reshape(t, [-1] + t.shape.as_list()[2:]) for t in (x, y))
    return dataset.batch(cores, drop_remainder=True).map(merge)


def per_core_batch(dataset, cores):
    """The batch each core gets of ``dataset`` (of :func:`global_batches`), or None."""
    # as_list: under TF 1.x behaviour a shape's items are Dimensions.
    batch = tf.nest.flatten(dataset.element_spec)[0].shape.as_list()[0]
    return None if batch is None else batch // cores


def even_per_core_batch(count, batch_size, cores):
    """Each core's batch when ``count`` samples split into whole global batches of
    ``batch_size``; None when a last, smaller batch makes a second shape."""
    return batch_size // cores if count % batch_size == 0 else None
