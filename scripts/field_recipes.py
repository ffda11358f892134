"""Recipes of the field runner (scripts/field_programs.py): one row per program.

Each names a public repository, a pinned commit and the program's path; the
program's OWN flags shrink it (a couple of steps, tiny batches, model_dir in a
temporary directory); ``data_gen`` names the synthetic data
scripts/field_data.py writes first; ``expect`` is the program's own success
line (a regular expression over its output; exit 0 is always required).
``survey`` says how the program was chosen (docs/field.md). Placeholders in
``args``: {model_dir}, {data_dir}, {tmp}.

No code of these programs is stored here: the runner extracts the pinned
commit from the fetched snapshot at run time.
"""

from typing import NamedTuple, Optional, Tuple

ERAS = ("TF 1.x", "TF 2.0-2.3")
KINDS = ("TPUEstimator", "TPUStrategy custom loop", "Keras fit", "Keras fit (contrib TPU)",
         "low-level tf.tpu", "Estimator + train_distribute", "TPUStrategy bring-up (library)")
PLACEHOLDERS = ("model_dir", "data_dir", "tmp")
DATA_KINDS = ("cifar_tfrecords", "keras_fashion_mnist", "mnist_tfrecords", "bert_pretraining", "electra", "tfds_standin", "classifier_tsv")


class Recipe(NamedTuple):
    name: str
    repo: str
    commit: str
    program: str            # path inside the extracted tree (prefix included)
    era: str
    kind: str
    args: Tuple[str, ...]
    survey: str             # how it was chosen
    data: str               # what synthetic data it gets, in words
    expect: Optional[str] = None
    data_gen: Optional[Tuple[str, ...]] = None   # (kind, "key=value", ...) for field_data.py
    tf1: bool = False       # `tpu-compat run --tf1` (programs that `import tensorflow as tf` in TF 1.x)
    extract: Tuple[str, ...] = ()   # repository paths to extract (default: all)
    prefix: str = ""        # extract under this directory (packages imported by the repo's name)
    pythonpath: Tuple[str, ...] = ()  # tree-relative roots the program's imports need
    cwd: str = ""           # tree-relative working directory (default: the program's directory)
    upgrade_root: str = ""  # tree-relative directory `upgrade` rewrites (default: the tree)
    cells: Optional[int] = None     # notebooks: run the first N code cells only
    env: dict = {}
    timeout: float = 300.0
    # --mode estimator-tf2 (issue 36): regular expressions of the printed lines whose numbers
    # the migrated run must repeat (every number in each matched text, in order); empty: the
    # TPUEstimator lines of NUMBERS below.
    numbers: Tuple[str, ...] = ()
    # --mode estimator-tf2's evaluation of one checkpoint: flags the reference run gets to
    # evaluate its final checkpoint (``eval_args``), and the flags of a second migrated run that
    # only evaluates a copy of that model_dir (``eval_only_args``). Training draws dropout masks
    # and shuffles that no two programs draw alike; an evaluation of the same weights does not.
    eval_args: Tuple[str, ...] = ()
    eval_only_args: Tuple[str, ...] = ()
    # --mode estimator-tf2's data (default: ``data_gen``), for both of its runs: the same data
    # with the program's own knobs set so that training draws nothing random (dropout 0 in the
    # config file the program reads; training records a shuffle cannot reorder), since a TF 1
    # graph and a TF 2 function draw unseeded dropout masks and shuffles differently.
    tf2_data_gen: Optional[Tuple[str, ...]] = None
    # The lines the evaluation of that checkpoint must repeat; empty: EVAL_NUMBERS.
    eval_numbers: Tuple[str, ...] = ()


# The lines TPUEstimator prints and the TF 2 driver (tpu_estimator_tf2.py) prints the same way:
# the training loss each loop, the final loss, and the evaluation's metrics.
NUMBERS = (r"\bloss = [-+.\deEna]+, step = \d+", r"Loss for final step: [-+.\deEna]+",
           r"Saving dict for global step \d+: .*")
EVAL_NUMBERS = (r"Saving dict for global step \d+: .*",)


# Pinned commits (all present in the fetched snapshots).
TPU_2020 = "0d4120fb5edfa2272d681366282460b867eb0803"      # tensorflow/tpu, 2020-02-25 (TF 1.15, compat.v1)
TPU_2019 = "ed449e1777eeca53918e9fd07a09a348d5839a08"      # tensorflow/tpu, 2019-02-28 (TF 1.13, contrib)
SIMCLR = "6bf69ce127ae33e181e1a6c5777c84570cb5d147"        # google-research/simclr, 2021-01-21 (TF1 run.py + tf2/)
BERT = "eedf5716ce1268e56f0a50264a88cafad334ac61"          # google-research/bert, 2020-03-11
ALBERT = "c47c04087b1f1d3ce2fe4f69c0f8ff255fc400b2"        # google-research/albert, 2019-12-06
TPU_2021 = "da262fcba1d0598321d4eb9aa1954fcbf84d1807"      # tensorflow/tpu, 2021-02-25 (TF 2.x Colabs)
ELECTRA = "8a46635f32083ada044d7e9ad09604742600ee7b"       # google-research/electra, 2021-03-31
CLOUDML = "efddc4a9898127e55edc0946557aca4bfaf59705"       # GoogleCloudPlatform/cloudml-samples (TPU templates of 2019-04)
TPU_TF2 = "770897b229e39bf01fdad0622448efe66d70311a"       # ashishpatel26/tpu_tf2, 2021-12-15
# The two Colabs' plotting (matplotlib) and metrics (scikit-learn) imports come from --site, as
# Colab's image had them: matplotlib 3.11.2, scikit-learn 1.9.1 (docs/field.md's site list).
SINE_SITE = "matplotlib and scikit-learn from --site (the Colab image had them)"

# The trainers' own synthetic-input switch: ImageNetInput builds a null batch when data_dir is 'null'
# (their FAKE_DATA_DIR default is a GCS bucket of fake ImageNet, out of reach here).
FAKE_IMAGENET = "--data_dir=null"
# In --mode=train the trainers print nothing of their own at the end; the Estimator's last line is
# the success criterion (a number, not nan: "Loss for final step: 7.05.").
TRAINED = r"Loss for final step: \d"
TPU_FORKS = ("tensorflow/tpu; {n} indexed repositories hold `{path}` (forks and copies, find_files)")

