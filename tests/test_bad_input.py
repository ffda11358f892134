"""Bad input never gives a traceback or a hang (issue 23, items 7-9).

Each case is one of the probe's reproductions: a usage error is one line
naming the flag or variable and what is allowed, exit code 2, found before
any source is read or written; a file that is not a regular file is skipped
and reported without being opened. Commands that might hang run in a
subprocess with a timeout, so a regression fails instead of hanging.
"""

import os
import stat
import threading

import pytest

from conftest import assert_one_error_line, run_cli
from tpu_compat import cli
from tpu_compat.migrate import sources

LEGACY = ('import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n'
          'x = strategy.reduce("SUM", 1)\n')
# A command that should take a second or two; a hang fails the test instead.
TIMEOUT = 120


def _tree(tmp_path):
    """A directory with one legacy file; returns (directory, file, its bytes)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    legacy = tree / "legacy.py"
    legacy.write_text(LEGACY)
    return tree, legacy, legacy.read_bytes()


def _main(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_usage_line(code, out, err, message):
    assert code == 2, err
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0] and message in lines[0], err
    assert "Traceback" not in err


# -- non-regular files: never opened, skipped and reported ------------------------------


@pytest.fixture
def fifo_tree(tmp_path):
    tree, legacy, _ = _tree(tmp_path)
    os.mkfifo(tree / "pipe.py")
    return tree


def _read_in_thread(path):
    """``sources.read_bytes(path)``'s outcome, or "blocked" after 30 s.

    A blocked reader is released (a writer opens and closes the FIFO), so
    a regression fails the test instead of hanging it.
    """
    outcome = []

    def read():
        try:
            outcome.append(sources.read_bytes(path))
        except sources.SourceError as error:
            outcome.append(error)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(30)
        return "blocked"
    return outcome[0]


def test_read_bytes_never_opens_a_fifo_or_a_device(fifo_tree):
    # Opening the FIFO for reading blocked until a writer came.
    error = _read_in_thread(str(fifo_tree / "pipe.py"))
    assert isinstance(error, sources.SourceError), error
    assert str(error) == "skipped: a FIFO, not a regular file"
    with pytest.raises(sources.SourceError,
                       match="^skipped: a character device, not a regular file$"):
        sources.read_bytes(os.devnull)
    assert sources.read_bytes(str(fifo_tree / "legacy.py")) == LEGACY.encode()


@pytest.mark.parametrize("given", ["directory", "file"])
def test_scan_skips_and_reports_a_fifo_named_py(fifo_tree, given):
    target = fifo_tree if given == "directory" else fifo_tree / "pipe.py"
    result = run_cli("scan", str(target), timeout=TIMEOUT)
    assert stat.S_ISFIFO(os.stat(fifo_tree / "pipe.py").st_mode)
    assert f"{fifo_tree / 'pipe.py'}: error: skipped: a FIFO, not a regular file" in (
        result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert result.returncode == (1 if given == "directory" else 0), result.stderr


def test_scan_of_dev_zero_is_skipped_not_read():
    # It used to read /dev/zero until a MemoryError.
    result = run_cli("scan", "/dev/zero", timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "/dev/zero: error: skipped: a character device, not a regular file" in (
        result.stderr)
    assert "Traceback" not in result.stderr


def test_upgrade_skips_and_reports_a_fifo(fifo_tree, tmp_path):
    out = tmp_path / "out"
    result = run_cli("upgrade", "--output", str(out), str(fifo_tree), timeout=TIMEOUT)
    assert result.returncode == 1, result.stderr  # a file not upgraded (issue 33)
    assert f"{fifo_tree / 'pipe.py'}: error: skipped: a FIFO, not a regular file" in (
        result.stderr)
    assert sorted(os.listdir(out)) == ["legacy.py"]


# -- argument conflicts and impossible outputs: before any work --------------------------


def test_scan_conflict_is_found_before_scanning(tmp_path, capsys, monkeypatch):
    def no_scanning(*args, **kwargs):
        raise AssertionError("scanned before the arguments were checked")
    monkeypatch.setattr("tpu_compat.migrate.scan.scan_paths", no_scanning)
    tree, _, _ = _tree(tmp_path)
    code, out, err = _main(["scan", "--exit-zero", "--fail-on-findings", str(tree)], capsys)
    _one_usage_line(code, out, err,
                    "--exit-zero and --fail-on-findings contradict each other")


@pytest.mark.parametrize("extra,message", [
    # --in-place had rewritten the sources when the report's write crashed.
    (["--in-place", "--force", "--report", "{tmp}"],
     "--report='{tmp}' is not valid: it is a directory; expected a file"),
    # Not a device such as /dev/null: the old code, run as root, replaced it
    # with a regular file (atomic_write renames over the target).
    (["--diff", "--report", "{tmp}/pipe"],
     "--report='{tmp}/pipe' is not valid: it is not a regular file"),
    (["--in-place", "--force", "--report", "{tree}/legacy.py"],
     "--report='{tree}/legacy.py' is not valid: it is one of the sources to upgrade"),
    (["--diff", "--report", "{tree}/legacy.py/report.txt"],
     "is not valid: {tree}/legacy.py is not a directory"),
    # These gave one "File exists" error per file and exit 1.
    (["--in-place", "--backup-suffix", "/x"],
     "--backup-suffix='/x' is not valid; expected a file-name suffix without '/'"),
    (["--output", "{tree}/legacy.py"],
     "--output='{tree}/legacy.py' is not valid: it is an existing file; expected a "
     "directory"),
    (["--output", "{tree}/legacy.py/out"],
     "--output='{tree}/legacy.py/out' is not valid: {tree}/legacy.py is not a directory"),
])
def test_upgrade_usage_errors_come_before_any_write(extra, message, tmp_path, capsys):
    tree, legacy, before = _tree(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    names = {"tmp": str(tmp_path), "tree": str(tree)}
    argv = ["upgrade", *(part.format(**names) for part in extra), str(tree)]
    snapshot = sorted(p.name for p in tmp_path.rglob("*"))
    code, out, err = _main(argv, capsys)
    _one_usage_line(code, out, err, message.format(**names))
    assert legacy.read_bytes() == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == snapshot


def test_upgrade_summary_does_not_count_a_failed_write_as_changed(tmp_path, capsys):
    tree, legacy, before = _tree(tmp_path)
    out = tmp_path / "out"
    # A directory where the upgraded file should go: that one write fails.
    (out / "legacy.py").mkdir(parents=True)
    code, _, err = _main(["upgrade", "--output", str(out), str(tree)], capsys)
    assert code == 1, err
    assert ("tpu-compat upgrade: 0 of 1 files changed (1 rewrites, 0 TODOs); 0 findings "
            "left for review; 0 files could not be upgraded; 1 files could not be written"
            ) in err
    assert f"{legacy}: error: cannot write:" in err
    assert legacy.read_bytes() == before and (out / "legacy.py").is_dir()


# -- settings: bounded where they are read ------------------------------------------------


@pytest.mark.parametrize("args,env,message", [
    # 100000 and 2**31 printed nothing for minutes; 1e23 ended in an OverflowError.
    ((), {"TPU_COMPAT_NUM_REPLICAS": "100000"},
     "TPU_COMPAT_NUM_REPLICAS='100000' is not valid; expected an integer from 1 to 4096"),
    ((), {"TPU_COMPAT_NUM_REPLICAS": str(2**31)},
     f"TPU_COMPAT_NUM_REPLICAS='{2**31}' is not valid; expected an integer from 1 to 4096"),
    (("--replicas", "99999999999999999999999"), {},
     "--replicas='99999999999999999999999' is not valid; expected an integer from 1 to 4096"),
    (("--replicas", "\u0663"), {},
     "--replicas='\u0663' is not valid; expected an integer from 1 to 4096"),
    # numpy's "Seed must be between 0 and 2**32 - 1", after TensorFlow had loaded.
    ((), {"TPU_COMPAT_SEED": "4294967296"},
     "TPU_COMPAT_SEED='4294967296' is not valid; expected an integer from 0 to 4294967295"),
])
def test_run_refuses_out_of_range_settings_up_front(args, env, message, tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("print('ran')\n")
    result = run_cli("run", *args, str(script), env=env, cwd=str(tmp_path), timeout=TIMEOUT)
    assert_one_error_line(result, message)
    assert "ran" not in result.stdout


@pytest.mark.requires_tf
@pytest.mark.parametrize("seed", ["-3", "4294967296"])
def test_doctor_reports_a_bad_seed(seed):
    result = run_cli("doctor", env={"TPU_COMPAT_SEED": seed}, timeout=TIMEOUT)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (f"problem: TPU_COMPAT_SEED='{seed}' is not valid; expected an integer from 0 "
            f"to 4294967295") in result.stdout.splitlines()

