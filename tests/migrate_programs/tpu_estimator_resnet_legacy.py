"""A TPUEstimator program with eval_metrics and host_call, as the TPU ResNet /
EfficientNet / MnasNet trainers wrote them for TF 1.14/1.15: absl flags, model_dir,
use_tpu, iterations_per_loop, a learning-rate schedule of the epoch, a
``host_call`` writing tf.compat.v2 summaries of the step's global step, loss,
learning rate and epoch to model_dir (its tensors reshaped to [1] so the outfeed
can concatenate them across replicas), and a ``metric_fn`` of tf.metrics.
Issue 36's third whole program: upgraded with ``--estimator-to-tf2``, run strict,
and compared with this run (losses, metrics, global step and the summaries).
The images are synthetic (a seeded RandomState), so no download is needed."""

import os

import numpy as np
import tensorflow.compat.v1 as tf
import tensorflow.compat.v2 as tf2
from absl import app, flags, logging

flags.DEFINE_string("tpu", None, "The Cloud TPU to use for training.")
flags.DEFINE_string("model_dir", None, "The directory where the model and summaries are stored.")
flags.DEFINE_bool("use_tpu", True, "Use TPU to execute the model for training and evaluation.")
flags.DEFINE_integer("train_batch_size", 32, "Batch size for training.")
flags.DEFINE_integer("eval_batch_size", 32, "Batch size for evaluation.")
flags.DEFINE_integer("train_steps", 8, "The number of steps to use for training.")
flags.DEFINE_integer("eval_steps", 2, "The number of steps to use for evaluation.")
flags.DEFINE_integer("iterations_per_loop", 4, "Number of steps to run on TPU before "
                     "outfeeding metrics to the CPU.")
flags.DEFINE_integer("num_cores", 8, "Number of TPU cores.")
flags.DEFINE_bool("skip_host_call", False, "Skip the host_call which is executed every "
                  "training step to write summaries.")
flags.DEFINE_float("base_learning_rate", 0.2, "Base learning rate at the batch size.")
flags.DEFINE_integer("predict_batch_size", 16, "Batch size for prediction.")
flags.DEFINE_integer("num_predict_images", 20, "Images to classify after training (0: none).")
FLAGS = flags.FLAGS

IMAGE, CLASSES, NUM_TRAIN_IMAGES = 8, 10, 128


def learning_rate_schedule(current_epoch):
  """Linear warm-up over the first epoch, then the base rate (ResNet's shape)."""
  warmup = tf.minimum(1.0, (current_epoch + 0.25))
  return FLAGS.base_learning_rate * warmup


