"""Empty replica batches: a partial last batch smaller than the replica count.

Some emulated cores then get a batch of 0 examples (TF's input_lib gives such a
replica an empty batch, as TF 2.x's TPUStrategy did). TensorFlow's oneDNN
convolutions give a 0-example batch the input's channels, and the next
BatchNormalization fails in fit's validation pass; a TPU core gives the right,
empty result. `tpu-compat run` runs the emulated cores without oneDNN.
"""
import numpy as np
import pytest

from conftest import check_ok, parse_numbers, run_scenario

EPOCHS = 2


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_keras_cnn_validation_with_a_partial_batch_smaller_than_the_replicas(replicas):
    # The program's environment as on a machine where TensorFlow enables oneDNN
    # by default (x86 CPUs with AVX-512 and the like) is what `run` must fix, so
    # the variable is left unset here; test_settings checks run exports 0.
    numbers = parse_numbers(check_ok(run_scenario(
        "keras_cnn_partial_batch.py", replicas, "--epochs", str(EPOCHS),
        env={"TF_ENABLE_ONEDNN_OPTS": None})).stdout)
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
