"""TF-Slim's layers, initializers and variables, as TF 1.15's contrib built them.

TF 1.15: tensorflow/tensorflow r1.15, tensorflow/contrib/layers/python/layers/
layers.py (the layers), .../layers/initializers.py
(``variance_scaling_initializer``) and tensorflow/contrib/framework/python/ops/
variables.py (``variable``, ``model_variable``); ``tf.contrib.slim`` re-exported
them. Served as ``tf.contrib.slim.*``, ``tf.contrib.layers.*`` and
``tf.contrib.framework.variable`` / ``model_variable``.

What is kept, so that the era's programs compute the same numbers and their
checkpoints restore:

* the defaults: ``conv2d``, ``separable_conv2d`` and ``fully_connected`` apply
  ``activation_fn=tf.nn.relu`` unless told otherwise; a ``normalizer_fn``
  replaces the biases and runs before the activation; weights default to
  Xavier (Glorot uniform), biases to zeros; ``batch_norm`` has ``decay=0.999``,
  ``epsilon=0.001``, ``center=True``, ``scale=False``; pools default to
  ``stride=2``, ``padding='VALID'``; ``dropout`` to ``keep_prob=0.5``;
* the variable names: ``<scope>/Conv/weights`` and ``biases``,
  ``fully_connected/weights``, ``SeparableConv2d/depthwise_weights`` and
  ``pointwise_weights``, ``BatchNorm/beta``, ``gamma``, ``moving_mean``,
  ``moving_variance``; every variable is also in ``MODEL_VARIABLES``;
* the layers are the era's: ``tf.compat.v1.layers`` classes (tf_keras's
  legacy_tf_layers, what ``tf.compat.v1.layers`` is under tf_keras) built in a
  ``variable_scope`` whose custom getter renames ``kernel``/``bias``;
  ``batch_norm`` takes the era's three paths (the layer, the fused op with the
  moving averages updated by hand, and the explicit moments);
* every layer is ``@add_arg_scope`` (:mod:`tpu_compat.contrib._arg_scope`).
"""

import contextlib
import functools
import math

import tensorflow as tf

from tpu_compat.contrib._arg_scope import add_arg_scope
from tpu_compat.contrib._layers import xavier_initializer

__all__ = ["avg_pool2d", "batch_norm", "conv2d", "convolution", "convolution2d", "dropout",
           "flatten", "fully_connected", "max_pool2d", "model_variable", "repeat",
           "separable_conv2d", "separable_convolution2d", "softmax", "stack", "variable",
           "variance_scaling_initializer"]

_v1 = tf.compat.v1
_UPDATE_OPS = _v1.GraphKeys.UPDATE_OPS
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

@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D average pooling (name scope ``AvgPool2D``)."""
    _check_2d_format(data_format)
    _, _, _, pooling = _legacy_layers()
    with tf.name_scope(scope or "AvgPool2D") as name:
        inputs = tf.convert_to_tensor(inputs)
        layer = pooling.AveragePooling2D(pool_size=kernel_size, strides=stride,
                                         padding=padding,
                                         data_format=_channels_format(data_format))
        return _collect_outputs(outputs_collections, name, layer.apply(inputs))


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D max pooling (name scope ``MaxPool2D``)."""
    _check_2d_format(data_format)
    _, _, _, pooling = _legacy_layers()
    with tf.name_scope(scope or "MaxPool2D") as name:
        inputs = tf.convert_to_tensor(inputs)
        layer = pooling.MaxPooling2D(pool_size=kernel_size, strides=stride, padding=padding,
                                     data_format=_channels_format(data_format))
        return _collect_outputs(outputs_collections, name, layer.apply(inputs))


def _normalize_and_activate(outputs, normalizer_fn, normalizer_params, activation_fn):
    # The era's order: the normalizer (in place of the biases), then the activation.
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return outputs


