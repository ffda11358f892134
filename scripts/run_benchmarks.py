#!/usr/bin/env python3
"""Run every benchmark in benchmarks/, put its figures into docs/performance.md, check the goals.

    python scripts/run_benchmarks.py [--only NAME ...] [--docs FILE]   # full: minutes to an hour
    python scripts/run_benchmarks.py --smoke [--only NAME ...]         # tiny sizes, writes nothing

Each benchmark runs in a process of its own (and everything it starts in its
process group), bounded by a time limit: past it the group is killed and the
run reports that benchmark as failed, leaving its section as it was. A
benchmark hands its figures over as JSON (``--json PATH``, benchmarks/_results.py);
bench_scan.py and bench_pod.py, whose output is their report, are read from
what they print.

A full run rewrites, in each benchmark's section of docs/performance.md, the
numbers of its table rows and the figures its prose quotes (each keeping the
decimals it had), and the section's "Measured at commit ..." line: the commit,
Python, TensorFlow and tf-keras versions, CPUs and the load average before and
after. Each section is written as soon as its benchmark finishes. The run
then lists every goal and exits 1 if a figure missed its goal, a benchmark
failed or a figure could not be placed; 0 otherwise.

``--smoke`` runs every benchmark once at a tiny size and checks only that it
exits 0 and reports its figures: no timing is judged and nothing is written
(tests/test_benchmarks_smoke.py runs it).
"""

import argparse
import dataclasses
import datetime
import importlib.metadata
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
from typing import Dict, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import _results  # noqa: E402  pylint: disable=wrong-import-position
from tpu_compat import _process  # noqa: E402  pylint: disable=wrong-import-position

BENCHMARKS_DIR = os.path.join(REPO, "benchmarks")
DOCS = os.path.join(REPO, "docs", "performance.md")
PROVENANCE = "Measured at commit "


