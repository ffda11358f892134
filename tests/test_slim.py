"""TF-Slim's arg_scope and layers (issue 34 item 4): tpu_compat/contrib/_arg_scope.py, _slim.py.

The era's semantics (TF 1.15 contrib/framework/python/ops/arg_scope.py and
contrib/layers/python/layers/layers.py), in process; the whole program (a slim
TPUEstimator model_fn on 8 cores against one device) is tests/test_slim_program.py.
"""

import threading

import pytest

import tpu_compat
from tpu_compat.contrib import _arg_scope
from tpu_compat.contrib._arg_scope import add_arg_scope, arg_scope
from conftest import TF_INSTALLED

if TF_INSTALLED:
    import numpy as np
    import tensorflow as tf
    from tpu_compat.contrib import _slim

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@add_arg_scope
def op_a(x, alpha=1, beta=2, gamma=3):
    return (x, alpha, beta, gamma)


@add_arg_scope
def op_b(x, alpha=10, delta=20):
    return (x, alpha, delta)


def undecorated(x, alpha=1):
    return (x, alpha)


# -- arg_scope ------------------------------------------------------------------------------


def test_nested_scopes_override_per_argument_and_calls_override_scopes():
    with arg_scope([op_a], alpha=5, beta=6):
        assert op_a(0) == (0, 5, 6, 3)
        with arg_scope([op_a], beta=7):
            assert op_a(0) == (0, 5, 7, 3)  # alpha from the outer scope, beta from the inner
            assert op_a(0, beta=8) == (0, 5, 8, 3)  # an explicit argument wins
        assert op_a(0) == (0, 5, 6, 3)  # the inner scope is gone
    assert op_a(0) == (0, 1, 2, 3)


def test_a_list_of_ops_gets_the_same_arguments_and_others_are_untouched():
    with arg_scope([op_a, op_b], alpha=42):
        assert op_a(1) == (1, 42, 2, 3)
        assert op_b(1) == (1, 42, 20)
    with arg_scope([op_b], delta=0):
        assert op_a(1) == (1, 1, 2, 3)
        assert op_b(1) == (1, 10, 0)


def test_a_returned_scope_is_entered_again_as_a_dict():
    def network_arg_scope():
        with arg_scope([op_a], alpha=9):
            with arg_scope([op_b], delta=8) as scope:
                return scope
    scope = network_arg_scope()
    assert op_a(0) == (0, 1, 2, 3)
    with arg_scope(scope):
        assert op_a(0) == (0, 9, 2, 3) and op_b(0) == (0, 10, 8)
    with pytest.raises(ValueError, match="no keyword arguments"):
        with arg_scope(scope, alpha=1):
            pass


def test_bad_scopes_raise_clear_errors():
    with pytest.raises(ValueError, match=r"test_slim\.undecorated is not decorated with "
                                         r"@add_arg_scope"):
        with arg_scope([op_a, undecorated], alpha=1):
            pass
    with pytest.raises(TypeError, match="list or tuple of ops.*got function"):
        with arg_scope(op_a, alpha=1):
            pass
    assert op_a(0) == (0, 1, 2, 3)  # nothing left pushed
    with pytest.raises(ValueError, match="undecorated is not decorated"):
        _arg_scope.arg_scoped_arguments(undecorated)


def test_decoration_registers_the_keyword_arguments_once():
    assert _arg_scope.has_arg_scope(op_a) and not _arg_scope.has_arg_scope(undecorated)
    assert _arg_scope.arg_scoped_arguments(op_a) == ("alpha", "beta", "gamma")
    again = add_arg_scope(op_a)  # the same key: a scope set for one applies to the other
    with arg_scope([op_a], gamma=0):
        assert again(1) == (1, 1, 2, 0)
    assert op_a.__name__ == "op_a"
    assert _arg_scope.current_arg_scope() == {}