RECIPES = [
    Recipe(
        name="tpu-mnist", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/official/mnist/mnist_tpu.py", era="TF 1.x", kind="TPUEstimator",
        args=("--data_dir={data_dir}", "--model_dir={model_dir}", "--batch_size=64", "--train_steps=4",
              "--eval_steps=1", "--iterations=2", "--num_shards=8", "--use_tpu=True"),
        data_gen=("mnist_tfrecords", "n=256"), data="256 random 28x28 images per split as MNIST TFRecords",
        expect=r'Prediction is "\d"', extract=("models/official/mnist",),
        # The legacy model_dir is at --train_steps already: train() returns at once, as
        # Estimator.train did, and evaluate and predict run on the legacy weights.
        eval_only_args=("--train_steps=4",),
        eval_numbers=(r"Saving dict for global step \d+: .*", r'Prediction is "\d" \([\d.]+%\)'),
        survey=TPU_FORKS.format(n=7, path="models/official/mnist/mnist_tpu.py")
               + "; the Cloud TPU MNIST tutorial's program"),
    Recipe(
        name="tpu-resnet", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/official/resnet/resnet_main.py", era="TF 1.x", kind="TPUEstimator",
        args=(FAKE_IMAGENET, "--model_dir={model_dir}", "--mode=train", "--train_steps=2",
              "--train_batch_size=16", "--iterations_per_loop=1", "--resnet_depth=18", "--image_size=64",
              "--num_train_images=64", "--num_parallel_calls=2"),
        data="the program's own null input (--data_dir=null)", extract=("models",),
        # 300 s was the unchanged run's budget; the migrated run traces model_fn twice (the
        # variables, then the loop): 473 s at load 10 (2026-11-29).
        pythonpath=("models",), expect=TRAINED, timeout=900,
        survey=TPU_FORKS.format(n=25, path="models/official/resnet/resnet_main.py")),
    Recipe(
        name="tpu-resnet-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/official/resnet/resnet_main.py", era="TF 1.x", kind="TPUEstimator", tf1=True,
        # Here --param_overrides is a multi_string flag, one key=value each (resnet_params.override
        # splits each on '='); the comma-separated form came with the hyperparameters rewrite.
        args=(FAKE_IMAGENET, "--model_dir={model_dir}", "--mode=train",
              *(f"--param_overrides={pair}" for pair in (
                  "train_steps=2", "train_batch_size=16", "iterations_per_loop=1", "resnet_depth=18",
                  "num_train_images=64", "num_parallel_calls=2"))),
        data="the program's own null input (--data_dir=null)", extract=("models",),
        pythonpath=("models",), expect=TRAINED,
        survey="the same trainer as tpu-resnet, in its TF 1.13 form (`import tensorflow as tf`, tf.contrib); "
               "most of the 25 indexed copies of resnet_main.py were forked before the compat.v1 rewrite"),
    Recipe(
        name="tpu-efficientnet", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/official/efficientnet/main.py", era="TF 1.x", kind="TPUEstimator",
        args=(FAKE_IMAGENET, "--model_dir={model_dir}", "--mode=train", "--train_steps=2",
              "--train_batch_size=16", "--iterations_per_loop=1", "--model_name=efficientnet-b0",
              "--input_image_size=64", "--num_train_images=64", "--num_parallel_calls=2"),
        data="the program's own null input (--data_dir=null)", extract=("models",),
        pythonpath=("models", "models/common"), expect=TRAINED, timeout=600,
        survey=TPU_FORKS.format(n=14, path="models/official/efficientnet/main.py")
               + "; EfficientNet's reference trainer"),
    Recipe(
        name="tpu-mnasnet", repo="tensorflow/tpu", commit=TPU_2020,
        program="tpu/models/official/mnasnet/mnasnet_main.py", era="TF 1.x", kind="TPUEstimator",
        # mnas_utils.py appends 'tpu/models/official/efficientnet' to sys.path: run from the
        # directory holding the `tpu` checkout, as its README does.
        prefix="tpu", cwd=".",
        args=(FAKE_IMAGENET, "--model_dir={model_dir}", "--mode=train", "--train_steps=2",
              "--train_batch_size=16", "--iterations_per_loop=1", "--model_name=mnasnet-a1",
              "--input_image_size=64", "--num_train_images=64", "--num_parallel_calls=2"),
        data="the program's own null input (--data_dir=null)", extract=("models",),
        # Budget: building the 8 replicas' MnasNet graph takes most of it (at 1bc110d under load
        # 10: 14.5 min to the graph, 10 more to the first step, not done in 1500 s; at 3771514,
        # sessions placing only what they run (runtime/pod_sessions.py), 446 s on a quiet machine).
        pythonpath=("tpu/models", "tpu/models/common"), expect=TRAINED, timeout=1500,
        survey=TPU_FORKS.format(n=5, path="models/official/mnasnet/mnasnet_main.py")
               + "; the MnasNet/MixNet trainer"),
    Recipe(
        name="tpu-mobilenet-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/official/mobilenet/mobilenet.py", era="TF 1.x", kind="TPUEstimator", tf1=True,
        args=("--use_data=fake", "--model_dir={model_dir}", "--mode=train", "--train_steps=2",
              "--train_batch_size=16", "--iterations=1", "--depth_multiplier=0.25", "--moving_average=True"),
        data="the program's own fake data (--use_data=fake)", extract=("models",),
        pythonpath=("models",), expect=None,
        survey=TPU_FORKS.format(n=6, path="models/official/mobilenet/mobilenet.py")
               + "; the MobileNet v1 trainer of TF 1.13"),
    Recipe(
        name="tpu-inception-v3-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/experimental/inception/inception_v3.py", era="TF 1.x", kind="TPUEstimator", tf1=True,
        args=("--use_data=fake", "--model_dir={model_dir}", "--mode=train", "--train_steps=2",
              "--train_batch_size=16", "--iterations=1", "--moving_average=True"),
        data="the program's own fake data (--use_data=fake)", extract=("models",),
        pythonpath=("models",), expect=None, timeout=600,
        survey=TPU_FORKS.format(n=4, path="models/experimental/inception/inception_v3.py")
               + "; the Cloud TPU Inception v3 tutorial's program"),
    Recipe(
        name="tpu-amoebanet-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/official/amoeba_net/amoeba_net.py", era="TF 1.x", kind="TPUEstimator", tf1=True,
        # No --train_steps: the program trains num_epochs * ceil(num_train_images / train_batch_size)
        # steps, so 1 epoch of 32 images at 16 a batch is its 2 steps.
        args=("--data_dir=", "--model_dir={model_dir}", "--mode=train", "--num_epochs=1",
              "--train_batch_size=16", "--iterations_per_loop=1", "--num_cells=3", "--reduction_size=32",
              "--image_size=64", "--num_train_images=32"),
        data="the program's own fake input (empty --data_dir)", extract=("models",),
        pythonpath=("models",), expect=None, timeout=600,
        survey=TPU_FORKS.format(n=3, path="models/official/amoeba_net/amoeba_net.py")
               + "; the AmoebaNet trainer of TF 1.13"),
    Recipe(
        name="tpu-keras-mnist", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/experimental/mnist_keras/mnist.py", era="TF 1.x", kind="Keras fit",
        args=("--fake_data=True", "--model_dir={model_dir}"),
        data="the program's own fake MNIST (--fake_data)", extract=("models/experimental/mnist_keras",),
        expect=r"Accuracy: ",
        survey=TPU_FORKS.format(n=2, path="models/experimental/mnist_keras/mnist.py")
               + "; Keras on the TF 1.15 TPUStrategy with steps_per_run"),
    Recipe(
        name="tpu-keras-applications", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/experimental/keras_application/application_model.py", era="TF 1.x", kind="Keras fit",
        args=("--model=mobilenet", "--use_synthetic_data=True", "--batch_size=16", "--epochs=1"),
        data="the program's own synthetic images (--use_synthetic_data)",
        extract=("models/experimental/keras_application",), expect=None,
        survey=TPU_FORKS.format(n=3, path="models/experimental/keras_application/application_model.py")
               + "; Keras applications on a TPU strategy, a kind issue #34 names"),
    Recipe(
        name="simclr-tf1", repo="google-research/simclr", commit=SIMCLR, program="run.py",
        era="TF 1.x", kind="TPUEstimator",
        args=("--dataset=cifar10", "--train_mode=pretrain", "--train_batch_size=16", "--train_steps=2",
              "--resnet_depth=18", "--image_size=32", "--use_blur=False", "--model_dir={model_dir}",
              "--data_dir={data_dir}", "--use_tpu=True", "--train_summary_steps=0", "--checkpoint_steps=2",
              "--eval_batch_size=16"),
        data_gen=("tfds_standin", "size=32", "classes=10", "n=64"),
        data="64 random 32x32 images through a tensorflow_datasets stand-in (tfds not installed); "
             "tensorflow_hub 0.16.1 from --site",
        expect=None,
        survey="find_files: 25 indexed repositories hold SimCLR's `tf2/run.py` and 9 its `lars_optimizer.py` "
               "(forks of google-research/simclr); the TF 1.15 `run.py` is the code the SimCLR paper trained "
               "on Cloud TPUs"),
    Recipe(
        name="simclr-tf2", repo="google-research/simclr", commit=SIMCLR, program="tf2/run.py",
        era="TF 2.0-2.3", kind="TPUStrategy custom loop",
        args=("--dataset=cifar10", "--train_mode=pretrain", "--train_batch_size=16", "--train_steps=2",
              "--resnet_depth=18", "--image_size=32", "--use_blur=False", "--model_dir={model_dir}",
              "--data_dir={data_dir}", "--use_tpu=True", "--checkpoint_steps=2", "--eval_batch_size=16",
              "--mode=train"),
        data_gen=("tfds_standin", "size=32", "classes=10", "n=64"),
        data="64 random 32x32 images through a tensorflow_datasets stand-in (tfds not installed)",
        expect=None,
        survey="find_files: 25 indexed repositories hold `tf2/run.py` of SimCLR; its TF 2 custom-loop rewrite"),
    Recipe(
        name="bert-pretraining", repo="google-research/bert", commit=BERT, program="run_pretraining.py",
        era="TF 1.x", kind="TPUEstimator", tf1=True,
        args=("--input_file={data_dir}/pretrain.tfrecord", "--output_dir={model_dir}", "--do_train=True",
              "--bert_config_file={data_dir}/bert_config.json", "--train_batch_size=16",
              "--max_seq_length=128", "--max_predictions_per_seq=20", "--num_train_steps=2",
              "--num_warmup_steps=1", "--iterations_per_loop=1", "--save_checkpoints_steps=2",
              "--use_tpu=True", "--num_tpu_cores=8"),
        data_gen=("bert_pretraining", "seq=128", "preds=20", "vocab=100", "n=64"),
        tf2_data_gen=("bert_pretraining", "seq=128", "preds=20", "vocab=100", "n=64", "dropout=0", "same=1"),
        eval_args=("--do_eval=True", "--max_eval_steps=2", "--eval_batch_size=16"),
        eval_only_args=("--do_train=False", "--do_eval=True", "--max_eval_steps=2",
                        "--eval_batch_size=16"),
        data="64 random pre-training examples (seq 128) and a 2-layer, 32-wide bert_config.json",
        expect=r"Saving checkpoints for 2 into",
        survey="find_files: at least 449 indexed repositories hold a `run_pretraining.py` (the name BERT, "
               "ALBERT and ELECTRA give their pre-training; the listing is mostly BERT forks)"),
    Recipe(
        name="bert-classifier", repo="google-research/bert", commit=BERT, program="run_classifier.py",
        era="TF 1.x", kind="TPUEstimator", tf1=True,
        args=("--task_name=MRPC", "--do_train=True", "--do_eval=True", "--data_dir={data_dir}",
              "--vocab_file={data_dir}/vocab.txt", "--bert_config_file={data_dir}/bert_config.json",
              "--max_seq_length=32", "--train_batch_size=16", "--eval_batch_size=8", "--num_train_epochs=0.5",
              "--output_dir={model_dir}", "--use_tpu=True", "--num_tpu_cores=8", "--iterations_per_loop=1"),
        data_gen=("bert_pretraining", "seq=32", "vocab=100", "n=1", "tsv=1"),
        tf2_data_gen=("bert_pretraining", "seq=32", "vocab=100", "n=1", "tsv=1", "dropout=0", "same=1"),
        eval_only_args=("--do_train=False",),
        data="an MRPC-shaped train/dev TSV of random words, vocab.txt and a tiny bert_config.json",
        expect=r"eval_accuracy = ",
        survey="find_files: at least 1256 indexed repositories hold a `run_classifier.py` (BERT's fine-tuning "
               "script, which BERT, ALBERT and XLNet forks share), the one BERT's Colab TPU tutorial ran"),
    Recipe(
        name="albert-pretraining", repo="google-research/albert", commit=ALBERT,
        program="albert/run_pretraining.py", prefix="albert", pythonpath=(".",),
        # lamb_optimizer.py says `import tensorflow as tf` and subclasses tf.train.Optimizer: TF 1.15 code.
        era="TF 1.x", kind="TPUEstimator", tf1=True,
        args=("--input_file={data_dir}/pretrain.tfrecord", "--output_dir={model_dir}", "--do_train=True",
              "--albert_config_file={data_dir}/bert_config.json", "--train_batch_size=16",
              "--max_seq_length=128", "--max_predictions_per_seq=20", "--num_train_steps=2",
              "--num_warmup_steps=1", "--iterations_per_loop=1", "--save_checkpoints_steps=2",
              "--use_tpu=True", "--num_tpu_cores=8"),
        data_gen=("bert_pretraining", "seq=128", "preds=20", "vocab=100", "n=64"),
        tf2_data_gen=("bert_pretraining", "seq=128", "preds=20", "vocab=100", "n=64", "dropout=0", "same=1"),
        # ALBERT's evaluation makes --export_dir (default None) before evaluating.
        eval_args=("--do_eval=True", "--max_eval_steps=2", "--eval_batch_size=16",
                   "--export_dir={model_dir}/export"),
        eval_only_args=("--do_train=False", "--do_eval=True", "--max_eval_steps=2",
                        "--eval_batch_size=16", "--export_dir={model_dir}/export"),
        data="64 random pre-training examples (seq 128, sentence-order labels) and a tiny albert_config",
        expect=r"Saving checkpoints for 2 into",
        survey="find_files: 13 indexed repositories hold ALBERT's `lamb_optimizer.py`; its pre-training is "
               "among the 449+ `run_pretraining.py` copies"),
    Recipe(
        name="electra-pretraining", repo="google-research/electra", commit=ELECTRA,
        program="run_pretraining.py", era="TF 1.x", kind="TPUEstimator",
        args=("--data-dir={data_dir}", "--model-name=tiny",
              '--hparams={"use_tpu": true, "num_tpu_cores": 8, "debug": true, "vocab_size": 100, '
              '"max_seq_length": 128, "train_batch_size": 16, "num_train_steps": 2, '
              '"iterations_per_loop": 1, "save_checkpoints_steps": 2, "num_warmup_steps": 1}'),
        data_gen=("electra", "seq=128", "vocab=100", "n=64"),
        data="64 random token sequences as ELECTRA's pretrain_tfrecords and vocab.txt; debug hparams",
        expect=None,
        # Budget: passed in 671 s at 1bc110d (1-minute load 6-9); the 8 replicas' graph build is
        # TensorFlow's op construction, as for MnasNet (docs/field.md, failures and reasons).
        timeout=1200,
        survey="find_files: 53 indexed repositories hold ELECTRA's `configure_pretraining.py` (forks of "
               "google-research/electra)"),
    Recipe(
        name="tpu-cifar-keras", repo="tensorflow/tpu", commit=TPU_2020,
        program="models/experimental/cifar_keras/cifar_keras.py", era="TF 1.x", kind="TPUEstimator",
        args=("--train_file={data_dir}/train.tfrecords", "--model_dir={model_dir}", "--batch_size=64",
              "--train_steps=4", "--iterations_per_loop=2", "--num_shards=8", "--use_tpu=True"),
        data_gen=("cifar_tfrecords", "n=256"), data="256 random CIFAR-10-shaped TFRecord examples",
        extract=("models/experimental/cifar_keras",), expect=r"Saving checkpoints for 4 into",
        survey=TPU_FORKS.format(n=3, path="models/experimental/cifar_keras/cifar_keras.py")
               + "; Keras layers in a TPUEstimator model_fn"),
    Recipe(
        name="colab-fashion-mnist", repo="tensorflow/tpu", commit=TPU_2020,
        program="tools/colab/fashion_mnist.ipynb", cells=4, era="TF 1.x", kind="Keras fit", tf1=True,
        # fit(steps_per_epoch=60) on a TPU strategy needs a sample count divisible by 60 (TF 1.15's
        # "not divisible by steps" check; the real 60000 is): 480 = 60 steps of 8, one per core.
        args=(), data_gen=("keras_fashion_mnist", "train=480", "test=480"),
        data="480/480 random Fashion-MNIST images in the keras.datasets cache; its code cells 1-4 "
             "(training and save_weights; the plotting cells need matplotlib)",
        # Budget: cell 4 trains 17 epochs of 60 steps (1020 steps; a notebook has no flag to shrink them),
        # about 27 s of CPU an epoch on 8 emulated cores (native TF's MirroredStrategy over 8 CPUs in
        # graph mode: 22 s): passed in 1172 s at load 11 (issue 34, 2026-11-29); 900 s ran out under load.
        extract=("tools/colab/fashion_mnist.ipynb",), expect=None, timeout=1800,
        survey="find_files: 12 indexed repositories hold `tools/colab/fashion_mnist.ipynb`, the Cloud TPU "
               "Colab 'Fashion MNIST with Keras and TPUs' (copies in personal Colab collections); `search` "
               "finds TPU helper code citing it"),
    Recipe(
        name="colab-fashion-mnist-tf2", repo="tensorflow/tpu", commit=TPU_2021,
        program="tools/colab/fashion_mnist.ipynb", cells=4, era="TF 2.0-2.3", kind="Keras fit",
        args=(), data_gen=("keras_fashion_mnist", "train=480", "test=480"),
        data="480/480 random Fashion-MNIST images in the keras.datasets cache (60 steps of 8); "
             "code cells 1-4",
        extract=("tools/colab/fashion_mnist.ipynb",), expect=None, timeout=1800,  # 1020 steps, as above (TF 2 fit: ~40 s CPU an epoch)
        survey="the same Colab in its TF 2.x form (tf.distribute.experimental.TPUStrategy, "
               "experimental_connect_to_cluster)"),
    Recipe(
        name="tpu-keras-mnist-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/experimental/mnist_keras/mnist.py", era="TF 1.x", kind="Keras fit", tf1=True,
        args=("--fake_data=True", "--model_dir={model_dir}"),
        data="the program's own fake MNIST (--fake_data)", extract=("models/experimental/mnist_keras",),
        # Budget: 15 epochs (the program's own count), each one host call and a validation: passed
        # in 524 s at load 5 to 9 (issue 34, 2026-11-29); its 300 s default ran out under load.
        expect=r"Accuracy: ", timeout=900,
        survey="tpu-keras-mnist in its TF 1.13 form (`import tensorflow as tf`, tf.contrib.distribute)"),
    Recipe(
        name="tpu-keras-applications-contrib", repo="tensorflow/tpu", commit=TPU_2019,
        program="models/experimental/keras_application/application_model.py", era="TF 1.x",
        kind="Keras fit", tf1=True,
        args=("--model=mobilenet", "--use_synthetic_data=True", "--batch_size=16", "--epochs=1"),
        data="the program's own synthetic images (--use_synthetic_data)",
        extract=("models/experimental/keras_application",), expect=None,
        survey="tpu-keras-applications in its TF 1.13 form (`import tensorflow as tf`, tf.contrib)"),
    Recipe(
        name="cloudml-tpu-lstm-keras", repo="GoogleCloudPlatform/cloudml-samples", commit=CLOUDML,
        program="tpu/templates/tpu_lstm_keras/trainer.py", era="TF 1.x", kind="Keras fit (contrib TPU)",
        tf1=True, args=("--use-tpu", "--model-dir={model_dir}"),
        data="none needed: its own train_input_fn makes 100 random (5, 3) sequences (np.random); "
             "3 epochs of 10 steps, the program's own counts",
        extract=("tpu/templates/tpu_lstm_keras",), expect=None,
        survey="GoogleCloudPlatform/cloudml-samples' AI Platform TPU template for Keras (also as "
               "notebooks/tpu/templates/tpu_lstm_keras/trainer.ipynb); find_files: 1 indexed repository "
               "holds its path; find_string: `keras_to_tpu_model(`, the TF 1.11-1.14 Keras-on-TPU call it "
               "shows, is in 10 indexed public files"),
    Recipe(
        name="colab-sine-regression", repo="tensorflow/tpu", commit=TPU_2020,
        program="tools/colab/regression_sine_data_with_keras.ipynb", cells=11, era="TF 1.x",
        kind="Keras fit", tf1=True, args=(),
        data="none needed: the notebook makes its own 2^18 noisy sine points (np.linspace, np.random); "
             "code cells 1-11 (cell 12 trains a second, CPU-only model for a speed comparison); "
             + SINE_SITE,
        # Budget: cell 9 fits 10 epochs of 512 steps (a notebook has no flag to shrink them).
        extract=("tools/colab/regression_sine_data_with_keras.ipynb",), expect=None, timeout=900,
        survey="the Cloud TPU Colab 'Sine regression with Keras and TPUs' in its TF 1.14 form "
               "(tf.contrib.distribute.TPUStrategy, tf.Session); find_files: 1 indexed repository holds "
               "`tools/colab/regression_sine_data_with_keras.ipynb` (notebook copies are not indexed); one of "
               "the 3 Keras-on-TPUStrategy Colabs of tools/colab whose data needs no download"),
    Recipe(
        name="colab-sine-regression-tf2", repo="tensorflow/tpu", commit=TPU_2021,
        program="tools/colab/regression_sine_data_with_keras.ipynb", cells=9, era="TF 2.0-2.3",
        kind="Keras fit", args=(),
        data="none needed: the notebook makes its own 2^18 noisy sine points; all 9 code cells; "
             + SINE_SITE,
        extract=("tools/colab/regression_sine_data_with_keras.ipynb",), expect=None, timeout=900,
        survey="the same Colab in its TF 2.x form (tf.distribute.experimental.TPUStrategy, "
               "experimental_connect_to_cluster), as updated 2020-06-23"),
    Recipe(
        name="tpu-tf2-helper", repo="ashishpatel26/tpu_tf2", commit=TPU_TF2, program="tpu_tf2/tpu.py",
        era="TF 2.0-2.3", kind="TPUStrategy bring-up (library)", args=(),
        data="none needed: the module only brings the TPU up (COLAB_TPU_ADDR, as `tpu-compat run` sets it)",
        extract=("tpu_tf2",), expect=None,
        survey="a pip-packaged Colab helper (PyPI `tpu_tf2`) whose module builds the TF 2.0-2.3 "
               "bring-up (experimental_connect_to_cluster, initialize_tpu_system, "
               "tf.distribute.experimental.TPUStrategy) at import, for Keras notebooks to use under "
               "`strategy.scope()`; find_files: 1 indexed repository holds `tpu_tf2/tpu.py`; the search tool "
               "finds the same bring-up (`search` code corpus, 'TPUStrategy resolver strategy.scope "
               "model.fit') as the opening of most TF 2 Keras TPU scripts"),
]