@dataclasses.dataclass(frozen=True)
class Prose:
    """A figure the section's prose quotes: ``pattern``'s one group is replaced."""

    pattern: str
    figure: str
    required: bool = True  # False: a section another change may reword (the pod's)


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One benchmark: how to run it, full and tiny, and where its figures go."""

    name: str  # benchmarks/bench_<name>.py
    section: str  # the heading of its section in docs/performance.md starts so
    full: Tuple[str, ...]
    smoke: Tuple[str, ...]
    timeout: float  # seconds, full run (a smoke run gets SMOKE_TIMEOUT)
    # Table rows by label prefix -> the figures of its number cells, in order
    # (None leaves a cell alone).
    cells: Dict[str, Tuple[Optional[str], ...]] = dataclasses.field(default_factory=dict)
    prose: Tuple[Prose, ...] = ()
    # How its figures are read: "json" (--json PATH), or a parser of its stdout.
    reader: str = "json"
    needs: Tuple[str, ...] = ()  # figures a run must report besides those above

    @property
    def script(self):
        return os.path.join(BENCHMARKS_DIR, f"bench_{self.name}.py")


SMOKE_TIMEOUT = 600.0
TINY_8 = ("--replicas", "2")
# Smoke runs whose cost is per replica (tracing, steps) run one: they check that
# the benchmark runs and reports its figures; the full runs measure 8.
ONE = ("--replicas", "1")


BENCHMARKS = (
    Benchmark(
        "steps_per_run", "steps_per_run",
        full=(), smoke=ONE + ("--steps", "20", "--steps-per-run", "10", "--repeats", "1"),
        timeout=1800,
        cells={"(a) ": ("a_s_per_100", "a_steps_per_s"),
               "(b) ": ("b_s_per_100", "b_steps_per_s"),
               "(c) ": ("c_s_per_100", "c_steps_per_s"),
               "(c') ": ("p_s_per_100", "p_steps_per_s"),
               "(d) ": ("d_s_per_100", "d_steps_per_s")},
        prose=(Prose(r"\(c'\) there: ([\d.]+)\)", "d_reference_s_per_100"),
               Prose(r"\(a\)/\(c\) time ratio \*\*([\d.]+)\*\*", "ratio_a_c"),
               Prose(r"\*\*([\d.]+)\*\* like for like against \(c'\)", "ratio_a_cp"),
               Prose(r"\(a\) beats \(b\) by \*\*([\d.]+)x\*\*", "speedup_b_a"),
               Prose(r"against ([\d.]+)x for \(c\) over \(b\)", "speedup_b_c"),
               Prose(r"\(d\) \*\*([\d.]+)x\*\* slower", "ratio_d_cp"))),
    Benchmark(
        "run_overhead", "experimental_run_v2 overhead",
        full=(), smoke=TINY_8 + ("--calls", "5", "--loop-steps", "10", "--repeats", "1"),
        timeout=1200,
        cells={"(i) eager: `adapter": ("eager_adapter_us",),
               "(i) eager: native": ("eager_native_us",),
               "(ii) in one `tf.function` loop: `adapter": ("traced_adapter_us",),
               "(ii) in one `tf.function` loop: native": ("traced_native_us",)},
        prose=(Prose(r"Eager ratio \*\*([\d.]+)\*\*", "eager_ratio"),
               Prose(r"Traced ratio \*\*([\d.]+)\*\*", "traced_ratio"))),
    Benchmark(
        "scan", "scan vs tf_upgrade_v2",
        full=(), smoke=("{tree}", "--repeat", "1", "--tf-repeat", "1", "--skip-tf-upgrade"),
        timeout=1800, reader="scan", needs=("scan_wall_s", "scan_cpu_s", "scan_rss_mb")),
    Benchmark(
        "keras_fit", "Keras fit with steps_per_run",
        full=("--repeats", "4", "--fits", "2", "--steps", "1000"),
        # Five processes, each fitting 150 steps: on 1 replica in the smoke run
        # (the test's CPU 29.0 -> 22.5 s); the full run measures 8.
        smoke=ONE + ("--steps", "50", "--fits", "1", "--repeats", "1"),
        timeout=3600,
        cells={"(a) ": ("a_samples_per_s", "a_cpu_ms_per_step"),
               "(b) ": ("b_samples_per_s", "b_cpu_ms_per_step"),
               "(c) ": ("c_samples_per_s", "c_cpu_ms_per_step"),
               "(g50) ": ("g50_samples_per_s", "g50_cpu_ms_per_step"),
               "(g1) ": ("g1_samples_per_s", "g1_cpu_ms_per_step")},
        prose=(Prose(r"\(a\)/\(b\) = \*\*([\d.]+)\*\* in wall time", "ratio_a_b"),
               Prose(r"wall time \(pairs from ([\d.]+)", "ratio_a_b_min"),
               Prose(r"wall time \(pairs from [\d.]+ to ([\d.]+)\)", "ratio_a_b_max"),
               Prose(r"\*\*([\d.]+)\*\* in CPU time", "ratio_a_b_cpu"),
               Prose(r"CPU time \(pairs from ([\d.]+)", "ratio_a_b_cpu_min"),
               Prose(r"CPU time \(pairs from [\d.]+ to ([\d.]+)\)", "ratio_a_b_cpu_max"),
               Prose(r"\(a\) beats \(c\) by \*\*([\d.]+)x\*\*", "speedup_a_c"),
               Prose(r"`steps_per_run=50` gains ([\d.]+)x", "speedup_g50_g1"))),
    Benchmark(
        "mixed_precision_fit", "mixed_bfloat16 fit",
        # On 1 replica in the smoke run, as keras_fit: its cost is the two models'
        # fits, per replica (the test's CPU 15.2 -> 12.5 s); the full run measures 8.
        full=(), smoke=ONE + ("--steps", "5", "--repeats", "1"),
        timeout=1800,
        cells={"(a) ": ("a_samples_per_s",), "(b) ": ("b_samples_per_s",)},
        prose=(Prose(r"\(a\)/\(b\) = \*\*([\d.]+)\*\*", "ratio_a_b"),
               Prose(r"single runs\s+ranged\s+from ([\d,]+)", "slowest_run_samples_per_s"),
               Prose(r"single runs\s+ranged\s+from [\d,]+\s+to\s+([\d,]+)",
                     "fastest_run_samples_per_s"))),
    Benchmark(
        "tpu_replicate", "tpu.replicate in a tf.while_loop",
        full=(), smoke=TINY_8 + ("--steps", "20", "--steps-per-run", "10", "--repeats", "1"),
        timeout=1200,
        cells={"(a) ": ("a_s_per_100",), "(b) ": ("b_s_per_100",)},
        prose=(Prose(r"\(b\)/\(a\) = \*\*([\d.]+)\*\*", "ratio_b_a"),)),
    Benchmark(
        "tpu_estimator", "TPUEstimator",
        full=(), smoke=TINY_8 + ("--steps", "20", "--per-loop", "10", "--repeats", "1"),
        timeout=1800,
        cells={"(a) ": ("a_steps_per_s", "a_end_to_end_s"),
               "(b) ": ("b_steps_per_s", "b_end_to_end_s"),
               "(c) ": ("c_steps_per_s", "c_end_to_end_s")},
        prose=(Prose(r"\(a\)/\(c\) steady-state throughput \*\*([\d.]+)x\*\*", "ratio_a_c"),
               Prose(r"\(a\)/\(b\) \*\*([\d.]+)x\*\*", "ratio_a_b"),
               Prose(r"End to end \(a\) takes ([\d.]+)x the time", "end_to_end_ratio_a_c"))),
    Benchmark(
        "model_scale", "Model scale",
        full=(), smoke=TINY_8 + ("--image-size", "32"),
        timeout=3600,
        cells={"(a) ": ("a_build_s", "a_session_s", "a_first_step_s", "a_total_s"),
               "(b) ": ("b_build_s", "b_session_s", "b_first_step_s", "b_total_s"),
               "(c) ": ("c_build_s", "c_session_s", "c_first_step_s", "c_total_s")},
        prose=(Prose(r"\(a\)/\(b\) = \*\*([\d.]+)\*\*", "ratio_a_b"),
               Prose(r"\(a\)/\(c\) = \*\*([\d.]+)\*\*", "ratio_a_c"))),
    Benchmark(
        "fidelity", "Fidelity tpu",
        full=("--repeats", "9"), smoke=TINY_8 + ("--steps-per-run", "10", "--repeats", "1"),
        timeout=1200,
        cells={"fidelity `cpu`": ("cpu_s_per_run",), "fidelity `tpu`": ("tpu_s_per_run",),
               "`fidelity.check_ops` alone": ("check_s_per_run",)},
        prose=(Prose(r"Fidelity `tpu` costs (-?[\d.]+) % of the whole", "overhead_percent"),
               Prose(r"of\nwhich the check itself is ([\d.]+) %", "check_percent"))),
    Benchmark(
        "pod", "Emulated pod slice",
        full=(), smoke=("--tiny",),
        timeout=3600, reader="pod", needs=("(a)#1", "(b)#1", "ratio_b_a"),
        prose=(Prose(r"\(b\)/\(a\) time ratio \*\*([\d.]+)\*\*", "ratio_b_a", False),
               Prose(r"\(a\)/\(c\) \*\*([\d.]+)\*\*", "ratio_a_c", False),
               Prose(r"machine\): \*\*([\d.]+) ms\*\*", "overhead_ms", False),
               Prose(r"takes ([\d.]+) ms on one host", "reduce_one_ms", False),
               Prose(r"ms on one host and ([\d.]+) ms on two", "reduce_pod_ms", False),
               Prose(r"per step\) add\s+([\d.]+) ms", "reduce_added_ms", False),
               Prose(r"([\d.]+) s for \(a\)", "start_one_s", False),
               Prose(r"([\d.]+) s for \(b\)", "start_pod_s", False))),
    Benchmark(
        "startup", "Start-up",
        full=("--rounds", "5"), smoke=("--rounds", "1"),
        timeout=1200,
        cells={"`import tpu_compat`": ("import_ms",), "`python prog.py`": ("python_s",),
               "`tpu-compat run": ("run_s",)},
        prose=(Prose(r"`tpu-compat run` takes ([\d.]+) times", "ratio_run_python"),)),
    Benchmark(
        "numerics", "--numerics tpu",
        # One replica in the smoke run: its cost is tracing eight copies of each
        # workload once per replica (the test's CPU 44.3 -> 28.9 s); halving the steps
        # saved nothing. The full run measures 8.
        full=("--repeats", "5"), smoke=ONE + ("--fit-steps", "10", "--loop-steps", "10",
                                              "--steps-per-execution", "5",
                                              "--steps-per-run", "5", "--repeats", "1"),
        timeout=1800,
        cells={"(a) ": ("fit_exact_samples_per_s", "fit_tpu_samples_per_s", "fit_ratio"),
               "(b) ": ("loop_exact_s_per_100", "loop_tpu_s_per_100", "loop_ratio"),
               # numerics-diff --ops-at-step's recording over tpu alone
               "(a2) ": ("fit_tpu_samples_per_s", "fit_ops_samples_per_s",
                         "fit_marker_samples_per_s", "fit_ops_ratio"),
               "(b2) ": ("loop_tpu_s_per_100", "loop_ops_s_per_100",
                         "loop_marker_s_per_100", "loop_ops_ratio")},
        prose=(Prose(r"Keras\s+fit:\s+\*\*([\d.]+)x\*\*", "fit_ratio"),
               Prose(r"steps_per_run\s+loop:\s+\*\*([\d.]+)x\*\*", "loop_ratio"),
               Prose(r"recording\s+costs\s+\*\*([\d.]+)x\*\*\s+in\s+the\s+fit", "fit_ops_ratio"),
               Prose(r"and\s+\*\*([\d.]+)x\*\*\s+in\s+the\s+loop", "loop_ops_ratio"),
               Prose(r"marker's\s+host\s+call\s+adds\s+(-?[\d.]+)\s+ms\s+per\s+fit\s+step",
                     "fit_marker_ms_per_step"),
               Prose(r"and\s+(-?[\d.]+)\s+ms\s+per\s+loop\s+step", "loop_marker_ms_per_step"))),
)

BY_NAME = {b.name: b for b in BENCHMARKS}


def benchmark_files():
    """The benchmarks in benchmarks/: bench_*.py (helpers start with "_")."""
    return sorted(name[len("bench_"):-len(".py")] for name in os.listdir(BENCHMARKS_DIR)
                  if name.startswith("bench_") and name.endswith(".py"))


# -- reading a benchmark's figures ------------------------------------------------

_NUMBER = r"-?\d[\d,]*(?:\.\d+)?"


def _float(text):
    return float(text.replace(",", ""))


def read_pod(stdout):
    """bench_pod.py's printed table and summary lines -> figures and goals."""
    figures = {}
    for line in stdout.splitlines():
        match = re.match(r"\|\s*\((\w+)\)[^|]*((?:\|\s*" + _NUMBER + r"\s*)+)\|\s*$", line)
        if match:
            for column, cell in enumerate(re.findall(_NUMBER, match.group(2)), 1):
                figures[f"({match.group(1)})#{column}"] = _float(cell)
    derived = {"ratio_b_a": ("(b)#1", "(a)#1", lambda b, a: b / a),
               "ratio_a_c": ("(a)#1", "(c)#1", lambda a, c: a / c),
               "overhead_ms": ("(b)#1", "(a)#1", lambda b, a: 10 * (b - a)),
               "reduce_added_ms": ("(r2)#1", "(r1)#1", lambda r2, r1: 10 * (r2 - r1))}
    for name, (left, right, formula) in derived.items():
        if left in figures and right in figures:
            figures[name] = formula(figures[left], figures[right])
    for name, row in (("reduce_one_ms", "(r1)#1"), ("reduce_pod_ms", "(r2)#1")):
        if row in figures:
            figures[name] = 10 * figures[row]
    start = re.search(r"start-up[^\n]*1x8 (" + _NUMBER + r") s, 2x4 (" + _NUMBER + ") s", stdout)
    if start:
        figures["start_one_s"], figures["start_pod_s"] = map(_float, start.groups())
    return {"figures": figures, "goals": []}


