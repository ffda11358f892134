"""Issue 36: ``upgrade --estimator-to-tf2`` of a TPUEstimator program whose model_fn is
built from Keras layers and trained with ``tf.compat.v1.train.AdamOptimizer``
(tensorflow/tpu's models/experimental/cifar_keras/cifar_keras.py, the field runner's
tpu-cifar-keras), and RunConfig(save_checkpoints_secs=...).

The rewrites as (before, after) text; the driver's Adam under 8 replicas against a
NumPy Adam (its ``beta1_power`` created in a merge_call, once, and kept across the
driver's traces); the checkpoint timer."""

import pytest

from tpu_compat.migrate.estimator import to_tf2

V1 = "import tensorflow.compat.v1 as tf\n"
ESTIMATOR = "e = tf.estimator.tpu.TPUEstimator(model_fn=model_fn, use_tpu=True)\n"
CIFAR_MODEL_FN = ("from tensorflow.contrib import keras as contrib_keras\n"
                  "def model_fn(features, labels, mode, params):\n"
                  "  layers = contrib_keras.layers\n"
                  "  v = layers.Input(tensor=features)\n"
                  "  return layers.Dense(units=10)(v)\n")


def test_contrib_keras_and_input_of_a_tensor_in_model_fn():
    """cifar_keras.py: contrib.keras is tf.compat.v1.keras; `Input(tensor=features)`
    is `features`, as a TF 1 graph returned it (before: a TPC104 TODO on the import,
    and in the driver's tf.function Keras returned a KerasTensor the loss refused)."""
    migrated = to_tf2.migrate_text(V1 + CIFAR_MODEL_FN + ESTIMATOR)
    assert migrated.text == (
        V1 + "from tensorflow.compat.v1 import keras as contrib_keras\n"
        "import tpu_estimator_tf2\n"
        "def model_fn(features, labels, mode, params):\n"
        "  layers = contrib_keras.layers\n"
        "  v = features\n"
        "  return layers.Dense(units=10)(v)\n"
        "e = tpu_estimator_tf2.TPUStrategyEstimator(model_fn=model_fn, use_tpu=True)\n")
    assert [(n.line, n.rule, n.todo) for n in migrated.notes] == [
        (2, "TPC104", ""), (5, "TPC070", ""), (7, "TPC070", "")]


@pytest.mark.parametrize("call, after", [
    ("tf.keras.layers.Input(tensor=x)", "x"),
    ("tf.keras.Input(tensor=x, name='images')", "x"),
    # a shape besides the tensor, or no tensor: Keras's own Input, left alone
    ("tf.keras.layers.Input(shape=[3], tensor=x)", None),
    ("tf.keras.layers.Input(shape=[3])", None),
    ("other.Input(tensor=x)", None),
])
def test_input_of_a_tensor_by_its_names(call, after):
    source = V1 + f"def model_fn(x):\n  v = {call}\n" + ESTIMATOR
    text = to_tf2.migrate_text(source).text
    assert f"  v = {after or call}\n" in text


def test_a_program_without_tpu_estimator_keeps_its_keras():
    source = V1 + CIFAR_MODEL_FN
    assert to_tf2.migrate_text(source).text == source


def test_contrib_imports_besides_keras_are_the_ordinary_upgrades():
    source = V1 + "from tensorflow.contrib import keras, tpu\n" + ESTIMATOR
    assert "from tensorflow.contrib import keras, tpu\n" in to_tf2.migrate_text(source).text


@pytest.mark.requires_tf
def test_run_config_checkpoints_every_600_s_unless_told():
    """Estimator's RunConfig (tensorflow_estimator r1.15 run_config.py): 600 s by
    default, none when save_checkpoints_steps is given, both is an error (before:
    save_checkpoints_secs was refused, and cifar_keras.py's 3600 stopped the run)."""
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    assert estimator_tf2.RunConfig().save_checkpoints_secs == 600
    assert estimator_tf2.RunConfig(save_checkpoints_secs=3600).save_checkpoints_secs == 3600
    config = estimator_tf2.RunConfig(save_checkpoints_steps=100)
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (None, 100)
    with pytest.raises(ValueError, match="both save_checkpoints_secs and save_checkpoints_steps"):
        estimator_tf2.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)