# Why each program that still fails fails, and who owns it (docs/field.md's "Failures and
# their reasons"; a failing row without a note renders as "not analysed yet"). Keyed by recipe
# name; keep it true to the latest table.
FAILURE_NOTES = {
    "tpu-mobilenet-contrib": ("past its merge_call count mismatch now (fixed, issue 34: its model_fn averages "
                              "tf.trainable_variables() + tf.moving_average_variables() with an "
                              "ExponentialMovingAverage, and replica k read the variables replicas 0..k-1's "
                              "ema.apply had added to that collection, so it averaged them twice, one "
                              "merge_call more than replica 0; each replica now reads its own entries, "
                              "tests/test_replica_variable_names.py). Re-run at cd90187 with 900 s at load "
                              "9 to 13: the 8 replicas' graph built, the session initialized (local_init_op "
                              "done), then killed in the first training steps: slow at this load; re-run "
                              "on a quiet machine."),
    "tpu-inception-v3-contrib": ("not served, by the survey: past its deep arg_scope import now (served), "
                                 "it needs tf.contrib.slim.nets, slim's model zoo (the Inception v3 "
                                 "network definition), which 2 files in 1 surveyed TPU repository import "
                                 "(docs/contrib_survey.md): model code, not TPU API, where every slim "
                                 "layer and arg_scope the three slim field programs use is served. The "
                                 "error names the way on: tf-slim's tf_slim.nets, or "
                                 "tf.keras.applications.InceptionV3."),
    "tpu-amoebanet-contrib": ("past its recipe (the program has no --train_steps flag: --num_epochs=1 "
                              "--num_train_images=32 give its 2 steps), slim and arg_scope (served), and "
                              "HParams.add_hparam of its num_shards=None (fixed, issue 34: TF 1.15 re-added "
                              "a None-valued hyperparameter). Next stop, not tpu_compat's: "
                              "hparams.values().iteritems() in amoeba_net_model.py:211 is Python 2 code; "
                              "TF 1.15's HParams.values() returned a plain dict as well, so under Python 3 "
                              "the program stopped there with TF 1.15 too."),
}