def read_scan(stdout, returncode):
    """bench_scan.py's printed section -> the section itself, figures and goals."""
    start = stdout.find("## scan vs tf_upgrade_v2")
    section = stdout[start:].rstrip("\n") + "\n" if start >= 0 else None
    figures, goals = {}, []
    scan_row = re.search(r"^\| `tpu-compat scan[^|]*\|[^|]*\|[^|]*\| (" + _NUMBER + r") \| ("
                         + _NUMBER + r") \| (" + _NUMBER + r") \|", stdout, flags=re.MULTILINE)
    if scan_row:  # the first scan row: its wall and CPU seconds, its peak RSS
        figures.update(zip(("scan_wall_s", "scan_cpu_s", "scan_rss_mb"),
                           map(_float, scan_row.groups())))
    speedup = re.search(r"\*\*([\d.]+)x faster\*\*", stdout)
    if speedup:
        figures["speedup_wall"] = float(speedup.group(1))
        goals.append(_results.goal("scan / tf_upgrade_v2 wall-time speed-up",
                                   figures["speedup_wall"], ">=", 5))
    elif returncode == 1:  # bench_scan's own verdict: a target missed
        goals.append(_results.goal("bench_scan.py's targets (exit 1)", 0, ">=", 1))
    return {"figures": figures, "goals": goals, "section": section}