def model_fn(features, labels, mode, params):
  """A small convolutional classifier of IMAGE x IMAGE images."""
  image = tf.reshape(features / 255., [-1, IMAGE, IMAGE, 1])
  net = tf.layers.conv2d(image, 4, 3, activation=tf.nn.relu, name="conv",
                         kernel_initializer=tf.glorot_uniform_initializer(seed=3))
  net = tf.layers.flatten(net)
  logits = tf.layers.dense(net, CLASSES, name="logits",
                           kernel_initializer=tf.glorot_uniform_initializer(seed=4))
  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {
        "classes": tf.argmax(logits, axis=1),
        "probabilities": tf.nn.softmax(logits, name="softmax_tensor")
    }
    return tf.estimator.tpu.TPUEstimatorSpec(mode=mode, predictions=predictions)

  one_hot_labels = tf.one_hot(labels, CLASSES)
  loss = tf.losses.softmax_cross_entropy(logits=logits, onehot_labels=one_hot_labels)

  host_call = None
  if mode == tf.estimator.ModeKeys.TRAIN:
    global_step = tf.train.get_global_step()
    steps_per_epoch = NUM_TRAIN_IMAGES / FLAGS.train_batch_size
    current_epoch = (tf.cast(global_step, tf.float32) / steps_per_epoch)
    learning_rate = learning_rate_schedule(current_epoch)
    optimizer = tf.train.MomentumOptimizer(learning_rate=learning_rate, momentum=0.9,
                                           use_nesterov=True)
    if FLAGS.use_tpu:
      optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step)

    if not FLAGS.skip_host_call:
      def host_call_fn(gs, loss, lr, ce):
        """Training host call: summaries of the step's tensors.

        Args:
          gs: `Tensor with shape `[batch]` for the global_step
          loss: `Tensor` with shape `[batch]` for the training loss.
          lr: `Tensor` with shape `[batch]` for the learning_rate.
          ce: `Tensor` with shape `[batch]` for the current_epoch.

        Returns:
          List of summary ops to run on the CPU host.
        """
        gs = gs[0]
        # Host call fns are executed FLAGS.iterations_per_loop times after one
        # TPU loop is finished, setting max_queue value to the same as number of
        # iterations will make the summary writer only flush the data to storage
        # once per loop.
        with tf2.summary.create_file_writer(
            FLAGS.model_dir, max_queue=FLAGS.iterations_per_loop).as_default():
          with tf2.summary.record_if(True):
            tf2.summary.scalar("loss", loss[0], step=gs)
            tf2.summary.scalar("mean_replica_loss", tf.reduce_mean(loss), step=gs)
            tf2.summary.scalar("learning_rate", lr[0], step=gs)
            tf2.summary.scalar("current_epoch", ce[0], step=gs)
          return tf.summary.all_v2_summary_ops()

      # To log the loss, current learning rate, and epoch for Tensorboard, the
      # summary op needs to be run on the host CPU via host_call. host_call
      # expects [batch_size, ...] Tensors, thus reshape to introduce a batch
      # dimension. These Tensors are implicitly concatenated to
      # [params['batch_size']].
      gs_t = tf.reshape(global_step, [1])
      loss_t = tf.reshape(loss, [1])
      lr_t = tf.reshape(learning_rate, [1])
      ce_t = tf.reshape(current_epoch, [1])
      host_call = (host_call_fn, [gs_t, loss_t, lr_t, ce_t])
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss, train_op=train_op, host_call=host_call)

  def metric_fn(labels, logits):
    """Evaluation metric function. Evaluates accuracy.

    Args:
      labels: `Tensor` with shape `[batch]`.
      logits: `Tensor` with shape `[batch, num_classes]`.

    Returns:
      A dict of the metrics to return from evaluation.
    """
    predictions = tf.argmax(logits, axis=1)
    top_1_accuracy = tf.metrics.accuracy(labels, predictions)
    in_top_5 = tf.cast(tf.nn.in_top_k(logits, labels, 5), tf.float32)
    top_5_accuracy = tf.metrics.mean(in_top_5)
    return {"top_1_accuracy": top_1_accuracy, "top_5_accuracy": top_5_accuracy}

  del params
  return tf.estimator.tpu.TPUEstimatorSpec(
      mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))


def dataset(count, seed):
  rng = np.random.RandomState(seed)
  images = rng.randint(0, 256, size=(count, IMAGE, IMAGE, 1)).astype(np.float32)
  labels = (images.reshape(count, -1)[:, :CLASSES].argmax(axis=1)).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices((images, labels))


def train_input_fn(params):
  return dataset(NUM_TRAIN_IMAGES, 0).repeat().batch(params["batch_size"],
                                                     drop_remainder=True)


def eval_input_fn(params):
  return dataset(64, 1).batch(params["batch_size"], drop_remainder=True)


def predict_input_fn(params):
  """Images only, the last batch partial (TPUEstimator pads it)."""
  images = dataset(FLAGS.num_predict_images, 2).map(lambda image, label: image)
  return images.batch(params["batch_size"])


def main(unused_argv):
  logging.set_verbosity(logging.INFO)
  tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
      FLAGS.tpu or os.environ.get("COLAB_TPU_ADDR", ""))

  config = tf.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.model_dir,
      save_checkpoints_steps=FLAGS.iterations_per_loop,
      log_step_count_steps=FLAGS.iterations_per_loop,
      tpu_config=tf.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_cores,
          per_host_input_for_training=tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2))

  resnet_classifier = tf.estimator.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu,
      model_fn=model_fn,
      config=config,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size)

  resnet_classifier.train(input_fn=train_input_fn, max_steps=FLAGS.train_steps)
  eval_results = resnet_classifier.evaluate(input_fn=eval_input_fn, steps=FLAGS.eval_steps)
  for key in sorted(eval_results):
    print("eval_%s: %.7g" % (key, eval_results[key]))
  for name in resnet_classifier.get_variable_names():
    if name.startswith(("conv", "logits")) and "Momentum" not in name:
      print("%s_sum: %.7g" % (name, np.sum(resnet_classifier.get_variable_value(name))))
  print("global_step: %d" % resnet_classifier.get_variable_value("global_step"))

  if FLAGS.num_predict_images:
    count = 0
    for i, prediction in enumerate(resnet_classifier.predict(input_fn=predict_input_fn)):
      print("prediction_%d_class: %d" % (i, prediction["classes"]))
      print("prediction_%d_top_probability: %.7g" % (i, max(prediction["probabilities"])))
      count += 1
    print("predictions: %d" % count)


if __name__ == "__main__":
  app.run(main)
