"""What a benchmark hands ``scripts/run_benchmarks.py``: its figures and goals, as JSON.

Each benchmark takes ``--json PATH`` and, besides its printed report, writes
``{"figures": {name: number}, "goals": [{"figure", "value", "op", "target"}]}``
there. The figures are the medians (and ratios) the benchmark prints; the
runner puts them into docs/performance.md and reports every goal missed. The
environment (commit, versions, load) is the runner's to record, not this file's.
Not a benchmark itself (its name does not start with ``bench_``).
"""

import json
import math
import operator

_COMPARE = {"<=": operator.le, ">=": operator.ge}


def add_json_argument(parser):
    parser.add_argument("--json", metavar="PATH",
                        help="also write the figures and goals as JSON to PATH "
                             "(scripts/run_benchmarks.py reads it)")


def goal(figure, value, op, target):
    """One goal: ``value`` (the figure ``figure``) must be ``op`` (<= or >=) ``target``."""
    if op not in _COMPARE:
        raise ValueError(f"goal {figure!r}: op must be one of {sorted(_COMPARE)}, not {op!r}")
    return {"figure": figure, "value": float(value), "op": op, "target": float(target)}


def met(entry):
    """Whether a goal written by :func:`goal` is met (a NaN value never is)."""
    value = entry["value"]
    return not math.isnan(value) and _COMPARE[entry["op"]](value, entry["target"])


def write(path, figures, goals=()):
    """Writes the figures and goals to ``path`` (nothing when ``path`` is None)."""
    if not path:
        return
    document = {"figures": {name: float(value) for name, value in figures.items()},
                "goals": list(goals)}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
        handle.write("\n")


# A variant child's time limit: the longest full run's (run_benchmarks.py's
# benchmark timeouts), so that a stuck child ends the benchmark, not the machine.
VARIANT_TIMEOUT = 1800.0


def run_variant(command, env=None):
    """Runs one variant's TensorFlow process; returns its stdout (raises on failure).

    Started as tpu_compat starts every child that imports TensorFlow
    (tpu_compat._process.run_tensorflow_child): in its own process group,
    killed whole at the time limit, with what ``tpu-compat run`` exports
    before TensorFlow's import, so every variant computes with the kernels
    and the Keras a user's run gets. Under the test suite's fork server (its
    private variable in ``env``) the child is forked from a process that has
    imported TensorFlow once, and the smoke runs skip one import per variant;
    a user's run always starts a fresh interpreter.
    """
    from tpu_compat import _process  # pylint: disable=import-outside-toplevel
    finished = _process.run_tensorflow_child(command, VARIANT_TIMEOUT, env=env)
    if finished.timed_out or finished.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} "
            + (f"did not finish within {VARIANT_TIMEOUT:.0f} s" if finished.timed_out
               else f"failed (exit {finished.returncode})")
            + f":\n{finished.stderr[-3000:]}")
    return finished.stdout
