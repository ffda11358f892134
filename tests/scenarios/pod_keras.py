"""A TF 2.3-era Keras fit on a TPU pod slice (issue 16).

compile(experimental_steps_per_execution=N) and fit on a batched dataset in
TPUStrategy.scope(): run unchanged on one host and on an emulated pod
(TPU_COMPAT_NUM_HOSTS=2); tests/test_pod_parity.py compares the runs with
each other and with the same fit on one device, trained here. It checks the
layout, that fit is still an on-device loop (one host call per N steps: the
batch callbacks fire once per execution), that every host holds the same
variables, and a tf.train.Checkpoint written once and restored into a fresh
model on every host.
"""
import os

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

import pod_report

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Where the checkpoint is written.")
flags.DEFINE_integer("steps_per_execution", 4, "Training steps per host call.")
flags.DEFINE_integer("epochs", 2, "Epochs.")
flags.DEFINE_integer("steps_per_epoch", 8, "Steps per epoch.")

GLOBAL_BATCH = 32


def make_dataset():
    rng = np.random.RandomState(23)
    count = GLOBAL_BATCH * FLAGS.steps_per_epoch
    features = rng.randn(count, 6).astype(np.float32)
    targets = (np.tanh(features.dot(rng.randn(6, 2))) + 0.1 * features[:, :2]).astype(np.float32)
    # The same global batches on 1 and 2 hosts: fit splits each across the
    # replicas (the pod's split gives a host every H-th per-replica batch),
    # and Keras's loss is the mean over the global batch either way.
    return tf.data.Dataset.from_tensor_slices((features, targets)).batch(
        GLOBAL_BATCH, drop_remainder=True)


def build_model(seed, steps_per_execution=None):
    init = tf.keras.initializers.RandomNormal(stddev=0.4, seed=seed)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(12, activation="relu", input_shape=(6,), kernel_initializer=init),
        tf.keras.layers.Dense(2, kernel_initializer=init)])
    extra = ({"experimental_steps_per_execution": steps_per_execution}
             if steps_per_execution else {})
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), loss="mse", **extra)
    return model


class HostCalls(tf.keras.callbacks.Callback):
    """Counts batch-end callbacks: Keras calls them once per host call."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def on_train_batch_end(self, batch, logs=None):
        self.calls += 1


def components(strategy, variables):
    return {v.name: [(c.device, c.numpy()) for c in strategy.experimental_local_results(v)]
            for v in variables}


def checkpoint_round_trip(strategy, model, trained):
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    path = checkpoint.save(os.path.join(FLAGS.model_dir, "ckpt"))
    written = sorted(os.listdir(FLAGS.model_dir))
    pod_report.emit("CHECKPOINT_FILES", written)
    pod_report.emit("CHECKPOINT_DATA_SHARDS", sum(".data-" in name for name in written))
    with strategy.scope():
        fresh = build_model(seed=99, steps_per_execution=FLAGS.steps_per_execution)
        fresh.optimizer.build(fresh.trainable_variables)  # the saved optimizer's variables
    tf.train.Checkpoint(model=fresh, optimizer=fresh.optimizer).restore(
        path).assert_existing_objects_matched()
    restored = pod_report.components_report(
        "RESTORED", components(strategy, fresh.weights + [fresh.optimizer.iterations]))
    pod_report.emit("RESTORED_STEPS", int(fresh.optimizer.iterations.numpy()))
    absolute, _ = pod_report.max_differences(list(restored.values())[:len(trained)], trained)
    pod_report.emit("RESTORE_MAX_ABS_DIFF", absolute)


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    pod_report.worker_pids()
    pod_report.pod_semantics(strategy, resolver)

    with strategy.scope():
        model = build_model(seed=3, steps_per_execution=FLAGS.steps_per_execution)
    host_calls = HostCalls()
    history = model.fit(make_dataset(), epochs=FLAGS.epochs, steps_per_epoch=FLAGS.steps_per_epoch,
                        callbacks=[host_calls], verbose=0)
    pod_report.emit("STEPS", int(model.optimizer.iterations.numpy()))
    pod_report.emit("HOST_CALLS", host_calls.calls)
    trained = list(pod_report.components_report(
        "TRAINED", components(strategy, model.weights)).values())

    reference = build_model(seed=3)
    initial = reference.get_weights()
    reference_history = reference.fit(make_dataset(), epochs=FLAGS.epochs,
                                      steps_per_epoch=FLAGS.steps_per_epoch, verbose=0)
    absolute, relative = pod_report.max_differences(trained, reference.get_weights())
    pod_report.emit("REFERENCE_MAX_ABS_DIFF", absolute)
    pod_report.emit("REFERENCE_MAX_REL_DIFF", relative)
    pod_report.emit("RESULT", {
        "losses": history.history["loss"], "reference_losses": reference_history.history["loss"],
        "weights": [w.tolist() for w in trained],
        "reference": [w.tolist() for w in reference.get_weights()],
        "initial": [w.tolist() for w in initial]})
    checkpoint_round_trip(strategy, model, trained)


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