def test_a_replica_thread_sees_the_programs_scope_and_keeps_its_own_pushes():
    seen = {}

    def replica():
        seen["inherited"] = op_a(0)
        with arg_scope([op_a], beta=0):
            seen["own"] = op_a(0)
            released.wait(5)
        seen["after"] = op_a(0)

    released = threading.Event()
    with arg_scope([op_a], alpha=7):
        thread = threading.Thread(target=replica)
        thread.start()
        assert op_a(0) == (0, 7, 2, 3)  # the replica's push is not the main thread's
        released.set()
        thread.join(10)
    assert seen == {"inherited": (0, 7, 2, 3), "own": (0, 7, 0, 3), "after": (0, 7, 2, 3)}


# -- the layers -----------------------------------------------------------------------------


def _names(collection=None):
    v1 = tf.compat.v1
    return [v.name for v in v1.get_collection(collection or v1.GraphKeys.GLOBAL_VARIABLES)]


@pytest.mark.requires_tf
def test_conv2d_batch_norm_block_has_the_eras_variable_names_and_order_of_ops():
    v1 = tf.compat.v1
    rng = np.random.RandomState(0)
    images = rng.randn(4, 5, 5, 2).astype(np.float32)
    with tf.Graph().as_default():
        with arg_scope([_slim.conv2d], normalizer_fn=_slim.batch_norm,
                       normalizer_params={"scale": True, "is_training": True}):
            with v1.variable_scope("block"):
                net = _slim.conv2d(images, 3, [3, 3], scope="conv")
                plain = _slim.conv2d(images, 3, [1, 1], normalizer_fn=None,
                                     activation_fn=None, biases_initializer=None, scope="plain")
        logits = _slim.fully_connected(tf.reshape(plain, [4, -1]), 6, scope="fc")
        assert _names() == [
            "block/conv/weights:0", "block/conv/BatchNorm/gamma:0", "block/conv/BatchNorm/beta:0",
            "block/conv/BatchNorm/moving_mean:0", "block/conv/BatchNorm/moving_variance:0",
            "block/plain/weights:0", "fc/weights:0", "fc/biases:0"]
        assert _names(v1.GraphKeys.MODEL_VARIABLES) == _names()
        assert len(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) == 2
        weights = v1.get_collection(v1.GraphKeys.GLOBAL_VARIABLES, "block/conv/weights")[0]
        conv = tf.nn.conv2d(images, weights, 1, "SAME")
        mean, variance = tf.nn.moments(conv, [0, 1, 2])
        # normalizer_fn runs in place of the biases and before the default relu.
        expected = tf.nn.relu((conv - mean) / tf.sqrt(variance + 0.001))
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            got, want, fc = session.run([net, expected, logits])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert (fc >= 0).all() and (fc == 0).any()  # fully_connected's default relu