# -- writing them into docs/performance.md ---------------------------------------

def format_like(old, value):
    """``value`` written as ``old`` was: its decimals, its thousands separators."""
    decimals = len(old.partition(".")[2])
    grouped = "," in old or (not decimals and abs(value) >= 1000)
    return f"{value:,.{decimals}f}" if grouped else f"{value:.{decimals}f}"


def _section_span(document, heading_prefix):
    """(start, end) of the section whose ``## `` heading starts with ``heading_prefix``."""
    starts = [m.start() for m in re.finditer(r"^## " + re.escape(heading_prefix),
                                             document, flags=re.MULTILINE)]
    if len(starts) != 1:
        return None
    following = re.search(r"^## ", document[starts[0] + 3:], flags=re.MULTILINE)
    end = len(document) if following is None else starts[0] + 3 + following.start()
    return starts[0], end


def _update_cells(body, cells, figures, problems):
    lines = body.split("\n")
    for prefix, names in cells.items():
        rows = [i for i, line in enumerate(lines) if line.startswith("|")
                and line.strip("|").split("|")[0].strip().startswith(prefix)]
        if len(rows) != 1:
            problems.append(f"{len(rows)} table rows start with {prefix!r}")
            continue
        parts = lines[rows[0]].split("|")  # ['', label, cell, ..., '']
        for column, name in enumerate(names, 2):
            if name is None:
                continue
            if name not in figures:
                problems.append(f"the benchmark reported no figure {name!r}")
                continue
            if column >= len(parts) - 1:
                problems.append(f"row {prefix!r} has no cell {column}")
                continue
            parts[column] = re.sub(_NUMBER, lambda m, v=figures[name]: format_like(m.group(0), v),
                                   parts[column], count=1)
        lines[rows[0]] = "|".join(parts)
    return "\n".join(lines)


