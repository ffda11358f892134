"""TF-Slim's variables and initializers and the helpers its layers share (see _slim.py).

TF 1.15: tensorflow/contrib/framework/python/ops/variables.py and
tensorflow/contrib/layers/python/layers/initializers.py.
"""

import contextlib
import functools
import math

import tensorflow as tf

from tpu_compat.contrib._arg_scope import add_arg_scope

_v1 = tf.compat.v1
_DATA_FORMATS_2D = ("NHWC", "NCHW")


def _legacy_layers():
    """tf.compat.v1.layers under tf_keras (whatever TF_USE_LEGACY_KERAS says)."""
    # pylint: disable=import-outside-toplevel
    from tf_keras.src.legacy_tf_layers import (convolutional, core, normalization,
                                               pooling)
    return convolutional, core, normalization, pooling


# -- variables (TF 1.15: contrib/framework/python/ops/variables.py) ---------------------

@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
             trainable=True, collections=None, caching_device=None, device=None,
             partitioner=None, custom_getter=None, use_resource=None,
             synchronization=tf.VariableSynchronization.AUTO,
             aggregation=tf.VariableAggregation.NONE):
    """``tf.compat.v1.get_variable`` with ``collections`` defaulting to GLOBAL_VARIABLES
    (deduplicated) and an optional ``device``."""
    collections = list(set(collections if collections is not None
                           else [_v1.GraphKeys.GLOBAL_VARIABLES]))
    getter = _v1.get_variable
    if custom_getter is not None:
        getter = functools.partial(custom_getter, reuse=_v1.get_variable_scope().reuse)
    with tf.device(device) if device is not None else contextlib.nullcontext():
        return getter(name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, trainable=trainable, collections=collections,
                      caching_device=caching_device, partitioner=partitioner,
                      use_resource=use_resource, synchronization=synchronization,
                      aggregation=aggregation)


@add_arg_scope
def model_variable(name, shape=None, dtype=tf.float32, initializer=None, regularizer=None,
                   trainable=True, collections=None, caching_device=None, device=None,
                   partitioner=None, custom_getter=None, use_resource=None,
                   synchronization=tf.VariableSynchronization.AUTO,
                   aggregation=tf.VariableAggregation.NONE):
    """:func:`variable`, also in GLOBAL_VARIABLES and MODEL_VARIABLES."""
    collections = list(collections or []) + [_v1.GraphKeys.GLOBAL_VARIABLES,
                                             _v1.GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable, collections=collections,
                    caching_device=caching_device, device=device, partitioner=partitioner,
                    custom_getter=custom_getter, use_resource=use_resource,
                    synchronization=synchronization, aggregation=aggregation)


def _variable_getter(rename=None):
    """The era's ``_build_variable_getter``: a custom getter for the layers' variable
    scope that renames (``kernel`` -> ``weights``) and makes each a model variable."""
    def custom_getter(getter, name, **kwargs):  # get_variable passes them by keyword
        parts = name.split("/")
        if rename and parts[-1] in rename:
            parts[-1] = rename[parts[-1]]
        kwargs.pop("reuse", None)
        collections = list(kwargs.pop("collections", None) or [])
        return model_variable("/".join(parts), collections=collections,
                              custom_getter=getter,
                              **{key: kwargs[key] for key in (
                                  "shape", "dtype", "initializer", "regularizer", "trainable",
                                  "caching_device", "partitioner", "use_resource",
                                  "synchronization", "aggregation") if key in kwargs})
    return custom_getter


def _variable_collections(variables_collections, name):
    """The era's ``utils.get_variable_collections``: a list, or a dict by variable name."""
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


def _add_to_collections(var, variables_collections, name):
    for collection in _variable_collections(variables_collections, name) or ():
        if var not in _v1.get_collection(collection):
            _v1.add_to_collection(collection, var)


def _collect_outputs(outputs_collections, alias, outputs):
    """The era's ``utils.collect_named_outputs``: the alias is what
    ``slim.utils.convert_collection_to_dict`` keys end points by."""
    if outputs_collections:
        aliases = getattr(outputs, "aliases", None)
        if aliases is None:
            aliases = []
            outputs.aliases = aliases
        aliases.append(alias.rstrip("/"))
        _v1.add_to_collections(outputs_collections, outputs)
    return outputs


def _channels_format(data_format):
    return "channels_first" if data_format and data_format.startswith("NC") else "channels_last"


def _check_2d_format(data_format):
    if data_format not in _DATA_FORMATS_2D:
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}")


def _pair(value, argument):
    """The era's ``utils.two_element_tuple``."""
    if isinstance(value, int):
        return value, value
    values = tuple(value)
    if len(values) != 2 or not all(isinstance(v, int) for v in values):
        raise ValueError(f"{argument} must be an int or a list of 2 ints, got {value!r}")
    return values


# -- initializers (TF 1.15: contrib/layers/python/layers/initializers.py) ---------------

def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=tf.float32):
    """contrib's variance scaling: truncated normal with stddev ``sqrt(1.3 * factor / n)``,
    or uniform in ``+-sqrt(3 * factor / n)``, ``n`` the fan in, out or their mean.

    Not ``tf.compat.v1.variance_scaling_initializer``: that one's truncated normal
    is scaled by 1/0.8796^2, not 1.3, and its fans count differently for 1-D shapes.
    """
    dtype = tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"variance_scaling_initializer: dtype must be floating, got {dtype.name}")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"variance_scaling_initializer: mode must be one of FAN_IN, FAN_OUT, "
                        f"FAN_AVG; got {mode!r}")
    default_dtype = dtype

    def _initializer(shape, dtype=default_dtype, partition_info=None):
        del partition_info
        dtype = tf.as_dtype(dtype or default_dtype)
        if not dtype.is_floating:
            raise TypeError(f"variance_scaling_initializer: dtype must be floating, got "
                            f"{dtype.name}")
        shape = [int(d) for d in shape]
        if shape:
            fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
            fan_out = float(shape[-1])
        else:
            fan_in = fan_out = 1.0
        for dim in shape[:-2]:
            fan_in *= dim
            fan_out *= dim
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return tf.random.uniform(shape, -limit, limit, dtype, seed=seed)
        return tf.random.truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype,
                                          seed=seed)
    return _initializer


# -- layers (TF 1.15: contrib/layers/python/layers/layers.py) ----------------------------
