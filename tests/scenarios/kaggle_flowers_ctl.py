"""A Kaggle "Flower Classification with TPUs" notebook of 2020 (TF 2.1-2.2), its custom loop.

usage: tpu-compat run --replicas N kaggle_flowers_ctl.py --data_dir DIR

Written as those notebooks were: TPU detection by ``TPUClusterResolver()`` inside
``try/except ValueError`` with a ``get_strategy()`` fallback,
``experimental_connect_to_cluster`` / ``initialize_tpu_system`` /
``tf.distribute.experimental.TPUStrategy``, mixed precision switched on by
``from tensorflow.keras.mixed_precision import experimental as mixed_precision``
plus XLA by ``tf.config.optimizer.set_jit(True)``, TFRecords read with
``num_parallel_reads=AUTO`` and ``experimental_deterministic = False``, and a
training loop of ``STEPS_PER_TPU_CALL`` steps of ``strategy.experimental_run_v2``
inside one ``tf.function``. The notebooks read GCS through ``KaggleDatasets``;
this one writes its small TFRecord files under ``--data_dir`` first. Prints
``KEY: number`` lines.
"""
import os
import re

import numpy as np
import tensorflow as tf
from absl import app, flags

flags.DEFINE_string("data_dir", None, "Where the TFRecord files are written and read.")
FLAGS = flags.FLAGS

IMAGE_SIZE = [16, 16]
CLASSES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
EPOCHS = 3


def write_tfrecords(directory):
    # Stand-in for the competition's files: each class a brightness band.
    rng = np.random.RandomState(0)
    os.makedirs(directory, exist_ok=True)
    for split, count in (("train", 192), ("val", 64)):
        with tf.io.TFRecordWriter(os.path.join(directory, "%s00-%d.tfrec" % (split, count))) as writer:
            for index in range(count):
                label = index % len(CLASSES)
                pixels = (rng.rand(*IMAGE_SIZE, 3) * 40 + label * 50).astype(np.uint8)
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[tf.io.encode_jpeg(pixels).numpy()])),
                    "class": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }
                writer.write(tf.train.Example(
                    features=tf.train.Features(feature=feature)).SerializeToString())