def _update_prose(body, prose, figures, problems):
    for entry in prose:
        matches = list(re.finditer(entry.pattern, body))
        if len(matches) != 1:
            if entry.required:
                problems.append(f"{entry.pattern!r} is quoted {len(matches)} times, not once")
            continue
        if entry.figure not in figures:
            if entry.required:
                problems.append(f"the benchmark reported no figure {entry.figure!r}")
            continue
        match = matches[0]
        body = (body[:match.start(1)] + format_like(match.group(1), figures[entry.figure])
                + body[match.end(1):])
    return body


def _auto_cells(body, figures):
    """Rows ``(x) ...`` whose tag the benchmark printed a row for (bench_pod)."""
    cells = {}
    for line in body.splitlines():
        match = re.match(r"\|\s*(\((\w+)\) )", line)
        if match and f"({match.group(2)})#1" in figures:
            count = sum(1 for name in figures if name.startswith(f"({match.group(2)})#"))
            cells[match.group(1)] = tuple(f"({match.group(2)})#{i}" for i in range(1, count + 1))
    return cells


def _with_provenance(body, provenance):
    """The section's paragraphs, its "Measured at commit" one first and set to ``provenance``."""
    paragraphs = [p for p in body.strip("\n").split("\n\n")
                  if not p.startswith(PROVENANCE)]
    return "\n\n".join([provenance] + paragraphs)