# Why each TPUStrategy-era program that fails MIGRATED fails (docs/field.md, "Failures and
# their reasons (migrated)"), keyed by recipe name.
MIGRATED_NOTES = {
}

# Why each TPUEstimator program that ran in --mode estimator-tf2 (issue 36) stops or differs,
# keyed by recipe name (docs/migration.md's generated block).
TF2_NOTES = {
    "tpu-mnist": ("runs strict in TF 2 with 0 TODOs (train, evaluate, predict), from the legacy "
                  "model.ckpt-0 (restored); its training numbers cannot be the legacy run's by "
                  "construction, and the row's verdict says so: mnist_tpu.py draws dropout masks "
                  "(`tf.layers.Dropout(0.4)`) and shuffles its input (`shuffle(buffer_size=50000)`) "
                  "with no seed and has no flag to turn either off, so the unchanged program does not "
                  "repeat itself: two unchanged runs from the same model.ckpt-0 gave step-2 losses "
                  "2.2509 and 2.3206 (migrated: 2.2764), eval accuracy 0.140625 and 0.125. (A seed "
                  "would not help: a TF 1 graph and a TF 2 function derive op seeds differently, and "
                  "a TPU ignores the seeds of stateful random ops.) What can be equal is: the migrated "
                  "program, given a copy of the legacy run's final model_dir, skips training (at "
                  "max_steps, as Estimator.train did) and prints the legacy evaluation and the "
                  "legacy run's 10 predictions exactly (last column). The driver feeds each replica "
                  "what TPUEstimator fed it (PER_HOST_V1: input_fn with the global batch of 64, split "
                  "in order into 8 slices of 8): the equal evaluation shows it for the unshuffled eval input, "
                  "tests/test_migrate_estimator_tf2.py for training, on an MNIST program that draws "
                  "no randomness."),
    "tpu-resnet": ("passes: migrated with 0 TODOs (10 until 2026-11-29: export, async "
                   "checkpointing's hook and its contrib import, the Bigtable input, autoaugment's "
                   "contrib.image and HParams, none on the path the recipe runs), run strict from the "
                   "legacy model.ckpt-0 (restored), it prints the unchanged "
                   "run's losses to every digit (step 1: 7.052964, final 7.0519814 on 2026-11-29; 8 "
                   "replicas, bfloat16; 530 s at load 14). Three fixes got it there: `tf.disable_v2_behavior()` (the driver's loop "
                   "needs eager; removed), `tf.tpu.bfloat16_scope` (TPC048; the driver's, TF's getter) "
                   "and fidelity tpu's float64 lint, which reported the int32 truediv of static shapes "
                   "that `transpose_input` computes (XLA folds it). The migrated run took 334 s (the "
                   "unchanged one 337 s, load 9; a probe at load 10 took 473 s, over the 300 s budget, "
                   "now 900 s): the driver traces model_fn twice (its variables, then the loop)."),
    "simclr-tf1": ("0 TODOs (from 2: `tf.tpu.cross_replica_sum` in resnet.py's batch norm and "
                   "objective.py's concat is now the driver's `cross_replica_sum`; its "
                   "`eval_training_input_configuration=SLICED` is taken). Not a pass yet: the unchanged "
                   "run passed (1225 s, --timeout 2400, load 9-12); the migrated run, from its "
                   "model.ckpt-0, stops at its input in 20 s. data.py's input_fn returns `make_one_shot_iterator(dataset).get_next()` "
                   "over a shuffled, randomly augmented dataset; TF 2 cannot build a one-shot iterator "
                   "over a dataset that holds a seed generator (\"Cannot capture a stateful node\"), "
                   "and the driver now refuses it naming the fix (return the dataset from input_fn). "
                   "Its augmentation and shuffle are unseeded, so its training numbers could at best "
                   "be \"the original does not repeat its numbers\"."),
    "tpu-mnasnet": ("0 TODOs since 2026-11-29 (from 3): `from tensorflow.contrib import quantize` "
                    "and imagenet_input.py's Bigtable client, each in a `try` whose `except "
                    "ImportError` logs \"not supported in TensorFlow 2.x\", raise TF 2's ImportError "
                    "there; async checkpointing's hook is the driver's. Run by the runner on "
                    "2026-11-29 at `3771514` (quiet machine, 295 s): the migrated program runs "
                    "strict from the legacy model.ckpt-0, but the unchanged program does not repeat "
                    "its own numbers (its dropout and drop-connect are unseeded and have no flag to "
                    "turn them off), so no pass is possible by construction, as for tpu-mnist."),
    "tpu-efficientnet": ("upgraded only by the runner (its unchanged run took 1741 s, beyond this "
                         "session's budget for a reference); 0 TODOs since 2026-11-29 (from 7): "
                         "autoaugment.py's `contrib.image` rotate/translate/transform and "
                         "`contrib.training.HParams` are the driver's, async checkpointing's hook "
                         "too, the Bigtable client's guarded import raises TF 2's ImportError, the "
                         "PREDICT EstimatorSpec is the driver's. By hand, 2026-11-29 at `73f242f`: the "
                         "migrated program ran strict, "
                         "8 replicas, its 2 training steps in about 14 min at load ~12 and saved "
                         "model.ckpt-2 (step-1 loss 0.98667073, final 0.98620796, from its own "
                         "initializers, so not compared); the process had not exited 45 s after its "
                         "last line and was killed at the session's deadline. Examined 2026-11-29 at "
                         "`2ce22ce` (0 TODOs, strict, 8 replicas, load ~2-4, 17 min; step-1 loss "
                         "0.98565674, final 0.9844241, own initializers): it exits by itself 30-60 s "
                         "after its last line, with no error; py-spy at 30 s shows only the main "
                         "thread, in native code with no Python frame (the interpreter's and "
                         "TensorFlow's teardown), so no thread, hook or loop of the driver holds "
                         "it: the earlier kill came too soon. No verdict until a run from the "
                         "unchanged run's model.ckpt-0."),
    "tpu-cifar-keras": ("**passes** with 0 TODOs (from 1): cifar_keras.py builds its model_fn from Keras "
                        "layers (`layers = contrib_keras.layers`, `layers.Input(tensor=features)`) and "
                        "trains with `AdamOptimizer` under CrossShardOptimizer, 8 replicas. Three fixes "
                        "got it there: contrib.keras is tf.compat.v1.keras and `Input(tensor=t)` is `t` "
                        "(TF 1's graph returned t; in the driver's tf.function Keras returned a "
                        "KerasTensor the loss refused); Adam's `beta1_power`, created in a merge_call, "
                        "is reused when the driver traces the step again (before: \"tf.function only "
                        "supports singleton tf.Variables\"); `RunConfig(save_checkpoints_secs=3600)` is "
                        "CheckpointSaverHook's timer (was refused). Run strict from the legacy "
                        "model.ckpt-0, it prints the unchanged run's losses to every digit (step 2: "
                        "2.6135373, final 2.3085086); its input has no shuffle and its model no dropout."),
    "tpu-resnet-contrib": ("**passes**: migrated with 0 TODOs (from 10), run strict from the legacy "
                           "model.ckpt-0, it prints the unchanged run's losses to every digit (step 1: "
                           "7.2129235, final 7.2123833); 1066 s at load 18 (the unchanged run 913 s). "
                           "resnet_main.py's TF 1.13 contrib imports got their TF 2 forms: "
                           "`contrib.summary` in host_call is `tf.compat.v2.summary` "
                           "(`always_record_summaries()` is `record_if(True)`, `all_summary_ops()` "
                           "`all_v2_summary_ops()`), as tensorflow/tpu itself rewrote the program in "
                           "2020; `async_checkpoint.AsyncCheckpointSaverHook` is the driver's (its "
                           "save_steps/save_secs are the driver's checkpoint schedule) and "
                           "`evaluation.checkpoints_iterator` TF core's, their imports removed; the "
                           "PREDICT branch's `tf.estimator.EstimatorSpec` is the driver's (taken "
                           "where TPUEstimator took it)."),
    "bert-pretraining": ("**passes**: runs strict in TF 2 with 0 TODOs (run_pretraining.py, modeling.py and "
                         "optimization.py migrated; `--from-tf1`), from the legacy model.ckpt-0 (restored), "
                         "and prints the unchanged run's 10 numbers with identical digits: the training "
                         "loss (step 1 and final, 5.2704782) and the evaluation after its own 2 steps "
                         "(loss 5.2594543, masked_lm_loss 4.5739083, next_sentence_loss 0.6855477, "
                         "accuracies, global_step), on the tf2_data_gen data (dropout 0, one training "
                         "example repeated). Step 2's loss equals step 1's since the warmup learning "
                         "rate of step 0 is 0; the step-1 update shows in the evaluation. Evaluating the "
                         "legacy run's final checkpoint, it prints the legacy evaluation's 7 numbers "
                         "exactly too. Before (dropout 0.1, distinct shuffled records) step 1 differed "
                         "(5.3048 migrated, 5.3021 legacy): draws, not the migration."),
    "bert-classifier": ("runs strict in TF 2 (train and evaluate; `--tf1` turned run_classifier.py:593's "
                        "`output_layer.shape[-1].value` into the int, its first stop), from the legacy "
                        "model.ckpt-0 (restored), with 0 TODOs. Evaluating the legacy run's final "
                        "checkpoint, the migrated program prints the legacy evaluation's 5 numbers exactly "
                        "(eval_accuracy 0.546875, eval_loss 0.691761, loss 0.6932791). Its training "
                        "losses cannot be compared exactly with any of the program's own knobs: with "
                        "bert_config.json's dropout 0 and identical train.tsv rows (no shuffle draw), "
                        "step 1 still differs (0.679329 legacy, 0.680339 migrated) because "
                        "run_classifier.py:604 hard-codes `tf.nn.dropout(output_layer, keep_prob=0.9)` "
                        "in training, which no flag or config turns off, and which a TF 1 graph and a "
                        "TF 2 function draw differently. Not a pass by the runner's rule."),
    "albert-pretraining": ("**passes**, its first run in this mode: its 4 files (run_pretraining.py, "
                           "modeling.py, optimization.py and lamb_optimizer.py, whose `LAMBOptimizer` "
                           "overrides `apply_gradients` under `CrossShardOptimizer`) upgrade with 0 TODOs; "
                           "the migrated program runs strict from the legacy model.ckpt-0 and prints the "
                           "unchanged run's 10 numbers with identical digits (training loss 5.2720604; the "
                           "evaluation after its 2 steps: loss 5.271223, masked_lm_loss 4.5920134, "
                           "sentence_order_loss 0.67921066, accuracies, global_step), on the tf2_data_gen "
                           "data; evaluating the legacy run's final checkpoint, the legacy evaluation's 7 "
                           "numbers exactly. Its evaluation (eval_args) needs `--export_dir`, which "
                           "run_pretraining.py makes before evaluating (default None)."),
    "electra-pretraining": ("upgraded only (the row). Run in this mode on 2026-11-29 at `ca6eb20`, its "
                            "unchanged run passed (722 s, load ~10) but the comparison could not start: "
                            "ELECTRA writes its checkpoints to `{data_dir}/models/tiny` (configure_pretraining.py:98), "
                            "not the runner's model_dir, and with `debug` it deletes that directory before "
                            "training (run_pretraining.py:397), so the runner found no model.ckpt-0 to start "
                            "the migrated run from (a runner limit, left for the next session: a recipe "
                            "field naming the program's model_dir, and hparams without `debug`). Its TODOs were one hook, 4 lines: `ETAHook`, a `tf.estimator.SessionRunHook` "
                            "(util/training_utils.py:31, its `SessionRunArgs` at :54) that prints progress "
                            "and reads the global step with `run_context.session.run`, passed as "
                            "`training_hooks`/`evaluation_hooks` (run_pretraining.py:371, :381). Now 0 "
                            "are left: the driver runs training hooks once per loop and evaluation hooks "
                            "around the evaluation, as TPUEstimator's Session.run did, and its "
                            "`session.run` reads the driver's global step (the class and SessionRunArgs "
                            "are the driver's names). Even with hooks served it could not print the unchanged "
                            "run's numbers: its model_fn draws the masked positions "
                            "(pretrain_helpers.py:188 `tf.random.categorical`, :202 `tf.random.uniform`) and "
                            "the generator's samples (:225, Gumbel noise) in every training and evaluation "
                            "step, and no flag turns them off."),
}


