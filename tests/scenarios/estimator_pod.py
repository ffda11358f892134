"""A TF 1.15 TPUEstimator program, as run on a TPU pod slice (BERT/ResNet era).

absl flags, ``TPUClusterResolver(tpu='')``, ``RunConfig(cluster=...)``,
``per_host_input_for_training=PER_HOST_V2``, and an ``input_fn`` that reads
its host's shard of the data through ``params['context']``, as the Cloud TPU
reference models did on pods. Trains (resuming from ``--model_dir``),
evaluates and predicts from the checkpoints, writes ``host_call`` summaries.

The test runs it unchanged under ``tpu-compat run --tf1`` on 2 hosts x 4
cores (``TPU_COMPAT_NUM_HOSTS=2``), on 1 host x 8 and with ``--nouse_tpu``;
the ``KEY: number`` lines must agree. ``--survey`` also trains two steps
with each input pipeline mode and prints how ``input_fn`` was called
(``input_calls_<mode>``, ``input_batch_<mode>``, ``input_deployment_<mode>``).
"""
import glob
import os
import tempfile

import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", True, "Whether to use TPU or CPU.")
flags.DEFINE_string("tpu", "", "The Cloud TPU to use ('' on Colab / a TPU VM).")
flags.DEFINE_string("model_dir", None, "Where checkpoints and summaries go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size for training.")
flags.DEFINE_integer("eval_batch_size", 16, "Global batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Global batch size for predict.")
flags.DEFINE_integer("iterations_per_loop", 4, "Steps per Session.run on the TPU.")
flags.DEFINE_integer("num_train_steps", 10, "Total training steps.")
flags.DEFINE_bool("survey", False, "Also train 2 steps with each input pipeline mode.")

NUM_EXAMPLES, NUM_FEATURES = 256, 8
rng = np.random.RandomState(0)
X = rng.randn(NUM_EXAMPLES, NUM_FEATURES).astype(np.float32)
Y = (X.dot(np.arange(1, 9, dtype=np.float32).reshape(8, 1)) + 0.5
     + 0.1 * rng.randn(NUM_EXAMPLES, 1).astype(np.float32))
IDS = np.arange(NUM_EXAMPLES, dtype=np.int32)
INPUT_CALLS = []  # (batch_size, deployment, dataset device) of each input_fn call


def report(key, value):
    print("%s: %.9g" % (key, value))


def input_fn_builder(first, count, is_training, drop_remainder=True):
    def input_fn(params):
        batch_size = params["batch_size"]
        d = tf.data.Dataset.from_tensor_slices(
            ({"x": X[first:first + count], "id": IDS[first:first + count]},
             Y[first:first + count]))
        deployment = None
        if "context" in params:
            # On a pod, each host (each core with per-core input) reads its own
            # shard, as the Cloud TPU reference models did.
            deployment = params["context"].current_input_fn_deployment()
            _, index, invocations, _ = deployment
            d = d.shard(invocations, index)
        if is_training:
            d = d.repeat()
        d = d.batch(batch_size, drop_remainder=drop_remainder)
        INPUT_CALLS.append((batch_size, deployment, d._variant_tensor.device))
        if params.get("per_core"):  # per-core input took tensors, not datasets
            return tf.data.make_one_shot_iterator(d).get_next()
        return d
    return input_fn


def model_fn(features, labels, mode, params):
    hidden = tf.get_variable("hidden", [8, 4], initializer=tf.constant_initializer(0.05))
    w = tf.get_variable("w", [4, 1], initializer=tf.constant_initializer(0.1))
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(tf.nn.tanh(tf.matmul(features["x"], hidden)), w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.tpu.TPUEstimatorSpec(
            mode, predictions={"y": prediction, "id": features["id"]})
    loss = tf.losses.mean_squared_error(labels, prediction)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.MomentumOptimizer(0.02, 0.9)
        if params["use_tpu"]:
            optimizer = tf.tpu.CrossShardOptimizer(optimizer)
        global_step = tf.train.get_global_step()
        train_op = optimizer.minimize(loss, global_step=global_step)

        def host_call_fn(gs, loss):
            with tf.compat.v2.summary.create_file_writer(
                    os.path.join(params["summary_dir"])).as_default():
                tf.compat.v2.summary.write("host_loss", tf.reduce_mean(loss),
                                           step=gs[0])
                return tf.summary.all_v2_summary_ops()
        return tf.estimator.tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op,
            host_call=(host_call_fn, [tf.reshape(global_step, [1]),
                                      tf.reshape(loss, [1])]))

    def metric_fn(labels, prediction):
        return {"mse": tf.metrics.mean_squared_error(labels, prediction),
                "mae": tf.metrics.mean_absolute_error(labels, prediction)}
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, prediction]))


def make_estimator(model_dir, cluster, input_pipeline, params=None):
    run_config = tf.estimator.tpu.RunConfig(
        cluster=cluster, model_dir=model_dir, save_checkpoints_steps=5,
        log_step_count_steps=None,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop,
            per_host_input_for_training=input_pipeline))
    return tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=run_config, use_tpu=FLAGS.use_tpu,
        params=dict(params or {}, summary_dir=os.path.join(model_dir, "host_call")),
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size)


