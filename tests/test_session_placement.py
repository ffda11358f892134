"""Graph-mode sessions on the emulated TPU: what a graph's growth costs (issue 32).

A local ``tf.compat.v1.Session`` of the emulated TPU places only the subgraphs it
runs (runtime/pod_sessions.py, placing_run_subgraphs), so a Session.run after the graph grew does not
re-place the whole graph; and a graph-mode Keras training step on the emulated TPU
adds no op to the graph, so a long fit does not make each extension costlier.
In process, on the 8-core emulated TPU.
"""

import numpy as np
import pytest

import tpu_compat

pytestmark = pytest.mark.requires_tf


@pytest.fixture
def installed(tpu8):
    del tpu8
    tpu_compat.uninstall()
    with tpu_compat.install(warnings="ignore"):
        yield
    tpu_compat.uninstall()


def test_a_local_session_places_only_what_it_runs(installed):
    import tensorflow as tf
    with tf.Graph().as_default():
        reachable = tf.constant(1.0) + 1.0
        with tf.device("/device:CPU:99"):  # no such device: placing this op fails
            unplaceable = tf.constant(2.0) * 3.0
        config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
        with tf.compat.v1.Session(config=config) as session:
            # Placing the whole graph would refuse this run for the other op.
            assert session.run(reachable) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:99"):
                session.run(unplaceable)
        # The program's ConfigProto is left as it was (the session got a copy).
        assert not config.graph_options.place_pruned_graph
        assert not config.allow_soft_placement
        # A session given no config keeps the context's: every emulated core.
        with tf.compat.v1.Session() as session:
            assert session.run(reachable) == 2.0
            cores = [d.name for d in session.list_devices() if d.device_type == "CPU"]
            assert len(cores) == 8, cores


def test_a_session_outside_the_emulation_places_the_whole_graph(tpu8):
    import tensorflow as tf
    del tpu8
    tpu_compat.uninstall()
    with tf.Graph().as_default():
        reachable = tf.constant(1.0) + 1.0
        with tf.device("/device:CPU:99"):
            tf.constant(2.0) * 3.0  # pylint: disable=expression-not-assigned
        with tf.compat.v1.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:99"):
                session.run(reachable)


# About 6 s of CPU (an 8-replica graph-mode Keras model), over CI's 5 s per new test:
# the local-session tests above are CI's; this one runs with the slow tests.
@pytest.mark.slow
def test_a_graph_mode_keras_step_adds_no_ops(installed):
    # TF 1.15's graph-mode TPU fit (one step per host call), on the emulated TPU:
    # after each step the graph has as many ops as after the first.
    import tensorflow as tf
    import tf_keras
    counts = []

    class CountOps(tf_keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            counts.append(len(graph.get_operations()))

    with tf.Graph().as_default() as graph:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
        strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver)
        dataset = tf.compat.v1.data.Dataset.from_tensor_slices(
            (np.ones((64, 3), np.float32), np.ones((64, 1), np.float32))).repeat().batch(
                16, drop_remainder=True)
        with strategy.scope():
            model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(3,))])
            model.compile(tf_keras.optimizers.legacy.SGD(0.1), "mse")
        history = model.fit(dataset, epochs=1, steps_per_epoch=4, callbacks=[CountOps()],
                            verbose=0)
    assert len(counts) == 4 and len(set(counts)) == 1, counts
    assert len(history.history["loss"]) == 1