@pytest.mark.requires_tf
def test_batch_norm_paths_agree_and_update_the_moving_statistics():
    v1 = tf.compat.v1
    rng = np.random.RandomState(1)
    images = (rng.randn(6, 3, 3, 2) * 3 + 1).astype(np.float32)
    outputs = {}
    with tf.Graph().as_default():
        outputs["layer"] = _slim.batch_norm(images, decay=0.5, scope="layer")
        outputs["in_place"] = _slim.batch_norm(images, decay=0.5, updates_collections=None,
                                               scope="in_place")
        outputs["moments"] = _slim.batch_norm(images, decay=0.5, fused=False,
                                              updates_collections=None, scope="moments")
        frozen = _slim.batch_norm(images, is_training=False, scope="frozen")
        moving = {name: v1.get_collection(v1.GraphKeys.GLOBAL_VARIABLES,
                                          f"{name}/moving_mean")[0] for name in outputs}
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            values = session.run(outputs)
            session.run(v1.get_collection(v1.GraphKeys.UPDATE_OPS))
            means = session.run(moving)
            frozen_value = session.run(frozen)
    normalized = (images - images.mean((0, 1, 2))) / np.sqrt(images.var((0, 1, 2)) + 0.001)
    for name, value in values.items():
        np.testing.assert_allclose(value, normalized, rtol=1e-4, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(means[name], 0.5 * images.mean((0, 1, 2)), rtol=1e-5,
                                   err_msg=name)
    np.testing.assert_allclose(frozen_value, images / np.sqrt(1.001), rtol=1e-5)


@pytest.mark.requires_tf
def test_separable_pools_dropout_flatten_and_initializers():
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        images = tf.ones([2, 8, 8, 4])
        depthwise = _slim.separable_conv2d(images, None, [3, 3], depth_multiplier=2)
        separable = _slim.separable_conv2d(images, 5, 3, scope="sep")
        pooled = _slim.avg_pool2d(_slim.max_pool2d(separable, [2, 2]), 2, stride=1,
                                  padding="SAME")
        kept = _slim.dropout(pooled, keep_prob=0.5, is_training=False)
        flat = _slim.flatten(kept)
        assert depthwise.shape == (2, 8, 8, 8) and pooled.shape == (2, 4, 4, 5)
        assert flat.shape == (2, 80)
        assert _names() == ["SeparableConv2d/depthwise_weights:0", "SeparableConv2d/biases:0",
                            "sep/depthwise_weights:0", "sep/pointwise_weights:0",
                            "sep/biases:0"]
        init = _slim.variance_scaling_initializer(factor=1.0, mode="FAN_IN", uniform=True,
                                                  seed=3)
        values = init([3, 3, 4, 8])
        normal = _slim.variance_scaling_initializer(mode="FAN_OUT", seed=3)([50, 40])
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            got_values, got_normal, got_kept, got_pooled = session.run(
                [values, normal, kept, pooled])
    limit = np.sqrt(3.0 / 36)  # fan in 3*3*4
    assert np.abs(got_values).max() <= limit and np.abs(got_values).max() > 0.9 * limit
    # The era's truncated normal: stddev sqrt(1.3 * factor / n) before truncation at 2 sigma.
    assert np.abs(got_normal).max() <= 2 * np.sqrt(1.3 * 2.0 / 40) + 1e-6
    np.testing.assert_array_equal(got_kept, got_pooled)
    with pytest.raises(TypeError, match="mode must be one of"):
        _slim.variance_scaling_initializer(mode="fan_in")
    with pytest.raises(ValueError, match="num_outputs must be an int"):
        with tf.Graph().as_default():
            _slim.fully_connected(tf.ones([2, 3]), 2.0)


@pytest.fixture
def installed(tpu8):
    del tpu8
    tpu_compat.uninstall()
    with tpu_compat.install():
        yield
    tpu_compat.uninstall()


@pytest.mark.requires_tf
def test_the_eras_spellings_serve_one_implementation(installed):
    import tensorflow.compat.v1 as tf1
    from tensorflow.contrib.framework.python.ops import arg_scope as deep_arg_scope
    from tensorflow.contrib import slim
    assert deep_arg_scope is _arg_scope.arg_scope is slim.arg_scope
    assert tf1.contrib.framework.add_arg_scope is _arg_scope.add_arg_scope
    assert slim.conv2d is tf1.contrib.layers.conv2d is _slim.conv2d
    assert slim.batch_norm is tf1.contrib.layers.batch_norm
    assert tf1.contrib.framework.variable is _slim.variable
    with tf.Graph().as_default():
        # A scope set through one module's name applies to the other's.
        with tf1.contrib.framework.arg_scope([tf1.contrib.layers.conv2d], activation_fn=None,
                                             scope="scoped"):
            net = slim.conv2d(-tf.ones([1, 2, 2, 1]), 1, 1,
                              weights_initializer=tf.ones_initializer())
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            assert session.run(net).ravel().tolist() == [-1.0] * 4  # no relu
        assert _names() == ["scoped/weights:0", "scoped/biases:0"]