def main(argv):
    del argv
    # Detect hardware, return appropriate distribution strategy
    try:
        tpu = tf.distribute.cluster_resolver.TPUClusterResolver()  # TPU_NAME is set on Kaggle
        print("Running on TPU ", tpu.master())
    except ValueError:
        tpu = None
    if tpu:
        tf.config.experimental_connect_to_cluster(tpu)
        tf.tpu.experimental.initialize_tpu_system(tpu)
        strategy = tf.distribute.experimental.TPUStrategy(tpu)
    else:
        strategy = tf.distribute.get_strategy()
    print("REPLICAS: ", strategy.num_replicas_in_sync)

    MIXED_PRECISION = True
    XLA_ACCELERATE = True
    if MIXED_PRECISION:
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
        if tpu:
            policy = tf.keras.mixed_precision.experimental.Policy("mixed_bfloat16")
        else:
            policy = tf.keras.mixed_precision.experimental.Policy("mixed_float16")
        mixed_precision.set_policy(policy)
        print("Mixed precision enabled")
    if XLA_ACCELERATE:
        tf.config.optimizer.set_jit(True)
        print("Accelerated Linear Algebra enabled")

    AUTO = tf.data.experimental.AUTOTUNE
    BATCH_SIZE = 4 * strategy.num_replicas_in_sync
    write_tfrecords(FLAGS.data_dir)
    TRAINING_FILENAMES = tf.io.gfile.glob(FLAGS.data_dir + "/train*.tfrec")
    VALIDATION_FILENAMES = tf.io.gfile.glob(FLAGS.data_dir + "/val*.tfrec")

    def decode_image(image_data):
        image = tf.image.decode_jpeg(image_data, channels=3)
        image = tf.cast(image, tf.float32) / 255.0
        return tf.reshape(image, [*IMAGE_SIZE, 3])  # explicit size needed for TPU

    def read_labeled_tfrecord(example):
        example = tf.io.parse_single_example(example, {
            "image": tf.io.FixedLenFeature([], tf.string),
            "class": tf.io.FixedLenFeature([], tf.int64)})
        return decode_image(example["image"]), tf.cast(example["class"], tf.int32)

    def load_dataset(filenames, ordered=False):
        ignore_order = tf.data.Options()
        if not ordered:
            ignore_order.experimental_deterministic = False  # disable order, increase speed
        dataset = tf.data.TFRecordDataset(filenames, num_parallel_reads=AUTO)
        dataset = dataset.with_options(ignore_order)
        return dataset.map(read_labeled_tfrecord, num_parallel_calls=AUTO)

    def get_training_dataset():
        dataset = load_dataset(TRAINING_FILENAMES)
        dataset = dataset.map(lambda image, label: (tf.image.random_flip_left_right(image), label),
                              num_parallel_calls=AUTO)
        dataset = dataset.repeat().shuffle(2048).batch(BATCH_SIZE, drop_remainder=True)
        return dataset.prefetch(AUTO)

    def get_validation_dataset(ordered=False):
        dataset = load_dataset(VALIDATION_FILENAMES, ordered=ordered)
        return dataset.batch(BATCH_SIZE, drop_remainder=True).cache().prefetch(AUTO)

    def count_data_items(filenames):
        return np.sum([int(re.compile(r"-([0-9]*)\.").search(f).group(1)) for f in filenames])

    NUM_TRAINING_IMAGES = count_data_items(TRAINING_FILENAMES)
    NUM_VALIDATION_IMAGES = count_data_items(VALIDATION_FILENAMES)
    STEPS_PER_EPOCH = NUM_TRAINING_IMAGES // BATCH_SIZE
    STEPS_PER_TPU_CALL = 3
    VALIDATION_STEPS_PER_TPU_CALL = NUM_VALIDATION_IMAGES // BATCH_SIZE

    def lrfn(epoch):
        return 0.002 * strategy.num_replicas_in_sync * 0.8 ** epoch

    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(8, 3, activation="relu", input_shape=[*IMAGE_SIZE, 3]),
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(len(CLASSES)),
            tf.keras.layers.Activation("softmax", dtype="float32"),  # outputs in float32
        ])
        optimizer = tf.keras.optimizers.Adam(lr=lrfn(0))
        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
        valid_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
        train_loss = tf.keras.metrics.Sum()
        loss_fn = lambda a, b: tf.nn.compute_average_loss(  # noqa: E731
            tf.keras.losses.sparse_categorical_crossentropy(a, b), global_batch_size=BATCH_SIZE)

    @tf.function
    def train_step(data_iter):
        def train_step_fn(images, labels):
            with tf.GradientTape() as tape:
                probabilities = model(images, training=True)
                loss = loss_fn(labels, probabilities)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            train_accuracy.update_state(labels, probabilities)
            train_loss.update_state(loss)
        for _ in tf.range(STEPS_PER_TPU_CALL):
            strategy.experimental_run_v2(train_step_fn, next(data_iter))

    @tf.function
    def valid_step(data_iter):
        def valid_step_fn(images, labels):
            probabilities = model(images, training=False)
            valid_accuracy.update_state(labels, probabilities)
        for _ in tf.range(VALIDATION_STEPS_PER_TPU_CALL):
            strategy.experimental_run_v2(valid_step_fn, next(data_iter))

    train_data_iter = iter(strategy.experimental_distribute_dataset(get_training_dataset()))
    valid_data_iter = iter(strategy.experimental_distribute_dataset(
        get_validation_dataset().repeat()))
    step = 0
    epoch = 0
    calls = 0
    while True:
        train_step(train_data_iter)
        calls += 1
        step += STEPS_PER_TPU_CALL
        if (step // STEPS_PER_EPOCH) > epoch:
            valid_step(valid_data_iter)
            # train_loss sums each step's global-batch mean over the epoch's steps.
            print("epoch_%d_loss: %.6g" % (epoch, train_loss.result().numpy() / STEPS_PER_EPOCH))
            print("epoch_%d_accuracy: %.6g" % (epoch, train_accuracy.result().numpy()))
            print("epoch_%d_val_accuracy: %.6g" % (epoch, valid_accuracy.result().numpy()))
            epoch = step // STEPS_PER_EPOCH
            train_accuracy.reset_states()
            valid_accuracy.reset_states()
            train_loss.reset_states()
            optimizer.learning_rate.assign(lrfn(epoch))
            if epoch >= EPOCHS:
                break

    print("replicas: %d" % strategy.num_replicas_in_sync)
    print("host_calls: %d" % calls)
    print("optimizer_iterations: %d" % optimizer.iterations.numpy())
    print("steps_per_epoch: %d" % STEPS_PER_EPOCH)
    print("compute_is_bfloat16: %d" % (model.layers[0].compute_dtype == "bfloat16"))
    print("variables_are_float32: %d" % all(v.dtype == tf.float32 for v in model.weights))
    print("output_is_float32: %d" % (model(tf.zeros([1, *IMAGE_SIZE, 3])).dtype == tf.float32))
    print("learning_rate: %.6g" % optimizer.learning_rate.numpy())


if __name__ == "__main__":
    app.run(main)
