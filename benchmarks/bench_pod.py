"""Emulated pod slice: 2 hosts x 4 cores against 1 host x 8 and native MWMS, same machine.

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

and the 2x4 process also
  loop       the same training step through tpu_compat's TF 2 TPUStrategy:
             strategy.run in one tf.function tf.range loop (the shape of mwms)
  alt_*      with --alternatives: the cross-host reduction choices, each a
             tf.function tf.range loop over the pod's 8 devices reading 8
             variables, all-reducing them and assigning the mean back:
             none (no reduction: the loop's own cost), r1d (ReductionToOneDevice,
             what the pod uses), coll8 (CollectiveAllReduce, RING, over the 8
             devices: what MultiWorkerMirroredStrategy does), hier_r1d and
             hier_coll (sum within each host first, then one value per host
             across: to worker 0 and back, or a 2-member collective)
and, native TensorFlow's own multi-worker path:
  mwms       tf.distribute.MultiWorkerMirroredStrategy, 2 worker processes
             (TF_CONFIG on loopback ports) x 4 logical CPUs each, RING
             collectives, the same training step in one tf.function tf.range
             loop (the figure is worker 0's). TF 2.21's MWMS gives a CPU-only
             worker one device (collective_all_reduce_strategy.py,
             _initialize_local_devices); here it gets the 4 logical CPUs, as a
             pod host has 4 cores, by replacing that one method in this process.
  mwms1      the same as TF 2.21 ships it for CPU workers: 2 workers x 1
             device, 2 replicas of 32 (the same global batch of 64).

The driver runs the configurations --runs times, rotating which goes first,
and prints each figure's median over the runs (each run's figure is itself the
median of --repeats interleaved timings). Collective overhead per step =
(train time of 2x4 - train time of 1x8) / steps: what the pod adds to one
training step (gradient and loss reductions over gRPC to worker 0's core 0 and
back, two hosts' input pipelines, dispatch across processes). Not a test.

usage: python benchmarks/bench_pod.py [--runs 3] [--steps 500] [--repeats 3]
                                     [--steps-per-run 100] [--alternatives] [--tiny]
  --tiny: a smoke run (1 run, 5 steps, 1 repeat, steps_per_run 5, the
  configurations at once): it must not crash; its figures mean nothing.
"""
import argparse
import concurrent.futures
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {"1x8": {"hosts": 1, "replicas": 8}, "2x4": {"hosts": 2, "replicas": 8},
           "mwms": {"hosts": 2, "replicas": 8}, "mwms1": {"hosts": 2, "replicas": 2}}
MWMS = ("mwms", "mwms1")
FIGURES = ("START_SECONDS", "TRAIN_SECONDS_PER_100", "REDUCE_SECONDS_PER_100",
           "NATIVE_SECONDS_PER_100", "LOOP_SECONDS_PER_100", "MWMS_SECONDS_PER_100", "LOSS")
