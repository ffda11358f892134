"""``tpu-compat regress`` and ``tpu-compat verify`` (the engine: :mod:`tpu_compat.regress`).

Exit codes: 0 when
every script passed (or verify found the numbers equal), 1 when anything
failed, 2 for usage errors (raised as :class:`tpu_compat.exit_codes.UsageError`),
130 when interrupted (Ctrl-C) and 128+N when ended by signal N (SIGTERM,
SIGHUP); either way the running script's whole process group is killed first.
"""

import os
import sys
import textwrap

from tpu_compat import _config, _paths, _process, settings
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, UsageError
from tpu_compat.regress import compare, junit, measure, script_process, suite, verify

__all__ = ["register", "run_regress", "run_verify"]

DEFAULT_TIMEOUT_SECONDS = 600.0
# The settings regress and verify read (table order); the seed is theirs:
# --seed / --no-seed (the row's default), never $TPU_COMPAT_SEED, which they
# set per script (the row's variable_ignored_by).
_SETTINGS = ("backend", "num_replicas", "fidelity", "numerics", "seed")
_INDENT = "    "


def register(subparsers):
    regress = subparsers.add_parser(
        "regress", help="record or check the numbers legacy scripts report",
        description="Run each legacy script unchanged in its own `tpu-compat run` "
                    "process and record the numbers it reports (KEY: number, "
                    "KEY=number and RESULT {json} stdout lines, or what its "
                    "SCRIPT.regress.toml selects) as golden files, or check them "
                    "against the golden files within tolerance.")
    regress.add_argument("paths", nargs="+", metavar="SCRIPT_OR_DIR",
                         help="scripts, or directories searched for *.py scripts")
    mode = regress.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", dest="mode", action="store_const", const="record",
                      help="write each script's golden file")
    mode.add_argument("--check", dest="mode", action="store_const", const="check",
                      help="compare each script with its golden file")
    regress.add_argument("--golden", metavar="DIR", required=True,
                         help="directory of golden files (one JSON file per script)")
    regress.add_argument("--junit-xml", metavar="FILE",
                         help="also write the results as JUnit XML")
    _add_run_arguments(regress)
    regress.set_defaults(handler=interruptible("regress", run_regress))

    verify_parser = subparsers.add_parser(
        "verify", help="check that a migrated script computes what the legacy one did",
        description="Run LEGACY under the shim and MIGRATED with --warnings=error "
                    "(no legacy API allowed) on the same emulated TPU, and compare "
                    "the numbers they report. Exit 0 when equal within tolerance.")
    verify_parser.add_argument("legacy", metavar="LEGACY.py", help="the original script")
    verify_parser.add_argument("migrated", metavar="MIGRATED.py",
                               help="its migrated version")
    _add_run_arguments(verify_parser)
    verify_parser.set_defaults(handler=interruptible("verify", run_verify))


