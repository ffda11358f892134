"""steps_per_run: legacy multi-step loop vs per-step host loop vs modern tf.function loop.

Trains the same 64x8 linear model for the same number of steps, in one process,
on the same emulated TPU (8 logical CPU devices by default):

  (a) legacy   compat.v1 TPUStrategy(steps_per_run=100) +
               extended.experimental_run_steps_on_iterator (through tpu_compat)
  (b) per-step a host loop calling experimental_run_v2 once per step (tpu_compat)
  (c) modern   native tf.distribute.MirroredStrategy on the same devices,
               strategy.run inside one tf.function with a tf.range loop
               (c' the same with ReductionToOneDevice, the emulated TPU's
               cross-device ops)
  (d) TF 2.21  native compat.v1 MirroredStrategy experimental_run_steps_on_iterator
               in eager (what TensorFlow itself does with TF 1.x code today); in a
               process of its own, interleaved there with (c') for its ratio

Prints seconds per 100 steps and the ratios. Not a test: the machine is noisy,
so the variants run interleaved and the median of several repeats is used.

usage: python benchmarks/bench_steps_per_run.py [--replicas 8] [--steps 500] [--repeats 5]
                                                [--steps-per-run 100] [--json PATH]
"""
import argparse
import os
import statistics
import time

import _results

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--replicas", type=int, default=8)
parser.add_argument("--steps", type=int, default=500)
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--steps-per-run", type=int, default=100)
parser.add_argument("--native-v1-only", action="store_true",
                    help=argparse.SUPPRESS)  # (d), run in its own process
_results.add_json_argument(parser)
args = parser.parse_args()

import tpu_compat  # noqa: E402

handle = tpu_compat.install(num_replicas=args.replicas)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

GLOBAL_BATCH = 8 * args.replicas
FEATURES, OUTPUTS = 64, 8
rng = np.random.RandomState(0)
x_data = rng.randn(GLOBAL_BATCH * 64, FEATURES).astype(np.float32)
y_data = rng.randn(GLOBAL_BATCH * 64, OUTPUTS).astype(np.float32)


def dataset():
    return tf.data.Dataset.from_tensor_slices((x_data, y_data)).repeat().batch(
        GLOBAL_BATCH, drop_remainder=True)


def make_model(strategy):
    with strategy.scope():
        weights = tf.Variable(tf.zeros([FEATURES, OUTPUTS]))
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.01)

    def replica_step(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, weights) - y)) / GLOBAL_BATCH
        optimizer.apply_gradients([(tape.gradient(loss, weights), weights)])
        return loss
    return replica_step


resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
devices = list(handle.backend.devices)


def multi_step_runner(strategy, replica_step, run_replicas):
    """Runs `steps` steps as steps/steps_per_run host calls of the TF 1.x loop."""
    iterator = strategy.make_dataset_iterator(dataset())

    def step_fn(ctx, inputs):
        ctx.set_last_step_output("loss", run_replicas(replica_step, args=(inputs,)),
                                 reduce_op=tf.distribute.ReduceOp.SUM)
        return tf.no_op()

    def run(steps):
        for _ in range(steps // args.steps_per_run):
            ctx = strategy.extended.experimental_run_steps_on_iterator(
                step_fn, iterator, iterations=args.steps_per_run,
                initial_loop_values={"loss": 0.0})
        return float(ctx.last_step_outputs["loss"])
    return run


def variant_legacy():
    strategy = tf.compat.v1.distribute.experimental.TPUStrategy(
        resolver, steps_per_run=args.steps_per_run)
    return multi_step_runner(strategy, make_model(strategy), strategy.experimental_run_v2)


def variant_per_step():
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    replica_step = make_model(strategy)
    iterator = iter(strategy.experimental_distribute_dataset(dataset()))

    def run(steps):
        for _ in range(steps):
            loss = strategy.experimental_run_v2(replica_step, args=(next(iterator),))
        return float(strategy.reduce("SUM", loss, axis=None))
    return run


def variant_modern(cross_device_ops=None):
    strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=cross_device_ops)
    replica_step = make_model(strategy)
    iterator = iter(strategy.experimental_distribute_dataset(dataset()))

    @tf.function
    def train(n):
        loss = tf.constant(0.0)
        for _ in tf.range(n):
            loss = strategy.reduce("SUM", strategy.run(replica_step, args=(next(iterator),)),
                                   axis=None)
        return loss

    return lambda steps: float(train(tf.constant(steps)))


def variant_native_v1_eager():
    from tensorflow.python.distribute import mirrored_strategy
    strategy = mirrored_strategy.MirroredStrategyV1(devices)
    return multi_step_runner(strategy, make_model(strategy), strategy.run)