ALTERNATIVES = ("none", "r1d", "coll8", "hier_r1d", "hier_coll")
# The model of bench_steps_per_run (which installs tpu_compat when imported, so
# the native MWMS process builds its own copy from these).
FEATURES, OUTPUTS, GLOBAL_BATCH = 64, 8, 64


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3,
                        help="processes per configuration (median reported)")
    parser.add_argument("--steps", type=int, default=500, help="steps per timing")
    parser.add_argument("--repeats", type=int, default=3,
                        help="interleaved timings per process (median)")
    parser.add_argument("--steps-per-run", type=int, default=100,
                        help="steps per host call of the TF 1.15 loop (divides --steps)")
    parser.add_argument("--alternatives", action="store_true",
                        help="also time the cross-host reduction alternatives on 2x4")
    parser.add_argument("--tiny", action="store_true",
                        help="smoke run: --runs 1 --steps 5 --repeats 1 --steps-per-run 5")
    parser.add_argument("--child", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tiny:
        args.runs, args.steps, args.repeats, args.steps_per_run = 1, 5, 1, 5
    if min(args.runs, args.steps, args.repeats, args.steps_per_run) < 1 or \
            args.steps % args.steps_per_run:
        parser.error("--runs, --steps, --repeats and --steps-per-run must be positive, "
                     "and --steps a multiple of --steps-per-run")
    return args


def timed(variants, args, warm_up_steps):
    """Warms each variant up, then times them interleaved; seconds per 100 steps."""
    firsts = {name: run(warm_up_steps) for name, run in variants.items()}
    timings = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, run in variants.items():
            begin = time.perf_counter()
            run(args.steps)
            timings[name].append(time.perf_counter() - begin)
    return firsts, {name: 100 * statistics.median(seconds) / args.steps
                    for name, seconds in timings.items()}


# -- one configuration, in its own process --------------------------------------

def child(args):
    if args.child in MWMS:
        mwms_child(args)
        return
    started = time.perf_counter()
    # bench_steps_per_run reads its flags at import and installs the emulated
    # TPU (a pod when TPU_COMPAT_NUM_HOSTS is set): give it the shared ones.
    sys.argv = [sys.argv[0], "--replicas", str(CONFIGS[args.child]["replicas"]),
                "--steps", str(args.steps), "--repeats", str(args.repeats),
                "--steps-per-run", str(args.steps_per_run)]
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
    else:
        variants["LOOP"] = tf2_loop(bench)
        if args.alternatives:
            variants.update((f"ALT_{mode}", reduction_loop(tf, backend.devices, mode))
                            for mode in ALTERNATIVES)
    losses, per_100 = timed(variants, args, bench.args.steps_per_run)
    print(f"START_SECONDS {start_seconds}")
    for name, seconds in per_100.items():
        print(f"{name}_SECONDS_PER_100 {seconds}")
    print(f"LOSS {losses['TRAIN']}")  # after the warm-up call: same in both configurations
    print(f"DEVICES {','.join(backend.devices)}")


def range_loop(tf, strategy, replica_step, dataset):
    """``steps -> loss``: ``steps`` replica steps in one tf.function's tf.range loop,
    the loss SUM-reduced; the pod's TF 2 loop and native MWMS run the same one."""
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    @tf.function
    def train(n):
        loss = tf.constant(0.0)
        for _ in tf.range(n):
            loss = strategy.reduce("SUM", strategy.run(replica_step, args=(next(iterator),)),
                                   axis=None)
        return loss

    return lambda steps: float(train(tf.constant(steps)))


def tf2_loop(bench):
    """The training step through tpu_compat's TF 2 TPUStrategy, in a tf.range loop."""
    tf = bench.tf
    strategy = tf.distribute.TPUStrategy(bench.resolver)
    return range_loop(tf, strategy, bench.make_model(strategy), bench.dataset())


def reduction_loop(tf, devices, mode):
    """A tf.range loop over the pod's devices: read 8 variables, all-reduce, assign the mean.

    The variables are plain per-device ones (no strategy), so each mode's
    cross-device ops are the only difference. Every mode but "none" leaves
    each variable at the mean of the 8 (checked after the warm-up).
    """
    # pylint: disable=import-outside-toplevel
    from tensorflow.python.distribute import (
        collective_util, cross_device_ops, cross_device_utils, reduce_util, values)
    hosts = {}
    for device in devices:
        hosts.setdefault(device.split("/device:")[0], []).append(device)
    hosts = list(hosts.values())
    ring = collective_util.Options(
        implementation=collective_util.CommunicationImplementation.RING)
    # Group keys of their own: each CollectiveKeys numbers from its start.
    base = 1000 * (1 + ALTERNATIVES.index(mode))
    ops = {"r1d": cross_device_ops.ReductionToOneDevice(),
           "coll8": cross_device_ops.CollectiveAllReduce(
               devices, len(devices), ring, cross_device_utils.CollectiveKeys(base)),
           "hier_coll": cross_device_ops.CollectiveAllReduce(
               [host[0] for host in hosts], len(hosts), ring,
               cross_device_utils.CollectiveKeys(base))}.get(mode)
    variables = []
    for index, device in enumerate(devices):
        with tf.device(device):
            variables.append(tf.Variable(tf.fill([FEATURES, OUTPUTS], float(index))))
    total = sum(range(len(devices)))

    def all_reduce(tensors):
        if mode in ("r1d", "coll8"):
            per_replica = values.PerReplica(tensors)
            return list(ops.reduce(reduce_util.ReduceOp.SUM, per_replica, per_replica).values)
        sums, start = [], 0
        for host in hosts:
            with tf.device(host[0]):
                sums.append(tf.add_n(tensors[start:start + len(host)]))
            start += len(host)
        if mode == "hier_r1d":
            with tf.device(hosts[0][0]):
                across = [tf.add_n(sums)] * len(hosts)
        else:
            per_host = values.PerReplica(sums)
            across = ops.reduce(reduce_util.ReduceOp.SUM, per_host, per_host).values
        results = []
        for host, host_sum in zip(hosts, across):
            for device in host:
                with tf.device(device):
                    results.append(tf.identity(host_sum))
        return results

    @tf.function
    def loop(n):
        for _ in tf.range(n):
            tensors = [variable.read_value() for variable in variables]
            if mode == "none":
                reduced = [tensor * 1.0 for tensor in tensors]
            else:
                reduced = [tensor / len(devices) for tensor in all_reduce(tensors)]
            for variable, value in zip(variables, reduced):
                variable.assign(value)
        return variables[0][0, 0]

    def run(steps):
        result = float(loop(tf.constant(steps)))
        if mode != "none" and result != total / len(devices):
            raise SystemExit(f"bench_pod: reduction {mode} gave {result}, "
                             f"not {total / len(devices)}")
        return result
    return run


def mwms_child(args):
    """One worker of native MultiWorkerMirroredStrategy (TF_CONFIG set by the driver)."""
    started = time.perf_counter()
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.python.distribute import collective_all_reduce_strategy  # pylint: disable=import-outside-toplevel
    cores = CONFIGS[args.child]["replicas"] // CONFIGS[args.child]["hosts"]
    if cores > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(cores)])

        def local_devices(self, cluster_resolver, worker_device):  # pylint: disable=unused-argument
            return tuple(f"{worker_device}/device:CPU:{i}" for i in range(cores)), "CPU"
        collective_all_reduce_strategy.CollectiveAllReduceExtended._initialize_local_devices = (  # pylint: disable=protected-access
            local_devices)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    assert strategy.num_replicas_in_sync == CONFIGS[args.child]["replicas"], \
        strategy.extended.worker_devices
    start_seconds = time.perf_counter() - started

    global_batch = GLOBAL_BATCH
    rng = np.random.RandomState(0)  # bench_steps_per_run's data
    x_data = rng.randn(global_batch * 64, FEATURES).astype(np.float32)
    y_data = rng.randn(global_batch * 64, OUTPUTS).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x_data, y_data)).repeat().batch(
        global_batch, drop_remainder=True)
    with strategy.scope():
        weights = tf.Variable(tf.zeros([FEATURES, OUTPUTS]))
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.01)

    def replica_step(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, weights) - y)) / global_batch
        optimizer.apply_gradients([(tape.gradient(loss, weights), weights)])
        return loss

    losses, per_100 = timed({"MWMS": range_loop(tf, strategy, replica_step, dataset)},
                            args, args.steps_per_run)
    if args.task == 0:
        print(f"START_SECONDS {start_seconds}")
        print(f"MWMS_SECONDS_PER_100 {per_100['MWMS']}")
        print(f"LOSS {losses['MWMS']}")
        print(f"DEVICES {','.join(strategy.extended.worker_devices)}")


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

