#!/usr/bin/env python3
"""Prove which Python and TensorFlow versions tpu_compat supports; write docs/tf_versions.md.

For each cell (Python X.Y, TensorFlow X.Y) given (``2.16`` means the newest
2.16.x), this script:

1. snapshots the checkout (so editing it during a long run changes nothing);
2. builds a fresh venv from that Python's interpreter (``--python 3.12`` finds
   pyenv's newest 3.12.x, or ``python3.12`` on PATH; a path to an interpreter
   also works) and asks its pip which ``tensorflow-cpu`` releases it can
   install: a cell with none of that minor is recorded as "no wheel";
3. installs ``tensorflow-cpu`` of that version from the package registry, the
   matching ``tf-keras`` (``--no-deps``: its metadata requires the
   ``tensorflow`` distribution, which would be a second copy of TensorFlow
   next to ``tensorflow-cpu``) and the snapshot with its ``[test]`` extra;
   then checks that exactly one TensorFlow distribution is installed;
4. runs the representative subset: the seed-example tests (1/2/8 replicas)
   with the estimator-choice test, the parity scenarios, the Keras tests, and
   ``tpu-compat regress examples --check``;
5. records the outcome in ``docs/tf_versions.json`` (one entry per cell,
   merged with earlier runs, so cells can be run a few at a time) and renders
   ``docs/tf_versions.md`` from it: a Python x TensorFlow grid, then one row
   per cell run.

It is run by hand before a release (CI tests only the newest TensorFlow):

    nice -n 19 python scripts/tf_version_matrix.py 2.21 2.20 --python 3.10,3.11,3.12,3.13

Cells run in order: each TensorFlow version in turn, each Python in turn.
``--render-only`` rewrites the Markdown from the JSON without running anything.
Each cell needs about 1.5 GB of disk for its venv and, on two busy cores,
15 to 30 minutes; ``--keep-venvs`` keeps the venvs under ``--venvs``. The
pip cache is shared by the cells, so each wheel downloads once.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = REPO_ROOT / "docs" / "tf_versions.json"
DEFAULT_MARKDOWN = REPO_ROOT / "docs" / "tf_versions.md"

# Distributions that each install the `tensorflow` package directory; a venv
# must end up with exactly one of them.
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu",
                    "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
                    "tf-nightly", "tf-nightly-cpu", "tf-nightly-tpu")

# The representative subset (issue 14): name -> command run in the snapshot
# with the venv's interpreter. Each pytest step is one pytest process.
STEPS = (
    # test_estimator_choice.py runs only where tensorflow_estimator is
    # installed (TF 2.15 and older): which Estimator a TPU program gets there.
    ("seed examples", ["-m", "pytest", "-q", "-p", "no:cacheprovider",
                       "tests/test_seed_examples.py", "tests/test_estimator_choice.py"]),
    ("parity", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_parity.py"]),
    ("keras", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_keras.py"]),
    ("regress --check", ["-m", "tpu_compat", "regress", "examples", "--check",
                         "--golden", "examples/golden"]),
)
STEP_NAMES = tuple(name for name, _ in STEPS)
STEP_TIMEOUT_SECONDS = 3 * 3600
PIP_TIMEOUT_SECONDS = 3600

# Columns of the generated table (the test in tests/test_tf_versions.py reads
# the table back with these names).
COLUMNS = ("TensorFlow", "tf-keras", "keras", "Python", "result") + STEP_NAMES + ("notes",)

# The Pythons the grid always shows (a cell not run says so).
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
NO_WHEEL = "no wheel"

_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_VERSION_ARG = re.compile(r"^\d+\.\d+$")


def _log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _run(command, *, cwd=None, env=None, timeout, log_file):
    """Runs COMMAND, appending its output to LOG_FILE; returns (exit code, output)."""
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=timeout, check=False)
        code, output = result.returncode, result.stdout + result.stderr
    except subprocess.TimeoutExpired as error:
        code = None
        output = f"{error.stdout or ''}{error.stderr or ''}\nTIMEOUT after {timeout}s"
    with open(log_file, "a", encoding="utf-8") as log:
        log.write(f"\n$ {' '.join(map(str, command))}\n{output}\n"
                  f"(exit {code}, {time.monotonic() - started:.0f}s)\n")
    return code, output


def snapshot_checkout(destination):
    """Copies the checkout's files (not .git, caches, build output) to DESTINATION."""
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "build", "dist",
                                    "*.egg-info", ".pytest_cache", ".hypothesis")
    shutil.copytree(REPO_ROOT, destination, ignore=ignore)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    # The results files change during a run; they are not code under test.
    dirty = subprocess.run(["git", "status", "--porcelain", "--", ".",
                            f":!{DEFAULT_JSON.relative_to(REPO_ROOT)}",
                            f":!{DEFAULT_MARKDOWN.relative_to(REPO_ROOT)}"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()
    return commit + ("+changes" if dirty else "") if commit else "unknown"


def installed_distributions(python):
    """{normalized name: version} of what the venv's interpreter sees."""
    code = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']"
            ".lower().replace('_', '-'): d.version for d in m.distributions()}))")
    output = subprocess.run([python, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    return json.loads(output)


def summarize_pytest(output):
    """'12 passed, 1 skipped' from pytest's last summary line ('' if none)."""
    for line in reversed(output.splitlines()):
        counts = _SUMMARY.findall(line)
        if counts and (" in " in line or line.startswith("=")):
            return ", ".join(f"{number} {word}" for number, word in counts)
    return ""


def _failure_excerpt(output, limit=160):
    """The first line that says what failed, shortened for a table cell."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ", "E   ")) or "Error:" in line:
            line = line.strip()
            return line if len(line) <= limit else line[:limit - 1] + "…"
    return "see the log"


def _minor_key(minor):
    return tuple(map(int, minor.split(".")))


def find_interpreter(python):
    """The interpreter for PYTHON: a path, or X.Y (pyenv's newest X.Y.z, else pythonX.Y)."""
    if not _VERSION_ARG.match(python):
        return python if os.path.isfile(python) else None
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [path for path in glob.glob(os.path.join(root, "versions", f"{python}.*", "bin", "python"))
             if re.fullmatch(r"\d+", path.split(os.sep)[-3].split(".")[-1])]
    if found:
        return max(found, key=lambda path: int(path.split(os.sep)[-3].split(".")[-1]))
    return shutil.which(f"python{python}")


def python_version_of(interpreter):
    return subprocess.run([interpreter, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=False).stdout.strip()


def available_releases(vpython, distribution, log_file):
    """The releases of DISTRIBUTION that the venv's pip can install (asks the registry)."""
    code, output = _run([vpython, "-m", "pip", "index", "versions", distribution],
                        timeout=PIP_TIMEOUT_SECONDS, log_file=log_file)
    if code != 0:
        if "No matching distribution found" in output:
            return []
        return None  # pip or the registry failed: not the same as "no wheel"
    for line in output.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return None


def build_venv(version, venv, source, log_file, python):
    """Fresh venv with tensorflow-cpu VERSION.*, matching tf-keras, tpu_compat[test].

    Returns (status, note, versions): status is "ok", NO_WHEEL or "install failed".
    """
    if venv.exists():
        shutil.rmtree(venv)
    code, output = _run([python, "-m", "venv", str(venv)], timeout=600, log_file=log_file)
    if code != 0:
        return "install failed", f"venv failed: {_failure_excerpt(output)}", {}
    vpython = str(venv / "bin" / "python")
    releases = available_releases(vpython, "tensorflow-cpu", log_file)
    if releases is not None and not any(r.startswith(f"{version}.") for r in releases):
        return NO_WHEEL, f"pip finds no tensorflow-cpu {version}.* for this Python", {}
    pip = [vpython, "-m", "pip", "install", "--progress-bar", "off"]
    for step in (
            pip + [f"tensorflow-cpu=={version}.*"],
            # tf-keras X.Y pairs with TF X.Y; --no-deps because its metadata
            # asks for the `tensorflow` distribution, not tensorflow-cpu.
            pip + ["--no-deps", f"tf-keras=={version}.*"],
            # The base install must leave TensorFlow alone: no TF extra here.
            # --ignore-requires-python: python_requires is what the matrix
            # proves, so it cannot decide which Pythons the matrix tries.
            pip + ["--ignore-requires-python", f"{source}[test]"]):
        code, output = _run(step, timeout=PIP_TIMEOUT_SECONDS, log_file=log_file)
        if code != 0:
            return "install failed", f"pip failed: {_failure_excerpt(output)}", {}
    versions = installed_distributions(vpython)
    tensorflows = sorted(name for name in TF_DISTRIBUTIONS if name in versions)
    if tensorflows != ["tensorflow-cpu"]:
        return ("install failed", f"TensorFlow distributions after install: {tensorflows}",
                versions)
    return "ok", "", versions


def run_cell(python_minor, version, args):
    """Runs the subset against TF VERSION on Python PYTHON_MINOR; returns its entry."""
    interpreter = args.interpreters[python_minor]
    cell = f"py{python_minor}-tf{version}"
    work = Path(tempfile.mkdtemp(prefix=f"{cell}_matrix_"))
    # Not named tpu_compat: the seed tests tell tpu_compat's frames in a
    # traceback by a "/tpu_compat/" path component.
    source = work / "checkout"
    log_file = Path(args.logs) / f"{cell}.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.write_text(f"Python {python_minor}, TensorFlow {version} matrix run, "
                        f"{datetime.datetime.now()}\n", encoding="utf-8")
    commit = snapshot_checkout(source)
    venv = Path(args.venvs) / cell
    entry = {"python_minor": python_minor, "tf_minor": version, "commit": commit,
             "date": datetime.date.today().isoformat(), "steps": {}, "notes": [],
             "python": python_version_of(interpreter)}
    _log(f"{cell}: building {venv} (log: {log_file})")
    started = time.monotonic()
    status, note, versions = build_venv(version, venv, source, log_file, interpreter)
    entry["install_seconds"] = round(time.monotonic() - started)
    entry.update(tensorflow=versions.get("tensorflow-cpu", ""),
                 tf_keras=versions.get("tf-keras", ""), keras=versions.get("keras", ""))
    if status != "ok":
        entry["result"] = status
        entry["notes"].append(note)
        _log(f"{cell}: {note}")
        shutil.rmtree(venv, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        return entry
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
    for name in ("TPU_NAME", "TPU_COMPAT_BACKEND", "TPU_COMPAT_NUM_REPLICAS",
                 "TPU_COMPAT_WARNINGS", "TF_USE_LEGACY_KERAS", "PYTHONPATH"):
        env.pop(name, None)
    vpython = str(venv / "bin" / "python")
    for name, command in STEPS:
        if args.steps and name not in args.steps:
            continue
        if "pytest" in command and args.jobs > 1:
            command = command + ["-n", str(args.jobs)]
        _log(f"{cell}: {name} ...")
        started = time.monotonic()
        code, output = _run([vpython] + command, cwd=source, env=env,
                            timeout=STEP_TIMEOUT_SECONDS, log_file=log_file)
        seconds = round(time.monotonic() - started)
        summary = summarize_pytest(output) if "pytest" in command else ""
        passed = code == 0
        entry["steps"][name] = {"passed": passed, "summary": summary, "seconds": seconds}
        if not passed:
            entry["notes"].append(f"{name}: {_failure_excerpt(output)}")
        _log(f"{cell}: {name} {'passed' if passed else 'FAILED'} {summary} ({seconds}s)")
    ran_all = set(entry["steps"]) == set(STEP_NAMES)
    all_passed = all(step["passed"] for step in entry["steps"].values())
    entry["result"] = ("pass" if all_passed and ran_all else
                       "partial run" if all_passed else "fail")
    if not args.keep_venvs:
        shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return entry


def _python_minor(entry):
    # Entries written before the Python axis have only the full version.
    return entry.get("python_minor") or ".".join(entry["python"].split(".")[:2])


def load_results(path):
    """{(python minor, TF minor): entry} from the results file."""
    if not Path(path).exists():
        return {}
    return {(_python_minor(entry), entry["tf_minor"]): entry
            for entry in json.loads(Path(path).read_text())["cells"]}


def save_results(path, entry):
    """Adds ENTRY to the results file (re-read first: other runs may have written it)."""
    results = load_results(path)
    entry = dict(entry, python_minor=_python_minor(entry))
    results[(entry["python_minor"], entry["tf_minor"])] = entry
    ordered = [results[key] for key in sorted(
        results, key=lambda key: (_minor_key(key[1]), _minor_key(key[0])))]
    Path(path).write_text(json.dumps({"cells": ordered}, indent=2) + "\n", encoding="utf-8")
    return results


def supported(results):
    """The claim setup.cfg can make: ((low, high) Python, (low, high) TF) or None.

    python_requires and the extras' TF bounds together claim a rectangle of
    cells, so this is the rectangle of consecutive Pythons and consecutive TF
    minors in which every cell passed or has no wheel (pip then never pairs
    them), each Python and each TF minor with at least one pass, and the most
    passing cells (ties: the newer TF, then more Pythons). A cell not run or
    failed is never inside it.
    """
    pythons = sorted({p for p, _ in results}, key=_minor_key)
    tfs = sorted({t for _, t in results}, key=_minor_key)
    best, best_key = None, None
    for i, p_low in enumerate(pythons):
        for p_high in pythons[i:]:
            rows = [p for p in pythons if _minor_key(p_low) <= _minor_key(p) <= _minor_key(p_high)]
            if not _consecutive(rows):
                continue
            for j, t_low in enumerate(tfs):
                for t_high in tfs[j:]:
                    cols = [t for t in tfs if _minor_key(t_low) <= _minor_key(t) <= _minor_key(t_high)]
                    if not _consecutive(cols):
                        continue
                    status = {(p, t): results.get((p, t), {}).get("result", "not run")
                              for p in rows for t in cols}
                    if any(s not in ("pass", NO_WHEEL) for s in status.values()):
                        continue
                    if not (all(any(status[p, t] == "pass" for t in cols) for p in rows) and
                            all(any(status[p, t] == "pass" for p in rows) for t in cols)):
                        continue
                    passes = sum(s == "pass" for s in status.values())
                    key = (passes, _minor_key(t_high), len(rows))
                    if best_key is None or key > best_key:
                        best, best_key = ((p_low, p_high), (t_low, t_high)), key
    return best


def claims(results):
    """What setup.cfg claims, per Python: [(python, (tf_low, tf_high)), ...], oldest first.

    Each Python claims its own TF range, because the extras carry a
    python_version marker per range (:func:`extra_requirements`): the longest
    run of consecutive TF minors ending at the newest minor of the rectangle of
    :func:`supported` in which every cell passed or has no wheel, from its
    oldest pass. So a Python that proved more than the rectangle (3.11 with TF
    2.15 to 2.21 beside a 3.10-3.13 x 2.20-2.21 rectangle) keeps all of it.
    The Pythons claimed are the rectangle's, then each consecutive Python beyond
    it (newer, then older) that has such a run; one without ends the walk that
    way, since python_requires is one range.
    """
    claim = supported(results)
    if claim is None:
        return []
    (p_low, p_high), (_, t_high) = claim
    pythons = sorted({p for p, _ in results}, key=_minor_key)
    # Every minor from the oldest any cell ran up to t_high: a minor no cell
    # ran is "not run" for each Python and ends its run there.
    tfs = [min((t for _, t in results), key=_minor_key)]
    while _minor_key(tfs[-1]) < _minor_key(t_high):
        tfs.append(_next_minor(tfs[-1]))

    def newest_run(python):
        oldest_pass = None
        for tf in reversed(tfs):
            status = results.get((python, tf), {}).get("result", "not run")
            if status not in ("pass", NO_WHEEL):
                break
            if status == "pass":
                oldest_pass = tf
        return (oldest_pass, t_high) if oldest_pass else None

    rows = {p: newest_run(p) for p in pythons
            if _minor_key(p_low) <= _minor_key(p) <= _minor_key(p_high)}
    for step in (_next_minor, _previous_minor):
        python = step(p_high if step is _next_minor else p_low)
        while python in pythons and newest_run(python):
            rows[python] = newest_run(python)
            python = step(python)
    return sorted(rows.items(), key=lambda row: _minor_key(row[0]))


def _previous_minor(minor):
    major, number = map(int, minor.split("."))
    return f"{major}.{number - 1}"


def extra_requirements(results, distribution):
    """DISTRIBUTION's lines in setup.cfg's extras: one per run of consecutive
    Pythons sharing a TF range, with a python_version marker where the claims
    differ by Python (python_requires bounds the rest)."""
    rows = claims(results)
    groups = []
    for python, tf_range in rows:
        if groups and groups[-1][1] == tf_range:
            groups[-1][0].append(python)
        else:
            groups.append(([python], tf_range))
    lines = []
    for index, (pythons, (low, high)) in enumerate(groups):
        markers = []
        if index > 0:
            markers.append(f'python_version>="{pythons[0]}"')
        if index < len(groups) - 1:
            markers.append(f'python_version<"{_next_minor(pythons[-1])}"')
        line = f"{distribution}>={low},<{_next_minor(high)}"
        lines.append(line + ("; " + " and ".join(markers) if markers else ""))
    return lines


def _consecutive(minors):
    keys = [_minor_key(m) for m in minors]
    return all(b == (a[0], a[1] + 1) for a, b in zip(keys, keys[1:]))


def proven_range(results):
    """(lowest, highest) TF minor that setup.cfg claims (see :func:`supported`)."""
    claim = supported(results)
    return claim[1] if claim else None


def proven_pythons(results):
    """(lowest, highest) Python minor that setup.cfg claims (see :func:`supported`)."""
    claim = supported(results)
    return claim[0] if claim else None


def grid_cell(entry):
    """One cell of the Python x TF grid: the result and, if failed, the failing checks."""
    if entry is None:
        return "not run"
    result = entry["result"]
    if result == "fail":
        failed = [name for name, step in entry["steps"].items() if not step["passed"]]
        return "FAIL: " + ", ".join(failed)
    if result == "install failed":
        return "FAIL: install"
    return result


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(results):
    lines = [
        "# Python and TensorFlow versions",
        "",
        "<!-- Generated by scripts/tf_version_matrix.py from docs/tf_versions.json; "
        "do not edit by hand. -->",
        "",
        "Each cell is one run of `scripts/tf_version_matrix.py`: a fresh venv made "
        "from that Python (pyenv's interpreter) with `tensorflow-cpu` of that minor "
        "version from PyPI, the matching `tf-keras` (`--no-deps`), and tpu_compat with "
        "its `[test]` extra; then the seed-example tests (1, 2 and 8 replicas) with the "
        "estimator-choice test (it runs only where `tensorflow_estimator` is installed: "
        "TF 2.15), the parity scenarios, the Keras tests and "
        "`tpu-compat regress examples --check`. \"no wheel\": pip, asked in that "
        "venv, finds no `tensorflow-cpu` of that minor for that Python. \"not run\": "
        "not tried yet, so not claimed.",
        "",
    ]
    rows = claims(results)
    if rows:
        said = "; ".join(f"Python **{python}** with TensorFlow **{low} to {high}**"
                         if low != high else f"Python **{python}** with TensorFlow **{low}**"
                         for python, (low, high) in rows)
        claimed = dict(rows)
        outside = any(entry.get("result") == "pass" and not (
            python in claimed and
            _minor_key(claimed[python][0]) <= _minor_key(tf) <= _minor_key(claimed[python][1]))
            for (python, tf), entry in results.items())
        lines += [f"Proven: {said}; every cell with a wheel passing. setup.cfg says "
                  f"exactly this: `python_requires = >={rows[0][0]},<"
                  f"{_next_minor(rows[-1][0])}` and, in the extras, "
                  + ", ".join(f"`{line}`" for line in extra_requirements(results, "tensorflow"))
                  + "." + (" Passing cells outside these ranges are proven too, but setup.cfg "
                           "cannot say so without also claiming cells that were not run or "
                           "failed." if outside else ""),
                  ""]
    tfs = sorted({t for _, t in results}, key=_minor_key)
    pythons = sorted({p for p, _ in results} | set(PYTHONS), key=_minor_key)
    lines += ["| Python | " + " | ".join(f"TF {t}" for t in tfs) + " |",
              "|---|" + "|".join("---" for _ in tfs) + "|"]
    for python in pythons:
        lines.append(f"| {python} | " + " | ".join(
            grid_cell(results.get((python, t))) for t in tfs) + " |")
    lines += ["", "One row per cell that was run (pytest's counts and the wall-clock time, "
              "which depends on the machine: two cores shared with other work, "
              "`nice -n 19`; the notes give one line per failing check):", ""]
    lines += ["| " + " | ".join(COLUMNS) + " |",
              "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for key in sorted(results, key=lambda k: (_minor_key(k[1]), _minor_key(k[0]))):
        entry = results[key]
        if entry["result"] == NO_WHEEL:
            continue
        cells = [entry.get("tensorflow") or entry["tf_minor"], entry.get("tf_keras") or "—",
                 entry.get("keras") or "—", entry.get("python") or "—", entry["result"]]
        for name in STEP_NAMES:
            step = entry["steps"].get(name)
            if step is None:
                cells.append("not run")
            else:
                status = "pass" if step["passed"] else "FAIL"
                detail = f"{step['summary']}, " if step["summary"] else ""
                cells.append(f"{status} ({detail}{step['seconds']}s)")
        notes = list(entry["notes"]) + [f"commit {entry['commit']}, {entry['date']}"]
        cells.append("; ".join(notes))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += [
        "",
        "CI runs the whole test suite on the newest TensorFlow only (its time budget). "
        "Before a release, run the matrix by hand (newest first: if it is stopped, "
        "the cells done still form a range) and commit docs/tf_versions.json "
        "and this file:",
        "",
        "```sh",
        "nice -n 19 python scripts/tf_version_matrix.py 2.21 2.20 2.19 2.18 2.17 2.16 2.15 "
        "--python 3.10,3.11,3.12,3.13",
        "```",
        "",
        "then make `python_requires`, the Python classifiers and the TensorFlow range "
        "in setup.cfg (the `tensorflow` and `keras2` extras), `PROVEN_TF_RANGE` in "
        "tpu_compat/tf_support.py (the range `install()` warns outside of) and the "
        "ranges stated in README.md and docs/install.md say exactly the proven range; "
        "tests/test_tf_versions.py checks that they agree.",
        "",
    ]
    return "\n".join(lines)


def _next_minor(minor):
    major, number = map(int, minor.split("."))
    return f"{major}.{number + 1}"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", metavar="X.Y",
                        help="TensorFlow minor versions to test, e.g. 2.16 2.21")
    parser.add_argument("--venvs", default=os.path.join(tempfile.gettempdir(), "tpu_compat_venvs"),
                        help="where the per-cell venvs are built (outside the checkout)")
    parser.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "tpu_compat_matrix_logs"),
                        help="directory for one full log per cell")
    parser.add_argument("--python", default=sys.executable, metavar="X.Y,...",
                        help="comma-separated Pythons to build the venvs from: minor "
                             "versions (pyenv's newest X.Y.z, else pythonX.Y on PATH) "
                             "or interpreter paths (default: this interpreter)")
    parser.add_argument("--results", default=str(DEFAULT_JSON), help="JSON results file")
    parser.add_argument("--markdown", default=str(DEFAULT_MARKDOWN), help="generated tables")
    parser.add_argument("--steps", nargs="+", choices=STEP_NAMES, metavar="STEP",
                        help=f"run only these steps (a partial run is never a pass); "
                             f"choices: {', '.join(STEP_NAMES)}")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="pytest-xdist workers per pytest step (default: 1)")
    parser.add_argument("--keep-venvs", action="store_true",
                        help="keep each venv after its run")
    parser.add_argument("--render-only", action="store_true",
                        help="only regenerate the Markdown from the JSON results")
    args = parser.parse_args(argv)
    for version in args.versions:
        if not _VERSION_ARG.match(version):
            parser.error(f"version {version!r}: give a TensorFlow minor version like 2.16")
    if not args.versions and not args.render_only:
        parser.error("give at least one TensorFlow version (X.Y), or --render-only")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more workers")
    args.interpreters = {}
    if not args.render_only:
        for python in (p.strip() for p in args.python.split(",")):
            interpreter = find_interpreter(python)
            if interpreter is None:
                parser.error(f"--python {python!r}: no such interpreter; give X.Y "
                             f"(found through pyenv or PATH as pythonX.Y) or a path")
            minor = ".".join(python_version_of(interpreter).split(".")[:2])
            if not _VERSION_ARG.match(minor):
                parser.error(f"--python {python!r}: {interpreter} does not run")
            args.interpreters[minor] = interpreter
    venvs = Path(args.venvs).resolve()
    if venvs == REPO_ROOT or REPO_ROOT in venvs.parents:
        parser.error(f"--venvs {args.venvs}: must be outside the checkout")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    outcomes = {}
    for version in args.versions:
        for python_minor in args.interpreters:
            entry = run_cell(python_minor, version, args)
            outcomes[python_minor, version] = entry["result"]
            results = save_results(args.results, entry)
            Path(args.markdown).write_text(render_markdown(results), encoding="utf-8")
            _log(f"py{python_minor}-tf{version}: {entry['result']}")
    Path(args.markdown).write_text(render_markdown(load_results(args.results)),
                                   encoding="utf-8")
    return 0 if all(result in ("pass", NO_WHEEL) for result in outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
