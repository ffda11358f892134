"""``tpu-compat upgrade``: rewrite legacy TPU-strategy APIs (the engine: :mod:`tpu_compat.migrate`).

Exit codes: 0 when done, 1 when ``--fail-on-findings`` is given and something
changed or is left to review, also 1 when a file could not be upgraded (it
does not parse, cannot be read, or its rewrite was refused: left unchanged)
or an upgraded file could not be written, and 2 for usage errors.
"""

import collections
import difflib
import os
import stat
import subprocess
import sys

from tpu_compat.commands.scan import add_common_arguments, max_file_bytes, write_stdout
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_OK, UsageError
from tpu_compat.migrate import report, scan, sources

__all__ = ["register", "run_upgrade"]


def register(subparsers):
    upgrade_parser = subparsers.add_parser(
        "upgrade", help="rewrite legacy TPU-strategy APIs to their modern form",
        description="Rewrite legacy TPU-strategy APIs with libcst, keeping comments "
                    "and formatting; what cannot be rewritten safely gets a "
                    "'# TODO(tpu_compat): ...' comment and appears in the report.")
    upgrade_parser.add_argument("paths", nargs="+", metavar="PATH",
                                help="files or directories to upgrade")
    where = upgrade_parser.add_mutually_exclusive_group()
    where.add_argument("--output", metavar="DIR",
                       help="write the upgraded tree under DIR (mirroring the input)")
    where.add_argument("--in-place", action="store_true",
                       help="rewrite files in place (needs a clean git tree, "
                            "--backup-suffix or --force)")
    upgrade_parser.add_argument("--backup-suffix", metavar="SUFFIX",
                                help="with --in-place: keep each original as FILE+SUFFIX")
    upgrade_parser.add_argument("--force", action="store_true",
                                help="with --in-place: overwrite files that git "
                                     "cannot restore")
    upgrade_parser.add_argument("--diff", action="store_true",
                                help="print a unified diff and write nothing")
    upgrade_parser.add_argument("--report", metavar="FILE",
                                help="write a report (tf_upgrade_v2 layout, or JSON)")
    upgrade_parser.add_argument("--report-format", choices=("text", "json"),
                                help="report format (default: json if FILE ends "
                                     "in .json, else text)")
    upgrade_parser.add_argument(
        "--estimator-to-tf2", action="store_true",
        help="migrate TPUEstimator programs to TF 2: write tpu_estimator_tf2.py (a "
             "TPUStrategy driver with TPUEstimator's interface) beside each and point "
             "its TPUEstimator names there (docs/migration.md)")
    upgrade_parser.add_argument(
        "--from-tf1", action="store_true",
        help="with --estimator-to-tf2: the program is TF 1.x code (it ran with "
             "`tpu-compat run --tf1`): its `import tensorflow as tf` becomes "
             "`import tensorflow.compat.v1 as tf`, so it runs without --tf1")
    add_common_arguments(upgrade_parser)
    upgrade_parser.set_defaults(handler=run_upgrade)


# --- upgrade -------------------------------------------------------------------------


def _check_upgrade_arguments(args):
    if not (args.output or args.in_place or args.diff):
        raise UsageError("tpu-compat upgrade: error: give --output DIR, --in-place "
                         "or --diff")
    if args.backup_suffix is not None and not args.in_place:
        raise UsageError("tpu-compat upgrade: error: --backup-suffix needs --in-place")
    if args.from_tf1 and not args.estimator_to_tf2:
        raise UsageError("tpu-compat upgrade: error: --from-tf1 needs --estimator-to-tf2")
    if args.backup_suffix is not None and not args.backup_suffix:
        raise UsageError("tpu-compat upgrade: error: --backup-suffix must not be empty")
    if args.force and not args.in_place:
        raise UsageError("tpu-compat upgrade: error: --force needs --in-place")


