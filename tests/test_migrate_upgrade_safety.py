"""upgrade never writes a use of a name the code unbound, never leaves the
tree through a link, honours hard links and read-only files, and cleans up
after a killed run (issue 23, items 2, 3 and 5)."""

import os
import stat

import pytest

from tpu_compat.cli import main as cli_main
from tpu_compat.migrate import upgrade

RUN = ("import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(r)\n"
       "{unbind}\ndef fn(x):\n    return x\nout = strategy.experimental_run_v2(fn, args=(1,))\n"
       "ds = strategy.experimental_make_numpy_dataset(a)\n")


@pytest.mark.parametrize("unbind", [
    "del tf", "del x, tf", "if flag:\n    del (tf)",
    # The same hazard (issue 35 item 7): a function that unbinds the module's
    # tf, and `case` patterns capturing the name at module level.
    "def drop():\n    global tf\n    del tf\ndrop()",
    "match cfg:\n    case tf:\n        pass",
    "match cfg:\n    case {'k': 1, **tf}:\n        pass",
    "match cfg:\n    case [_, *tf]:\n        pass",
    "match cfg:\n    case {'k': 1} as tf:\n        pass"])
def test_after_del_tf_no_new_use_of_tf_is_written(unbind):
    source = RUN.format(unbind=unbind)
    result = upgrade.upgrade_bytes("t.py", source.encode())
    assert result.error is None
    out = result.output.decode()
    assert "tf.function(" not in out.replace("pass tf.function(fn)", "")
    assert "tf.data." not in out.replace("# TODO", "\n# TODO").split("# TODO")[0]
    assert "out = strategy.experimental_run_v2(fn, args=(1,))" in out
    assert "ds = strategy.experimental_make_numpy_dataset(a)" in out
    actions = {o.finding.rule: o.action for o in result.outcomes}
    assert actions["TPC001"] == actions["TPC004"] == "todo"


@pytest.mark.parametrize("unbind", ["", "def f():\n    del tf",
                                    "match cfg:\n    case other:\n        pass"])
def test_without_del_tf_here_the_call_is_still_wrapped(unbind):
    # A `del tf` in a function unbinds only that function's (local) tf.
    out = upgrade.upgrade_bytes("t.py", RUN.format(unbind=unbind).encode()).output.decode()
    assert "strategy.run(tf.function(fn), args=(1,))" in out
    assert "ds = tf.data.Dataset.from_tensor_slices(a)" in out


# --- the files upgrade writes -------------------------------------------------------------

LEGACY_FILE = "strategy.experimental_run_v2(fn)\n"
UPGRADED_FILE = "strategy.run(fn)\n"


