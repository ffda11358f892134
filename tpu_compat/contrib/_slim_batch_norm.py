"""TF-Slim's ``batch_norm`` (see _slim.py): the era's three paths, the layer, the fused
op with hand-updated moving averages, and the explicit moments.

TF 1.15: tensorflow/contrib/layers/python/layers/layers.py (``batch_norm``).
"""

import tensorflow as tf

from tpu_compat._tf_internals import moving_averages, smart_cond
from tpu_compat.contrib._arg_scope import add_arg_scope

_v1 = tf.compat.v1
_UPDATE_OPS = _v1.GraphKeys.UPDATE_OPS
from tpu_compat.contrib._slim_variables import (
    _add_to_collections, _check_2d_format, _collect_outputs, _legacy_layers,
    _variable_collections, _variable_getter, model_variable)


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
