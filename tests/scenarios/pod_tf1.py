"""A TF 1.15 compat.v1 TPU program with steps_per_run on a pod slice (issue 16).

Graph mode, `tf.Session(resolver.master())`, make_input_fn_iterator and
experimental_run_steps_on_iterator: run unchanged on one host and on an
emulated pod (TPU_COMPAT_NUM_HOSTS=2); tests/test_pod_parity.py compares the
runs with each other and with the single-device reference trained here. It
checks the layout, that input_fn runs once per host with that host's
InputContext, that one Session.run is steps_per_run steps (the loop is in the
graph), that every host holds the same variables, and a tf.train.Saver
checkpoint written once and restored into a fresh graph on every host.
"""
import os

from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

import pod_report

tf.disable_v2_behavior()

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Where the checkpoint is written.")
flags.DEFINE_integer("steps_per_run", 4, "Training steps per Session.run.")
flags.DEFINE_integer("host_calls", 3, "Session.run calls of the training loop.")
flags.DEFINE_bool("copy_cluster_def", False,
                  "Open the sessions as the Cloud TPU reference models did on a pod: "
                  "the resolver's cluster copied into the session config.")

GLOBAL_BATCH = 32
LEARNING_RATE = 0.05
NAMES = ("b1", "b2", "w1", "w2")


def make_data(steps):
    rng = np.random.RandomState(115)
    features = rng.randn(GLOBAL_BATCH * steps, 8).astype(np.float32)
    labels = (features.dot(rng.randn(8, 1)) + 0.3 * np.sin(features[:, :1])).astype(np.float32)
    return features, labels


def initial_values(seed):
    rng = np.random.RandomState(seed)
    return {"w1": (0.3 * rng.randn(8, 16)).astype(np.float32),
            "b1": (0.1 * rng.randn(16)).astype(np.float32),
            "w2": (0.3 * rng.randn(16, 1)).astype(np.float32),
            "b2": (0.1 * rng.randn(1)).astype(np.float32)}


def make_params(seed):
    return {name: tf.Variable(value, name=name) for name, value in initial_values(seed).items()}


def batch_loss(params, inputs):
    x, y = inputs
    hidden = tf.tanh(tf.matmul(x, params["w1"]) + params["b1"])
    prediction = tf.matmul(hidden, params["w2"]) + params["b2"]
    # Scaled by the global batch: the replicas' summed gradients are the
    # full-batch gradient the single-device reference takes.
    return tf.reduce_sum(tf.square(prediction - y)) / GLOBAL_BATCH


def read_components(sess, strategy, params):
    named = {}
    for name in NAMES:
        parts = strategy.experimental_local_results(params[name])
        named[name] = list(zip([part.device for part in parts], sess.run(list(parts))))
    return named


def session_config(resolver):
    """The TF 1.13-1.15 Cloud TPU reference models' session config on a pod."""
    if not FLAGS.copy_cluster_def:
        return None
    config = tf.ConfigProto(allow_soft_placement=True, isolate_session_state=True)
    cluster_spec = resolver.cluster_spec()
    if cluster_spec:
        config.cluster_def.CopyFrom(cluster_spec.as_cluster_def())
    return config


def distributed_training(resolver, strategy, features, labels):
    input_fn_calls = []

    def input_fn(ctx):
        # Each host reads every H-th example and batches per replica; step s
        # then takes examples s*G .. s*G+G-1 over all hosts (see pod_ctl.py),
        # the global batch the single-device reference takes.
        per_replica = ctx.get_per_replica_batch_size(GLOBAL_BATCH)
        dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shard(
            ctx.num_input_pipelines, ctx.input_pipeline_id).batch(per_replica, drop_remainder=True)
        input_fn_calls.append([ctx.num_input_pipelines, ctx.input_pipeline_id, per_replica,
                               pod_report.dataset_host(dataset)])
        return dataset.repeat()

    with strategy.scope():
        params = make_params(seed=1)
        global_step = tf.train.get_or_create_global_step()
        optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE)
        iterator = strategy.make_input_fn_iterator(input_fn)

        def replica_step(inputs):
            loss = batch_loss(params, inputs)
            train = optimizer.minimize(loss, global_step=global_step)
            with tf.control_dependencies([train]):
                return tf.identity(loss)

        def step_fn(ctx, inputs):
            ctx.set_last_step_output(
                "loss", strategy.experimental_run_v2(replica_step, args=(inputs,)),
                reduce_op=tf.distribute.ReduceOp.SUM)
            return tf.no_op()

        loop = strategy.extended.experimental_run_steps_on_iterator(
            step_fn, iterator, iterations=FLAGS.steps_per_run, initial_loop_values={"loss": 0.0})
    pod_report.emit("INPUT_FN_CALLS", input_fn_calls)
    saver = tf.train.Saver()

    with tf.Session(resolver.master(), config=session_config(resolver)) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(iterator.initialize())
        losses = []
        for call in range(FLAGS.host_calls):
            _, loss = sess.run([loop.run_op, loop.last_step_outputs["loss"]])
            losses.append(float(loss))
            if call == 0:
                pod_report.emit("STEPS_AFTER_FIRST_HOST_CALL", int(sess.run(global_step)))
        pod_report.emit("STEPS", int(sess.run(global_step)))
        pod_report.emit("HOST_CALLS", FLAGS.host_calls)
        trained = pod_report.components_report("TRAINED", read_components(sess, strategy, params))
        path = saver.save(sess, os.path.join(FLAGS.model_dir, "model.ckpt"), global_step=global_step)
    return trained, losses, path


