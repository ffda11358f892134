"""Emulated pod slice: 2 hosts x 4 cores against 1 host x 8 cores, same machine.

The training step is bench_steps_per_run's 64x8 linear model (global batch 64,
SGD), run as TF 1.15 code: compat.v1 TPUStrategy(steps_per_run=100) +
extended.experimental_run_steps_on_iterator (tpu_compat traces the 100-step
loop once; each host call runs it on device). Each configuration is a process
of its own (logical devices are fixed per process):

  1x8  one process, 8 emulated cores (logical CPU devices)
  2x4  TPU_COMPAT_NUM_HOSTS=2: this process is the chief and 2 pod worker
       processes on loopback serve 4 cores each (docs/pods.md)

Each measures, interleaved, 100-step host calls of
  train      the training step above
  reduce     an all-reduce-only step: a TF 2 tf.function whose tf.range loop
             runs strategy.run of one SGD update of the 64x8 weights with a
             constant gradient and reduces a scalar "loss" (no input, no
             matmul: the training step's two cross-replica reductions,
             ReductionToOneDevice as in training, and the update)
and the 1x8 process also, beside them, native TensorFlow:
  native     tf.distribute.MirroredStrategy over the same 8 logical CPUs with
             ReductionToOneDevice (the emulated TPU's cross-device ops), the
             training step in a tf.function tf.range loop: what the 1x8 figure
             is worth on this machine at this moment

The driver runs the two processes --runs times, alternating which goes first,
and prints each figure's median over the runs (each run's figure is itself the
median of --repeats interleaved timings). Collective overhead per step =
(train time of 2x4 - train time of 1x8) / steps: what the pod adds to one
training step (gradient and loss reductions over gRPC to worker 0's core 0 and
back, two hosts' input pipelines, dispatch across processes). Not a test.

usage: python benchmarks/bench_pod.py [--runs 3] [--steps 500] [--repeats 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {"1x8": {"hosts": 1, "replicas": 8}, "2x4": {"hosts": 2, "replicas": 8}}
FIGURES = ("START_SECONDS", "TRAIN_SECONDS_PER_100", "REDUCE_SECONDS_PER_100",
           "NATIVE_SECONDS_PER_100", "LOSS")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3,
                        help="processes per configuration (median reported)")
    parser.add_argument("--steps", type=int, default=500, help="steps per timing")
    parser.add_argument("--repeats", type=int, default=3,
                        help="interleaved timings per process (median)")
    parser.add_argument("--child", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    return parser.parse_args()


# -- one configuration, in its own process --------------------------------------

def child(args):
    started = time.perf_counter()
    # bench_steps_per_run reads its flags at import and installs the emulated
    # TPU (a pod when TPU_COMPAT_NUM_HOSTS is set): give it the shared ones.
    sys.argv = [sys.argv[0], "--replicas", str(CONFIGS[args.child]["replicas"]),
                "--steps", str(args.steps), "--repeats", str(args.repeats)]
    sys.path.insert(0, HERE)
    import bench_steps_per_run as bench  # pylint: disable=import-outside-toplevel
    tf = bench.tf
    backend = bench.handle.backend
    assert backend.num_hosts == CONFIGS[args.child]["hosts"], backend
    start_seconds = time.perf_counter() - started

    variants = {"TRAIN": bench.variant_legacy(), "REDUCE": reduce_only(bench)}
    if backend.num_hosts == 1:
        # Native TF over 8 local logical CPUs: the machine's yardstick. (A native
        # MirroredStrategy refuses the devices of several workers in eager mode.)
        variants["NATIVE"] = bench.variant_modern(tf.distribute.ReductionToOneDevice())
    losses = {name: run(bench.args.steps_per_run) for name, run in variants.items()}  # warm up
    timings = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, run in variants.items():
            begin = time.perf_counter()
            run(args.steps)
            timings[name].append(time.perf_counter() - begin)
    print(f"START_SECONDS {start_seconds}")
    for name, seconds in timings.items():
        print(f"{name}_SECONDS_PER_100 {100 * statistics.median(seconds) / args.steps}")
    print(f"LOSS {losses['TRAIN']}")  # after the warm-up call: same in both configurations
    print(f"DEVICES {','.join(backend.devices)}")


def reduce_only(bench):
    """100-step host calls of an update whose only cross-replica work is the all-reduce."""
    tf = bench.tf
    strategy = tf.distribute.TPUStrategy(bench.resolver)  # tpu_compat's (TF 2)
    with strategy.scope():
        weights = tf.Variable(tf.zeros([bench.FEATURES, bench.OUTPUTS]))
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.01)

    def update():
        # Made in the step: a gradient captured from outside hung the loop.
        gradient = tf.ones([bench.FEATURES, bench.OUTPUTS])
        optimizer.apply_gradients([(gradient, weights)])
        return tf.constant(1.0)  # the "loss", reduced like the training step's

    @tf.function
    def loop(calls):
        total = tf.constant(0.0)
        for _ in tf.range(calls * bench.args.steps_per_run):
            total += strategy.reduce("SUM", strategy.run(update), axis=None)
        return total

    return lambda steps: float(loop(tf.constant(steps // bench.args.steps_per_run)))


# -- the driver ------------------------------------------------------------------

def run_child(config, args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    env.pop("TPU_COMPAT_NUM_REPLICAS", None)
    env.pop("TF_CONFIG", None)
    if CONFIGS[config]["hosts"] > 1:
        env["TPU_COMPAT_NUM_HOSTS"] = str(CONFIGS[config]["hosts"])
    else:
        env.pop("TPU_COMPAT_NUM_HOSTS", None)
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", config,
         "--steps", str(args.steps), "--repeats", str(args.repeats)],
        capture_output=True, text=True, env=env, timeout=900)
    if result.returncode != 0:
        raise SystemExit(f"bench_pod: the {config} process failed (exit "
                         f"{result.returncode}):\n{result.stderr[-3000:]}")
    return {key: float(value) for key, value in
            (line.split() for line in result.stdout.splitlines()
             if line.split()[:1] and line.split()[0] in FIGURES)}


def main():
    args = parse_args()
    if args.child:
        child(args)
        return
    figures = {config: [] for config in CONFIGS}
    for run in range(args.runs):
        order = list(CONFIGS) if run % 2 == 0 else list(reversed(list(CONFIGS)))
        for config in order:
            figures[config].append(run_child(config, args))
            print(f"run {run + 1}/{args.runs} {config}: {figures[config][-1]}", flush=True)

    def median(config, key):
        return statistics.median(f[key] for f in figures[config])

    one, pod = (median(c, "TRAIN_SECONDS_PER_100") for c in ("1x8", "2x4"))
    reduce_one, reduce_pod = (median(c, "REDUCE_SECONDS_PER_100") for c in ("1x8", "2x4"))
    native = median("1x8", "NATIVE_SECONDS_PER_100")
    print(f"\n{args.runs} runs per configuration (median), each {args.repeats} interleaved "
          f"timings of {args.steps} steps; model 64x8, global batch 64, 8 replicas")
    rows = [
        ("(a) 1 host x 8 cores: TF 1.15 `steps_per_run=100` loop (tpu_compat)", one),
        ("(b) 2 hosts x 4 cores: the same program, `TPU_COMPAT_NUM_HOSTS=2`", pod),
        ("(c) native `MirroredStrategy`, 8 local logical CPUs, `ReductionToOneDevice`, "
         "`tf.range` loop (beside (a))", native),
        ("(r1) all-reduce-only step, 1 host x 8", reduce_one),
        ("(r2) all-reduce-only step, 2 hosts x 4", reduce_pod),
    ]
    print("| variant | s / 100 steps | steps/s |\n|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.4f} | {100 / seconds:.1f} |")
    print(f"\nratio (b)/(a) time: {pod / one:.2f}; (a)/(c): {one / native:.2f}")
    print(f"collective overhead per step ((b) - (a)) / 100: {10 * (pod - one):.2f} ms")
    print(f"all-reduce-only step: {10 * reduce_one:.2f} ms on 1 host, {10 * reduce_pod:.2f} ms "
          f"on 2 hosts: the cross-host all-reduce adds {10 * (reduce_pod - reduce_one):.2f} ms")
    print(f"start-up (TF import, install, pod): 1x8 {median('1x8', 'START_SECONDS'):.1f} s, "
          f"2x4 {median('2x4', 'START_SECONDS'):.1f} s")
    losses = {c: median(c, "LOSS") for c in CONFIGS}
    print(f"loss after the first 100 steps: {losses}")


if __name__ == "__main__":
    main()