def test_a_symbolic_link_is_reported_and_not_followed(tmp_path, capsys):
    outside = tmp_path / "elsewhere.py"
    outside.write_text(LEGACY_FILE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "l.py").symlink_to(outside)
    (tree / "real.py").write_text(LEGACY_FILE)
    (tree / "linked_dir").symlink_to(tmp_path / "other", target_is_directory=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.py").write_text(LEGACY_FILE)
    # Exit code 1: a file (the link) was not upgraded (issue 33).
    assert cli_main(["upgrade", "--in-place", "--force", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "l.py: error: is a symbolic link" in err and "not followed" in err
    assert outside.read_text() == LEGACY_FILE and (tree / "l.py").is_symlink()
    assert (tmp_path / "other" / "o.py").read_text() == LEGACY_FILE
    assert (tree / "real.py").read_text() == UPGRADED_FILE
    # --output does not copy what the link points at either.
    out = tmp_path / "out"
    assert cli_main(["upgrade", "--output", str(out), str(tree)]) == 1
    assert sorted(os.listdir(out)) == ["real.py"]


def test_a_hard_linked_file_is_refused_in_place(tmp_path, capsys):
    first = tmp_path / "a.py"
    first.write_text(LEGACY_FILE)
    os.link(first, tmp_path / "b.py")
    assert cli_main(["upgrade", "--in-place", "--force", str(first)]) == 1  # issue 33
    err = capsys.readouterr().err
    assert "has 2 hard links" in err and "1 files could not be upgraded" in err
    assert os.stat(first).st_ino == os.stat(tmp_path / "b.py").st_ino
    assert first.read_text() == LEGACY_FILE


def test_a_read_only_file_needs_force(tmp_path, capsys):
    target = tmp_path / "ro.py"
    target.write_text(LEGACY_FILE)
    target.chmod(0o444)
    assert cli_main(["upgrade", "--in-place", "--backup-suffix", ".bak", str(target)]) == 1
    assert "is read-only" in capsys.readouterr().err
    assert target.read_text() == LEGACY_FILE and not (tmp_path / "ro.py.bak").exists()
    assert cli_main(["upgrade", "--in-place", "--force", str(target)]) == 0
    assert target.read_text() == UPGRADED_FILE
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o444


def test_temporary_files_of_a_killed_run_are_removed_or_reported(tmp_path, capsys):
    target = tmp_path / "x.py"
    target.write_text(LEGACY_FILE)
    stale = tmp_path / ".x.py.k3j_9abc.tpu-compat-tmp"
    stale.write_text("half a file")
    assert cli_main(["upgrade", "--diff", str(target)]) == 0
    assert "interrupted tpu-compat run; remove it" in capsys.readouterr().err
    assert stale.exists()
    assert cli_main(["upgrade", "--in-place", "--force", str(target)]) == 0
    assert "removed" in capsys.readouterr().err
    assert not stale.exists() and target.read_text() == UPGRADED_FILE


def test_each_file_is_written_before_the_next_is_upgraded(tmp_path, monkeypatch):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(LEGACY_FILE)
    real = upgrade.upgrade_file
    seen = []

    def watching(path, max_bytes=None):
        if path.endswith("b.py"):
            seen.append((tmp_path / "a.py").read_text())
        return real(path, max_bytes)
    monkeypatch.setattr(upgrade, "upgrade_file", watching)
    assert cli_main(["upgrade", "--in-place", "--force", str(tmp_path)]) == 0
    assert seen == [UPGRADED_FILE]


@pytest.mark.parametrize("command", ["scan", "upgrade"])
def test_a_file_over_the_per_file_limit_is_reported_and_skipped(tmp_path, capsys, monkeypatch,
                                                                command):
    big = tmp_path / "big.py"
    big.write_text(LEGACY_FILE + "x = 1  # padding\n" * 20)
    small = tmp_path / "small.py"
    small.write_text(LEGACY_FILE)
    modern = tmp_path / "modern.py"  # over the limit, but no legacy name: still read
    modern.write_text("x = 1\n" * 100)
    extra = ["--diff"] if command == "upgrade" else []
    monkeypatch.setenv("TPU_COMPAT_MAX_FILE_BYTES", "100")
    cli_main([command, *extra, str(tmp_path)])
    captured = capsys.readouterr()
    assert "big.py: error: 373 bytes, over the per-file limit of 100 (--max-file-bytes, " \
           "TPU_COMPAT_MAX_FILE_BYTES): skipped" in captured.err
    assert "small.py" in captured.out and "modern.py" not in captured.err
    # The flag wins over the variable.
    cli_main([command, *extra, "--max-file-bytes", "1000", str(big)])
    assert "over the per-file limit" not in capsys.readouterr().err
    monkeypatch.setenv("TPU_COMPAT_MAX_FILE_BYTES", "lots")
    assert cli_main([command, *extra, str(big)]) == 2
    assert "TPU_COMPAT_MAX_FILE_BYTES='lots' is not valid" in capsys.readouterr().err


# -- issue 33: a legacy call inside a decorator ---------------------------------------------


def test_legacy_call_in_a_decorator_gets_its_todo_and_the_file_its_other_rewrites():
    source = ("import tensorflow as tf\n"
              "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
              "@deco(strategy.make_dataset_iterator(ds))\n"
              "def f():\n"
              "    pass\n"
              "it = strategy.make_dataset_iterator(ds)\n")
    new_text, outcomes = upgrade.upgrade_text(source, "deco.py")
    todo = ("# TODO(tpu_compat): TPC009 "
            "iter(strategy.experimental_distribute_dataset(dataset))\n")
    assert new_text == ("import tensorflow as tf\n"
                        "strategy = tf.distribute.TPUStrategy(resolver)\n"
                        + todo +
                        "@deco(strategy.make_dataset_iterator(ds))\n"
                        "def f():\n"
                        "    pass\n"
                        + todo +
                        "it = strategy.make_dataset_iterator(ds)\n")
    assert len(outcomes) == 3


@pytest.mark.parametrize("updated,edits,line", [
    ("a\nB\nc\nX\ne\n", [(2, 3)], 4),          # after an edit, the changed line
    ("a\nbQ\nc\nd\ne\n", [], 2),
    ("a\nB\nc\nX\nE\n", [(2, 3), (8, 9)], 4),  # between two edits
    ("A\nb\nc\nd\ne\n", [(2, 3)], 1),
])
def test_the_guard_names_the_line_that_changed(updated, edits, line):
    from tpu_compat.migrate import _preserve
    assert _preserve.unchanged_outside("a\nb\nc\nd\ne\n", updated, edits) == (
        f"the rewrite would change the file outside its edits (near line {line})")


def test_a_todo_line_takes_its_neighbours_line_ending_in_a_mixed_file():
    """Issue 33: it took the first line's ending (libcst's default newline)."""
    source = ("import tensorflow as tf\n"
              "x = 1\r\n"
              "it = strategy.make_dataset_iterator(ds)\r\n"
              "y = 2\r\n")
    new_text, _ = upgrade.upgrade_text(source, "mixed.py")
    assert new_text == ("import tensorflow as tf\n"
                        "x = 1\r\n"
                        "# TODO(tpu_compat): TPC009 "
                        "iter(strategy.experimental_distribute_dataset(dataset))\r\n"
                        "it = strategy.make_dataset_iterator(ds)\r\n"
                        "y = 2\r\n")