def update_section(document, benchmark, result, provenance):
    """``document`` with ``benchmark``'s section rewritten from ``result``; and the problems."""
    problems = []
    span = _section_span(document, benchmark.section)
    if span is None:
        return document, [f"docs/performance.md has no single section '## {benchmark.section}...'"]
    start, end = span
    # bench_scan prints its whole section; the others' sections are updated in place.
    heading, _, body = (result.get("section") or document[start:end]).partition("\n")
    if not result.get("section"):
        cells = benchmark.cells or _auto_cells(body, result["figures"])
        body = _update_cells(body, cells, result["figures"], problems)
        body = _update_prose(body, benchmark.prose, result["figures"], problems)
    text = heading + "\n\n" + _with_provenance(body, provenance) + "\n"
    if end < len(document):
        text += "\n"
    return document[:start] + text + document[end:], problems


# -- the environment each section states ------------------------------------------

def _version(*distributions):
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def commit():
    """HEAD's short hash, and whether tracked files besides documents differ from it."""
    def git(*args):
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              timeout=30, check=False).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no")
               .splitlines() if not line[3:].endswith(".md")]
    return head + (" with uncommitted changes" if changed else "")


def provenance(measured_at, load_before, load_after, when=None):
    when = when or datetime.date.today().isoformat()
    return (f"{PROVENANCE}{measured_at} ({when}) by `python scripts/run_benchmarks.py`: "
            f"Python {platform.python_version()}, TensorFlow {_version('tensorflow')}, "
            f"tf-keras {_version('tf-keras', 'tf_keras')}, {os.cpu_count()} CPUs, load "
            f"average {load_before:.2f} before the run and {load_after:.2f} after.")


# -- running ----------------------------------------------------------------------

def child_env():
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("TPU_COMPAT_") and key != "TF_CONFIG"}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", TPU_COMPAT_WARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


SMOKE_TREE = {
    # A legacy TPU use, so scan has a finding (and exits 1, as a linter does).
    "train.py": ("import tensorflow as tf\n\n"
                 "resolver = tf.contrib.cluster_resolver.TPUClusterResolver(tpu='')\n"
                 "strategy = tf.contrib.distribute.TPUStrategy(resolver, steps_per_run=10)\n"),
    "model.py": "def build(units):\n    return [units] * 2\n",
    "data.py": "import os\n\nDATA = os.path.join('data', 'train.csv')\n",
}


