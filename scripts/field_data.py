"""Synthetic data for the field programs (scripts/field_recipes.py).

Run as ``python scripts/field_data.py KIND DIR [key=value ...]`` by the field
runner, in its own process: it imports TensorFlow (to write TFRecords and
JPEGs in the formats the programs parse), which the runner itself never does.
Every generator is seeded, so two runs of a program see the same data.

Kinds:
  cifar_tfrecords   train.tfrecords of random CIFAR-10-shaped examples
  keras_fashion_mnist  Fashion-MNIST idx files in the keras.datasets cache
                    (HOME is the run's temporary home; train/test counts)
  mnist_tfrecords   train/validation/test.tfrecords of 28x28 uint8 images
                    (image_raw bytes, label int64), as models/official/mnist
                    reads them
  bert_pretraining  pretrain.tfrecord with BERT's pre-training features
                    (input_ids, input_mask, segment_ids, masked_lm_*,
                    next_sentence_labels), plus bert_config.json; keys:
                    seq (128), preds (20), vocab (100), n (64), dropout
                    (0.1: bert_config.json's hidden_dropout_prob and
                    attention_probs_dropout_prob), same (0; 1: every
                    training example a copy of the first, so the programs'
                    record shuffles draw nothing that changes a batch)
  electra           pretrain_tfrecords/pretrain_data.tfrecord-0 (input_ids,
                    input_mask, segment_ids) and vocab.txt under DIR
  tfds_standin      a ``tensorflow_datasets`` module under DIR/site that serves
                    ``builder(name).as_dataset(...)`` from seeded random images
                    (keys: size (32), classes (10), n (64)); the programs
                    that need it use nothing else of tfds. It is NOT
                    tensorflow_datasets: the report says so for every program
                    that used it.
  classifier_tsv    a GLUE MRPC-shaped train.tsv/dev.tsv and a vocab.txt, for
                    BERT's run_classifier
"""

import json
import os
import sys

import numpy as np

SEED = 1234


def _tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # noqa: PLC0415  (only this subprocess imports it)
    return tf


def _int64(tf, values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _float(tf, values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def _bytes(tf, value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def mnist_tfrecords(out, n="256"):
    tf = _tf()
    rng = np.random.default_rng(SEED)
    for split in ("train", "validation", "test"):
        with tf.io.TFRecordWriter(os.path.join(out, f"{split}.tfrecords")) as writer:
            for _ in range(int(n)):
                image = rng.integers(0, 256, size=(28, 28), dtype=np.uint8)
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image_raw": _bytes(tf, image.tobytes()),
                    "label": _int64(tf, [rng.integers(0, 10)]),
                }))
                writer.write(example.SerializeToString())


def cifar_tfrecords(out, n="256"):
    """CIFAR-10 as models/experimental/cifar_keras parses it: image (3072 uint8 bytes), label."""
    tf = _tf()
    rng = np.random.default_rng(SEED)
    with tf.io.TFRecordWriter(os.path.join(out, "train.tfrecords")) as writer:
        for _ in range(int(n)):
            example = tf.train.Example(features=tf.train.Features(feature={
                "image": _bytes(tf, rng.integers(0, 256, size=3 * 32 * 32, dtype=np.uint8).tobytes()),
                "label": _int64(tf, [rng.integers(0, 10)]),
            }))
            writer.write(example.SerializeToString())


def _vocab(out, size):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(size - 5)]
    with open(os.path.join(out, "vocab.txt"), "w") as stream:
        stream.write("\n".join(words) + "\n")