def _nearest_existing(path):
    """``path``, or its nearest ancestor that exists (what a write would create under)."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _check_writable(flag, path, directory):
    """Usage error unless ``path`` can be written as a directory (``--output``)
    or as a file (``--report``): checked before any file is read or written."""
    what = "a directory" if directory else "a file"
    if not path or "\0" in path:
        raise UsageError(f"tpu-compat upgrade: error: {flag}={path!r} is not valid; "
                         f"expected the path of {what}")
    if os.path.exists(path):
        wrong = (not os.path.isdir(path)) if directory else (
            not stat.S_ISREG(os.stat(path).st_mode))
        if wrong:
            kind = "a directory" if os.path.isdir(path) else (
                "an existing file" if os.path.isfile(path) else "not a regular file")
            raise UsageError(f"tpu-compat upgrade: error: {flag}={path!r} is not valid: "
                             f"it is {kind}; expected {what}"
                             + (" (new, or one to overwrite)" if not directory else
                                " (new, or an existing one)"))
    parent = _nearest_existing(path if directory else os.path.dirname(os.path.abspath(path)))
    if not os.path.isdir(parent):
        raise UsageError(f"tpu-compat upgrade: error: {flag}={path!r} is not valid: "
                         f"{parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"tpu-compat upgrade: error: {flag}={path!r} is not valid: "
                         f"{parent} is not writable")


def _check_places(args):
    """Where upgrade would write: the conflicts and impossible paths, found
    before any source is read or rewritten."""
    suffix = args.backup_suffix
    if suffix and any(sep and sep in suffix for sep in (os.sep, os.altsep, "\0")):
        raise UsageError(f"tpu-compat upgrade: error: --backup-suffix={suffix!r} is not "
                         f"valid; expected a file-name suffix without "
                         f"{os.sep!r} (such as .bak)")
    if args.output is not None:
        _check_writable("--output", args.output, directory=True)
    if args.report is not None:
        _check_writable("--report", args.report, directory=False)


def _check_report_is_no_source(args, files):
    """--report must never overwrite one of the sources being upgraded."""
    if args.report is None:
        return
    report = os.path.realpath(args.report)
    for path in files:
        if os.path.realpath(path) == report:
            raise UsageError(f"tpu-compat upgrade: error: --report={args.report!r} is "
                             f"not valid: it is one of the sources to upgrade ({path})")


def _check_outputs_differ(outputs):
    """--output must never become an unchecked in-place rewrite."""
    for path, output in outputs.items():
        if os.path.realpath(output) == os.path.realpath(path):
            raise UsageError(f"tpu-compat upgrade: error: --output would overwrite the "
                             f"input {path}; choose another directory or use --in-place")


def _mirror_base(paths):
    """The directory the output tree mirrors: the inputs' common parent."""
    roots = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".")
             for p in paths]
    return os.path.commonpath(roots)


def _output_paths(args, files):
    if not args.output:
        return {path: path for path in files}
    base = _mirror_base(args.paths)
    return {path: os.path.join(args.output, os.path.relpath(os.path.abspath(path), base))
            for path in files}


def _git_problem(path):
    """Why git could not restore ``path`` after an in-place rewrite, or None."""
    real = os.path.realpath(path)
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--", os.path.basename(real)],
            cwd=os.path.dirname(real), capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return "git is not installed"
    except (OSError, subprocess.SubprocessError) as error:
        return f"git status failed ({error})"
    if status.returncode != 0:
        return "not in a git work tree"
    if status.stdout.strip():
        return f"uncommitted or untracked ({status.stdout.strip().splitlines()[0]!r})"
    return None


