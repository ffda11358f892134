"""Start-up cost of tpu_compat: `import tpu_compat`, and `tpu-compat run` against `python`.

Two comparisons, each in fresh processes, the variants interleaved (the
machine is noisy, so each round runs both), medians of the rounds:

  (i)  `import tpu_compat` in a process that has imported nothing else: the
       time of the import statement itself (goal: under 20 ms; it loads no
       TensorFlow);
  (ii) a legacy TF 1.x program that imports TensorFlow and runs one op,
       as `python prog.py` and as `tpu-compat run --replicas 1 prog.py`, wall time of
       the whole process (goal: at most 1.10x python). --replicas 1 keeps the
       device layout the same on both sides, so the ratio is tpu_compat's own
       start-up: the runner, install() and its patches.

usage: python benchmarks/bench_startup.py [--rounds 9] [--json PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _results

PROGRAM = """\
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
with tf.Session() as session:
    print(session.run(tf.constant(1.0) + 1.0))
"""

IMPORT_TIME = ("import time\nstart = time.perf_counter()\nimport tpu_compat\n"
               "print(time.perf_counter() - start)\n")


def _wall(command, env):
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    _results.add_json_argument(parser)
    args = parser.parse_args()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TPU_COMPAT_WARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])

    imports = []
    for _ in range(args.rounds):
        result = subprocess.run([sys.executable, "-c", IMPORT_TIME], check=True, env=env,
                                capture_output=True, text=True)
        imports.append(float(result.stdout.strip()))
    print(f"import tpu_compat: median {statistics.median(imports) * 1000:.1f} ms "
          f"(min {min(imports) * 1000:.1f} ms, {args.rounds} processes)")

    with tempfile.TemporaryDirectory() as directory:
        program = os.path.join(directory, "prog.py")
        with open(program, "w", encoding="utf-8") as handle:
            handle.write(PROGRAM)
        plain, wrapped = [], []
        for _ in range(args.rounds):
            plain.append(_wall([sys.executable, program], env))
            wrapped.append(_wall([sys.executable, "-m", "tpu_compat", "run", "--replicas", "1",
                                  program], env))
    plain_median, wrapped_median = statistics.median(plain), statistics.median(wrapped)
    print(f"python prog.py: median {plain_median:.2f} s; tpu-compat run: median "
          f"{wrapped_median:.2f} s; ratio {wrapped_median / plain_median:.3f} "
          f"({args.rounds} interleaved rounds)")
    import_ms = statistics.median(imports) * 1000
    ratio = wrapped_median / plain_median
    _results.write(args.json, {"import_ms": import_ms, "python_s": plain_median,
                               "run_s": wrapped_median, "ratio_run_python": ratio},
                   [_results.goal("import tpu_compat, ms", import_ms, "<=", 20),
                    _results.goal("tpu-compat run / python", ratio, "<=", 1.10)])


if __name__ == "__main__":
    main()