@add_arg_scope
def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                rate=1, activation_fn=tf.nn.relu, normalizer_fn=None, normalizer_params=None,
                weights_initializer=xavier_initializer(), weights_regularizer=None,
                biases_initializer=tf.zeros_initializer(), biases_regularizer=None,
                reuse=None, variables_collections=None, outputs_collections=None,
                trainable=True, scope=None, conv_dims=None):
    """An N-D convolution (variable scope ``Conv``: ``weights``, ``biases``)."""
    if data_format not in (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise ValueError(f"convolution: invalid data_format {data_format!r}")
    convolutional, _, _, _ = _legacy_layers()
    with _v1.variable_scope(scope, "Conv", [inputs], reuse=reuse,
                            custom_getter=_variable_getter(
                                {"bias": "biases", "kernel": "weights"})) as sc:
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.rank
        if conv_dims is not None and conv_dims + 2 != rank:
            raise ValueError(f"convolution: expects inputs of rank {conv_dims + 2}, "
                             f"got rank {rank} (shape {inputs.shape})")
        layer_class = {3: convolutional.Conv1D, 4: convolutional.Conv2D,
                       5: convolutional.Conv3D}.get(rank)
        if layer_class is None:
            raise ValueError(f"convolution: inputs must have rank 3, 4 or 5, got {inputs.shape}")
        layer = layer_class(
            filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
            data_format=_channels_format(data_format), dilation_rate=rate, activation=None,
            use_bias=bool(not normalizer_fn and biases_initializer),
            kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
            trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype,
            _scope=sc, _reuse=reuse)
        outputs = layer.apply(inputs)
        _add_to_collections(layer.kernel, variables_collections, "weights")
        if layer.use_bias:
            _add_to_collections(layer.bias, variables_collections, "biases")
        outputs = _normalize_and_activate(outputs, normalizer_fn, normalizer_params,
                                          activation_fn)
        return _collect_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def convolution2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                  data_format=None, rate=1, activation_fn=tf.nn.relu, normalizer_fn=None,
                  normalizer_params=None, weights_initializer=xavier_initializer(),
                  weights_regularizer=None, biases_initializer=tf.zeros_initializer(),
                  biases_regularizer=None, reuse=None, variables_collections=None,
                  outputs_collections=None, trainable=True, scope=None):
    """``slim.conv2d``: :func:`convolution` of a 4-D input (its own arg_scope key)."""
    return convolution(inputs, num_outputs, kernel_size, stride=stride, padding=padding,
                       data_format=data_format, rate=rate, activation_fn=activation_fn,
                       normalizer_fn=normalizer_fn, normalizer_params=normalizer_params,
                       weights_initializer=weights_initializer,
                       weights_regularizer=weights_regularizer,
                       biases_initializer=biases_initializer,
                       biases_regularizer=biases_regularizer, reuse=reuse,
                       variables_collections=variables_collections,
                       outputs_collections=outputs_collections, trainable=trainable,
                       scope=scope, conv_dims=2)


