"""``tpu-compat run [options] SCRIPT [ARGS...]`` / ``run -m MODULE [ARGS...]``."""

import argparse
import sys

from tpu_compat import runner, settings, tf_support
from tpu_compat.exit_codes import EXIT_FAILURE, UsageError


def register(subparsers):
    parser = subparsers.add_parser(
        "run", help="run a legacy TPU script unchanged on a real or emulated TPU",
        description="Run a legacy TensorFlow TPU script unchanged, as "
                    "`python SCRIPT ARGS` would, with tpu_compat installed.")
    # One flag per row of the settings table that run takes (settings.flag_rows),
    # --tf1 included.
    settings.add_flags(parser, settings.RUN)
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a module, like python -m")
    parser.add_argument("target", nargs="?", metavar="SCRIPT",
                        help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the script unchanged")
    parser.set_defaults(handler=handle)


def handle(args):
    if args.module is None and args.target is None:
        raise UsageError("tpu-compat run: error: give a SCRIPT or -m MODULE")
    runner.prepare_environment(settings.flags_given(args, settings.RUN))
    tf_support.require_tensorflow()
    script_args = _script_arguments(args)
    # --tf1 was exported with the other flags; $TPU_COMPAT_TF1 is its row's variable.
    tf1 = settings.read("tf1", entry=settings.RUN)
    try:
        if args.module is not None:
            return runner.run_module(args.module, script_args, tf1=tf1)
        return runner.run_script(args.target, script_args, tf1=tf1)
    except runner.RunError as error:
        raise UsageError(f"tpu-compat run: error: {error}") from None
    except runner.NotRunnable as error:
        # Exit 1, in python's words (python: "<python>: No module named x").
        print(f"tpu-compat run: {error}", file=sys.stderr)
        return EXIT_FAILURE


def _script_arguments(args):
    """The arguments after SCRIPT (or ``-m MODULE``), exactly as given.

    argparse takes a ``--`` right after SCRIPT as its own separator and drops
    it; python passes it to the script (``python a.py -- --help``: sys.argv
    is ``['a.py', '--', '--help']``). The command line as given
    (``args.raw_argv``, set by tpu_compat.cli) has it.
    """
    parsed = ([args.target] if args.module is not None and args.target is not None
              else []) + list(args.args)
    raw = getattr(args, "raw_argv", None)
    if raw is None:
        return parsed
    anchors = ((args.module, f"-m{args.module}") if args.module is not None
               else (args.target,))
    for index, token in enumerate(raw):
        tail = raw[index + 1:]
        if token in anchors and tail in (parsed, ["--"] + parsed):
            return tail
    return parsed