@pytest.mark.requires_tf
# ~40 s at load 12 (8 replicas traced twice); the field's tpu-cifar-keras row runs Adam too
@pytest.mark.slow
def test_adam_under_eight_replicas_is_numpys_adam(tmp_path, tpu8, monkeypatch):
    """AdamOptimizer under CrossShardOptimizer, 8 replicas, 3 steps in loops of 2 then 1:
    the weights of a NumPy Adam on the global batch, and one beta1_power (0.9**4) in the
    checkpoint. Before: its beta1_power, made in a merge_call on the strategy's thread,
    was created again when the driver traced the step a second time ("tf.function only
    supports singleton tf.Variables")."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute import TPUStrategy  # pylint: disable=import-outside-toplevel
    from tpu_compat.distribute.cluster_resolver import TPUClusterResolver  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
    rng = np.random.RandomState(3)
    x = rng.normal(size=[16, 3]).astype(np.float32)
    y = rng.normal(size=[16, 1]).astype(np.float32)

    def model_fn(features, labels, mode, params):
        w = tf.compat.v1.get_variable("w", [3, 1],
                                      initializer=tf.compat.v1.constant_initializer(0.1))
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        optimizer = estimator_tf2.CrossReplicaOptimizer(tf.compat.v1.train.AdamOptimizer(0.1))
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_tf2.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
            params["batch_size"], drop_remainder=True)

    config = estimator_tf2.RunConfig(model_dir=str(tmp_path), tpu_config=estimator_tf2.TPUConfig(
        iterations_per_loop=2))
    estimator = estimator_tf2.TPUStrategyEstimator(model_fn, config=config, train_batch_size=16)
    monkeypatch.setattr(estimator, "_strategy", TPUStrategy(TPUClusterResolver(tpu="")))
    estimator.train(input_fn, max_steps=3)

    w, m, v = np.full([3, 1], 0.1), np.zeros([3, 1]), np.zeros([3, 1])
    for t in range(1, 4):
        grad = 2 * x.T.astype(np.float64) @ (x @ w - y) / 16
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad ** 2
        w = w - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    reader = tf.train.load_checkpoint(str(tmp_path))
    np.testing.assert_allclose(reader.get_tensor("w"), w, rtol=1e-5)
    np.testing.assert_allclose(reader.get_tensor("beta1_power"), 0.9 ** 4, rtol=1e-6)
    assert reader.get_tensor("global_step") == 3
    assert sorted(name for name, _ in tf.train.list_variables(str(tmp_path))) == [
        "beta1_power", "beta2_power", "global_step", "w", "w/Adam", "w/Adam_1"]


@pytest.mark.requires_tf
def test_model_fn_hashes_variables_as_tf1_did(tmp_path, tpu8):
    """EfficientNet's and MnasNet's get_ema_vars: `list(set(tf.trainable_variables()))` in
    model_fn. TF 1 hashed variables by identity; under TF 2 behaviour they are unhashable
    (before: "Variable is unhashable" stopped the migrated MnasNet). TF 2's equality is
    back once model_fn returns."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.migrate.estimator import estimator_tf2  # pylint: disable=import-outside-toplevel
    del tpu8
    hashed = []

    def model_fn(features, labels, mode, params):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        hashed.append(len(set(tf.compat.v1.trainable_variables())))
        loss = tf.reduce_mean(features) * w
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator_tf2.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = estimator_tf2.TPUStrategyEstimator(model_fn, model_dir=str(tmp_path),
                                                   use_tpu=False, train_batch_size=4)
    estimator.train(lambda params: tf.data.Dataset.from_tensors(tf.ones([4])).repeat(),
                    max_steps=1)
    assert hashed and set(hashed) == {1}
    with pytest.raises(TypeError, match="unhashable"):
        hash(tf.Variable(1.0))