conv2d = convolution2d


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1,
                            padding="SAME", data_format="NHWC", rate=1,
                            activation_fn=tf.nn.relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=xavier_initializer(),
                            pointwise_initializer=None, weights_regularizer=None,
                            biases_initializer=tf.zeros_initializer(),
                            biases_regularizer=None, reuse=None,
                            variables_collections=None, outputs_collections=None,
                            trainable=True, scope=None):
    """A depthwise convolution, then (``num_outputs`` not None) a pointwise one
    (variable scope ``SeparableConv2d``: ``depthwise_weights``, ``pointwise_weights``,
    ``biases``)."""
    _check_2d_format(data_format)
    convolutional, _, _, _ = _legacy_layers()
    with _v1.variable_scope(scope, "SeparableConv2d", [inputs], reuse=reuse,
                            custom_getter=_variable_getter({
                                "bias": "biases", "depthwise_kernel": "depthwise_weights",
                                "pointwise_kernel": "pointwise_weights"})) as sc:
        inputs = tf.convert_to_tensor(inputs)
        if pointwise_initializer is None:
            pointwise_initializer = weights_initializer
        channels_format = _channels_format(data_format)
        if num_outputs is not None:
            layer = convolutional.SeparableConv2D(
                filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
                data_format=channels_format, dilation_rate=_pair(rate, "rate"),
                activation=None, depth_multiplier=depth_multiplier,
                use_bias=bool(not normalizer_fn and biases_initializer),
                depthwise_initializer=weights_initializer,
                pointwise_initializer=pointwise_initializer,
                bias_initializer=biases_initializer,
                depthwise_regularizer=weights_regularizer,
                pointwise_regularizer=weights_regularizer,
                bias_regularizer=biases_regularizer, trainable=trainable, name=sc.name,
                dtype=inputs.dtype.base_dtype, _scope=sc, _reuse=reuse)
            outputs = layer.apply(inputs)
            _add_to_collections(layer.depthwise_kernel, variables_collections, "weights")
            _add_to_collections(layer.pointwise_kernel, variables_collections, "weights")
            if layer.bias is not None:
                _add_to_collections(layer.bias, variables_collections, "biases")
            if normalizer_fn is not None:
                outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        else:
            # Depthwise only: the era made the variables itself (model_variable).
            dtype = inputs.dtype.base_dtype
            kernel_h, kernel_w = _pair(kernel_size, "kernel_size")
            stride_h, stride_w = _pair(stride, "stride")
            channel_axis = 1 if channels_format == "channels_first" else -1
            if inputs.shape.rank is None or inputs.shape.rank < 4:
                raise ValueError(f"separable_conv2d: inputs must have rank 4, got {inputs.shape}")
            num_filters_in = inputs.shape[channel_axis]
            if num_filters_in is None:
                raise ValueError(f"separable_conv2d: the channel dimension of inputs must be "
                                 f"known, got {inputs.shape}")
            depthwise_weights = model_variable(
                "depthwise_weights",
                shape=[kernel_h, kernel_w, num_filters_in, depth_multiplier], dtype=dtype,
                initializer=weights_initializer, regularizer=weights_regularizer,
                trainable=trainable,
                collections=_variable_collections(variables_collections, "weights"))
            strides = ([1, 1, stride_h, stride_w] if channels_format == "channels_first"
                       else [1, stride_h, stride_w, 1])
            outputs = tf.compat.v1.nn.depthwise_conv2d(
                inputs, depthwise_weights, strides, padding, rate=_pair(rate, "rate"),
                data_format=data_format)
            num_outputs = depth_multiplier * num_filters_in
            if normalizer_fn is not None:
                outputs = normalizer_fn(outputs, **(normalizer_params or {}))
            elif biases_initializer is not None:
                biases = model_variable(
                    "biases", shape=[num_outputs], dtype=dtype,
                    initializer=biases_initializer, regularizer=biases_regularizer,
                    trainable=trainable,
                    collections=_variable_collections(variables_collections, "biases"))
                outputs = tf.nn.bias_add(outputs, biases, data_format=data_format)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_outputs(outputs_collections, sc.name, outputs)