def bert_pretraining(out, seq="128", preds="20", vocab="100", n="64", sentence_order="0", tsv="0",
                     dropout="0.1", same="0"):
    """``dropout``/``same`` are for --mode estimator-tf2 (issue 36): with dropout 0 BERT's
    modeling.dropout() adds no op, and with ``same`` the hard-coded ``shuffle(buffer_size=100)``
    of BERT's and ALBERT's training input_fn (and run_classifier's) permutes identical records,
    so training draws nothing random and two programs' losses can be compared exactly."""
    tf = _tf()
    if tsv != "0":
        classifier_tsv(out, vocab=vocab, same_train=same)
    seq, preds, vocab, n = int(seq), int(preds), int(vocab), int(n)
    rng = np.random.default_rng(SEED)
    config = {"attention_probs_dropout_prob": float(dropout), "hidden_act": "gelu",
              "hidden_dropout_prob": float(dropout),
              "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
              "max_position_embeddings": max(seq, 128), "num_attention_heads": 2, "num_hidden_layers": 2,
              "type_vocab_size": 2, "vocab_size": vocab, "embedding_size": 16}
    with open(os.path.join(out, "bert_config.json"), "w") as stream:
        json.dump(config, stream, indent=1)
    _vocab(out, vocab)
    with tf.io.TFRecordWriter(os.path.join(out, "pretrain.tfrecord")) as writer:
        for _ in range(n):
            if same != "0":
                rng = np.random.default_rng(SEED)  # each record drawn as the first was
            length = int(rng.integers(seq // 2, seq + 1))
            ids = np.zeros(seq, np.int64)
            ids[:length] = rng.integers(5, vocab, size=length)
            mask = (np.arange(seq) < length).astype(np.int64)
            segments = ((np.arange(seq) >= length // 2) & (mask > 0)).astype(np.int64)
            positions = np.zeros(preds, np.int64)
            count = min(preds, length)
            positions[:count] = np.sort(rng.choice(length, size=count, replace=False))
            lm_ids = np.where(np.arange(preds) < count, ids[positions], 0)
            weights = (np.arange(preds) < count).astype(np.float32)
            feature = {
                "input_ids": _int64(tf, ids), "input_mask": _int64(tf, mask),
                "segment_ids": _int64(tf, segments), "masked_lm_positions": _int64(tf, positions),
                "masked_lm_ids": _int64(tf, lm_ids), "masked_lm_weights": _float(tf, weights),
                "next_sentence_labels": _int64(tf, [rng.integers(0, 2)]),
            }
            if sentence_order != "0":
                feature["token_boundary"] = _int64(tf, np.ones(seq, np.int64))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def electra(out, seq="128", vocab="100", n="64"):
    tf = _tf()
    seq, vocab, n = int(seq), int(vocab), int(n)
    rng = np.random.default_rng(SEED)
    _vocab(out, vocab)
    records = os.path.join(out, "pretrain_tfrecords")
    os.makedirs(records, exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(records, "pretrain_data.tfrecord-0-of-1")) as writer:
        for _ in range(n):
            length = int(rng.integers(seq // 2, seq + 1))
            ids = np.zeros(seq, np.int64)
            ids[0], ids[1:length] = 2, rng.integers(5, vocab, size=length - 1)
            mask = (np.arange(seq) < length).astype(np.int64)
            example = tf.train.Example(features=tf.train.Features(feature={
                "input_ids": _int64(tf, ids), "input_mask": _int64(tf, mask),
                "segment_ids": _int64(tf, np.zeros(seq, np.int64)),
            }))
            writer.write(example.SerializeToString())


def classifier_tsv(out, vocab="100", n="64", same_train="0"):
    """``same_train``: every train.tsv row the same pair and label (dev and test stay
    distinct), so run_classifier's training shuffle permutes identical records."""
    rng = np.random.default_rng(SEED)
    _vocab(out, int(vocab))
    for split in ("train", "dev", "test"):
        with open(os.path.join(out, f"{split}.tsv"), "w") as stream:
            stream.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
            for i in range(int(n)):
                if split == "train" and same_train != "0":
                    rng = np.random.default_rng(SEED)
                a = " ".join(f"w{j}" for j in rng.integers(0, int(vocab) - 5, size=12))
                b = " ".join(f"w{j}" for j in rng.integers(0, int(vocab) - 5, size=12))
                stream.write(f"{rng.integers(0, 2)}\t{i}\t{i + 1000}\t{a}\t{b}\n")


_TFDS_STANDIN = '''"""Field-runner stand-in for tensorflow_datasets: seeded random images only.

Written by scripts/field_data.py (tpu_compat's field runner); serves the few
calls the field programs make: builder(name, data_dir).download_and_prepare(),
.info.splits[split].num_examples, .info.features['label'].num_classes,
.as_dataset(split, shuffle_files, as_supervised, read_config), ReadConfig.
"""
import numpy as _np
import tensorflow as _tf

SIZE, CLASSES, N = {size}, {classes}, {n}


class ReadConfig(object):
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class _Split(object):
    num_examples = N


class _Label(object):
    num_classes = CLASSES


class _Info(object):
    splits = {{"train": _Split(), "test": _Split(), "validation": _Split()}}
    features = {{"label": _Label()}}


class _Builder(object):
    info = _Info()

    def download_and_prepare(self, *args, **kwargs):
        return None

    def as_dataset(self, split=None, shuffle_files=False, as_supervised=False, read_config=None, **kwargs):
        rng = _np.random.RandomState(1234)
        images = rng.randint(0, 256, size=(N, SIZE, SIZE, 3)).astype(_np.uint8)
        labels = rng.randint(0, CLASSES, size=(N,)).astype(_np.int64)
        dataset = _tf.data.Dataset.from_tensor_slices((images, labels))
        if not as_supervised:
            dataset = dataset.map(lambda image, label: {{"image": image, "label": label}})
        return dataset


def builder(name, data_dir=None, **kwargs):
    return _Builder()
'''


def tfds_standin(out, size="32", classes="10", n="64"):
    site = os.path.join(os.path.dirname(out.rstrip("/")), "site", "tensorflow_datasets")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "__init__.py"), "w") as stream:
        stream.write(_TFDS_STANDIN.format(size=int(size), classes=int(classes), n=int(n)))


def keras_fashion_mnist(out, train="2048", test="512"):
    """Fashion-MNIST's four idx .gz files where tf.keras.datasets looks first (no hash is checked)."""
    import gzip  # noqa: PLC0415
    import struct  # noqa: PLC0415
    rng = np.random.default_rng(SEED)
    cache = os.path.join(os.path.dirname(out.rstrip("/")), "home", ".keras", "datasets", "fashion-mnist")
    os.makedirs(cache, exist_ok=True)
    for prefix, n in (("train", int(train)), ("t10k", int(test))):
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        with gzip.open(os.path.join(cache, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as stream:
            stream.write(struct.pack(">II", 2049, n) + labels.tobytes())
        with gzip.open(os.path.join(cache, f"{prefix}-images-idx3-ubyte.gz"), "wb") as stream:
            stream.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())


KINDS = {"keras_fashion_mnist": keras_fashion_mnist, "cifar_tfrecords": cifar_tfrecords, "mnist_tfrecords": mnist_tfrecords, "bert_pretraining": bert_pretraining, "electra": electra,
         "tfds_standin": tfds_standin, "classifier_tsv": classifier_tsv}


def main(argv):
    if len(argv) < 2 or argv[0] not in KINDS:
        sys.exit(f"usage: field_data.py {{{','.join(KINDS)}}} DIR [key=value ...]")
    kind, out, *pairs = argv
    options = dict(pair.split("=", 1) for pair in pairs)
    os.makedirs(out, exist_ok=True)
    KINDS[kind](out, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