def main():
    if args.native_v1_only:
        # Several MirroredStrategy objects with TF's default collectives in one
        # process reuse collective instance keys, so TF 2.21's own eager loop runs
        # in a process of its own, side by side with (c') (no collectives) as its
        # yardstick: the ratio (d)/(c') is measured in one process, interleaved.
        run_native = variant_native_v1_eager()
        run_reference = variant_modern(tf.distribute.ReductionToOneDevice())
        run_native(args.steps_per_run)  # warm up
        run_reference(args.steps_per_run)
        native, reference = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run_native(args.steps_per_run)  # it is slow: one host call's worth
            native.append(time.perf_counter() - start)
            start = time.perf_counter()
            run_reference(args.steps)
            reference.append(time.perf_counter() - start)
        print(f"NATIVE_V1_SECONDS_PER_100 {100 * statistics.median(native) / args.steps_per_run}")
        print(f"REFERENCE_SECONDS_PER_100 {100 * statistics.median(reference) / args.steps}")
        _exit_now()

    variants = {"(a) legacy steps_per_run": variant_legacy(),
                "(b) per-step host loop": variant_per_step(),
                "(c) modern tf.function loop": variant_modern(),
                # The emulated TPU reduces on one device; same ops, like for like.
                "(c') modern, ReductionToOneDevice": variant_modern(
                    tf.distribute.ReductionToOneDevice())}
    for run in variants.values():
        run(args.steps_per_run)  # warm up: trace once
    timings = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, run in variants.items():
            start = time.perf_counter()
            run(args.steps)
            timings[name].append(time.perf_counter() - start)

    import sys  # noqa: E402

    native = _results.run_variant(
        [sys.executable, __file__, "--native-v1-only", "--replicas", str(args.replicas),
         "--steps-per-run", str(args.steps_per_run), "--steps", str(args.steps),
         "--repeats", str(args.repeats)])
    native_lines = dict(line.split() for line in native.splitlines()
                        if line.startswith(("NATIVE_V1_", "REFERENCE_")))
    native_per_100 = float(native_lines["NATIVE_V1_SECONDS_PER_100"])
    reference_per_100 = float(native_lines["REFERENCE_SECONDS_PER_100"])

    per_100 = {name: 100 * statistics.median(t) / args.steps for name, t in timings.items()}
    per_100["(d) TF 2.21 compat.v1 Mirrored, eager"] = native_per_100
    print(f"replicas: {args.replicas}, model {FEATURES}x{OUTPUTS}, global batch {GLOBAL_BATCH}, "
          f"{args.steps} steps x {args.repeats} repeats (median)")
    print(f"{'variant':<42} {'s / 100 steps':>14} {'steps/s':>10}")
    for name, seconds in per_100.items():
        print(f"{name:<42} {seconds:>14.4f} {100 / seconds:>10.1f}")
    a, b, c, c1 = (per_100[k] for k in list(variants))
    print(f"ratio (a)/(c) time: {a / c:.3f}   (target <= 1.10); (a)/(c'): {a / c1:.3f}")
    print(f"speed-up (b)/(a): {b / a:.2f}x   vs (b)/(c): {b / c:.2f}x")
    print(f"TF 2.21's own eager loop (d)/(c'), side by side in its own process: "
          f"{native_per_100 / reference_per_100:.1f}x slower "
          f"((c') there: {reference_per_100:.4f} s / 100 steps)")
    figures = {f"{key}_s_per_100": seconds for key, seconds in zip("abcpd", per_100.values())}
    figures.update({f"{key}_steps_per_s": 100 / seconds
                    for key, seconds in zip("abcpd", per_100.values())})
    figures.update(d_reference_s_per_100=reference_per_100, ratio_a_c=a / c, ratio_a_cp=a / c1,
                   speedup_b_a=b / a, speedup_b_c=b / c,
                   ratio_d_cp=native_per_100 / reference_per_100)
    _results.write(args.json, figures, [_results.goal("(a)/(c) time", a / c, "<=", 1.10)])
    _exit_now()


def _exit_now():
    """Ends the process without destroying its input iterators: TF 2.21 can take
    minutes to destroy one under load (RootDataset::Iterator's destructor waits in
    UnboundedThreadPool), and the results are printed by then."""
    import sys  # noqa: E402  pylint: disable=import-outside-toplevel
    sys.stdout.flush()
    os._exit(0)  # pylint: disable=protected-access


if __name__ == "__main__":  # bench_fidelity.py imports the helpers above
    main()