separable_conv2d = separable_convolution2d


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=tf.nn.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=xavier_initializer(),
                    weights_regularizer=None, biases_initializer=tf.zeros_initializer(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """A dense layer (variable scope ``fully_connected``: ``weights``, ``biases``)."""
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
        raise ValueError(f"fully_connected: num_outputs must be an int, got "
                         f"{type(num_outputs).__name__} {num_outputs!r}")
    _, core, _, _ = _legacy_layers()
    with _v1.variable_scope(scope, "fully_connected", [inputs], reuse=reuse,
                            custom_getter=_variable_getter(
                                {"bias": "biases", "kernel": "weights"})) as sc:
        inputs = tf.convert_to_tensor(inputs)
        layer = core.Dense(
            units=num_outputs, activation=None,
            use_bias=bool(not normalizer_fn and biases_initializer),
            kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
            trainable=trainable, name=sc.name, dtype=inputs.dtype.base_dtype,
            _scope=sc, _reuse=reuse)
        outputs = layer.apply(inputs)
        _add_to_collections(layer.kernel, variables_collections, "weights")
        if layer.bias is not None:
            _add_to_collections(layer.bias, variables_collections, "biases")
        outputs = _normalize_and_activate(outputs, normalizer_fn, normalizer_params,
                                          activation_fn)
        return _collect_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """Dropout keeping ``keep_prob`` of the units while ``is_training``."""
    _, core, _, _ = _legacy_layers()
    with _v1.variable_scope(scope, "Dropout", [inputs],
                            custom_getter=_variable_getter()) as sc:
        inputs = tf.convert_to_tensor(inputs)
        layer = core.Dropout(rate=1 - keep_prob, noise_shape=noise_shape, seed=seed,
                             name=sc.name, _scope=sc)
        outputs = layer.apply(inputs, training=is_training)
        return _collect_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """``[batch, ...]`` to ``[batch, k]`` (name scope ``Flatten``)."""
    _, core, _, _ = _legacy_layers()
    with tf.name_scope(scope or "Flatten") as name:
        inputs = tf.convert_to_tensor(inputs)
        if inputs.shape.rank is None or inputs.shape.rank < 2:
            raise ValueError(f"flatten: inputs must have rank >= 2, got {inputs.shape}")
        # The layer, not tf.layers.flatten (the same op; the function warns it is deprecated).
        return _collect_outputs(outputs_collections, name, core.Flatten().apply(inputs))


@add_arg_scope
def softmax(logits, scope=None):
    """Softmax over the last dimension of an N-D ``logits`` (N > 1)."""
    with _v1.variable_scope(scope, "softmax", [logits]):
        logits = tf.convert_to_tensor(logits)
        if logits.shape.rank is None or logits.shape.rank < 2 or logits.shape[-1] is None:
            raise ValueError(f"softmax: logits must have rank >= 2 and a known last "
                             f"dimension, got {logits.shape}")
        num_logits = logits.shape[-1]
        predictions = tf.nn.softmax(tf.reshape(logits, [-1, num_logits]))
        predictions = tf.reshape(predictions, tf.shape(logits))
        if not tf.executing_eagerly():
            predictions.set_shape(logits.shape)
        return predictions


def _layer_scope_name(layer, default):
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):
        return layer.func.__name__
    return default


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """``layer`` applied ``repetitions`` times, scopes ``<scope>_1``, ``<scope>_2``, ..."""
    scope = kwargs.pop("scope", None)
    with _v1.variable_scope(scope, "Repeat", [inputs]):
        outputs = tf.convert_to_tensor(inputs)
        scope = scope or _layer_scope_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = f"{scope}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """``layer`` applied once per entry of ``stack_args`` (its positional arguments)."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError(f"stack: stack_args must be a list or tuple, got "
                         f"{type(stack_args).__name__}")
    with _v1.variable_scope(scope, "Stack", [inputs]):
        outputs = tf.convert_to_tensor(inputs)
        scope = scope or _layer_scope_name(layer, "stack")
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = f"{scope}_{i + 1}"
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


# -- batch_norm ---------------------------------------------------------------------------

