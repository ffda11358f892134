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
program's own switch: tpu_compat then rounds nothing (fidelity/numerics.py,
active()), so its graph is the one --numerics exact gives; its "tpu" copy is
traced with TF32 on (the default), so its matmuls and convolutions read
bfloat16-rounded operands. The switch is set before each call, so a retrace
keeps each copy what it is, and the traced graphs are checked: the tpu copy
must hold float32 -> bfloat16 casts, the exact copy none.

Two more tpu copies of each workload measure what ``numerics-diff
--ops-at-step`` adds (TPU_COMPAT_NUMERICS_OPS, fidelity/numerics_ops.py), each
traced with a recorder of its own (the module's one recorder is set while the
copy is built and before each of its runs, as TF32 is):

  "ops"    records its step in the middle of every timed window: the
           recorder's run count restarts before each timing, and STEP is
           half the timed steps (the 50th of 100 fit steps, the 150th of 300
           loop steps), so each timing holds one recorded step (the exact ops
           and a host call per op) and the step marker's host call every step;
  "marker" records a step no run reaches: only the marker's host call per
           step, the cost away from the chosen step.

After the runs the benchmark checks that "ops" recorded rounded ops at its
step in every timing and "marker" none. The copies run interleaved,
--repeats times, every other time in reverse order; the medians and the time
ratios tpu/exact and ops/tpu are reported (goals: at most 1.3 and 1.5 each),
with the marker's cost per step away from the chosen step. Not a test: the
machine is noisy.

usage: python benchmarks/bench_numerics.py [--replicas 8] [--fit-steps 100]
           [--loop-steps 300] [--steps-per-execution 50] [--steps-per-run 100]
           [--repeats 3] [--json PATH]
