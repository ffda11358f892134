"""TPUEstimator parity: one program, run on 1/2/8 emulated cores and with use_tpu=False.

Prints ``KEY: number`` lines that must not depend on where it ran (the test
compares them across runs), plus a few that hold only within a run. Written
as a TF 1.x model_fn/input_fn program; the process itself is a TF 2 (eager)
process, which the Estimator's graphs do not mind.

Usage: estimator_parity.py tpu|cpu [--errors]
"""
import glob
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as tf1

USE_TPU = sys.argv[1] == "tpu"
TRAIN_BATCH, EVAL_BATCH, PREDICT_BATCH = 16, 16, 8
rng = np.random.RandomState(0)
X = rng.randn(256, 8).astype(np.float32)
Y = (X.dot(np.arange(1, 9, dtype=np.float32).reshape(8, 1)) + 0.5
     + 0.1 * rng.randn(256, 1).astype(np.float32))
ROOT = tempfile.mkdtemp()


def report(key, value):
    print("%s: %.9g" % (key, value))


def input_fn(params):
    dataset = tf1.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    hidden = tf1.get_variable("hidden", [8, 4], initializer=tf1.constant_initializer(0.05))
    w = tf1.get_variable("w", [4, 1], initializer=tf1.constant_initializer(0.1))
    b = tf1.get_variable("b", [1], initializer=tf1.zeros_initializer())
    if params.get("extra_variable"):
        tf1.get_variable("extra", [3], initializer=tf1.zeros_initializer())
    prediction = tf1.matmul(tf1.nn.tanh(tf1.matmul(features["x"], hidden)), w) + b
    if mode == tf1.estimator.ModeKeys.PREDICT:
        return tf1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"y": prediction})
    loss = tf1.losses.mean_squared_error(labels, prediction)
    scaffold_fn = None
    if params.get("init_checkpoint"):
        assignment = {v.name.split(":")[0]: v.name.split(":")[0]
                      for v in tf1.trainable_variables()}

        def scaffold_fn():
            tf1.train.init_from_checkpoint(params["init_checkpoint"], assignment)
            return tf1.train.Scaffold()
    if mode == tf1.estimator.ModeKeys.TRAIN:
        optimizer = tf1.train.MomentumOptimizer(params.get("lr", 0.02), 0.9)
        if params["use_tpu"] and not params.get("no_cross_shard"):
            optimizer = tf1.tpu.CrossShardOptimizer(optimizer)
        global_step = tf1.train.get_global_step()
        train_op = optimizer.minimize(loss, global_step=global_step)
        host_call = None
        if params.get("host_call"):
            def host_call_fn(gs, loss):
                with tf.summary.create_file_writer(params["summary_dir"]).as_default():
                    tf.summary.write("host_loss", tf1.reduce_mean(loss), step=gs[0])
                    return tf1.summary.all_v2_summary_ops()
            host_call = (host_call_fn, [tf1.reshape(global_step, [1]),
                                        tf1.reshape(loss, [1])])
        return tf1.estimator.tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op, host_call=host_call,
            scaffold_fn=scaffold_fn)

    def metric_fn(labels, prediction):
        if params.get("bad_metric_fn"):
            return {"mse": tf1.reduce_mean(tf1.square(labels - prediction))}
        return {"mse": tf1.metrics.mean_squared_error(labels, prediction),
                "mae": tf1.metrics.mean_absolute_error(labels, prediction)}
    if params.get("estimator_spec_in_eval"):
        return tf1.estimator.EstimatorSpec(mode, loss=loss)
    return tf1.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, prediction]),
        scaffold_fn=scaffold_fn)


def estimator(name, iterations_per_loop=4, params=None, eval_on_tpu=True,
              train_batch_size=TRAIN_BATCH, model_dir=None):
    config = tf1.estimator.tpu.RunConfig(
        model_dir=model_dir or os.path.join(ROOT, name), save_checkpoints_steps=1000,
        keep_checkpoint_max=3, log_step_count_steps=None,
        tpu_config=tf1.estimator.tpu.TPUConfig(
            iterations_per_loop=iterations_per_loop,
            per_host_input_for_training=tf1.estimator.tpu.InputPipelineConfig.PER_HOST_V2
            if name.endswith("_v2") else True))
    return tf1.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, params=params, use_tpu=USE_TPU,
        eval_on_tpu=eval_on_tpu, train_batch_size=train_batch_size,
        eval_batch_size=EVAL_BATCH, predict_batch_size=PREDICT_BATCH)


def report_weights(prefix, est):
    report(prefix + "_global_step", est.get_variable_value("global_step"))
    for name in ("hidden", "w", "b"):
        report("%s_%s_sum" % (prefix, name), est.get_variable_value(name).sum())


