"""A BERT-style fine-tuning TPUEstimator program as TF 1.14/1.15 wrote it (the shape
of google-research/bert's run_classifier.py and optimization.py, written anew and
tiny): absl flags, output_dir as model_dir, use_tpu, iterations_per_loop, an
init_checkpoint warm start through scaffold_fn, a custom tf.train.Optimizer (Adam
with decoupled weight decay, apply_gradients overridden, slots made with
get_variable), a polynomial-decay learning rate with linear warmup, gradients by
tf.gradients clipped by global norm, the global step incremented by hand, and
eval_metrics with per-example weights. Issue 36's whole-program test upgrades it to
TF 2 (`--estimator-to-tf2`), runs the result strict and compares the numbers.
The tokens are synthetic (a seeded RandomState), so no download is needed."""

import collections
import re

import numpy as np
import tensorflow.compat.v1 as tf
from absl import app, flags, logging

flags.DEFINE_string("output_dir", None, "Where the model checkpoints are written.")
flags.DEFINE_string("init_checkpoint", None, "The pre-trained model's checkpoint.")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use for training.")
flags.DEFINE_bool("use_tpu", True, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_integer("num_tpu_cores", 8, "Total number of TPU cores to use.")
flags.DEFINE_integer("iterations_per_loop", 3, "How many steps per estimator call.")
flags.DEFINE_integer("save_checkpoints_steps", 3, "How often to save the checkpoint.")
flags.DEFINE_integer("train_batch_size", 16, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 16, "Total batch size for eval.")
flags.DEFINE_integer("num_train_steps", 6, "Total number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 2, "Steps of linear learning rate warmup.")
flags.DEFINE_integer("eval_steps", 2, "Evaluation batches.")
flags.DEFINE_float("learning_rate", 1e-3, "The initial learning rate for Adam.")
FLAGS = flags.FLAGS

VOCAB, HIDDEN, SEQ, LABELS = 32, 16, 8, 3


class AdamWeightDecayOptimizer(tf.train.Optimizer):
  """Adam whose weight decay is added to the update, not to the loss; no bias
  correction, as the BERT paper's optimizer."""

  def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999,
               epsilon=1e-6, exclude_from_weight_decay=None,
               name="AdamWeightDecayOptimizer"):
    super(AdamWeightDecayOptimizer, self).__init__(False, name)
    self.learning_rate = learning_rate
    self.weight_decay_rate = weight_decay_rate
    self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
    self.exclude_from_weight_decay = exclude_from_weight_decay

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    updates = []
    for grad, param in grads_and_vars:
      if grad is None or param is None:
        continue
      param_name = re.match("^(.*):\\d+$", param.name).group(1)
      m = tf.get_variable(name=param_name + "/adam_m", shape=param.shape.as_list(),
                          dtype=tf.float32, trainable=False,
                          initializer=tf.zeros_initializer())
      v = tf.get_variable(name=param_name + "/adam_v", shape=param.shape.as_list(),
                          dtype=tf.float32, trainable=False,
                          initializer=tf.zeros_initializer())
      next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
      next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
      update = next_m / (tf.sqrt(next_v) + self.epsilon)
      if self._decays(param_name):
        update += self.weight_decay_rate * param
      next_param = param - self.learning_rate * update
      updates.extend([param.assign(next_param), m.assign(next_m), v.assign(next_v)])
    return tf.group(*updates, name=name)

  def _decays(self, param_name):
    if not self.weight_decay_rate:
      return False
    for pattern in self.exclude_from_weight_decay or []:
      if re.search(pattern, param_name) is not None:
        return False
    return True


def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps, use_tpu):
  """The train op: warmup then linear decay, clipped gradients, step + 1."""
  global_step = tf.train.get_or_create_global_step()
  learning_rate = tf.train.polynomial_decay(
      tf.constant(init_lr, shape=[], dtype=tf.float32), global_step, num_train_steps,
      end_learning_rate=0.0, power=1.0, cycle=False)
  if num_warmup_steps:
    steps = tf.cast(tf.cast(global_step, tf.int32), tf.float32)
    warmup_steps = tf.cast(tf.constant(num_warmup_steps, dtype=tf.int32), tf.float32)
    warmup_lr = init_lr * steps / warmup_steps
    is_warmup = tf.cast(steps < warmup_steps, tf.float32)
    learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_lr

  optimizer = AdamWeightDecayOptimizer(
      learning_rate=learning_rate, weight_decay_rate=0.01,
      exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
  if use_tpu:
    optimizer = tf.tpu.CrossShardOptimizer(optimizer)

  tvars = tf.trainable_variables()
  grads = tf.gradients(loss, tvars)
  (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
  train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
  # The optimizer above does not touch global_step; BERT incremented it here.
  new_global_step = global_step + 1
  return tf.group(train_op, [global_step.assign(new_global_step)])


def create_model(input_ids, labels):
  """An embedding, a mean-pooled tanh pooler and a classifier (BERT's names)."""
  with tf.variable_scope("bert"):
    embeddings = tf.get_variable(
        "embeddings/word_embeddings", [VOCAB, HIDDEN],
        initializer=tf.truncated_normal_initializer(stddev=0.02, seed=3))
    sequence = tf.nn.embedding_lookup(embeddings, input_ids)
    pooled = tf.layers.dense(
        tf.reduce_mean(sequence, axis=1), HIDDEN, activation=tf.tanh, name="pooler/dense",
        kernel_initializer=tf.truncated_normal_initializer(stddev=0.02, seed=4))
  output_weights = tf.get_variable(
      "output_weights", [LABELS, HIDDEN],
      initializer=tf.truncated_normal_initializer(stddev=0.02, seed=5))
  output_bias = tf.get_variable("output_bias", [LABELS], initializer=tf.zeros_initializer())
  logits = tf.nn.bias_add(tf.matmul(pooled, output_weights, transpose_b=True), output_bias)
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  one_hot_labels = tf.one_hot(labels, depth=LABELS, dtype=tf.float32)
  per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
  return tf.reduce_mean(per_example_loss), per_example_loss, logits


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
  """The variables whose names the checkpoint holds, mapped name to name."""
  name_to_variable = collections.OrderedDict()
  for var in tvars:
    m = re.match("^(.*):\\d+$", var.name)
    name_to_variable[m.group(1) if m else var.name] = var
  assignment_map = collections.OrderedDict()
  initialized_variable_names = {}
  for name, _ in tf.train.list_variables(init_checkpoint):
    if name in name_to_variable:
      assignment_map[name] = name
      initialized_variable_names[name] = 1
      initialized_variable_names[name + ":0"] = 1
  return assignment_map, initialized_variable_names


def metric_fn(per_example_loss, label_ids, logits, is_real_example):
  predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
  accuracy = tf.metrics.accuracy(labels=label_ids, predictions=predictions,
                                 weights=is_real_example)
  loss = tf.metrics.mean(values=per_example_loss, weights=is_real_example)
  return {"eval_accuracy": accuracy, "eval_loss": loss}


def model_fn_builder(init_checkpoint, learning_rate, num_train_steps, num_warmup_steps,
                     use_tpu):
  def model_fn(features, labels, mode, params):
    del labels, params
    input_ids, label_ids = features["input_ids"], features["label_ids"]
    is_real_example = tf.cast(features["is_real_example"], tf.float32)
    total_loss, per_example_loss, logits = create_model(input_ids, label_ids)

    tvars = tf.trainable_variables()
    initialized_variable_names = {}
    scaffold_fn = None
    if init_checkpoint:
      assignment_map, initialized_variable_names = get_assignment_map_from_checkpoint(
          tvars, init_checkpoint)
      if use_tpu:
        def tpu_scaffold():
          tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
          return tf.train.Scaffold()
        scaffold_fn = tpu_scaffold
      else:
        tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
    for var in tvars:
      init_string = ", *INIT_FROM_CKPT*" if var.name in initialized_variable_names else ""
      logging.info("  name = %s, shape = %s%s", var.name, var.shape, init_string)

    if mode == tf.estimator.ModeKeys.TRAIN:
      train_op = create_optimizer(total_loss, learning_rate, num_train_steps,
                                  num_warmup_steps, use_tpu)
      return tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn)
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=total_loss, scaffold_fn=scaffold_fn,
        eval_metrics=(metric_fn, [per_example_loss, label_ids, logits, is_real_example]))
  return model_fn