def _require_restorable(changed_paths):
    problems = [(path, _git_problem(path)) for path in changed_paths]
    problems = [(path, why) for path, why in problems if why]
    if problems:
        listed = "; ".join(f"{path}: {why}" for path, why in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise UsageError(
            "tpu-compat upgrade: error: --in-place would overwrite files that git "
            f"cannot restore: {listed}{more}. Commit or stash them, or pass "
            "--backup-suffix .bak, or --force")


def _text_of(data):
    try:
        return sources.decode_python(data)[0]
    except sources.SourceError:
        return data.decode("utf-8", "replace")


def _unified_diff(upgrade, to_path):
    before = _text_of(upgrade.original).splitlines(keepends=True)
    after = _text_of(upgrade.updated).splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(before, after, fromfile=upgrade.path, tofile=to_path):
        lines.append(line)
        if not line.endswith(("\n", "\r")):
            lines.append("\n\\ No newline at end of file\n")
    return "".join(lines)


def _write_companions(upgrade, target):
    """The files a rewrite needs beside ``target`` (the TF 2 driver), atomically."""
    directory = os.path.dirname(os.path.abspath(target))
    for name, data in sorted(upgrade.companions.items()):
        sources.atomic_write(os.path.join(directory, name), data,
                             mode_from=os.path.join(directory, name))


def _write_one(args, upgrade, outputs):
    if upgrade.changed and upgrade.companions:
        _write_companions(upgrade, os.path.realpath(upgrade.path) if args.in_place
                          else outputs[upgrade.path])
    if args.in_place:
        if not upgrade.changed:
            return
        target = os.path.realpath(upgrade.path)
        if args.backup_suffix:
            sources.atomic_write(target + args.backup_suffix, upgrade.original,
                                 mode_from=target)
        sources.atomic_write(target, upgrade.updated)
    elif upgrade.original is not None:
        # Unchanged and unparseable files are copied byte-for-byte, so the
        # output is the whole tree of sources (a file we could not even read
        # cannot be copied).
        sources.atomic_write(outputs[upgrade.path], upgrade.output, mode_from=upgrade.path)


def _upgrade_one(upgrade_module, args, path, max_bytes):
    """One file upgraded in memory, or why it is left alone (a symbolic link;
    in place: other hard links, or read-only without --force)."""
    problem = sources.link_problem(path)
    if problem is not None:
        return upgrade_module.FileUpgrade(path, None, None, [], scan.FileError(path, problem))
    if args.estimator_to_tf2:
        # pylint: disable-next=import-outside-toplevel
        from tpu_compat.migrate.estimator import to_tf2
        result = to_tf2.upgrade_file(path, max_bytes,
                                     helper=getattr(args, "tpu_estimator_program", False),
                                     tf1=getattr(args, "from_tf1", False))
    else:
        result = upgrade_module.upgrade_file(path, max_bytes)
    if args.in_place and result.changed:
        problem = sources.in_place_problem(path, args.force)
        if problem is not None:
            return upgrade_module.FileUpgrade(path, result.original, None, [],
                                              scan.FileError(path, problem))
    return result


def _builds_an_estimator(files):
    """Whether one of ``files`` builds a TPUEstimator: then the others are its modules
    (--estimator-to-tf2 points their CrossShardOptimizer, ModeKeys... at the driver too)."""
    # pylint: disable-next=import-outside-toplevel
    from tpu_compat.migrate.estimator import to_tf2
    for path in files:
        try:
            if to_tf2.constructs_tpu_estimator(sources.read_bytes(path)):
                return True
        except sources.SourceError:
            continue
    return False


def _stale_temp_files(args, files, outputs):
    """Removes the temporary files a killed run left where this one writes
    (with --diff, which writes nothing, only names them)."""
    written = outputs.values() if args.output else files
    for directory in sorted({os.path.dirname(path) for path in written}):
        for temp in sources.stale_temp_files(directory):
            if args.diff:
                print(f"{temp}: a temporary file left by an interrupted tpu-compat run; "
                      f"remove it", file=sys.stderr)
                continue
            try:
                os.unlink(temp)
            except OSError as error:
                print(f"{temp}: a temporary file left by an interrupted tpu-compat run "
                      f"could not be removed: {error.strerror or error}", file=sys.stderr)
            else:
                print(f"{temp}: removed (a temporary file left by an interrupted "
                      f"tpu-compat run)", file=sys.stderr)


def _write_report(args, results, outputs):
    report_format = args.report_format or (
        "json" if args.report.lower().endswith(".json") else "text")
    render = report.upgrade_json if report_format == "json" else report.upgrade_text
    sources.atomic_write(args.report, render(results, outputs).encode("utf-8"))


def _print_issues(results, stream):
    for upgrade in results:
        if upgrade.error is not None:
            print(report.error_line(upgrade.error), file=sys.stderr)
        for outcome in upgrade.outcomes:
            if outcome.action != "rewritten":
                finding = outcome.finding
                print(f"{finding.location()}: {finding.rule}  {_action_label(outcome)}: "
                      f"{finding.message()}", file=stream)


def _action_label(outcome):
    if outcome.action == "todo":
        return "TODO added" if outcome.detail == "needs a manual change" else (
            f"TODO added ({outcome.detail})")
    if outcome.finding.confidence == scan.LOW:
        return "not rewritten"
    return f"not rewritten ({outcome.detail})"


def _summary(results, dry_run, unwritten=()):
    """The last line; ``unwritten``: the paths whose write failed, which are
    not counted as changed (their files are as they were)."""
    unwritten = set(unwritten)
    counts = collections.Counter(o.action for u in results for o in u.outcomes)
    changed = sum(1 for u in results if u.changed and u.path not in unwritten)
    errors = sum(1 for u in results if u.error is not None)
    verb = "would change" if dry_run else "changed"
    failed = f"; {len(unwritten)} files could not be written" if unwritten else ""
    return (f"tpu-compat upgrade: {changed} of {len(results)} files {verb} "
            f"({counts['rewritten']} rewrites, {counts['todo']} TODOs); "
            f"{counts['reported']} findings left for review; {errors} files could not "
            f"be upgraded{failed}")


def run_upgrade(args):
    _check_upgrade_arguments(args)
    _check_places(args)
    max_bytes = max_file_bytes(args)
    # libcst loads only here: scan must stay light.
    # pylint: disable-next=import-outside-toplevel
    from tpu_compat.migrate import upgrade as upgrade_module
    try:
        files = list(sources.discover(args.paths, args.exclude, skip_under=args.output))
    except sources.MissingPathError as error:
        raise UsageError(f"tpu-compat upgrade: error: {error}") from None
    _check_report_is_no_source(args, files)
    outputs = _output_paths(args, files)
    if args.output and not args.diff:
        _check_outputs_differ(outputs)
    _stale_temp_files(args, files, outputs)
    args.tpu_estimator_program = args.estimator_to_tf2 and _builds_an_estimator(files)
    upgrades = (_upgrade_one(upgrade_module, args, path, max_bytes) for path in files)
    if args.in_place and not args.backup_suffix and not args.force:
        # git is the way back: a changed file it cannot restore stops the run
        # before anything is written, so every file is upgraded first.
        upgrades = list(upgrades)
        _require_restorable([u.path for u in upgrades if u.changed])
    # Each file is shown or written as soon as it is upgraded: a slow or bad
    # file never holds back those before it. A failed write leaves that file
    # as it was (writes are atomic) and does not stop the others.
    results, write_failures = [], []
    for upgrade in upgrades:
        results.append(upgrade)
        if args.diff:
            if upgrade.changed:
                write_stdout(_unified_diff(upgrade, outputs[upgrade.path]))
                for name in sorted(upgrade.companions):
                    print(f"{upgrade.path}: would write {name} beside it", file=sys.stderr)
        else:
            try:
                _write_one(args, upgrade, outputs)
            except OSError as error:
                write_failures.append((upgrade.path, f"cannot write: {error}"))
        _print_issues([upgrade], sys.stderr if args.diff else sys.stdout)
    if args.report:
        try:
            _write_report(args, results, outputs)
        except OSError as error:
            write_failures.append((args.report, f"cannot write the report: {error}"))
    print(_summary(results, dry_run=args.diff,
                   unwritten=[path for path, _ in write_failures]), file=sys.stderr)
    for path, message in write_failures:
        print(f"{path}: error: {message}", file=sys.stderr)
    if write_failures:
        return EXIT_FAILURE
    if any(u.error is not None for u in results):
        # Each such file was reported with an `error:` line and left as it
        # was: upgrade did not do its job there, whatever --exit-zero-like
        # convention scan follows for files it cannot read (issue 33).
        return EXIT_FAILURE
    something = any(u.changed or u.outcomes for u in results)
    return EXIT_FAILURE if args.fail_on_findings and something else EXIT_OK
