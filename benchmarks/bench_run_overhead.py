"""Per-call overhead of experimental_run_v2 through tpu_compat vs native strategy.run.

On one strategy (the emulated TPU, 8 logical CPU devices by default), in one
process, measures:

  (i)  eager: one call per step from Python, the step a tf.function
       - adapter.experimental_run_v2(step)      vs MirroredStrategy.run(adapter, step)
  (ii) inside one tf.function whose tf.range loop runs 1,000 steps
       - adapter.experimental_run_v2(step)      vs MirroredStrategy.run(adapter, step)

Targets: ratio <= 1.20 eagerly, <= 1.05 inside tf.function (the adapter adds
nothing to the traced graph). Variants run interleaved; medians of repeats.

usage: python benchmarks/bench_run_overhead.py [--replicas 8] [--calls 300] [--loop-steps 1000]
                                              [--repeats 7] [--json PATH]
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
parser.add_argument("--calls", type=int, default=300)
parser.add_argument("--loop-steps", type=int, default=1000)
parser.add_argument("--repeats", type=int, default=7)
_results.add_json_argument(parser)
args = parser.parse_args()

import tpu_compat  # noqa: E402

handle = tpu_compat.install(num_replicas=args.replicas)
import tensorflow as tf  # noqa: E402

native_run = tf.distribute.MirroredStrategy.run  # TensorFlow's own implementation
adapter = tf.distribute.experimental.TPUStrategy(
    tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
with adapter.scope():
    weights = tf.Variable(tf.ones([64, 8]))
inputs = adapter.experimental_distribute_values_from_function(
    lambda ctx: tf.ones([8, 64]) * float(ctx.replica_id_in_sync_group))


@tf.function
def step(x):
    return tf.reduce_sum(tf.matmul(x, weights))


def eager_adapter():
    for _ in range(args.calls):
        adapter.experimental_run_v2(step, args=(inputs,))


def eager_native():
    for _ in range(args.calls):
        native_run(adapter, step, args=(inputs,))


def make_loop(call):
    @tf.function
    def loop():
        total = tf.constant(0.0)
        for _ in tf.range(args.loop_steps):
            total += adapter.reduce("SUM", call(), axis=None)
        return total
    return loop


loop_adapter = make_loop(lambda: adapter.experimental_run_v2(step, args=(inputs,)))
loop_native = make_loop(lambda: native_run(adapter, step, args=(inputs,)))

variants = {
    "(i) eager   adapter.experimental_run_v2": (eager_adapter, args.calls),
    "(i) eager   native run, same strategy": (eager_native, args.calls),
    "(ii) traced adapter.experimental_run_v2": (loop_adapter, args.loop_steps),
    "(ii) traced native run, same strategy": (loop_native, args.loop_steps),
}
for run, _ in variants.values():
    run()  # warm up: trace once
timings = {name: [] for name in variants}
for _ in range(args.repeats):
    for name, (run, _) in variants.items():
        start = time.perf_counter()
        result = run()
        if result is not None:
            float(result)
        timings[name].append(time.perf_counter() - start)

per_call = {name: 1e6 * statistics.median(t) / variants[name][1] for name, t in timings.items()}
print(f"replicas: {args.replicas}; eager {args.calls} calls, traced loop {args.loop_steps} "
      f"steps; median of {args.repeats}")
print(f"{'variant':<44} {'us / step':>10}")
for name, micros in per_call.items():
    print(f"{name:<44} {micros:>10.1f}")
names = list(per_call)
print(f"eager ratio adapter/native: {per_call[names[0]] / per_call[names[1]]:.3f}  (target <= 1.20)")
print(f"traced ratio adapter/native: {per_call[names[2]] / per_call[names[3]]:.3f}  (target <= 1.05)")
eager_ratio = per_call[names[0]] / per_call[names[1]]
traced_ratio = per_call[names[2]] / per_call[names[3]]
_results.write(args.json, {
    "eager_adapter_us": per_call[names[0]], "eager_native_us": per_call[names[1]],
    "traced_adapter_us": per_call[names[2]], "traced_native_us": per_call[names[3]],
    "eager_ratio": eager_ratio, "traced_ratio": traced_ratio,
}, [_results.goal("eager adapter/native", eager_ratio, "<=", 1.20),
    _results.goal("traced adapter/native", traced_ratio, "<=", 1.05)])
