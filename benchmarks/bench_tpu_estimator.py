"""TPUEstimator training throughput: iterations_per_loop=100 vs =1 vs a TF 2 loop.

200 training steps of the same small model (64 -> 64 tanh -> 8, MSE, SGD 0.01,
global batch 64) on the same emulated TPU (8 logical CPU devices by default):

  (a)  TF 1.15 TPUEstimator, use_tpu=True, iterations_per_loop=100
       (CrossShardOptimizer, PER_HOST_V2 input)
  (b)  the same with iterations_per_loop=1: one Session.run per step
  (c)  hand-written TF 2: TPUStrategy (the emulated TPU), a tf.function whose
       tf.range loop runs 100 steps of strategy.run per call, Keras SGD

Every variant runs in a process of its own, --repeats times interleaved; the
median is reported. Two figures per variant: steady-state steps/s (the second
100 steps: the first host call pays for tracing or graph building) and the
end-to-end time of the whole 200 steps including graph building, session
start and the final checkpoint (Estimator) or tracing (TF 2). Not a test.

usage: python benchmarks/bench_tpu_estimator.py [--replicas 8] [--repeats 3] [--steps 200]
                                               [--per-loop 100] [--json PATH]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import _results

STEPS, PER_LOOP, BATCH, FEATURES, HIDDEN, OUTPUTS = 200, 100, 64, 64, 64, 8
VARIANTS = {
    "a": "(a) TPUEstimator, iterations_per_loop=100",
    "b": "(b) TPUEstimator, iterations_per_loop=1",
    "c": "(c) TF 2 loop: TPUStrategy + tf.function, 100 steps per call",
}


def data(np):
    rng = np.random.RandomState(0)
    x = rng.randn(1024, FEATURES).astype(np.float32)
    y = rng.randn(1024, OUTPUTS).astype(np.float32)
    return x, y


def estimator_variant(per_loop):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    v1 = tf.compat.v1
    x, y = data(np)

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        hidden = v1.layers.dense(features, HIDDEN, activation=tf.tanh, name="hidden")
        prediction = v1.layers.dense(hidden, OUTPUTS, name="out")
        loss = v1.losses.mean_squared_error(labels, prediction)
        optimizer = v1.tpu.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.01))
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    class Clock(v1.train.SessionRunHook):
        def __init__(self):
            self.ends = []

        def after_run(self, run_context, run_values):
            self.ends.append(time.perf_counter())

    config = v1.estimator.tpu.RunConfig(
        model_dir=tempfile.mkdtemp(), save_checkpoints_steps=None,
        save_checkpoints_secs=None, save_summary_steps=None, log_step_count_steps=None,
        tpu_config=v1.estimator.tpu.TPUConfig(
            iterations_per_loop=per_loop,
            per_host_input_for_training=v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2))
    estimator = v1.estimator.tpu.TPUEstimator(model_fn=model_fn, config=config,
                                              use_tpu=True, train_batch_size=BATCH)
    clock = Clock()
    start = time.perf_counter()
    estimator.train(input_fn, max_steps=STEPS, hooks=[clock])
    total = time.perf_counter() - start
    # Steady state: the runs that ended after the first 100 steps.
    runs_per_half = (STEPS // 2) // per_loop
    second_half = clock.ends[-1] - clock.ends[runs_per_half - 1]
    return (STEPS // 2) / second_half, total


def tf2_variant():
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    x, y = data(np)
    start = time.perf_counter()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    strategy = tf.distribute.TPUStrategy(resolver)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(HIDDEN, activation="tanh"),
                                     tf.keras.layers.Dense(OUTPUTS)])
        model.build((None, FEATURES))
        optimizer = tf.keras.optimizers.SGD(0.01)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        BATCH, drop_remainder=True)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    def step(features, labels):
        with tf.GradientTape() as tape:
            error = tf.square(model(features) - labels)
            loss = tf.reduce_sum(tf.reduce_mean(error, axis=1)) / BATCH
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    @tf.function
    def loop(iterator):
        for _ in tf.range(PER_LOOP):
            strategy.run(step, args=next(iterator))

    calls = STEPS // PER_LOOP
    for _ in range(calls // 2):  # the first half: tracing, then steady
        loop(iterator)
    first = time.perf_counter()
    for _ in range(calls - calls // 2):
        loop(iterator)
    end = time.perf_counter()
    return (STEPS // 2) / (end - first), end - start


def measure(variant, steps, per_loop):
    global STEPS, PER_LOOP  # pylint: disable=global-statement  (the sizes of this process)
    STEPS, PER_LOOP = steps, per_loop
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tpu-compat run chooses
    import tpu_compat  # pylint: disable=import-outside-toplevel
    tpu_compat.install()
    if variant == "c":
        return tf2_variant()
    return estimator_variant(PER_LOOP if variant == "a" else 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=STEPS,
                        help="training steps per variant, a multiple of 2 x --per-loop")
    parser.add_argument("--per-loop", type=int, default=PER_LOOP,
                        help="iterations_per_loop of (a), steps per call of (c)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    _results.add_json_argument(parser)
    args = parser.parse_args()
    if args.steps <= 0 or args.per_loop <= 0 or args.steps % (2 * args.per_loop):
        parser.error(f"--steps {args.steps} --per-loop {args.per_loop}: give positive "
                     f"numbers, --steps a multiple of 2 x --per-loop")
    if args.variant:
        steps_per_second, total = measure(args.variant, args.steps, args.per_loop)
        print(json.dumps({"steps_per_second": steps_per_second, "total": total}))
        return
    env = dict(os.environ, TPU_COMPAT_NUM_REPLICAS=str(args.replicas))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    samples = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name in VARIANTS:
            stdout = _results.run_variant(
                [sys.executable, __file__, "--variant", name,
                 "--steps", str(args.steps), "--per-loop", str(args.per_loop)], env=env)
            samples[name].append(json.loads(stdout.strip().splitlines()[-1]))
    median = {name: (statistics.median(s["steps_per_second"] for s in runs),
                     statistics.median(s["total"] for s in runs))
              for name, runs in samples.items()}
    print(f"{args.steps} steps, global batch {BATCH}, {args.replicas} emulated cores, "
          f"median of {args.repeats}")
    print(f"| variant | steady-state steps/s | end-to-end s ({args.steps} steps) |")
    print("|---|---|---|")
    for name, label in VARIANTS.items():
        print(f"| {label} | {median[name][0]:.1f} | {median[name][1]:.2f} |")
    a, b, c = (median[n][0] for n in "abc")
    print(f"\n(a)/(c) steady-state throughput: {a / c:.2f}x (goal >= 0.9x)")
    print(f"(a)/(b): {a / b:.1f}x")
    print(f"end-to-end (a)/(c) time: {median['a'][1] / median['c'][1]:.2f}")
    figures = {f"{n}_steps_per_s": median[n][0] for n in VARIANTS}
    figures.update({f"{n}_end_to_end_s": median[n][1] for n in VARIANTS})
    figures.update(ratio_a_c=a / c, ratio_a_b=a / b,
                   end_to_end_ratio_a_c=median["a"][1] / median["c"][1])
    _results.write(args.json, figures,
                   [_results.goal("(a)/(c) steady-state steps/s", a / c, ">=", 0.9)])


if __name__ == "__main__":
    main()