def run_one(benchmark, smoke, scratch):
    """Runs ``benchmark``; returns (result dict or None, a line saying what went wrong)."""
    arguments = list(benchmark.smoke if smoke else benchmark.full)
    if "{tree}" in arguments:
        tree = os.path.join(scratch, "tree")
        os.makedirs(tree, exist_ok=True)
        for name, text in SMOKE_TREE.items():
            with open(os.path.join(tree, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        arguments = [tree if a == "{tree}" else a for a in arguments]
    json_path = os.path.join(scratch, f"{benchmark.name}.json")
    if benchmark.reader == "json":
        arguments += ["--json", json_path]
    timeout = SMOKE_TIMEOUT if smoke else benchmark.timeout
    # Native and tpu_compat runs alike import TensorFlow as `tpu-compat run`
    # does (its kernels, its Keras): the figures compare like with like.
    finished = _process.run_tensorflow_child([sys.executable, benchmark.script, *arguments],
                                             timeout, env=child_env(), cwd=REPO)
    name = os.path.relpath(benchmark.script, REPO)
    if finished.timed_out:
        return None, f"{name} did not finish within {timeout:.0f} s; it was stopped"
    if benchmark.reader == "scan":
        # Exit 1 is bench_scan's verdict "a target missed"; a traceback is a failure.
        if finished.returncode not in (0, 1) or "Traceback (most recent" in finished.stderr:
            return None, f"{name} failed (exit {finished.returncode}): {_tail(finished.stderr)}"
        result = read_scan(finished.stdout, finished.returncode)
        if result["section"] is None:
            return None, f"{name} printed no '## scan vs tf_upgrade_v2' section"
    elif finished.returncode != 0:
        return None, f"{name} failed (exit {finished.returncode}): {_tail(finished.stderr)}"
    elif benchmark.reader == "pod":
        result = read_pod(finished.stdout)
    else:
        try:
            with open(json_path, encoding="utf-8") as handle:
                result = json.load(handle)
        except (OSError, ValueError) as error:
            return None, f"{name} wrote no readable --json result ({error})"
    missing = sorted(set(required_figures(benchmark)) - set(result["figures"]))
    bad = sorted(k for k, v in result["figures"].items() if not math.isfinite(v))
    if missing or bad:
        return None, f"{name} did not report these figures (or not finite): {missing + bad}"
    return result, None


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def required_figures(benchmark):
    """The figures a run of ``benchmark`` must report (its smoke run too)."""
    names = [n for names in benchmark.cells.values() for n in names if n is not None]
    return list(benchmark.needs) + names + [p.figure for p in benchmark.prose if p.required]


def _tail(stderr):
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no error output"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="each benchmark once at a tiny size; judges no timing, writes nothing")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help=f"run only this benchmark (repeatable): {', '.join(BY_NAME)}")
    parser.add_argument("--docs", default=DOCS, metavar="FILE",
                        help="the performance document to update (default docs/performance.md)")
    args = parser.parse_args(argv)
    for name in args.only or ():
        if name not in BY_NAME:
            parser.error(f"--only {name!r}: choose from {', '.join(BY_NAME)}")
    unlisted = sorted(set(benchmark_files()) - set(BY_NAME))
    if unlisted:
        parser.error(f"benchmarks/bench_{unlisted[0]}.py has no row in "
                     f"scripts/run_benchmarks.py's BENCHMARKS")
    if not args.smoke and not os.path.isfile(args.docs):
        parser.error(f"--docs {args.docs}: no such file")
    return args


def main(argv=None):
    args = parse_args(argv)
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(BENCHMARKS)
    failures, problems, goals = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for benchmark in chosen:
            print(f"run_benchmarks: {benchmark.name} ...", flush=True)
            measured_at = commit()  # before the run: the code that runs
            load_before, cpu_before = os.getloadavg()[0], _children_cpu()
            result, failure = run_one(benchmark, args.smoke, scratch)
            load_after, cpu = os.getloadavg()[0], _children_cpu() - cpu_before
            print(f"run_benchmarks: {benchmark.name} took {cpu:.1f} s of CPU", flush=True)
            if failure:
                failures.append(failure)
                print(f"run_benchmarks: {failure}", flush=True)
                continue
            shown = ", ".join(f"{k} {v:.4g}" for k, v in sorted(result["figures"].items()))
            print(f"run_benchmarks: {benchmark.name}: {shown}", flush=True)
            goals += [(benchmark.name, g) for g in result["goals"]]
            if args.smoke:
                continue
            with open(args.docs, encoding="utf-8") as handle:
                document = handle.read()
            document, placed = update_section(document, benchmark, result,
                                              provenance(measured_at, load_before, load_after))
            problems += [f"{benchmark.name}: {p}" for p in placed]
            with open(args.docs, "w", encoding="utf-8") as handle:
                handle.write(document)
    missed = []
    if not args.smoke:
        for name, goal in goals:
            ok = _results.met(goal)
            print(f"  {'ok    ' if ok else 'BELOW '} {name}: {goal['figure']} "
                  f"{goal['value']:.3f} (goal {goal['op']} {goal['target']:g})")
            if not ok:
                missed.append(goal)
    for problem in problems:
        print(f"run_benchmarks: figure not placed: {problem}")
    print(f"run_benchmarks: {len(chosen) - len(failures)} of {len(chosen)} benchmarks ran"
          + ("" if args.smoke else f", {len(missed)} figures below their goal"))
    return 1 if failures or problems or missed else 0


if __name__ == "__main__":
    sys.exit(main())