def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("localhost", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def run_child(config, args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    for name in ("TPU_COMPAT_NUM_REPLICAS", "TF_CONFIG", "TPU_COMPAT_NUM_HOSTS"):
        env.pop(name, None)
    command = [sys.executable, os.path.abspath(__file__), "--child", config,
               "--steps", str(args.steps), "--repeats", str(args.repeats),
               "--steps-per-run", str(args.steps_per_run)]
    if config in MWMS:
        workers = [f"localhost:{port}" for port in _free_ports(CONFIGS[config]["hosts"])]
        envs = [dict(env, TF_CONFIG=json.dumps({"cluster": {"worker": workers},
                                                "task": {"type": "worker", "index": task}}))
                for task in range(len(workers))]
        commands = [command + ["--task", str(task)] for task in range(len(workers))]
    else:
        if CONFIGS[config]["hosts"] > 1:
            env["TPU_COMPAT_NUM_HOSTS"] = str(CONFIGS[config]["hosts"])
        envs = [env]
        commands = [command + (["--alternatives"] if args.alternatives else [])]
    processes = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=process_env)
                 for cmd, process_env in zip(commands, envs)]
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=900))
    finally:
        for process in processes:  # one failed worker must not leave the other waiting
            if process.poll() is None:
                process.kill()
                process.wait()
    for process, (_, stderr) in zip(processes, outputs):
        if process.returncode != 0:
            raise SystemExit(f"bench_pod: the {config} process failed (exit "
                             f"{process.returncode}):\n{stderr[-3000:]}")
    return {key: float(value) for key, value in
            (line.split() for line in outputs[0][0].splitlines()
             if line.split()[:1] and (line.split()[0] in FIGURES
                                      or line.split()[0].startswith("ALT_")))}


