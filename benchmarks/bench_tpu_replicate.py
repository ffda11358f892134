"""TF 1.x "training loop on device": tpu.replicate in tf.while_loop vs steps_per_run.

Trains the same 64x8 linear model (CrossShardOptimizer over SGD, global batch
8 per replica) for the same number of steps, in one graph-mode process, on the
same emulated TPU (8 logical CPU devices by default):

  (a) low-level  a tf.while_loop of --steps-per-run iterations whose body reads
                 the next global batch, splits it and runs tf.compat.v1.tpu.replicate
                 (one Session.run per loop: the TF 1.x idiom)
  (b) strategy   compat.v1 TPUStrategy(steps_per_run=--steps-per-run) +
                 extended.experimental_run_steps_on_iterator, one Session.run
                 per loop (TensorFlow's own multi-step machinery)

Prints seconds per 100 steps and (b)/(a): how fast the low-level program runs
relative to the strategy program. Not a test: the machine is noisy, so the
variants run interleaved and the median of several repeats is used.

usage: python benchmarks/bench_tpu_replicate.py [--replicas 8] [--steps 1000] [--repeats 5]
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
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--steps-per-run", type=int, default=100)
_results.add_json_argument(parser)
args = parser.parse_args()

import tpu_compat  # noqa: E402

tpu_compat.install(num_replicas=args.replicas)
import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

tf.disable_v2_behavior()

N = args.replicas
GLOBAL_BATCH = 8 * N
FEATURES, OUTPUTS = 64, 8
rng = np.random.RandomState(0)
x_data = rng.randn(GLOBAL_BATCH * 64, FEATURES).astype(np.float32)
y_data = rng.randn(GLOBAL_BATCH * 64, OUTPUTS).astype(np.float32)


def dataset():
    return tf.data.Dataset.from_tensor_slices((x_data, y_data)).repeat().batch(
        GLOBAL_BATCH, drop_remainder=True)


def replica_loss(x, y):
    weights = tf.get_variable("weights", [FEATURES, OUTPUTS],
                              initializer=tf.zeros_initializer())
    return tf.reduce_mean(tf.square(tf.matmul(x, weights) - y))


def train_op(loss):
    return tf.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.01)).minimize(loss)


def variant_low_level():
    """(a): tpu.replicate inside a host-side tf.while_loop."""
    graph = tf.Graph()
    with graph.as_default():
        iterator = tf.data.make_one_shot_iterator(dataset())

        def computation(x, y):
            loss = replica_loss(x, y)
            return loss, train_op(loss)

        def body(i, _):
            x, y = iterator.get_next()  # in the body: a new batch every step
            per_replica = [list(pair) for pair in zip(tf.split(x, N), tf.split(y, N))]
            losses = tf.tpu.replicate(computation, per_replica)
            return i + 1, tf.add_n([replica[0] for replica in losses]) / N

        # One step after the other, as TF 1.x's tpu training_loop ran them: a
        # step's variable reads must follow the previous step's updates.
        loop = tf.while_loop(lambda i, _: i < args.steps_per_run, body,
                             [tf.constant(0), tf.constant(0.0)],
                             parallel_iterations=1)[1]
        session = tf.Session(graph=graph)
        session.run(tf.global_variables_initializer())
    return lambda: session.run(loop)


def variant_strategy():
    """(b): the compat.v1 TPUStrategy's steps_per_run loop."""
    graph = tf.Graph()
    with graph.as_default():
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
        strategy = tf.distribute.experimental.TPUStrategy(
            resolver, steps_per_run=args.steps_per_run)
        with strategy.scope():
            iterator = strategy.make_dataset_iterator(dataset())

            def replica_step(inputs):
                loss = replica_loss(*inputs)
                with tf.control_dependencies([train_op(loss)]):
                    return tf.identity(loss)

            def step_fn(ctx, inputs):
                ctx.set_last_step_output(
                    "loss", strategy.experimental_run_v2(replica_step, args=(inputs,)),
                    reduce_op=tf.distribute.ReduceOp.MEAN)
                return tf.no_op()

            ctx = strategy.extended.experimental_run_steps_on_iterator(
                step_fn, iterator, iterations=args.steps_per_run,
                initial_loop_values={"loss": 0.0})
        session = tf.Session(graph=graph,
                             config=strategy.update_config_proto(tf.ConfigProto()))
        session.run(tf.global_variables_initializer())
        session.run(iterator.initializer)
    return lambda: session.run([ctx.run_op, ctx.last_step_outputs["loss"]])


def timed(run_loop):
    start = time.perf_counter()
    for _ in range(args.steps // args.steps_per_run):
        result = run_loop()
    return (time.perf_counter() - start) / args.steps * 100, result


variants = {"(a) tpu.replicate in tf.while_loop": variant_low_level(),
            "(b) TPUStrategy(steps_per_run)": variant_strategy()}
for run_loop in variants.values():  # warm up: first Session.run builds kernels
    run_loop()
times = {name: [] for name in variants}
for _ in range(args.repeats):
    for name, run_loop in variants.items():
        seconds, _ = timed(run_loop)
        times[name].append(seconds)

print(f"{N} replicas, global batch {GLOBAL_BATCH}, {args.steps} steps, "
      f"{args.steps_per_run} steps per Session.run, median of {args.repeats}")
medians = {name: statistics.median(values) for name, values in times.items()}
for name, value in medians.items():
    print(f"{name}: {value:.4f} s per 100 steps")
low_level, strategy_time = medians.values()
print(f"ratio (b)/(a) = {strategy_time / low_level:.2f} (goal: at least 0.9)")
_results.write(args.json, {"a_s_per_100": low_level, "b_s_per_100": strategy_time,
                           "ratio_b_a": strategy_time / low_level},
               [_results.goal("(b)/(a) time", strategy_time / low_level, ">=", 0.9)])