def interruptible(command, handler):
    """``handler`` with Ctrl-C as exit code 130 and SIGTERM/SIGHUP as 128+N.

    script_process has killed the running script's process group by the time
    the exception arrives here.
    """
    def run(args):
        try:
            with _process.terminate_as_exit():
                return handler(args)
        except KeyboardInterrupt:
            print(f"tpu-compat {command}: interrupted; the running script and every "
                  f"process it started were killed", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
    return run


def _add_run_arguments(parser):
    settings.add_flags(parser, settings.REGRESS, names=_SETTINGS)
    parser.add_argument("--timeout", metavar="SECONDS", default=DEFAULT_TIMEOUT_SECONDS,
                        type=positive_float("--timeout"),
                        help=f"per script (default: {DEFAULT_TIMEOUT_SECONDS:g})")
    parser.add_argument("--rtol", metavar="R", type=non_negative_float("--rtol"),
                        help=f"relative tolerance (default: {compare.DEFAULT_RTOL:g})")
    parser.add_argument("--atol", metavar="A", type=non_negative_float("--atol"),
                        help=f"absolute tolerance (default: {compare.DEFAULT_ATOL:g})")


def number_type(name, parse):
    """An argparse type: ``parse`` (a :mod:`tpu_compat._config` parser) naming ``name``.

    Its error is a UsageError (one line, exit 2), which argparse lets through.
    """
    def convert(text):
        try:
            return parse(name, text)
        except _config.ConfigError as error:
            raise UsageError(str(error)) from None
    return convert


def positive_float(name):
    return number_type(name, _config.positive_seconds)


def non_negative_float(name):
    return number_type(name, _config.non_negative_number)


def _run_options(args):
    chosen = settings.resolve(settings.REGRESS, names=_SETTINGS,
                              flags=settings.flags_given(args, settings.REGRESS, _SETTINGS))
    return measure.RunOptions(
        replicas=chosen.num_replicas, timeout=args.timeout,
        seed=chosen.seed, rtol=args.rtol, atol=args.atol,
        backend=chosen.backend, fidelity=chosen.fidelity, numerics=chosen.numerics)


def _seed_sentence(seed):
    if seed is None:
        return "RNGs not seeded"
    return (f"Python, NumPy and TensorFlow RNGs seeded with {seed} before each "
            f"script (a script that seeds its own keeps its seeds)")


def _indented(text):
    return textwrap.indent(text, _INDENT)


def _print(text=""):
    print(text, flush=True)


# -- regress ---------------------------------------------------------------------------------


def _count(numbers):
    return f"{len(numbers)} number{'s' if len(numbers) != 1 else ''}"


def _show_outcome(outcome, mode):
    seconds = f"{outcome.seconds:.1f} s"
    if outcome.status == suite.PASSED:
        numbers = outcome.measurement.numbers
        if mode == "record":
            _print(f"RECORDED {outcome.script.path} ({_count(numbers)}, {seconds}) "
                   f"-> {outcome.golden_path}")
        else:
            _print(f"PASSED   {outcome.script.path} ({_count(numbers)}, {seconds})")
    else:
        label = "FAILED  " if outcome.status == suite.FAILED else "ERROR   "
        timing = f" ({seconds})" if outcome.measurement else ""
        _print(f"{label} {outcome.script.path}{timing}: {outcome.message}")
        text = junit.details(outcome)
        if text:
            _print(_indented(text))
        return
    for note in outcome.notes:
        _print(_indented(note))


def _check_outputs(args):
    """Refuses, before any script runs, outputs that could not be written after."""
    if os.path.exists(args.golden) and not os.path.isdir(args.golden):
        raise UsageError(f"tpu-compat regress: error: --golden={args.golden} is not a "
                         f"directory; expected the directory of golden files"
                         + (" (made if needed)" if args.mode == "record" else ""))
    if args.junit_xml:
        parent = os.path.dirname(os.path.abspath(args.junit_xml))
        if os.path.isdir(args.junit_xml):
            raise UsageError(f"tpu-compat regress: error: --junit-xml={args.junit_xml} is "
                             f"a directory; expected the path of the XML file to write")
        if not os.path.isdir(parent):
            raise UsageError(f"tpu-compat regress: error: --junit-xml={args.junit_xml}: "
                             f"its directory {parent} does not exist")


def run_regress(args):
    _check_outputs(args)
    options = _run_options(args)
    try:
        scripts = suite.discover(args.paths, skip_dirs=[args.golden])
    except suite.DiscoveryError as error:
        raise UsageError(f"tpu-compat regress: error: {error}") from None
    doing = ("recording" if args.mode == "record" else "checking")
    towards = "to" if args.mode == "record" else "against"
    _print(f"tpu-compat regress: {doing} {len(scripts)} script(s) {towards} "
           f"{args.golden} with {options.replicas} replicas on backend "
           f"{options.backend}, fidelity {options.fidelity}; "
           f"{_seed_sentence(options.seed)}; numerics {options.numerics}")
    outcomes = suite.run_suite(scripts, args.golden, args.mode, options,
                               command=script_process.tpu_compat_command,
                               on_outcome=lambda outcome: _show_outcome(outcome, args.mode))
    failed = sum(outcome.status != suite.PASSED for outcome in outcomes)
    exit_code = EXIT_FAILURE if failed else EXIT_OK
    if args.junit_xml:
        try:
            junit.write(args.junit_xml, outcomes)
        except OSError as error:
            print(f"tpu-compat regress: cannot write {args.junit_xml}: {error}",
                  file=sys.stderr)
            exit_code = EXIT_FAILURE
    _print(f"{len(outcomes) - failed} passed, {failed} failed")
    return exit_code


# -- verify ----------------------------------------------------------------------------------


def _show_side(label, path, result):
    if result is None:
        return
    if result.ok:
        _print(f"{label} {path}: {_count(result.numbers)} ({result.run.seconds:.1f} s)")
    else:
        _print(f"{label} {path}: {result.problem}")
        tail = result.run.stderr_tail()
        if tail:
            _print(_indented(f"stderr (last lines):\n{tail}"))


def run_verify(args):
    for path in (args.legacy, args.migrated):
        problem = _paths.not_a_regular_file(path)
        if problem:
            raise UsageError(f"tpu-compat verify: error: {problem}")
    options = _run_options(args)
    _print(f"tpu-compat verify: {args.legacy} (legacy, under the shim) against "
           f"{args.migrated} (migrated, --warnings=error --strict on) with "
           f"{options.replicas} replicas on backend {options.backend}, "
           f"fidelity {options.fidelity}; "
           f"{_seed_sentence(options.seed)}; numerics {options.numerics}")
    result = verify.verify(args.legacy, args.migrated, options,
                           command=script_process.tpu_compat_command)
    _show_side("legacy:  ", args.legacy, result.legacy)
    _show_side("migrated:", args.migrated, result.migrated)
    if result.problem is not None:
        _print(f"FAILED: {result.problem}")
        return EXIT_FAILURE
    if result.comparison.equal:
        _print(f"EQUAL: {result.comparison.summary()}")
        return EXIT_OK
    _print(f"DIFFERENT: {result.comparison.summary()}")
    _print(_indented(compare.format_table(result.comparison, "legacy", "migrated")))
    return EXIT_FAILURE