def main():
    args = parse_args()
    if args.child:
        child(args)
        return
    figures = {config: [] for config in CONFIGS}
    if args.tiny:
        # A smoke run: its figures mean nothing, so the configurations start
        # at once (most of their time is importing TensorFlow).
        with concurrent.futures.ThreadPoolExecutor(len(CONFIGS)) as pool:
            for config, result in zip(CONFIGS, pool.map(lambda c: run_child(c, args), CONFIGS)):
                figures[config].append(result)
    for run in range(0 if args.tiny else args.runs):
        order = list(CONFIGS)[run % len(CONFIGS):] + list(CONFIGS)[:run % len(CONFIGS)]
        for config in order:
            figures[config].append(run_child(config, args))
            print(f"run {run + 1}/{args.runs} {config}: {figures[config][-1]}", flush=True)

    def median(config, key):
        return statistics.median(f[key] for f in figures[config])

    one, pod = (median(c, "TRAIN_SECONDS_PER_100") for c in ("1x8", "2x4"))
    reduce_one, reduce_pod = (median(c, "REDUCE_SECONDS_PER_100") for c in ("1x8", "2x4"))
    native = median("1x8", "NATIVE_SECONDS_PER_100")
    loop = median("2x4", "LOOP_SECONDS_PER_100")
    mwms = median("mwms", "MWMS_SECONDS_PER_100")
    mwms1 = median("mwms1", "MWMS_SECONDS_PER_100")
    print(f"\n{args.runs} runs per configuration (median), each {args.repeats} interleaved "
          f"timings of {args.steps} steps; model 64x8, global batch 64, 8 replicas")
    rows = [
        (f"(a) 1 host x 8 cores: TF 1.15 `steps_per_run={args.steps_per_run}` loop "
         f"(tpu_compat)", one),
        ("(b) 2 hosts x 4 cores: the same program, `TPU_COMPAT_NUM_HOSTS=2`", pod),
        ("(b2) 2 hosts x 4 cores: TF 2 `TPUStrategy`, `strategy.run` in a `tf.range` loop "
         "(beside (b))", loop),
        ("(m) native `MultiWorkerMirroredStrategy`, 2 workers x 4 logical CPUs, RING, "
         "`tf.range` loop", mwms),
        ("(m1) native `MultiWorkerMirroredStrategy` as TF 2.21 ships it for CPUs: "
         "2 workers x 1 device (2 replicas), RING, `tf.range` loop", mwms1),
        ("(c) native `MirroredStrategy`, 8 local logical CPUs, `ReductionToOneDevice`, "
         "`tf.range` loop (beside (a))", native),
        ("(r1) all-reduce-only step, 1 host x 8", reduce_one),
        ("(r2) all-reduce-only step, 2 hosts x 4", reduce_pod),
    ]
    print("| variant | s / 100 steps | steps/s |\n|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.4f} | {100 / seconds:.1f} |")
    print(f"\nsteps/s against MWMS: (b) {mwms / pod:.2f}x, (b2) {mwms / loop:.2f}x "
          f"(goal: at least 1.0x); against (m1): (b) {mwms1 / pod:.2f}x")
    print(f"ratio (b)/(a) time: {pod / one:.2f}; (a)/(c): {one / native:.2f}")
    print(f"collective overhead per step ((b) - (a)) / 100: {10 * (pod - one):.2f} ms")
    print(f"all-reduce-only step: {10 * reduce_one:.2f} ms on 1 host, {10 * reduce_pod:.2f} ms "
          f"on 2 hosts: the cross-host all-reduce adds {10 * (reduce_pod - reduce_one):.2f} ms")
    print(f"start-up (TF import, install, pod): 1x8 {median('1x8', 'START_SECONDS'):.1f} s, "
          f"2x4 {median('2x4', 'START_SECONDS'):.1f} s")
    if args.alternatives:
        print("\ncross-host reduction alternatives on 2 hosts x 4 (ms per loop step, "
              "median; none = the loop without any reduction):")
        for mode in ALTERNATIVES:
            print(f"  {mode:<10} {10 * median('2x4', f'ALT_{mode}_SECONDS_PER_100'):.2f}")
    losses = {c: median(c, "LOSS") for c in CONFIGS}
    print(f"loss after the first {args.steps_per_run} steps: {losses}")
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
