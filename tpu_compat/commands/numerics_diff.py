"""``tpu-compat numerics-diff SCRIPT [ARGS...]``.

The engine is :mod:`tpu_compat.regress.numerics_diff`.

Exit codes: 0 when both runs reported their numbers (and, with ``--rtol``,
none moved beyond it; with ``--ops-at-step``, the tpu run recorded that
step), 1 when a run failed, a number moved beyond ``--rtol`` or the step was
not recorded, 2 for usage errors; 130 / 128+N when interrupted, as ``regress``.
"""

import argparse
import math
import os

from tpu_compat import _config, _paths, settings
from tpu_compat.commands.regress import (DEFAULT_TIMEOUT_SECONDS, interruptible,
                                         non_negative_float, number_type,
                                         positive_float)
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_OK, UsageError
from tpu_compat.regress import measure, numerics_diff, script_process

__all__ = ["register", "run_numerics_diff"]

_SETTINGS = ("backend", "num_replicas", "fidelity", "seed")
LISTED_NUMBERS = 10


def register(subparsers):
    parser = subparsers.add_parser(
        "numerics-diff",
        help="how far a script's numbers move on a TPU's matmul precision",
        description="Run SCRIPT twice on the same emulated TPU with the same seed, under "
                    "--numerics exact and --numerics tpu (float32 matmul and convolution "
                    "operands rounded to bfloat16 as a TPU does), and rank the numbers it "
                    "reports (KEY: number, KEY=number, RESULT {json}, or what its "
                    "SCRIPT.regress.toml selects) by how far they moved.")
    parser.add_argument("script", metavar="SCRIPT", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the script unchanged")
    settings.add_flags(parser, settings.REGRESS, names=_SETTINGS)
    parser.add_argument("--timeout", metavar="SECONDS", default=DEFAULT_TIMEOUT_SECONDS,
                        type=positive_float("--timeout"),
                        help=f"per run (default: {DEFAULT_TIMEOUT_SECONDS:g})")
    parser.add_argument("--top", metavar="K", default=LISTED_NUMBERS,
                        type=number_type("--top", _config.non_negative_int),
                        help=f"numbers listed, most moved first (default: {LISTED_NUMBERS})")
    parser.add_argument("--rtol", metavar="R", type=non_negative_float("--rtol"),
                        help="exit 1 when a number moved by more than R relative "
                             "(default: report only)")
    parser.add_argument("--ops-at-step", metavar="N", dest="ops_at_step",
                        type=number_type("--ops-at-step", lambda name, value: _config.integer_in(
                            name, value, 1, _config.MAX_STEP)),
                        help="also list the rounded ops replica 0 runs in its N-th replica "
                             "step (1-based, counting every step run: training, evaluation "
                             "and prediction), by how far the rounding moves each op's "
                             "output on the same inputs, largest first (--top of them)")
    parser.set_defaults(handler=interruptible("numerics-diff", run_numerics_diff))


def _number(value):
    return f"{value:.8g}"


def _relative(value):
    return "inf" if math.isinf(value) else f"{value:.2e}"


def _table(moved):
    rows = [("key", "exact", "tpu", "abs diff", "rel diff")]
    rows += [(m.key, _number(m.exact), _number(m.tpu), _number(m.absolute),
              _relative(m.relative)) for m in moved]
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    return "\n".join(
        "  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])])
        .rstrip() for row in rows)


def _where(filename, line):
    try:
        shown = os.path.relpath(filename)
    except ValueError:  # another drive
        shown = filename
    return f"{filename if shown.startswith('..') else shown}:{line}"


def _ops_table(ops):
    rows = [("rel diff", "pass", "op", "line", "name")]
    rows += [(_relative(op["relative"]) if op["relative"] else "0", op["pass"], op["op"],
              _where(op["file"], op["line"]), op["name"]) for op in ops]
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    return "\n".join("  ".join([row[0].rjust(widths[0])] + [c.ljust(w) for c, w in
                                                           zip(row[1:], widths[1:])]).rstrip()
                     for row in rows)


def _print_ops(found, top):
    """The ops of the chosen step; False when there is no record of them."""
    if found.problem is not None:
        _print(f"FAILED: ops at step {found.step}: {found.problem}")
        return False
    _print(f"ops at replica step {found.step} of replica 0 ({found.steps_run} counted): "
           f"{len(found.ops)} rounded op(s), by how far rounding their operands moves "
           f"their output (max |tpu - exact| / max |exact|, same inputs)")
    if found.ops and top:
        _print("    " + _ops_table(found.ops[:top]).replace("\n", "\n    "))
    return True


def _print(text=""):
    print(text, flush=True)


def _run_options(args):
    chosen = settings.resolve(settings.REGRESS, names=_SETTINGS,
                              flags=settings.flags_given(args, settings.REGRESS, _SETTINGS))
    return measure.RunOptions(replicas=chosen.num_replicas, timeout=args.timeout,
                              seed=chosen.seed, backend=chosen.backend,
                              fidelity=chosen.fidelity)


def run_numerics_diff(args):
    problem = _paths.not_a_regular_file(args.script)
    if problem:
        raise UsageError(f"tpu-compat numerics-diff: error: {problem}")
    options = _run_options(args)
    seeded = ("RNGs not seeded" if options.seed is None
              else f"RNGs seeded with {options.seed} before each run")
    _print(f"tpu-compat numerics-diff: {args.script} under --numerics exact and tpu with "
           f"{options.replicas} replicas on backend {options.backend}, fidelity "
           f"{options.fidelity}; {seeded}")
    result = numerics_diff.numerics_diff(args.script, args.args, options,
                                         command=script_process.tpu_compat_command,
                                         ops_at_step=args.ops_at_step)
    for label, run in (("exact:", result.exact), ("tpu:  ", result.tpu)):
        if run is not None and run.ok:
            _print(f"{label} {len(run.numbers)} numbers ({run.run.seconds:.1f} s)")
    if result.problem is not None:
        _print(f"FAILED: {result.problem}")
        for run in (result.exact, result.tpu):
            if run is not None and not run.ok and run.run.stderr_tail():
                _print("    stderr (last lines):\n" + "\n".join(
                    "    " + line for line in run.run.stderr_tail().splitlines()))
        return EXIT_FAILURE
    for label, keys in (("only under exact", result.only_exact),
                        ("only under tpu", result.only_tpu)):
        if keys:
            _print(f"{label}: {', '.join(keys)}")
    largest = result.largest
    if largest is None:
        _print("no number was reported by both runs")
        return EXIT_FAILURE
    moved = [m for m in result.moved if m.relative > 0]
    _print(f"largest relative difference: {_relative(largest.relative)} ({largest.key}); "
           f"{len(moved)} of {len(result.moved)} numbers moved")
    if moved and args.top:
        _print("    " + _table(moved[:args.top]).replace("\n", "\n    "))
    ops_ok = result.ops is None or _print_ops(result.ops, args.top)
    if args.rtol is not None and largest.relative > args.rtol:
        _print(f"MOVED beyond rtol={args.rtol:g}")
        return EXIT_FAILURE
    return EXIT_OK if ops_ok else EXIT_FAILURE