def errors():
    """Each bad input gets a clear error naming the argument."""
    def check(key, needle, fn):
        try:
            fn()
        except Exception as error:  # pylint: disable=broad-except
            print("%s_message: %s" % (key, str(error).replace("\n", " ")[:300]))
            report(key, 1 if needle in str(error) else 0)
            return
        report(key, 0)
    replicas = 8
    check("error_batch", "train_batch_size",
          lambda: estimator("bad_batch", train_batch_size=replicas * 2 + 4).train(
              input_fn, max_steps=1))
    check("error_estimator_spec", "TPUEstimatorSpec",
          lambda: estimator("bad_spec", params={"estimator_spec_in_eval": True}).evaluate(
              input_fn, steps=1))
    check("error_metric_fn", "metric_fn",
          lambda: estimator("bad_metric", params={"bad_metric_fn": True}).evaluate(
              input_fn, steps=1))
    check("error_checkpoint", "model_dir",
          lambda: estimator("ipl4", params={"extra_variable": True}).train(
              input_fn, steps=1))
    # TF 1.15 raised this for a TF 1.x program (control flow v1); a TF 2
    # program trains without it (tests/test_estimator_era.py).
    tf1.disable_control_flow_v2()
    try:
        check("error_cross_shard", "CrossShardOptimizer",
              lambda: estimator("bad_optimizer", params={"no_cross_shard": True}).train(
                  input_fn, max_steps=1))
    finally:
        tf1.enable_control_flow_v2()


def main():
    # Training: iterations_per_loop 1, 4 and 3 (does not divide 10).
    for per_loop in (1, 4, 3):
        est = estimator("ipl%d" % per_loop, iterations_per_loop=per_loop)
        est.train(input_fn, max_steps=10)
        report_weights("train_ipl%d" % per_loop, est)
    v2 = estimator("ipl4_v2")
    v2.train(input_fn, max_steps=10)
    report_weights("train_per_host_v2", v2)

    # Resume from model_dir: 5 steps, then a new estimator trains 5 more.
    estimator("resume", iterations_per_loop=3).train(input_fn, max_steps=5)
    resumed = estimator("resume", iterations_per_loop=3)
    resumed.train(input_fn, steps=5)
    report_weights("resume", resumed)

    # Evaluate with eval_metrics, on the TPU and on the CPU.
    trained = estimator("ipl4")
    for on_tpu in (True, False):
        result = estimator("ipl4", eval_on_tpu=on_tpu).evaluate(input_fn, steps=4)
        tag = "eval_on_tpu" if on_tpu else "eval_on_cpu"
        report(tag + "_mse", result["mse"])
        report(tag + "_mae", result["mae"])
        report(tag + "_global_step", result["global_step"])
        print("%s_replica0_loss: %.9g" % (tag, result["loss"]))

    # Predict (20 examples, batches of 8: the last one is partial).
    def predict_input_fn(params):
        return tf1.data.Dataset.from_tensor_slices({"x": X[:20]}).batch(
            params["batch_size"])
    predictions = [p["y"][0] for p in trained.predict(predict_input_fn)]
    report("predict_count", len(predictions))
    report("predict_sum", float(np.sum(predictions)))
    report("predict_first", predictions[0])

    # export_saved_model -> tf.saved_model.load -> the same predictions.
    receiver_fn = tf1.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 8], tf.float32)})
    export_dir = trained.export_saved_model(os.path.join(ROOT, "export"), receiver_fn)
    loaded = tf.saved_model.load(export_dir.decode())
    served = loaded.signatures["serving_default"](x=tf.constant(X[:20]))
    served = served["y"].numpy()[:, 0]
    report("export_max_abs_diff", float(np.max(np.abs(served - predictions))))
    report("export_sum", float(served.sum()))

    # init_from_checkpoint in scaffold_fn: lr 0 keeps the loaded values.
    init = estimator("init", params={"init_checkpoint": trained.latest_checkpoint(),
                                     "lr": 0.0})
    init.train(input_fn, max_steps=2)
    report("init_w_diff", float(np.abs(init.get_variable_value("w")
                                       - trained.get_variable_value("w")).max()))
    report_weights("init", init)

    # host_call: summaries written on the host, one per step.
    summary_dir = os.path.join(ROOT, "host_call_summaries")
    estimator("host_call", iterations_per_loop=3,
              params={"host_call": True, "summary_dir": summary_dir}).train(
                  input_fn, max_steps=7)
    steps, values = [], []
    for path in glob.glob(os.path.join(summary_dir, "events.out.tfevents.*")):
        for event in tf1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "host_loss":
                    steps.append(event.step)
                    values.append(float(tf.make_ndarray(value.tensor)))
    report("host_call_events", len(steps))
    report("host_call_last_step", max(steps) if steps else -1)

    if "--errors" in sys.argv:
        errors()


main()
