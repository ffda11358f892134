"""Time to the first step of an 8-replica ResNet-50: TPUEstimator on the emulated TPU vs native TF.

Issue #34 item 7: building the replicated graph of a real image model took
minutes before the first step. The same ResNet-50 (tf-keras's
``applications.ResNet50``, no weights, --image-size pixels, 1000 classes),
the same momentum SGD, global batch 2 x replicas, on the same 8 logical CPU
devices:

  (a)  TF 1.15 code: a TPUEstimator ``model_fn`` (use_tpu=True,
       CrossShardOptimizer, iterations_per_loop=1), graph mode, under tpu_compat
  (b)  native TF 2.21: a ``MirroredStrategy`` over the same devices, a
       ``tf.function`` step through ``strategy.run`` (what the emulated TPU's
       replication is built on), no tpu_compat
  (c)  native TF 2.21 in graph mode, the way TF 1.14's Estimator ran a
       ``MirroredStrategy``: the same model code through
       ``call_for_each_replica`` with the same V1 optimizer, a
       ``MonitoredTrainingSession``, no tpu_compat. (a)/(c) is what tpu_compat
       costs; (c)/(b) is what graph mode's session machinery costs.

Where the time goes, per variant:
  (a) build = ``train()`` called -> the graph is built (the first hook's
      ``begin``: input_fn, 8 model_fns, gradients, cross-replica sums);
      session = -> the session is created and the variables initialized;
      first step = -> the first ``Session.run`` returned.
  (b) build = tracing the step (``get_concrete_function``); first step = the
      first call (graph optimization, placement, the step itself).
  (c) as (a).
Each variant runs in its own process, --repeats times interleaved; medians
and the ratios of the time to the first step: (a)/(b) (issue #34's goal: at
most 1.2) and (a)/(c).
Not a test: the machine is noisy, and only the ratio of one run means much.

usage: python benchmarks/bench_model_scale.py [--replicas 8] [--image-size 64]
                                             [--repeats 1] [--json PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _results

PER_REPLICA_BATCH, CLASSES = 2, 1000
GOAL = 1.2  # issue #34: (a) at most 1.2x native's time to the first step
VARIANTS = {
    "a": "(a) TPUEstimator model_fn on the emulated TPU (tpu_compat, graph mode)",
    "b": "(b) native MirroredStrategy, tf.function step (no tpu_compat)",
    "c": "(c) native MirroredStrategy in graph mode, MonitoredTrainingSession (no tpu_compat)",
}


def _resnet(tf_keras, image_size):
    return tf_keras.applications.ResNet50(weights=None, input_shape=(image_size,) * 2 + (3,),
                                          classes=CLASSES)


def _data(np, replicas, image_size):
    rng = np.random.RandomState(0)
    batch = PER_REPLICA_BATCH * replicas
    images = rng.rand(batch, image_size, image_size, 3).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=(batch,)).astype(np.int32)
    return images, labels


def estimator_variant(replicas, image_size):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tf_keras  # pylint: disable=import-outside-toplevel
    v1 = tf.compat.v1
    images, labels = _data(np, replicas, image_size)

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        logits = _resnet(tf_keras, image_size)(features, training=True)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = v1.tpu.CrossShardOptimizer(v1.train.MomentumOptimizer(0.1, 0.9))
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    marks = {}
    config = v1.estimator.tpu.RunConfig(
        model_dir=tempfile.mkdtemp(), save_checkpoints_steps=None,
        save_checkpoints_secs=None, save_summary_steps=None, log_step_count_steps=None,
        tpu_config=v1.estimator.tpu.TPUConfig(
            iterations_per_loop=1,
            per_host_input_for_training=v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2))
    estimator = v1.estimator.tpu.TPUEstimator(
        model_fn=model_fn, config=config, use_tpu=True,
        train_batch_size=PER_REPLICA_BATCH * replicas)
    start = time.perf_counter()
    estimator.train(input_fn, max_steps=1, hooks=[_clock(v1, marks)])
    return _phases(marks, start)


def _clock(v1, marks):
    class Clock(v1.train.SessionRunHook):
        def begin(self):
            marks.setdefault("built", time.perf_counter())

        def after_create_session(self, session, coord):
            marks.setdefault("session", time.perf_counter())

        def after_run(self, run_context, run_values):
            marks.setdefault("first_step", time.perf_counter())
    return Clock()


def _phases(marks, start):
    return {"build": marks["built"] - start, "session": marks["session"] - marks["built"],
            "first_step": marks["first_step"] - marks["session"],
            "total": marks["first_step"] - start}


def native_graph_variant(replicas, image_size):
    import numpy as np  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import backend  # pylint: disable=import-outside-toplevel
    devices = list(backend.get_backend(num_replicas=replicas).devices)  # no routing
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tf_keras  # pylint: disable=import-outside-toplevel
    v1 = tf.compat.v1
    images, labels = _data(np, replicas, image_size)
    marks = {}
    start = time.perf_counter()
    with tf.Graph().as_default():
        strategy = v1.distribute.MirroredStrategy(
            devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(
            PER_REPLICA_BATCH * replicas, drop_remainder=True)
        with strategy.scope():
            iterator = strategy.make_dataset_iterator(dataset)
            global_step = v1.train.get_or_create_global_step()

            def replica_step(features, labels):
                logits = _resnet(tf_keras, image_size)(features, training=True)
                loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
                # A V1 optimizer under a strategy sums the replicas' gradients
                # (TF 1.14's Estimator + MirroredStrategy path); the loss is
                # each replica's mean, as CrossShardOptimizer's MEAN scales it.
                optimizer = v1.train.MomentumOptimizer(0.1 / replicas, 0.9)
                return optimizer.minimize(loss, global_step=global_step)

            train_op = strategy.group(strategy.extended.call_for_each_replica(
                replica_step, args=iterator.get_next()))
        scaffold = v1.train.Scaffold(local_init_op=tf.group(
            v1.local_variables_initializer(), iterator.initializer))
        with v1.train.MonitoredTrainingSession(
                scaffold=scaffold, hooks=[_clock(v1, marks)],
                checkpoint_dir=None, save_summaries_steps=None, log_step_count_steps=None,
                save_checkpoint_secs=None) as session:
            session.run(train_op)
    return _phases(marks, start)


def native_variant(replicas, image_size):
    import numpy as np  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import backend  # pylint: disable=import-outside-toplevel
    devices = list(backend.get_backend(num_replicas=replicas).devices)  # no routing
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    import tf_keras  # pylint: disable=import-outside-toplevel
    images, labels = _data(np, replicas, image_size)
    start = time.perf_counter()
    strategy = tf.distribute.MirroredStrategy(
        devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
    with strategy.scope():
        model = _resnet(tf_keras, image_size)
        optimizer = tf_keras.optimizers.legacy.SGD(0.1, momentum=0.9)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(
        PER_REPLICA_BATCH * replicas, drop_remainder=True)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    def replica_step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_sum(tf_keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True)) / (PER_REPLICA_BATCH * replicas)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def step(iterator):
        return strategy.run(replica_step, args=next(iterator))

    concrete = step.get_concrete_function(iterator)
    built = time.perf_counter()
    del concrete
    step(iterator)
    first_step = time.perf_counter()
    return {"build": built - start, "session": 0.0, "first_step": first_step - built,
            "total": first_step - start}


def measure(variant, replicas, image_size):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tpu-compat run chooses
    if variant == "b":
        return native_variant(replicas, image_size)
    if variant == "c":
        return native_graph_variant(replicas, image_size)
    import tpu_compat  # pylint: disable=import-outside-toplevel
    tpu_compat.install(num_replicas=replicas)
    return estimator_variant(replicas, image_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--variant", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    _results.add_json_argument(parser)
    args = parser.parse_args()
    if args.replicas <= 0 or args.image_size < 32 or args.repeats <= 0:
        parser.error("--replicas and --repeats must be positive and --image-size at "
                     "least 32 (ResNet-50's smallest input)")
    if args.variant:
        print(json.dumps(measure(args.variant, args.replicas, args.image_size)))
        sys.stdout.flush()
        os._exit(0)  # pylint: disable=protected-access  (TF 2.21 can stall at exit in graph mode)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    samples = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name in VARIANTS:
            out = subprocess.run(
                [sys.executable, __file__, "--variant", name, "--replicas",
                 str(args.replicas), "--image-size", str(args.image_size)],
                env=env, capture_output=True, text=True, check=True)
            samples[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    median = {name: {phase: statistics.median(run[phase] for run in runs)
                     for phase in ("build", "session", "first_step", "total")}
              for name, runs in samples.items()}
    print(f"ResNet-50, {args.image_size}x{args.image_size} images, global batch "
          f"{PER_REPLICA_BATCH * args.replicas}, {args.replicas} replicas, median of "
          f"{args.repeats}; seconds")
    print("| variant | build | session | first step | to the first step |")
    print("|---|---|---|---|---|")
    for name, label in VARIANTS.items():
        m = median[name]
        print(f"| {label} | {m['build']:.1f} | {m['session']:.1f} | "
              f"{m['first_step']:.1f} | {m['total']:.1f} |")
    ratio = median["a"]["total"] / median["b"]["total"]
    ratio_a_c = median["a"]["total"] / median["c"]["total"]
    print(f"\n(a)/(b) time to the first step: {ratio:.2f} (goal: at most {GOAL})")
    print(f"(a)/(c), tpu_compat against native graph mode: {ratio_a_c:.2f}")
    figures = {f"{name}_{phase}_s": value for name, phases in median.items()
               for phase, value in phases.items()}
    figures.update(ratio_a_b=ratio, ratio_a_c=ratio_a_c)
    _results.write(args.json, figures,
                   [_results.goal("(a)/(b) time to the first step", ratio, "<=", GOAL)])


if __name__ == "__main__":
    main()
