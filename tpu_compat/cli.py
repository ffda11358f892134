"""The ``tpu-compat`` command line (also ``python -m tpu_compat``).

Each subcommand lives in its own module of :mod:`tpu_compat.commands`
exposing ``register(subparsers)``, which adds a parser whose
``handler(args) -> int`` does the work; the engines are below it (runner,
migrate/, regress/, runtime/). Library code neither prints nor exits; this
module turns errors into one line on stderr and an exit code of
:mod:`tpu_compat.exit_codes`: 2 (usage, configuration: ``runner.own_errors()``),
1 (findings, failures, TensorFlow missing) or 0.
"""

import argparse
import importlib
import sys

from tpu_compat import runner, tf_support
from tpu_compat._version import __version__
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_USAGE, UsageError

# Modules that register subcommands, in help order. A module that is not
# importable (an optional part missing) is skipped, not fatal.
COMMAND_MODULES = (
    "tpu_compat.commands.run",
    "tpu_compat.commands.doctor",
    "tpu_compat.commands.worker",
    "tpu_compat.commands.matrix",
    "tpu_compat.commands.scan",
    "tpu_compat.commands.upgrade",
    "tpu_compat.commands.regress",
    "tpu_compat.commands.numerics_diff",
)

__all__ = ["UsageError", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one clear line and exit code 2."""

    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message}")


def build_parser():
    parser = _Parser(
        prog="tpu-compat",
        description="Run and migrate legacy TensorFlow TPU code on current TensorFlow.")
    parser.add_argument("--version", action="version", version=f"tpu-compat {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=_Parser)
    subparsers.required = True
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and module_name.startswith(error.name):
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.raw_argv = argv  # what argparse dropped (`run`'s `--`)
        return args.handler(args)
    except (UsageError, *runner.own_errors()) as error:
        runner.print_own_error(error)
        return EXIT_USAGE
    except tf_support.TensorFlowMissing as error:
        # Not a usage error: the command was right, the environment lacks TF.
        print(f"tpu-compat: error: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except ModuleNotFoundError as error:
        # A command that imports TensorFlow without checking first (matrix):
        # the same one line, rather than a traceback.
        if (error.name or "").partition(".")[0] != "tensorflow" or (
                tf_support.tensorflow_importable()):
            raise
        print(f"tpu-compat: error: {tf_support.MISSING_TENSORFLOW}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
