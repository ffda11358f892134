"""A Cloud AI Platform TPU template-style TF 1.x program (issue 22, item 1).

Written as those templates were (GoogleCloudPlatform/cloudml-samples
tpu/templates): argparse flags, ``model_dir``, ``tf.contrib.data.AUTOTUNE``
in the input_fn, ``tf.contrib.summary`` in a host_call,
``tf.contrib.tpu.TPUEstimator`` / ``RunConfig`` / ``TPUConfig`` and
``tf.contrib.cluster_resolver``. Run under ``tpu-compat run --tf1``; prints
``KEY: number`` lines the test checks against a numpy reference.
"""
import argparse
import glob
import os

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir", required=True)
parser.add_argument("--tpu", default=None)
parser.add_argument("--use_tpu", action="store_true")
parser.add_argument("--train_batch_size", type=int, default=16)
parser.add_argument("--train_steps", type=int, default=12)
parser.add_argument("--iterations_per_loop", type=int, default=4)
parser.add_argument("--learning_rate", type=float, default=0.05)
args = parser.parse_args()

rng = np.random.RandomState(0)
FEATURES = rng.randn(64, 4).astype(np.float32)
LABELS = (FEATURES.dot(np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)) + 0.25).astype(
    np.float32)


def input_fn(params):
    batch_size = params["batch_size"]
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat()
    dataset = dataset.map(lambda x, y: ({"x": x}, y),
                          num_parallel_calls=tf.contrib.data.AUTOTUNE)
    dataset = dataset.apply(tf.contrib.data.batch_and_drop_remainder(batch_size))
    return dataset.prefetch(tf.contrib.data.AUTOTUNE)


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    predictions = tf.matmul(features["x"], w) + b
    loss = tf.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(args.learning_rate)
        if params["use_tpu"]:
            optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
        global_step = tf.train.get_global_step()
        train_op = optimizer.minimize(loss, global_step=global_step)

        def host_call_fn(gs, loss):
            gs = gs[0]
            with tf.contrib.summary.create_file_writer(
                    args.model_dir, max_queue=args.iterations_per_loop).as_default():
                with tf.contrib.summary.always_record_summaries():
                    tf.contrib.summary.scalar("loss", loss[0], step=gs)
                    return tf.contrib.summary.all_summary_ops()

        host_call = (host_call_fn, [tf.reshape(global_step, [1]), tf.reshape(loss, [1])])
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                               host_call=host_call)

    def metric_fn(labels, predictions):
        return {"mse": tf.metrics.mean_squared_error(labels, predictions)}
    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss,
                                           eval_metrics=(metric_fn, [labels, predictions]))


def main():
    tpu_cluster_resolver = None
    if args.use_tpu:
        tpu_cluster_resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=args.tpu)
    config = tf.contrib.tpu.RunConfig(
        cluster=tpu_cluster_resolver, model_dir=args.model_dir,
        save_checkpoints_steps=args.train_steps,
        tpu_config=tf.contrib.tpu.TPUConfig(
            iterations_per_loop=args.iterations_per_loop,
            per_host_input_for_training=tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2))
    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=args.use_tpu,
        train_batch_size=args.train_batch_size, eval_batch_size=args.train_batch_size)
    estimator.train(input_fn, max_steps=args.train_steps)
    for name in ("w", "b"):
        for index, value in enumerate(estimator.get_variable_value(name).ravel()):
            print("%s_%d: %.9g" % (name, index, value))
    metrics = estimator.evaluate(input_fn, steps=64 // args.train_batch_size)
    print("eval_mse: %.9g" % metrics["mse"])
    # The host_call's summaries, as TensorBoard reads them from model_dir:
    # tf.contrib.summary's writer names its event files *.v2 (TF 1.15
    # summary_ops_v2.create_file_writer); the Estimator's own summary hook
    # writes a "loss" of its own to another file in the same directory.
    losses = {}
    for path in glob.glob(os.path.join(args.model_dir, "events.out.tfevents.*.v2")):
        for event in tf.train.summary_iterator(path):
            for value in event.summary.value:
                # "loss_1": summary_ops_v2 makes the tag unique in the graph,
                # which already has the loss op named "loss".
                if value.tag.startswith("loss"):
                    losses[event.step] = tf.make_ndarray(value.tensor) if value.HasField(
                        "tensor") else value.simple_value
    print("summary_count: %d" % len(losses))
    for step in sorted(losses):
        print("summary_loss_%d: %.9g" % (step, float(losses[step])))


if __name__ == "__main__":
    main()