# What qualifies the latest run's numbers (load, concurrent runs, re-runs): rendered under the
# header of docs/field.md, one bullet each.
RUN_NOTES = (
    "Issue 34/35's lead re-ran three rows on 2026-11-29 from 03:58 UTC, one at a time under `nice` "
    "beside six other sessions' work (load 2 to 9): simclr-tf1 unchanged at `293d645` passed in 1188 s "
    "(3000 s budget) after two fixes it found: tf.layers' batch-norm update ops were seen by every "
    "later replica (replica k's train op carried replicas 0..k's as control inputs: a 927 MB "
    "graph.pbtxt, then 313 MB), and xla.replica_id() segfaulted in TensorFlow's constant folding at "
    "the first step (earlier runs were killed before they reached it); simclr-tf2 migrated at "
    "`293d645` passed in 633 s (3600 s budget: its 300 s runs were cut while TensorFlow traced the "
    "8-replica loop); simclr-tf2 unchanged at `293d645` passed in 359 s and tpu-efficientnet "
    "unchanged at `293d645` in 1741 s (2400 s budget; its 600 s runs were cut building the graph, "
    "which carried every later replica's batch-norm updates); cloudml-tpu-lstm-keras migrated at "
    "the session's integration, after the graph-mode fit loop fix (still failed: TF 2's class in "
    "graph mode took tf_keras's Mirrored loop); it passes at `95b784d` (issue 35's migrate session: "
    "that class takes the same TPU fit loop) in 132 s at load 11.",
    "The unchanged column was re-run on 2026-11-28 from 17:51 UTC, all 21 programs one at a time at "
    "`be1bd13` (main when issue 34's field session started); then, after that session's fixes, "
    "the programs they concern at `ad88739` (the Colabs: distutils.version; bert-classifier: the "
    "evaluation hang; tpu-resnet-contrib: its recipe), ELECTRA and MnasNet at `1bc110d` with their "
    "budgets (MnasNet under a stack sampler), and bert-classifier, tpu-resnet-contrib, "
    "bert-pretraining and tpu-resnet with 900 s (`--timeout`), their 300 s runs having been cut "
    "by the load (the last two passed in 248 s and 187 s once it eased).",
    "Load: up to four of that session's runs (the survey, the re-runs, a profile) ran at once beside "
    "about seven other sessions' work, 1-minute load 4 to 13: the times are upper bounds, and the "
    "rows noted 'slow, not hung' below are timeouts of the load, not of tpu_compat.",
    "The migrated column was re-run on 2026-11-28 from 22:12 UTC for the 7 TPUStrategy-era programs "
    "only (issue 35's measure; the 14 TPUEstimator rows are still the baseline at `6383b5c`): "
    "tpu-keras-mnist, tpu-keras-applications and tpu-keras-mnist-contrib at `45bceb0` (the package as at `3ddfee7`); the two "
    "Colabs (after the distutils.version rewrite) and tpu-keras-applications-contrib (its run at "
    "`45bceb0` was cut at 300 s by the load; it passed in 65 s) at `7b79872`; simclr-tf2 at "
    "`8cc2862` (after the compat.v2 fix; at `45bceb0` it failed strict on "
    "tf.keras.experimental.CosineDecay, left unmarked). 6 of the 7 pass.",
    "On 2026-11-29 from 01:41 UTC (issue 35's field session) four TPUStrategy-era recipes were added "
    "by survey and run in both columns one at a time, at load 8 to 14: cloudml-tpu-lstm-keras and "
    "tpu-tf2-helper at `a407b96`, colab-sine-regression-tf2 at `a407b96`, colab-sine-regression "
    "at `a407b96` with the Colab-session fix uncommitted (the same code committed as `4c143fa`; "
    "its first run, without it, hung in cell 4's tf.Session on the Colab TPU address and was "
    "stopped). The TPUStrategy-era count is then 9 of 11. matplotlib 3.11.2 and scikit-learn 1.9.1 (with narwhals, "
    "threadpoolctl, pillow, contourpy, cycler, fonttools, kiwisolver) came from a second "
    "`--site` directory for the two sine Colabs, as Colab's image had them.",
    "Issue 35/34's research follow-up re-ran two unchanged rows on 2026-11-29 from 04:20 UTC, one at a "
    "time at load 0.8 to 2.7: cloudml-tpu-lstm-keras at `3581499` (the Keras TPU model on static "
    "per-core batch inputs: its LSTM gradient no longer trips `--fidelity tpu`), and "
    "albert-pretraining at `8282019` with 1800 s (`--timeout`): it passed in 68 s, so its 300 s "
    "timeouts at load 10 to 12 were the load's.",
    "Issue 34's slim/research follow-up re-ran four unchanged rows on 2026-11-29 from 01:35 UTC, one at a "
    "time at load 5 to 13 (other sessions' work): simclr-tf1 at `027eff8` (replica op names) with "
    "900 s (killed building the gradients at load 13) and again at `0adcd40` (900 s, load 5 to 9), tpu-mobilenet-contrib at `cd90187` (per-replica moving-average variables) with 900 s, "
    "tpu-inception-v3-contrib at `cd90187` (slim.nets' reason) and tpu-amoebanet-contrib with its "
    "corrected recipe (no --train_steps flag) at `cd90187`, then at `2a3e6f3` (HParams.add_hparam).",
    "Issue 34's Keras follow-up re-ran three unchanged rows on 2026-11-29 from 07:40 UTC, one at a time "
    "with 2400 s (`--timeout`), load 2 to 11, the first two at `200aac4`, the third at `5f76536`: tpu-keras-mnist-contrib passed in 524 s, "
    "colab-fashion-mnist in 1172 s and colab-fashion-mnist-tf2 in 881 s. Their timeouts were the load's, not tpu_compat's: on the same "
    "machine at the same time the Colab's unchanged and migrated programs cost the same CPU (102 s and "
    "109 s for 2 epochs), 27 s of CPU an epoch against 22 s for native TF's MirroredStrategy over 8 CPUs "
    "in graph mode (the TF 2 form: about 40 s against native eager's 53 s); the migrated runs that "
    "passed in 282 s and 431 s ran at load 3, the unchanged ones at load 8 to 11.",
)