"""
import argparse
import contextlib
import os
import statistics
import time

import _results

GOAL = 1.3
OPS_GOAL = 1.5  # numerics-diff --ops-at-step's recording over --numerics tpu alone
NEVER = 2 ** 62  # a step no run reaches: the marker copies' recorded step
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

        def run():  # the epoch's wall seconds
            wall_per_step, _ = timed_epoch(tf, model, dataset, args.fit_steps)
            return wall_per_step * args.fit_steps

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


@contextlib.contextmanager
def recording(recorder):
    """fidelity/numerics_ops.py's recorder set to ``recorder`` (None: off) inside.

    The module keeps one recorder, made by install() from
    TPU_COMPAT_NUMERICS_OPS; rounding and the step markers read it when a step
    is traced (numerics._rounding, numerics_ops.replica_step). Each copy here
    needs its own, so the benchmark sets the module's (private) one while a
    copy is traced and while it runs.
    """
    from tpu_compat.fidelity import numerics_ops  # pylint: disable=import-outside-toplevel
    saved = numerics_ops._recorder  # pylint: disable=protected-access
    numerics_ops._recorder = recorder  # pylint: disable=protected-access
    try:
        yield
    finally:
        numerics_ops._recorder = saved  # pylint: disable=protected-access


def restart_count(recorder):
    """Replica 0's run count of ``recorder`` back to 0: its STEP-th step is
    then the STEP-th of the next timing (the count is host state the traced
    marker increments; STEP is a constant of the traced graph)."""
    with recorder._lock:  # pylint: disable=protected-access
        recorder._steps_run = 0  # pylint: disable=protected-access


def middle(steps):
    """The recorded step of a timing of ``steps`` steps (1-based): its middle."""
    return (steps + 1) // 2


def main():
    args = parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tpu-compat run chooses
    os.environ["TPU_COMPAT_NUMERICS"] = "tpu"
    os.environ.pop("TPU_COMPAT_NUMERICS_OPS", None)  # the copies set their own recorders
    import tpu_compat  # pylint: disable=import-outside-toplevel
    tpu_compat.install(num_replicas=args.replicas)
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.fidelity import numerics_ops  # pylint: disable=import-outside-toplevel

    def under(tf32, build, recorder=None):
        """Builds (and traces) with TF32 ``tf32`` and ``recorder``; its runs set
        the same switches first (and restart the recorder's count)."""
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
        with recording(recorder):
            run, graphs = build()

        def switched():
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
            if recorder is not None:
                restart_count(recorder)
            with recording(recorder):
                return run()
        return switched, graphs

    # The recorders are never written (their path is unused): checked below.
    recorders = {"fit ops": numerics_ops.Recorder(middle(args.fit_steps), os.devnull),
                 "fit marker": numerics_ops.Recorder(NEVER, os.devnull),
                 "loop ops": numerics_ops.Recorder(middle(args.loop_steps), os.devnull),
                 "loop marker": numerics_ops.Recorder(NEVER, os.devnull)}
    workloads = Workloads(tf, args)
    variants, casts = {}, {}
    for workload, build in (("fit", workloads.fit), ("loop", workloads.loop)):
        for copy in ("exact", "tpu", "ops", "marker"):
            name = f"{workload} {copy}"
            variants[name], graphs = under(copy != "exact", build, recorders.get(name))
            traced = graphs()
            casts[name] = bfloat16_casts(
                _function_graphs(traced) if workload == "fit" else traced)
    for name, count in casts.items():
        if (count > 0) == name.endswith("exact"):
            raise SystemExit(f"bench_numerics: the {name} graph holds {count} casts to "
                             f"bfloat16: the comparison would not be what it says")

    timings = {name: [] for name in variants}
    for repeat in range(args.repeats):
        # Every other repeat in reverse order, so no copy always follows the same one.
        order = list(variants) if repeat % 2 == 0 else list(reversed(list(variants)))
        for name in order:
            timings[name].append(variants[name]())
    check_recorders(recorders, args.repeats)
    median = {name: statistics.median(values) for name, values in timings.items()}
    batch = 8 * args.replicas
    steps = {"fit": args.fit_steps, "loop": args.loop_steps}
    ratio = {}
    for workload in steps:
        ratio[f"{workload} tpu/exact"] = median[f"{workload} tpu"] / median[f"{workload} exact"]
        ratio[f"{workload} ops/tpu"] = median[f"{workload} ops"] / median[f"{workload} tpu"]

    def per_step_ms(workload, copy, base):
        added = median[f"{workload} {copy}"] - median[f"{workload} {base}"]
        return 1000 * added / steps[workload]

    def rate(name):
        return args.fit_steps * batch / median[name]

    def per_100(name):
        return 100 * median[name] / args.loop_steps

    print(f"replicas: {args.replicas}, global batch {batch}; (a) {args.fit_steps} fit steps, "
          f"steps_per_execution {args.steps_per_execution}; (b) {args.loop_steps} steps, "
          f"steps_per_run {args.steps_per_run}; {args.repeats} interleaved repeats (median); "
          f"recorded step: fit {middle(args.fit_steps)}, loop {middle(args.loop_steps)} "
          f"of each timing")
    print("| variant | exact | tpu | tpu / exact | tpu + ops (step in window) "
          "| tpu + marker only | ops / tpu |\n|---|---|---|---|---|---|---|")
    print(f"| (a) Keras fit, samples/s | {rate('fit exact'):,.0f} | {rate('fit tpu'):,.0f} | "
          f"{ratio['fit tpu/exact']:.2f} | {rate('fit ops'):,.0f} | {rate('fit marker'):,.0f} | "
          f"{ratio['fit ops/tpu']:.2f} |")
    print(f"| (b) steps_per_run loop, s / 100 steps | {per_100('loop exact'):.4f} | "
          f"{per_100('loop tpu'):.4f} | {ratio['loop tpu/exact']:.2f} | "
          f"{per_100('loop ops'):.4f} | {per_100('loop marker'):.4f} | "
          f"{ratio['loop ops/tpu']:.2f} |")
    print(f"time ratios tpu/exact: fit {ratio['fit tpu/exact']:.3f}, steps_per_run loop "
          f"{ratio['loop tpu/exact']:.3f} (goal <= {GOAL}); --ops-at-step recording over tpu: "
          f"fit {ratio['fit ops/tpu']:.3f}, loop {ratio['loop ops/tpu']:.3f} "
          f"(goal <= {OPS_GOAL}); the marker alone (steps away from the recorded one) adds "
          f"{per_step_ms('fit', 'marker', 'tpu'):.3f} ms per fit step, "
          f"{per_step_ms('loop', 'marker', 'tpu'):.3f} ms per loop step; "
          f"casts to bfloat16 in the traced graphs: {casts}")
    _results.write(args.json, {
        "fit_exact_samples_per_s": rate("fit exact"),
        "fit_tpu_samples_per_s": rate("fit tpu"),
        "fit_ratio": ratio["fit tpu/exact"],
        "fit_ops_samples_per_s": rate("fit ops"),
        "fit_marker_samples_per_s": rate("fit marker"),
        "fit_ops_ratio": ratio["fit ops/tpu"],
        "fit_marker_ms_per_step": per_step_ms("fit", "marker", "tpu"),
        "loop_exact_s_per_100": per_100("loop exact"),
        "loop_tpu_s_per_100": per_100("loop tpu"),
        "loop_ratio": ratio["loop tpu/exact"],
        "loop_ops_s_per_100": per_100("loop ops"),
        "loop_marker_s_per_100": per_100("loop marker"),
        "loop_ops_ratio": ratio["loop ops/tpu"],
        "loop_marker_ms_per_step": per_step_ms("loop", "marker", "tpu"),
    }, [_results.goal("(a) Keras fit time tpu/exact", ratio["fit tpu/exact"], "<=", GOAL),
        _results.goal("(b) steps_per_run loop time tpu/exact", ratio["loop tpu/exact"],
                      "<=", GOAL),
        _results.goal("(a) Keras fit time with --ops-at-step recording / tpu",
                      ratio["fit ops/tpu"], "<=", OPS_GOAL),
        _results.goal("(b) steps_per_run loop time with --ops-at-step recording / tpu",
                      ratio["loop ops/tpu"], "<=", OPS_GOAL)])


def check_recorders(recorders, repeats):
    """The "ops" copies recorded their step in every timing; the markers none."""
    for name, recorder in recorders.items():
        report = recorder.report()
        if not report["steps_run"]:
            raise SystemExit(f"bench_numerics: the {name} copy counted no step: its "
                             f"recording is not what the benchmark says")
        executions = [row["executions"] for row in report["ops"]]
        if name.endswith("marker") and executions:
            raise SystemExit(f"bench_numerics: the {name} copy recorded {len(executions)} ops "
                             f"at a step no run reaches")
        if name.endswith("ops") and (not executions or min(executions) < repeats):
            raise SystemExit(f"bench_numerics: the {name} copy recorded step {recorder.step} "
                             f"{min(executions, default=0)} times, not in each of the "
                             f"{repeats} timings")


def _function_graphs(function):
    """The graphs of a tf.function's concrete functions (Keras's train_function)."""
    return [concrete.graph for concrete in
            function._list_all_concrete_functions()]  # pylint: disable=protected-access


if __name__ == "__main__":
    main()