def input_fn_builder(count, seed, is_training):
  rng = np.random.RandomState(seed)
  input_ids = rng.randint(0, VOCAB, size=(count, SEQ)).astype(np.int32)
  label_ids = (input_ids[:, 0] % LABELS).astype(np.int32)
  is_real = np.ones(count, np.int32)
  is_real[-count // 4:] = 0       # the eval set's padding examples, as run_classifier padded

  def input_fn(params):
    d = tf.data.Dataset.from_tensor_slices(
        {"input_ids": input_ids, "label_ids": label_ids, "is_real_example": is_real})
    if is_training:
      d = d.repeat()
    return d.batch(batch_size=params["batch_size"], drop_remainder=True)
  return input_fn


def main(_):
  logging.set_verbosity(logging.INFO)
  tpu_cluster_resolver = None
  if FLAGS.use_tpu:
    tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        FLAGS.tpu_name or "")
  run_config = tf.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      log_step_count_steps=FLAGS.iterations_per_loop,
      tpu_config=tf.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_tpu_cores,
          per_host_input_for_training=tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2))
  model_fn = model_fn_builder(FLAGS.init_checkpoint, FLAGS.learning_rate,
                              FLAGS.num_train_steps, FLAGS.num_warmup_steps, FLAGS.use_tpu)
  estimator = tf.estimator.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu, model_fn=model_fn, config=run_config,
      train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size)
  estimator.train(input_fn=input_fn_builder(64, 0, True), max_steps=FLAGS.num_train_steps)
  result = estimator.evaluate(input_fn=input_fn_builder(64, 1, False),
                              steps=FLAGS.eval_steps)
  for key in sorted(result):
    print("%s: %.7g" % (key, result[key]))
  for name in estimator.get_variable_names():
    if not name.endswith(("adam_m", "adam_v")) and name != "global_step":
      print("%s_sum: %.7g" % (name, np.sum(estimator.get_variable_value(name))))


if __name__ == "__main__":
  app.run(main)
