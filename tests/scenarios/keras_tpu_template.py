"""The AI Platform TPU template of TF 1.11-1.13 (cloudml-samples tpu/templates/tpu_lstm_keras/trainer.py).

usage: tpu-compat run --tf1 --replicas N keras_tpu_template.py --model_dir DIR --num_cores N

argparse flags, ``TPUClusterResolver(tpu=FLAGS.tpu)``, the model converted with
``keras_to_tpu_model`` and compiled AFTER the conversion with
``tf.keras.optimizers.SGD(lr=...)``; ``fit(train_input_fn, steps_per_epoch, epochs,
validation_data=eval_input_fn, validation_steps)`` where each input function returns
fixed-shape batches of ``--batch_size`` (per core: each core pulls its own batch);
``evaluate(eval_input_fn, steps)``; ``save_weights`` under ``model_dir`` and
``load_weights`` into a fresh CPU model. Then the same model on one device, in a
fresh graph, fitting the global batches (``--num_cores`` consecutive batches).
Prints ``RESULT {json}``.
"""
import argparse
import json
import os
import sys

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--tpu", default="")
parser.add_argument("--model_dir", required=True)
parser.add_argument("--batch_size", type=int, default=4)
parser.add_argument("--train_steps", type=int, default=2)
parser.add_argument("--num_epochs", type=int, default=2)
parser.add_argument("--learning_rate", type=float, default=0.1)
parser.add_argument("--num_cores", type=int, required=True)  # only the reference reads it
FLAGS = parser.parse_args()

TIME_STEPS, FEATURES = 5, 3
ARRAY_BATCH = 64  # the global batch of the array fit
ARRAY_STEPS = 2  # its steps: the second starts from the first's TPU weights
rng = np.random.RandomState(11)
series = rng.randn(2048, TIME_STEPS, FEATURES).astype(np.float32)
targets = (series.sum(axis=(1, 2)) > 0).astype(np.float32).reshape(-1, 1)
array_x, array_y = series[:ARRAY_STEPS * ARRAY_BATCH], targets[:ARRAY_STEPS * ARRAY_BATCH]


def make_input_fn(start, batch_size):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((series[start:], targets[start:]))
        return dataset.repeat().batch(batch_size, drop_remainder=True)
    return input_fn


def build_model():
    inputs = tf.keras.layers.Input(shape=(TIME_STEPS, FEATURES))
    # The template's LSTM: its gradient is a while loop that a TPU compiles only on
    # static per-core shapes, which --fidelity tpu (tpu-compat run's default) checks.
    hidden = tf.keras.layers.LSTM(6)(inputs)
    outputs = tf.keras.layers.Dense(1, activation="sigmoid")(hidden)
    return tf.keras.models.Model(inputs, outputs)


def history_of(history):
    return {k: [float(v) for v in vs] for k, vs in history.history.items()}


# -- the program, as the template wrote it --------------------------------------
model = build_model()
initial_weights = model.get_weights()
resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)
tpu_model = tf.contrib.tpu.keras_to_tpu_model(
    model, strategy=tf.contrib.tpu.TPUDistributionStrategy(resolver))
tpu_model.compile(optimizer=tf.keras.optimizers.SGD(lr=FLAGS.learning_rate),
                  loss="binary_crossentropy", metrics=["accuracy"])
history = tpu_model.fit(make_input_fn(0, FLAGS.batch_size), steps_per_epoch=FLAGS.train_steps,
                        epochs=FLAGS.num_epochs,
                        validation_data=make_input_fn(1024, FLAGS.batch_size),
                        validation_steps=2, verbose=0)
evaluation = tpu_model.evaluate(make_input_fn(1024, FLAGS.batch_size), steps=2, verbose=0)
# The template's TF 1.10 revision fed arrays, fit(x, y, batch_size=GLOBAL): a second
# per-core batch size, so a second static-shape specialization of the same weights.
array_history = tpu_model.fit(array_x, array_y,
                              batch_size=ARRAY_BATCH, epochs=1, shuffle=False, verbose=0)
tf.gfile.MakeDirs(FLAGS.model_dir)
weights_path = os.path.join(FLAGS.model_dir, "model.h5")
tpu_model.save_weights(weights_path, overwrite=True)
errors = {}
for name, call in {
        "dataset_directly": lambda: tpu_model.fit(make_input_fn(0, 4)(), steps_per_epoch=1),
        "no_steps": lambda: tpu_model.fit(make_input_fn(0, 4)),
        "unknown_batch": lambda: tpu_model.fit(
            lambda: tf.data.Dataset.from_tensor_slices((series, targets)).batch(4),
            steps_per_epoch=1)}.items():
    try:
        call()
        errors[name] = None
    except ValueError as error:
        errors[name] = str(error)
distributed = {"history": history_of(history),
               "evaluate": [float(v) for v in evaluation],
               "array_history": history_of(array_history),
               "weights": [w.tolist() for w in tpu_model.get_weights()],
               "errors": errors}
restored_model = build_model()
restored_model.load_weights(weights_path)
distributed["restored"] = [w.tolist() for w in restored_model.get_weights()]

# -- the reference: one device fitting the global batches --------------------------
global_batch = FLAGS.batch_size * FLAGS.num_cores
with tf.Graph().as_default(), tf.Session() as reference_session:
    tf.keras.backend.set_session(reference_session)
    reference_model = build_model()
    reference_model.set_weights(initial_weights)
    reference_model.compile(optimizer=tf.keras.optimizers.SGD(lr=FLAGS.learning_rate),
                            loss="binary_crossentropy", metrics=["accuracy"])
    history = reference_model.fit(
        make_input_fn(0, global_batch)(), steps_per_epoch=FLAGS.train_steps,
        epochs=FLAGS.num_epochs, validation_data=make_input_fn(1024, global_batch)(),
        validation_steps=2, verbose=0)
    reference = {"history": history_of(history),
                 "evaluate": [float(v) for v in reference_model.evaluate(
                     make_input_fn(1024, global_batch)(), steps=2, verbose=0)]}
    reference["array_history"] = history_of(reference_model.fit(
        array_x, array_y, batch_size=ARRAY_BATCH,
        epochs=1, shuffle=False, verbose=0))
    reference["weights"] = [w.tolist() for w in reference_model.get_weights()]

print("RESULT " + json.dumps({"distributed": distributed, "reference": reference}))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # graph-mode tf.data teardown can stall (see keras_tf115_graph.py)