@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=_UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False,
               renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalization (variable scope ``BatchNorm``), the era's three paths.

    With the moving averages going to ``UPDATE_OPS`` (the default) and no
    ``batch_weights``, the ``tf.compat.v1.layers.BatchNormalization`` layer (fused
    for 4-D inputs); with ``updates_collections=None`` (updates in place),
    ``zero_debias_moving_mean`` or a 2-D input, the fused op and the moving
    averages by hand; otherwise explicit moments.
    """
    _check_2d_format(data_format)
    if fused is None:
        fused = True
    inputs = tf.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    possible_to_fuse = (batch_weights is None and not renorm and rank in (2, 4)
                        and adjustment is None)
    default_updates = updates_collections == _UPDATE_OPS
    if fused and possible_to_fuse and (zero_debias_moving_mean or rank == 2
                                       or not default_updates):
        return _fused_batch_norm(
            inputs, decay=decay, center=center, scale=scale, epsilon=epsilon,
            activation_fn=activation_fn, param_initializers=param_initializers,
            param_regularizers=param_regularizers, updates_collections=updates_collections,
            is_training=is_training, reuse=reuse, variables_collections=variables_collections,
            outputs_collections=outputs_collections, trainable=trainable,
            data_format=data_format, zero_debias_moving_mean=zero_debias_moving_mean,
            scope=scope)
    with _v1.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse,
                            custom_getter=_variable_getter()) as sc:
        if batch_weights is None and default_updates and not zero_debias_moving_mean:
            return _batch_norm_layer(
                inputs, sc, decay, center, scale, epsilon, activation_fn,
                param_initializers or {}, param_regularizers or {}, is_training, reuse,
                variables_collections, outputs_collections, trainable, fused, data_format,
                renorm, renorm_clipping, renorm_decay, adjustment)
        if renorm:
            raise ValueError("batch_norm: renorm is not supported with batch_weights, "
                             "updates_collections other than UPDATE_OPS, or "
                             "zero_debias_moving_mean")
        return _batch_norm_moments(
            inputs, sc, decay, center, scale, epsilon, activation_fn, param_initializers or {},
            updates_collections, is_training, variables_collections, outputs_collections,
            trainable, batch_weights, data_format, zero_debias_moving_mean)


def _batch_norm_layer(inputs, sc, decay, center, scale, epsilon, activation_fn,
                      param_initializers, param_regularizers, is_training, reuse,
                      variables_collections, outputs_collections, trainable, fused,
                      data_format, renorm, renorm_clipping, renorm_decay, adjustment):
    _, _, normalization, _ = _legacy_layers()
    layer = normalization.BatchNormalization(
        axis=1 if data_format == "NCHW" else -1, momentum=decay, epsilon=epsilon,
        center=center, scale=scale,
        beta_initializer=param_initializers.get("beta", tf.zeros_initializer()),
        gamma_initializer=param_initializers.get("gamma", tf.ones_initializer()),
        moving_mean_initializer=param_initializers.get("moving_mean", tf.zeros_initializer()),
        moving_variance_initializer=param_initializers.get("moving_variance",
                                                           tf.ones_initializer()),
        beta_regularizer=param_regularizers.get("beta"),
        gamma_regularizer=param_regularizers.get("gamma"),
        trainable=trainable, renorm=renorm, renorm_clipping=renorm_clipping,
        renorm_momentum=renorm_decay, adjustment=adjustment, name=sc.name, _scope=sc,
        _reuse=reuse, fused=fused)
    outputs = layer.apply(inputs, training=is_training)
    _add_to_collections(layer.moving_mean, variables_collections, "moving_mean")
    _add_to_collections(layer.moving_variance, variables_collections, "moving_variance")
    if layer.beta is not None:
        _add_to_collections(layer.beta, variables_collections, "beta")
    if layer.gamma is not None:
        _add_to_collections(layer.gamma, variables_collections, "gamma")
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect_outputs(outputs_collections, sc.name, outputs)


def _batch_norm_variables(params_shape, dtype, center, scale, param_initializers,
                          param_regularizers, variables_collections, trainable):
    """beta, gamma (None when off), moving_mean, moving_variance (model variables)."""
    beta = gamma = None
    if center:
        beta = model_variable(
            "beta", shape=params_shape, dtype=dtype,
            initializer=param_initializers.get("beta", tf.zeros_initializer()),
            regularizer=param_regularizers.get("beta"),
            collections=_variable_collections(variables_collections, "beta"),
            trainable=trainable)
    if scale:
        gamma = model_variable(
            "gamma", shape=params_shape, dtype=dtype,
            initializer=param_initializers.get("gamma", tf.ones_initializer()),
            regularizer=param_regularizers.get("gamma"),
            collections=_variable_collections(variables_collections, "gamma"),
            trainable=trainable)
    # The era made the moving statistics without the scope's partitioner.
    with _v1.variable_scope(_v1.get_variable_scope()) as local_scope:
        local_scope.set_partitioner(None)
        moving_mean = model_variable(
            "moving_mean", shape=params_shape, dtype=dtype,
            initializer=param_initializers.get("moving_mean", tf.zeros_initializer()),
            trainable=False,
            collections=_variable_collections(variables_collections, "moving_mean"))
        moving_variance = model_variable(
            "moving_variance", shape=params_shape, dtype=dtype,
            initializer=param_initializers.get("moving_variance", tf.ones_initializer()),
            trainable=False,
            collections=_variable_collections(variables_collections, "moving_variance"))
    return beta, gamma, moving_mean, moving_variance


def _params_shape(inputs, data_format):
    params_shape = inputs.shape[1:2] if data_format == "NCHW" else inputs.shape[-1:]
    if not params_shape.is_fully_defined():
        raise ValueError(f"batch_norm: the channel dimension of inputs must be known, got "
                         f"{inputs.shape}")
    return params_shape


def _moving_average_updates(moving_mean, moving_variance, mean, variance, decay,
                            zero_debias_moving_mean):
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.training import moving_averages
    return (moving_averages.assign_moving_average(moving_mean, mean, decay,
                                                  zero_debias=zero_debias_moving_mean),
            moving_averages.assign_moving_average(moving_variance, variance, decay,
                                                  zero_debias=False))


@add_arg_scope
def _fused_batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
                      activation_fn=None, param_initializers=None, param_regularizers=None,
                      updates_collections=_UPDATE_OPS, is_training=True, reuse=None,
                      variables_collections=None, outputs_collections=None, trainable=True,
                      data_format="NHWC", zero_debias_moving_mean=False, scope=None):
    """The era's fused path: ``nn.fused_batch_norm``, moving averages by hand."""
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.framework import smart_cond
    with _v1.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        original_inputs = inputs = tf.convert_to_tensor(inputs)
        original_shape = inputs.shape
        if original_shape.rank == 2:
            channels = original_shape[-1]
            if channels is None:
                raise ValueError(f"batch_norm: the channel dimension of inputs must be "
                                 f"known, got {original_shape}")
            inputs = tf.reshape(inputs, [-1, channels, 1, 1] if data_format == "NCHW"
                                else [-1, 1, 1, channels])
        params_shape = _params_shape(inputs, data_format)
        beta, gamma, moving_mean, moving_variance = _batch_norm_variables(
            params_shape, tf.float32, center, scale, param_initializers or {},
            param_regularizers or {}, variables_collections, trainable)
        if beta is None:
            beta = tf.constant(0.0, dtype=tf.float32, shape=params_shape)
        if gamma is None:
            gamma = tf.constant(1.0, dtype=tf.float32, shape=params_shape)

        def training():
            return _v1.nn.fused_batch_norm(inputs, gamma, beta, epsilon=epsilon,
                                           data_format=data_format)

        def inference():
            return _v1.nn.fused_batch_norm(inputs, gamma, beta, mean=moving_mean,
                                           variance=moving_variance, epsilon=epsilon,
                                           is_training=False, data_format=data_format)

        outputs, mean, variance = smart_cond.smart_cond(is_training, training, inference)
        training_value = smart_cond.smart_constant_value(is_training)
        if training_value is None or training_value:
            if updates_collections is None:
                def force_updates():
                    updates = _moving_average_updates(moving_mean, moving_variance, mean,
                                                      variance, decay,
                                                      zero_debias_moving_mean)
                    with tf.control_dependencies(updates):
                        return tf.identity(outputs)
                outputs = smart_cond.smart_cond(is_training, force_updates,
                                                lambda: outputs)
            else:
                update_mean, update_variance = smart_cond.smart_cond(
                    is_training,
                    lambda: _moving_average_updates(moving_mean, moving_variance, mean,
                                                    variance, decay, zero_debias_moving_mean),
                    lambda: (moving_mean, moving_variance))
                _v1.add_to_collections(updates_collections, update_mean)
                _v1.add_to_collections(updates_collections, update_variance)
        outputs.set_shape(inputs.shape)
        if original_shape.rank == 2:
            outputs = tf.reshape(outputs, tf.shape(original_inputs))
            outputs.set_shape(original_shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_outputs(outputs_collections, sc.name, outputs)


def _batch_norm_moments(inputs, sc, decay, center, scale, epsilon, activation_fn,
                        param_initializers, updates_collections, is_training,
                        variables_collections, outputs_collections, trainable, batch_weights,
                        data_format, zero_debias_moving_mean):
    """The era's general path: (weighted) moments, then ``nn.batch_normalization``."""
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.framework import smart_cond
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"batch_norm: inputs must have a known rank, got {inputs.shape}")
    dtype = inputs.dtype.base_dtype
    if batch_weights is not None:
        batch_weights = tf.convert_to_tensor(batch_weights)
        inputs.shape[0:1].assert_is_compatible_with(batch_weights.shape)
        batch_weights = tf.reshape(batch_weights, [-1] + [1] * (rank - 1))
    if data_format == "NCHW":
        moments_axes = [0] + list(range(2, rank))
        broadcast_shape = [1, inputs.shape[1]] + [1] * (rank - 2)
    else:
        moments_axes = list(range(rank - 1))
        broadcast_shape = None
    params_shape = _params_shape(inputs, data_format)
    beta, gamma, moving_mean, moving_variance = _batch_norm_variables(
        params_shape, dtype, center, scale, param_initializers, {}, variables_collections,
        trainable)
    training_value = smart_cond.smart_constant_value(is_training)
    if training_value is None or training_value:
        keep = data_format == "NCHW"
        if batch_weights is None:
            mean, variance = tf.nn.moments(inputs, moments_axes, keepdims=keep)
        else:
            mean, variance = tf.nn.weighted_moments(inputs, moments_axes, batch_weights,
                                                    keepdims=keep)
        if keep:
            mean, variance = tf.reshape(mean, [-1]), tf.reshape(variance, [-1])
        moving = lambda: (moving_mean, moving_variance)  # noqa: E731
        if updates_collections is None:
            def force_updates():
                updates = _moving_average_updates(moving_mean, moving_variance, mean,
                                                  variance, decay, zero_debias_moving_mean)
                with tf.control_dependencies(updates):
                    return tf.identity(mean), tf.identity(variance)
            mean, variance = smart_cond.smart_cond(is_training, force_updates, moving)
        else:
            update_mean, update_variance = smart_cond.smart_cond(
                is_training,
                lambda: _moving_average_updates(moving_mean, moving_variance, mean, variance,
                                                decay, zero_debias_moving_mean),
                moving)
            _v1.add_to_collections(updates_collections, update_mean)
            _v1.add_to_collections(updates_collections, update_variance)
            batch = (mean, variance)
            mean, variance = smart_cond.smart_cond(is_training, lambda: batch, moving)
    else:
        mean, variance = moving_mean, moving_variance
    if broadcast_shape is not None:
        mean = tf.reshape(mean, broadcast_shape)
        variance = tf.reshape(variance, broadcast_shape)
        beta = None if beta is None else tf.reshape(beta, broadcast_shape)
        gamma = None if gamma is None else tf.reshape(gamma, broadcast_shape)
    outputs = tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, epsilon)
    outputs.set_shape(inputs.shape)
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect_outputs(outputs_collections, sc.name, outputs)
