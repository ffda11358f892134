"""--numerics tpu: what rounding matmul and convolution operands to bfloat16 costs.

In one process, on the emulated TPU (8 logical CPU devices by default),
installed with TPU_COMPAT_NUMERICS=tpu, two workloads, each built twice:

  (a) Keras fit: a small conv net (two 3x3 Conv2D, pooling, two Dense; SGD,
      sparse categorical cross-entropy) under tf.distribute.experimental.TPUStrategy,
      compile(steps_per_execution=--steps-per-execution)
  (b) TF 1.15 code: a 64-128-8 MLP trained by compat.v1
      TPUStrategy(steps_per_run=--steps-per-run) +
      extended.experimental_run_steps_on_iterator (tpu_compat traces the
      multi-step loop once)

Each workload's "exact" copy is traced with TensorFloat-32 turned off, the
program's own switch: tpu_compat then rounds nothing (runtime/numerics.py,
active()), so its graph is the one --numerics exact gives; its "tpu" copy is
traced with TF32 on (the default), so its matmuls and convolutions read
bfloat16-rounded operands. The switch is set before each call, so a retrace
keeps each copy what it is, and the traced graphs are checked: the tpu copy
must hold float32 -> bfloat16 casts, the exact copy none. The copies run
interleaved, --repeats times, every other time in reverse order; the medians
and the time ratios tpu/exact are reported (goal: at most 1.3 each). Not a test:
the machine is noisy.

usage: python benchmarks/bench_numerics.py [--replicas 8] [--fit-steps 100]
           [--loop-steps 300] [--steps-per-execution 50] [--steps-per-run 100]
           [--repeats 3] [--json PATH]
"""
import argparse
import os
import statistics
import time

import _results

