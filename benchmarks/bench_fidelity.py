"""Fidelity tpu: what checking a replica step costs at trace time.

In one process (8 emulated cores by default) builds and runs bench_steps_per_run's
variant (a) -- compat.v1 TPUStrategy(steps_per_run=100) +
extended.experimental_run_steps_on_iterator, eager as TF 2.21 runs it -- from
scratch, 100 steps (one host call, so the step is traced once), with
TPU_COMPAT_FIDELITY=cpu and =tpu, interleaved, and reports the medians, the
overhead of tpu as a % of the whole cpu run, and the check's own time
(compile_checks.check_ops, timed in place). Not a test: the machine is noisy.

usage: python benchmarks/bench_fidelity.py [--replicas 8] [--repeats 5] [--steps-per-run 100]
                                          [--json PATH]
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# bench_steps_per_run parses these flags and installs the emulated TPU.
import bench_steps_per_run as bench  # noqa: E402
import _results  # noqa: E402

from tpu_compat import settings  # noqa: E402
from tpu_compat.fidelity import compile_checks  # noqa: E402

check_seconds = []
_check_ops = compile_checks.check_ops


def timed_check_ops(op_list, graph):
    start = time.perf_counter()
    try:
        return _check_ops(op_list, graph)
    finally:
        check_seconds.append(time.perf_counter() - start)


compile_checks.check_ops = timed_check_ops  # module attribute: emulated.py calls it so

# Each run builds a new input iterator. TF 2.21 can take minutes to destroy one
# under load (gdb: RootDataset::Iterator's destructor waiting in
# UnboundedThreadPool), so the runs are kept until the process ends, and it
# ends by os._exit, destroying none.
kept_runs = []


def build_and_run(choice):
    """Seconds to build variant (a) and run one 100-step host call (trace included)."""
    os.environ[settings.FIDELITY_VAR] = choice
    start = time.perf_counter()
    run = bench.variant_legacy()
    run(bench.args.steps_per_run)
    seconds = time.perf_counter() - start
    kept_runs.append(run)
    return seconds


build_and_run("tpu")  # warm up: TF's first trace, the XLA kernel registry
build_and_run("cpu")
timings = {"cpu": [], "tpu": []}
checks = []
for repeat in range(bench.args.repeats):
    # Every other repeat tpu first: neither always follows the other.
    for choice in (("cpu", "tpu") if repeat % 2 == 0 else ("tpu", "cpu")):
        del check_seconds[:]
        timings[choice].append(build_and_run(choice))
        if choice == "tpu":
            assert check_seconds, "fidelity tpu checked no replica step"
            checks.append(sum(check_seconds))

cpu, tpu, check = (statistics.median(v) for v in (timings["cpu"], timings["tpu"], checks))
print(f"replicas: {bench.args.replicas}, {bench.args.steps_per_run} steps per run "
      f"(build + trace + run), {bench.args.repeats} repeats interleaved (median)")
print(f"fidelity cpu  s / run: {cpu:.4f}")
print(f"fidelity tpu  s / run: {tpu:.4f}")
print(f"check_ops     s / run: {check:.4f}")
print(f"overhead (tpu - cpu) / cpu: {100 * (tpu - cpu) / cpu:.1f} %   (goal <= 5 %)")
print(f"check's own time / cpu run: {100 * check / cpu:.1f} %")
_results.write(bench.args.json, {
    "cpu_s_per_run": cpu, "tpu_s_per_run": tpu, "check_s_per_run": check,
    "overhead_percent": 100 * (tpu - cpu) / cpu, "check_percent": 100 * check / cpu,
}, [_results.goal("fidelity tpu overhead, % of the cpu run", 100 * (tpu - cpu) / cpu, "<=", 5)])
sys.stdout.flush()
os._exit(0)  # pylint: disable=protected-access  (see kept_runs)
