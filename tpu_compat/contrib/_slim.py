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

import tensorflow as tf

from tpu_compat.contrib._arg_scope import add_arg_scope
from tpu_compat.contrib._layers import xavier_initializer
from tpu_compat.contrib._slim_batch_norm import batch_norm
# batch_norm and the variables live in modules of their own (the 400-line
# rule); tf.contrib.slim serves every name from this one.
from tpu_compat.contrib._slim_variables import (  # pylint: disable=unused-import
    _add_to_collections, _channels_format, _check_2d_format, _collect_outputs,
    _legacy_layers, _pair, _variable_collections, _variable_getter, model_variable,
    variable, variance_scaling_initializer)

__all__ = ["avg_pool2d", "batch_norm", "conv2d", "convolution", "convolution2d", "dropout",
           "flatten", "fully_connected", "max_pool2d", "model_variable", "repeat",
           "separable_conv2d", "separable_convolution2d", "softmax", "stack", "variable",
           "variance_scaling_initializer"]

_v1 = tf.compat.v1


def _pool2d(layer_class, default_scope, inputs, kernel_size, stride, padding, data_format,
            outputs_collections, scope):
    _check_2d_format(data_format)
    pooling = _legacy_layers()[3]
    with tf.name_scope(scope or default_scope) as name:
        layer = getattr(pooling, layer_class)(pool_size=kernel_size, strides=stride,
                                              padding=padding,
                                              data_format=_channels_format(data_format))
        return _collect_outputs(outputs_collections, name,
                                layer.apply(tf.convert_to_tensor(inputs)))


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D average pooling (name scope ``AvgPool2D``)."""
    return _pool2d("AveragePooling2D", "AvgPool2D", inputs, kernel_size, stride, padding,
                   data_format, outputs_collections, scope)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """2-D max pooling (name scope ``MaxPool2D``)."""
    return _pool2d("MaxPooling2D", "MaxPool2D", inputs, kernel_size, stride, padding,
                   data_format, outputs_collections, scope)


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