GOAL = 1.3
IMAGE, CHANNELS, FILTERS, CLASSES = 16, 3, 16, 10
FEATURES, HIDDEN, OUTPUTS = 64, 128, 8


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--fit-steps", type=int, default=100,
                        help="steps per timed fit of (a)")
    parser.add_argument("--loop-steps", type=int, default=300,
                        help="steps per timing of (b), a multiple of --steps-per-run")
    parser.add_argument("--steps-per-execution", type=int, default=50)
    parser.add_argument("--steps-per-run", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    _results.add_json_argument(parser)
    args = parser.parse_args()
    for name in ("replicas", "fit_steps", "loop_steps", "steps_per_execution",
                 "steps_per_run", "repeats"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: "
                         f"give a positive number")
    if args.loop_steps % args.steps_per_run:
        parser.error(f"--loop-steps {args.loop_steps}: give a multiple of --steps-per-run "
                     f"({args.steps_per_run})")
    return args


def without_autotune(tf, dataset):
    """``dataset`` without tf.data's autotuning thread.

    TF 2.21 can wait minutes destroying an autotuned iterator under load (each
    fit makes one: RootDataset::Iterator's destructor waits for the
    UnboundedThreadPool thread of Model::OptimizeLoop), stalling the run; the
    input here is in-memory tensors, with nothing to tune.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def bfloat16_casts(graphs):
    """Number of Cast ops to bfloat16 in ``graphs`` and their functions."""
    count = 0
    for graph in graphs:
        functions = [graph] + [f.graph for f in getattr(graph, "_functions", {}).values()
                               if hasattr(f, "graph")]
        for each in functions:
            for op in each.get_operations():
                if op.type == "Cast" and op.get_attr("DstT").name == "bfloat16":
                    count += 1
    return count


class Workloads:
    def __init__(self, tf, args):
        self.tf, self.args = tf, args
        self.resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")

    def fit(self):
        """(a): returns (seconds for --fit-steps steps, the traced train function)."""
        tf, args = self.tf, self.args
        from bench_keras_fit import timed_epoch  # pylint: disable=import-outside-toplevel
        import numpy as np  # pylint: disable=import-outside-toplevel
        strategy = tf.distribute.experimental.TPUStrategy(self.resolver)
        batch = 8 * args.replicas
        rng = np.random.RandomState(0)
        x = rng.rand(batch * 4, IMAGE, IMAGE, CHANNELS).astype(np.float32)
        y = rng.randint(0, CLASSES, batch * 4).astype(np.int32)
        dataset = without_autotune(tf, tf.data.Dataset.from_tensor_slices((x, y)).repeat()
                                   .batch(batch, drop_remainder=True))
        with strategy.scope():
            model = tf.keras.Sequential([
                tf.keras.layers.Conv2D(FILTERS, 3, activation="relu", padding="same",
                                       input_shape=(IMAGE, IMAGE, CHANNELS)),
                tf.keras.layers.Conv2D(FILTERS, 3, activation="relu", padding="same"),
                tf.keras.layers.GlobalAveragePooling2D(),
                tf.keras.layers.Dense(64, activation="relu"),
                tf.keras.layers.Dense(CLASSES),
            ])
            model.compile(tf.keras.optimizers.SGD(0.01),
                          tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          steps_per_execution=args.steps_per_execution)
        model.fit(dataset, epochs=1, steps_per_epoch=args.steps_per_execution, verbose=0)

        def run():
            return timed_epoch(tf, model, dataset, args.fit_steps)

        return run, lambda: model.train_function

    def loop(self):
        """(b): returns (seconds for --loop-steps steps, the traced loop)."""
        tf, args = self.tf, self.args
        import numpy as np  # pylint: disable=import-outside-toplevel
        v1 = tf.compat.v1
        strategy = v1.distribute.experimental.TPUStrategy(
            self.resolver, steps_per_run=args.steps_per_run)
        batch = 8 * args.replicas
        rng = np.random.RandomState(0)
        x = rng.randn(batch * 16, FEATURES).astype(np.float32)
        y = rng.randn(batch * 16, OUTPUTS).astype(np.float32)
        dataset = without_autotune(tf, tf.data.Dataset.from_tensor_slices((x, y)).repeat()
                                   .batch(batch, drop_remainder=True))
        with strategy.scope():
            hidden = tf.Variable(rng.randn(FEATURES, HIDDEN).astype(np.float32) * 0.1)
            out = tf.Variable(tf.zeros([HIDDEN, OUTPUTS]))
            optimizer = v1.train.GradientDescentOptimizer(0.01)
            iterator = strategy.make_dataset_iterator(dataset)

        def replica_step(inputs):
            features, labels = inputs
            with tf.GradientTape() as tape:
                prediction = tf.matmul(tf.tanh(tf.matmul(features, hidden)), out)
                loss = tf.reduce_sum(tf.square(prediction - labels)) / batch
            grads = tape.gradient(loss, [hidden, out])
            optimizer.apply_gradients(zip(grads, [hidden, out]))
            return loss

        def step_fn(ctx, inputs):
            ctx.set_last_step_output("loss", strategy.experimental_run_v2(
                replica_step, args=(inputs,)), reduce_op=tf.distribute.ReduceOp.SUM)
            return tf.no_op()

        def host_calls(calls):
            for _ in range(calls):
                ctx = strategy.extended.experimental_run_steps_on_iterator(
                    step_fn, iterator, iterations=args.steps_per_run,
                    initial_loop_values={"loss": 0.0})
            return float(ctx.last_step_outputs["loss"])

        host_calls(1)  # warm up: traces the loop

        def run():
            start = time.perf_counter()
            host_calls(args.loop_steps // args.steps_per_run)
            return time.perf_counter() - start

        def graphs():
            # The loop tpu_compat traced for this (step_fn, iterator): runtime/steps.py.
            from tpu_compat.runtime import steps  # pylint: disable=import-outside-toplevel
            loop = steps._loops[step_fn][id(iterator)]  # pylint: disable=protected-access
            return _function_graphs(loop.function)

        return run, graphs


def main():
    args = parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tpu-compat run chooses
    os.environ["TPU_COMPAT_NUMERICS"] = "tpu"
    import tpu_compat  # pylint: disable=import-outside-toplevel
    tpu_compat.install(num_replicas=args.replicas)
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    def under(tf32, build):
        """Builds (and traces) with TF32 ``tf32``; its runs set the same switch first."""
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
        run, graphs = build()

        def switched():
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
            return run()
        return switched, graphs

    workloads = Workloads(tf, args)
    fit_exact, fit_exact_fn = under(False, workloads.fit)
    fit_tpu, fit_tpu_fn = under(True, workloads.fit)
    variants = {"fit exact": fit_exact, "fit tpu": fit_tpu}
    casts = {"fit exact": bfloat16_casts(_function_graphs(fit_exact_fn())),
             "fit tpu": bfloat16_casts(_function_graphs(fit_tpu_fn()))}
    loop_exact, loop_exact_graphs = under(False, workloads.loop)
    loop_tpu, loop_tpu_graphs = under(True, workloads.loop)
    variants.update({"loop exact": loop_exact, "loop tpu": loop_tpu})
    casts["loop exact"] = bfloat16_casts(loop_exact_graphs())
    casts["loop tpu"] = bfloat16_casts(loop_tpu_graphs())
    for name, count in casts.items():
        if (count > 0) != name.endswith("tpu"):
            raise SystemExit(f"bench_numerics: the {name} graph holds {count} casts to "
                             f"bfloat16: the comparison would not be what it says")

    timings = {name: [] for name in variants}
    for repeat in range(args.repeats):
        # Every other repeat in reverse order, so no copy always follows the same one.
        order = list(variants) if repeat % 2 == 0 else list(reversed(list(variants)))
        for name in order:
            timings[name].append(variants[name]())
    median = {name: statistics.median(values) for name, values in timings.items()}
    batch = 8 * args.replicas
    fit_ratio = median["fit tpu"] / median["fit exact"]
    loop_ratio = median["loop tpu"] / median["loop exact"]
    print(f"replicas: {args.replicas}, global batch {batch}; (a) {args.fit_steps} fit steps, "
          f"steps_per_execution {args.steps_per_execution}; (b) {args.loop_steps} steps, "
          f"steps_per_run {args.steps_per_run}; {args.repeats} interleaved repeats (median)")
    print("| variant | exact | tpu | tpu / exact |\n|---|---|---|---|")
    print(f"| (a) Keras fit, samples/s | {args.fit_steps * batch / median['fit exact']:,.0f} | "
          f"{args.fit_steps * batch / median['fit tpu']:,.0f} | {fit_ratio:.2f} |")
    print(f"| (b) steps_per_run loop, s / 100 steps | "
          f"{100 * median['loop exact'] / args.loop_steps:.4f} | "
          f"{100 * median['loop tpu'] / args.loop_steps:.4f} | {loop_ratio:.2f} |")
    print(f"time ratios tpu/exact: fit {fit_ratio:.3f}, steps_per_run loop {loop_ratio:.3f} "
          f"(goal <= {GOAL}); casts to bfloat16 in the traced graphs: {casts}")
    _results.write(args.json, {
        "fit_exact_samples_per_s": args.fit_steps * batch / median["fit exact"],
        "fit_tpu_samples_per_s": args.fit_steps * batch / median["fit tpu"],
        "fit_ratio": fit_ratio,
        "loop_exact_s_per_100": 100 * median["loop exact"] / args.loop_steps,
        "loop_tpu_s_per_100": 100 * median["loop tpu"] / args.loop_steps,
        "loop_ratio": loop_ratio,
    }, [_results.goal("(a) Keras fit time tpu/exact", fit_ratio, "<=", GOAL),
        _results.goal("(b) steps_per_run loop time tpu/exact", loop_ratio, "<=", GOAL)])


def _function_graphs(function):
    """The graphs of a tf.function's concrete functions (Keras's train_function)."""
    return [concrete.graph for concrete in
            function._list_all_concrete_functions()]  # pylint: disable=protected-access


if __name__ == "__main__":
    main()