def restore_everywhere(resolver, strategy, path, trained):
    """A fresh graph, variables made in scope() with other values, restored."""
    with tf.Graph().as_default():
        with strategy.scope():
            params = make_params(seed=99)
            global_step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver()
        with tf.Session(resolver.master(), config=session_config(resolver)) as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, path)
            restored = pod_report.components_report(
                "RESTORED", read_components(sess, strategy, params))
            pod_report.emit("RESTORED_STEPS", int(sess.run(global_step)))
    absolute, _ = pod_report.max_differences([restored[n] for n in NAMES],
                                             [trained[n] for n in NAMES])
    pod_report.emit("RESTORE_MAX_ABS_DIFF", absolute)


def reference_training(features, labels):
    with tf.Graph().as_default():
        params = make_params(seed=1)
        batches = tf.data.make_one_shot_iterator(
            tf.data.Dataset.from_tensor_slices((features, labels)).batch(GLOBAL_BATCH))
        inputs = batches.get_next()
        loss = batch_loss(params, inputs)
        train = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = []
            for _ in range(FLAGS.host_calls):
                for _ in range(FLAGS.steps_per_run):
                    last, _ = sess.run([loss, train])
                losses.append(float(last))
            return sess.run({name: params[name] for name in NAMES}), losses


class HostCalls(tf.keras.callbacks.Callback):
    """TF 1.15's TPU fit loop calls batch-end callbacks once per host call."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_batch_end(self, batch, logs=None):
        self.steps.append(int(logs.get("num_steps", 1)))


def keras_fit(features, labels, strategy=None):
    """TF 1.15 Keras in graph mode: fit in scope() takes steps_per_run steps per host call."""
    with tf.Graph().as_default():
        if strategy is None:  # the reference: no strategy, a session of its own
            tf.keras.backend.set_session(tf.Session())
        with strategy.scope() if strategy else tf.Graph().as_default():
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(16, activation="tanh", input_shape=(8,)),
                tf.keras.layers.Dense(1)])
            model.compile(optimizer=tf.keras.optimizers.legacy.SGD(LEARNING_RATE), loss="mse")
            start = initial_values(seed=1)
            model.set_weights([start[name] for name in ("w1", "b1", "w2", "b2")])
            dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(
                GLOBAL_BATCH, drop_remainder=True)
            host_calls = HostCalls()
            model.fit(dataset, epochs=1, steps_per_epoch=len(features) // GLOBAL_BATCH,
                      callbacks=[host_calls], verbose=0)
            # NumPy arrays: Keras makes the dataset itself (on host 0, then a
            # copy on each host of a pod).
            model.fit(features, labels, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False,
                      callbacks=[host_calls], verbose=0)
            return model.get_weights(), host_calls.steps


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=FLAGS.steps_per_run)
    pod_report.worker_pids()
    pod_report.pod_semantics(strategy, resolver)

    features, labels = make_data(FLAGS.steps_per_run * FLAGS.host_calls)
    trained, losses, path = distributed_training(resolver, strategy, features, labels)
    written = sorted(os.listdir(FLAGS.model_dir))
    pod_report.emit("CHECKPOINT_FILES", written)
    pod_report.emit("CHECKPOINT_DATA_SHARDS", sum(".data-" in name for name in written))
    restore_everywhere(resolver, strategy, path, trained)

    reference, reference_losses = reference_training(features, labels)
    absolute, relative = pod_report.max_differences([trained[n] for n in NAMES],
                                                    [reference[n] for n in NAMES])
    pod_report.emit("REFERENCE_MAX_ABS_DIFF", absolute)
    pod_report.emit("REFERENCE_MAX_REL_DIFF", relative)
    keras_weights, keras_steps = keras_fit(features, labels, strategy)
    pod_report.emit("KERAS_STEPS_PER_HOST_CALL", keras_steps)
    keras_reference, _ = keras_fit(features, labels)
    absolute, relative = pod_report.max_differences(keras_weights, keras_reference)
    pod_report.emit("KERAS_REFERENCE_MAX_ABS_DIFF", absolute)
    pod_report.emit("RESULT", {
        "losses": losses, "reference_losses": reference_losses,
        "weights": [trained[n].tolist() for n in NAMES],
        "reference": [reference[n].tolist() for n in NAMES],
        "initial": [initial_values(1)[n].tolist() for n in NAMES],
        "keras_weights": [w.tolist() for w in keras_weights],
        "keras_reference": [w.tolist() for w in keras_reference]})


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
