"""Which Estimator a TPUEstimator program gets when TF ships its own (TF <= 2.15).

TF 2.15 and older install ``tensorflow_estimator`` with TensorFlow, and
``tf.estimator`` is then TF's own. TF's TPUEstimator with ``use_tpu=True``
needs a real TPU system, so under ``tpu-compat run`` the program must get
tpu_compat's TPUEstimator, which replicates over the emulated TPU. On TF 2.16+
(no ``tensorflow_estimator``) tests/test_estimator.py covers tpu_compat's
Estimator; scripts/tf_version_matrix.py runs this file on every cell, so the
TF 2.15 cells show the answer.
"""

import importlib.util
import textwrap

import pytest

from conftest import check_ok, run_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_estimator") is None,
    reason="tensorflow_estimator is not installed (TF 2.16+ removed it)")

PROGRAM = textwrap.dedent('''
    import tensorflow_estimator
    import tensorflow.compat.v1 as tf

    def input_fn(params):
        print("input_fn batch_size:", params["batch_size"])
        features = tf.ones([64, 4])
        labels = tf.ones([64, 1])
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        print("model_fn num_replicas:", params["context"].num_replicas)
        loss = tf.losses.mean_squared_error(labels, tf.layers.dense(features, 1))
        optimizer = tf.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1))
        train_op = optimizer.minimize(loss, tf.train.get_global_step())
        return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    config = tf.estimator.tpu.RunConfig(
        model_dir=MODEL_DIR, tpu_config=tf.estimator.tpu.TPUConfig(iterations_per_loop=2))
    estimator = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=True, train_batch_size=16)
    print("tensorflow_estimator installed:", tensorflow_estimator.__name__)
    print("TPUEstimator from:", type(estimator).__module__)
    estimator.train(input_fn, max_steps=4)
    print("global_step:", estimator.get_variable_value("global_step"))
''')


def test_a_tpu_estimator_program_gets_tpu_compats_estimator_on_the_emulated_tpu(tmp_path):
    program = tmp_path / "tpu_estimator_program.py"
    program.write_text(f"MODEL_DIR = {str(tmp_path / 'model')!r}\n" + PROGRAM)
    result = check_ok(run_cli("run", "--replicas", "8", "--warnings", "ignore", str(program)))
    lines = result.stdout.splitlines()
    assert "tensorflow_estimator installed: tensorflow_estimator" in lines
    # tpu_compat's class, not tensorflow_estimator.python.estimator.tpu.tpu_estimator.
    assert "TPUEstimator from: tpu_compat.estimator.tpu.estimator" in lines, result.stdout
    # Replicated over the 8 emulated cores; the input is per host as in TF 1.15
    # (TPUConfig's default PER_HOST_V1: one input_fn call, the global batch).
    model_fn_lines = [line for line in lines if line.startswith("model_fn")]
    assert model_fn_lines and set(model_fn_lines) == {"model_fn num_replicas: 8"}, result.stdout
    assert "input_fn batch_size: 16" in lines, result.stdout
    assert "global_step: 4" in lines, result.stdout
