"""Empty replica batches: a partial last batch smaller than the replica count.

Some emulated cores then get a batch of 0 examples (TF's input_lib gives such a
replica an empty batch, as TF 2.x's TPUStrategy did). TensorFlow's oneDNN
convolutions give a 0-example batch the input's channels, and the next
BatchNormalization fails in fit's validation pass; a TPU core gives the right,
empty result. `tpu-compat run` runs the emulated cores without oneDNN, and with
oneDNN on the emulated replicas' convolutions guard empty batches.
"""
import numpy as np
import pytest

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

EPOCHS = 2


# No run in CI: the in-process guard test below keeps the empty batches there.
@pytest.mark.whole_program(ci_replicas=())
@pytest.mark.parametrize("replicas,onednn", [(1, "1"), (2, "1"), (8, "1"), (8, None)])
def test_keras_cnn_validation_with_a_partial_batch_smaller_than_the_replicas(
        replicas, onednn):
    # "1": oneDNN on, as TensorFlow's default is on many x86 CPUs (and as the user
    # may choose): the emulated replicas' convolutions guard empty batches
    # (runtime/empty_batches.py); before, fit's validation pass failed in
    # BatchNormalization. None: run's default, oneDNN off (test_settings).
    numbers = parse_numbers(check_ok(run_scenario(
        "keras_cnn_partial_batch.py", replicas, "--epochs", str(EPOCHS),
        env={"TF_ENABLE_ONEDNN_OPTS": onednn})).stdout)
    assert numbers["replicas"] == replicas
    for epoch in range(EPOCHS):
        # Every core normalizes the same statistics: training is one device's
        # (float32 convolutions and batch statistics summed in another order:
        # 1.3e-5 measured at 2 replicas).
        np.testing.assert_allclose(numbers[f"tpu_loss_{epoch}"],
                                   numbers[f"one_loss_{epoch}"], rtol=5e-5)
        # Validation as a TPU computes it: the 35 examples, each counted once,
        # equal to one device's evaluate of the same weights.
        np.testing.assert_allclose(numbers[f"tpu_val_loss_{epoch}"],
                                   numbers[f"ref_val_loss_{epoch}"], rtol=1e-5)
        assert numbers[f"tpu_val_accuracy_{epoch}"] == pytest.approx(
            numbers[f"ref_val_accuracy_{epoch}"], abs=1e-7)
    np.testing.assert_allclose(numbers["tpu_eval_loss"], numbers["ref_eval_loss"], rtol=1e-5)
    assert numbers["tpu_eval_accuracy"] == pytest.approx(numbers["ref_eval_accuracy"], abs=1e-7)


@pytest.mark.usefixtures("tpu8")  # in process: the 8-core layout first
def test_the_guard_leaves_non_empty_batches_and_gradients_alone():
    """In-process, oneDNN or not: the guarded op equals TensorFlow's own on a
    non-empty batch, gives an empty batch the filters' channels, and its
    gradients are the unguarded ones."""
    import tensorflow as tf
    from tpu_compat.runtime import empty_batches
    from tensorflow.python.ops import gen_nn_ops

    guarded = empty_batches._guarded(gen_nn_ops.conv2d)
    filters = tf.constant(np.random.RandomState(0).randn(3, 3, 3, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 6, 6, 3])])
    def both(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, filters])
            plain = tf.reduce_sum(gen_nn_ops.conv2d(x, filters, [1, 1, 1, 1], "SAME") ** 2)
            with_guard = empty_batches._pad_and_cut(gen_nn_ops.conv2d, x, filters,
                                                    [1, 1, 1, 1], "SAME")
            guarded_sum = tf.reduce_sum(with_guard ** 2)
        return (tf.shape(with_guard), plain, guarded_sum,
                tape.gradient(plain, filters), tape.gradient(guarded_sum, filters))

    x = np.random.RandomState(1).randn(2, 6, 6, 3).astype(np.float32)
    shape, plain, guarded_sum, plain_grad, guarded_grad = both(x)
    assert list(shape.numpy()) == [2, 6, 6, 8]
    np.testing.assert_allclose(guarded_sum, plain, rtol=1e-6)
    np.testing.assert_allclose(guarded_grad, plain_grad, rtol=1e-5)
    shape, _, guarded_sum, _, guarded_grad = both(np.zeros([0, 6, 6, 3], np.float32))
    assert list(shape.numpy()) == [0, 6, 6, 8]
    assert float(guarded_sum) == 0.0 and not np.any(guarded_grad.numpy())
    assert guarded.__wrapped__ is gen_nn_ops.conv2d