def report_input_calls(tag, calls):
    report("input_calls_" + tag, len(calls))
    report("input_batch_" + tag, calls[0][0])
    for index, (_, deployment, device) in enumerate(calls):
        if deployment is not None:
            _, invocation, total, replicas = deployment
            print("input_deployment_%s_%d: %d/%d feeds %d replicas on %s" % (
                tag, index, invocation, total, replicas, device))


def report_weights(prefix, estimator):
    report(prefix + "_global_step", estimator.get_variable_value("global_step"))
    for name in ("hidden", "w", "b"):
        report("%s_%s_sum" % (prefix, name), estimator.get_variable_value(name).sum())


def main(_):
    tf.logging.set_verbosity(tf.logging.ERROR)
    model_dir = FLAGS.model_dir or tempfile.mkdtemp(prefix="estimator_pod_")
    cluster = None
    if FLAGS.use_tpu:
        cluster = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
        print("resolver_master: %s" % cluster.master())
        report("num_hosts", cluster.get_tpu_system_metadata().num_hosts)
    report_pod_workers()
    per_host_v2 = tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2

    # Train 6 steps, then a new estimator resumes from model_dir to 10.
    train_input = input_fn_builder(0, NUM_EXAMPLES, is_training=True)
    make_estimator(model_dir, cluster, per_host_v2).train(train_input, max_steps=6)
    report_input_calls("train", INPUT_CALLS)
    print("run_config_master: %s" % make_estimator(
        model_dir, cluster, per_host_v2).config.master)
    resumed = make_estimator(model_dir, cluster, per_host_v2)
    resumed.train(train_input, max_steps=FLAGS.num_train_steps)
    report_weights("train", resumed)
    checkpoints = sorted(glob.glob(os.path.join(model_dir, "model.ckpt-*.index")))
    report("checkpoints", len(checkpoints))
    report("checkpoint_data_files", len(glob.glob(
        os.path.join(model_dir, "model.ckpt-%d.data-*" % FLAGS.num_train_steps))))
    report("train_event_files", len(glob.glob(
        os.path.join(model_dir, "events.out.tfevents.*"))))
    steps = []
    for path in glob.glob(os.path.join(model_dir, "host_call", "events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            steps += [event.step for value in event.summary.value
                      if value.tag == "host_loss"]
    report("host_call_events", len(steps))
    report("host_call_distinct_steps", len(set(steps)))
    report("host_call_last_step", max(steps))

    # Evaluate (a new estimator: restores the checkpoint) on 64 held-out examples.
    del INPUT_CALLS[:]
    result = make_estimator(model_dir, cluster, per_host_v2).evaluate(
        input_fn_builder(NUM_EXAMPLES - 64, 64, is_training=False),
        steps=64 // FLAGS.eval_batch_size)
    report_input_calls("eval", INPUT_CALLS)
    for key in ("mse", "mae", "global_step"):
        report("eval_" + key, result[key])
    report("eval_event_files", len(glob.glob(
        os.path.join(model_dir, "eval", "events.out.tfevents.*"))))

    # Predict 17 examples: on 2 hosts, 9 + 8, so host 1's input ends first.
    del INPUT_CALLS[:]
    predictions = list(make_estimator(model_dir, cluster, per_host_v2).predict(
        input_fn_builder(0, 17, is_training=False, drop_remainder=False)))
    report_input_calls("predict", INPUT_CALLS)
    report("predict_count", len(predictions))
    report("predict_distinct_ids", len({int(p["id"]) for p in predictions}))
    report("predict_sum", sum(float(p["y"][0]) for p in predictions))
    report("predict_id_weighted_sum",
           sum((int(p["id"]) + 1) * float(p["y"][0]) for p in predictions))

    if FLAGS.survey:
        survey(cluster)


def survey(cluster):
    """Two training steps with each input pipeline mode: calls and weights."""
    modes = tf.estimator.tpu.InputPipelineConfig
    for tag, mode in (("per_host_v1", modes.PER_HOST_V1), ("per_host_v2", modes.PER_HOST_V2),
                      ("broadcast", modes.BROADCAST), ("per_shard_v1", modes.PER_SHARD_V1)):
        del INPUT_CALLS[:]
        params = {"per_core": mode == modes.PER_SHARD_V1 and FLAGS.use_tpu}
        estimator = make_estimator(tempfile.mkdtemp(prefix=tag), cluster, mode, params)
        estimator.train(input_fn_builder(0, NUM_EXAMPLES, is_training=True), max_steps=2)
        report_input_calls(tag, INPUT_CALLS)
        report_weights("survey_" + tag, estimator)


def report_pod_workers():
    """The pod's worker processes, for the test to check that none survives it.

    Asked of the launcher, not read from /proc: under the test suite's fork
    server a worker is the server's child and has the server's command line."""
    from tpu_compat.pod import launch  # pylint: disable=import-outside-toplevel
    for pid in sorted(launch.worker_pids()):
        print("pod_worker_pid_%s: %s" % (pid, pid))


if __name__ == "__main__":
    app.run(main)
