"""``tpu-compat scan``: find legacy TPU-strategy APIs (the engine: :mod:`tpu_compat.migrate`).

Exit codes follow linters (flake8, ruff): 0 when nothing was found, 1 when
something was (unless ``--exit-zero``), 2 for usage errors.
"""

import os
import sys

from tpu_compat import settings
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_OK, UsageError
from tpu_compat.migrate import report, scan, sources

__all__ = ["add_common_arguments", "max_file_bytes", "register", "run_scan", "write_stdout"]

_SCAN_FORMATS = {"text": report.scan_text, "json": report.scan_json, "sarif": report.scan_sarif}


def register(subparsers):
    scan_parser = subparsers.add_parser(
        "scan", help="find legacy TPU-strategy APIs in Python files and notebooks",
        description="Find uses of legacy TensorFlow TPU-strategy APIs (TF 1.15, "
                    "2.0-2.3) in .py files and .ipynb code cells. Does not import "
                    "TensorFlow.")
    scan_parser.add_argument("paths", nargs="+", metavar="PATH",
                             help="files or directories to scan")
    scan_parser.add_argument("--format", choices=sorted(_SCAN_FORMATS), default="text",
                             help="output format (default: text)")
    add_common_arguments(scan_parser, fail_help="exit with 1 when anything is found "
                                                   "(the default; kept for scripts and "
                                                   "the pre-commit hook)")
    scan_parser.add_argument("--exit-zero", action="store_true",
                             help="exit with 0 even when something is found (to "
                                  "report without failing, as flake8 and ruff do)")
    scan_parser.set_defaults(handler=run_scan)


def add_common_arguments(parser, fail_help="exit with 1 when anything is found (or changed)"):
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files and directories whose path or name "
                             "matches GLOB (repeatable)")
    parser.add_argument("--fail-on-findings", action="store_true", help=fail_help)
    settings.add_flags(parser, settings.MIGRATE)


def max_file_bytes(args):
    """The per-file limit: --max-file-bytes, else its variable, else the default."""
    return settings.resolve(settings.MIGRATE,
                            flags=settings.flags_given(args, settings.MIGRATE)).max_file_bytes


def write_stdout(text):
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # `tpu-compat scan ... | head`: the reader left; stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


# --- scan ----------------------------------------------------------------------------


def run_scan(args):
    # Argument conflicts are found before any file is read.
    if args.exit_zero and args.fail_on_findings:
        raise UsageError("tpu-compat scan: error: --exit-zero and --fail-on-findings "
                         "contradict each other; give one")
    try:
        result = scan.scan_paths(args.paths, args.exclude, max_file_bytes(args))
    except sources.MissingPathError as error:
        raise UsageError(f"tpu-compat scan: error: {error}") from None
    write_stdout(_SCAN_FORMATS[args.format](result))
    if args.format == "text":
        for error in result.errors:
            print(report.error_line(error), file=sys.stderr)
        print(report.scan_summary(result), file=sys.stderr)
    return EXIT_FAILURE if result.findings and not args.exit_zero else EXIT_OK
