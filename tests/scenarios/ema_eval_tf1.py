"""A TF 1.15 TPUEstimator image-model trainer's EMA pattern (EfficientNet/ResNet main.py style).

absl flags, ``model_dir``, ``use_tpu``, ``iterations_per_loop``, ``num_cores``:
training applies ``tf.train.ExponentialMovingAverage`` after each step, and
evaluation restores the moving averages in place of the weights with a
``scaffold_fn`` building ``tf.train.Saver(ema.variables_to_restore(ema_vars))``.

Prints ``KEY: number`` lines: the evaluation's loss and mean prediction, and
both recomputed in NumPy from the checkpoint's ``ExponentialMovingAverage``
values (EMA_*), and from its raw weights (RAW_*).
"""
import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", False, "Run on the TPU.")
flags.DEFINE_string("tpu", "", "TPU name.")
flags.DEFINE_string("model_dir", None, "Where the checkpoints go.")
flags.DEFINE_integer("train_batch_size", 16, "Global batch size.")
flags.DEFINE_integer("eval_batch_size", 16, "Global eval batch size.")
flags.DEFINE_integer("train_steps", 4, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 2, "Steps per TPU loop.")
flags.DEFINE_integer("num_cores", 8, "TPU cores.")
flags.DEFINE_float("moving_average_decay", 0.5, "EMA decay.")

rng = np.random.RandomState(9)
X = rng.randn(64, 3).astype(np.float32)
Y = X.dot(np.array([[1.0], [-2.0], [0.5]], np.float32)) + 0.3


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)


def get_ema_vars():
    """EfficientNet's utils.get_ema_vars: trainable variables and moving stats."""
    return tf.trainable_variables() + [
        v for v in tf.global_variables() if "moving_" in v.name]


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(features, w) + b
    loss = tf.losses.mean_squared_error(labels, prediction)
    global_step = tf.train.get_global_step()
    ema = tf.train.ExponentialMovingAverage(FLAGS.moving_average_decay,
                                            num_updates=global_step)
    ema_vars = get_ema_vars()
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        if FLAGS.use_tpu:
            optimizer = tf.tpu.CrossShardOptimizer(optimizer)
        train_op = optimizer.minimize(loss, global_step=global_step)
        with tf.control_dependencies([train_op]):
            train_op = ema.apply(ema_vars)
        return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    restore_vars_dict = ema.variables_to_restore(ema_vars)

    def scaffold_fn():
        saver = tf.train.Saver(restore_vars_dict)
        return tf.train.Scaffold(saver=saver)

    def metric_fn(prediction):
        return {"mean_prediction": tf.metrics.mean(prediction)}
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [prediction]), scaffold_fn=scaffold_fn)


def report(prefix, w, b):
    prediction = X[:32].dot(w) + b
    squared_error = (prediction - Y[:32]) ** 2
    print(f"{prefix}_loss: {float(np.mean(squared_error))!r}")
    print(f"{prefix}_mean_prediction: {float(np.mean(prediction))!r}")
    # TF 1.15 TPUEstimator's eval loss is the first core's (tpu.shard with
    # outputs_from_all_shards=False): its rows of each of the 2 batches.
    per_core = FLAGS.eval_batch_size // FLAGS.num_cores
    first_core = np.concatenate([squared_error[:per_core], squared_error[16:16 + per_core]])
    print(f"{prefix}_first_core_loss: {float(np.mean(first_core))!r}")


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
    config = tf.estimator.tpu.RunConfig(
        cluster=resolver if FLAGS.use_tpu else None, model_dir=FLAGS.model_dir,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop, num_shards=FLAGS.num_cores))
    estimator = tf.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size)
    estimator.train(input_fn, max_steps=FLAGS.train_steps)
    result = estimator.evaluate(input_fn, steps=2)
    print(f"eval_loss: {float(result['loss'])!r}")
    print(f"eval_mean_prediction: {float(result['mean_prediction'])!r}")
    value = estimator.get_variable_value
    report("EMA", value("w/ExponentialMovingAverage"), value("b/ExponentialMovingAverage"))
    report("RAW", value("w"), value("b"))


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
