"""upgrade never loses a byte: outside its edits the output is the input, or
the file is refused and left as it was (issue 23, items 1 and 6)."""

import ast
import re
import warnings

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_compat.cli import main as cli_main
from tpu_compat.migrate import _preserve, upgrade

PROGRAM = ('import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n'
           'x = strategy.reduce("SUM", 1)\n')
CALL, FIXED = 'strategy.reduce("SUM", 1)', 'strategy.reduce("SUM", 1, axis=None)'


def upgraded(data, path="t.py"):
    result = upgrade.upgrade_bytes(path, data)
    assert result.error is None, result.error
    return result.output


def test_indented_comments_and_blank_lines_after_the_last_statement_are_kept():
    # The reproduction: libcst drops both blank lines and `# c1`.
    source = PROGRAM + "\n\n    # c1\n    # c2\n"
    assert cst.parse_module(source).code != source  # the loss this guards against
    assert upgraded(source.encode()) == source.replace(CALL, FIXED).encode()


def test_comments_after_an_indented_block_at_the_end_are_kept():
    source = PROGRAM + "if x:\n    y = strategy.reduce('SUM', 2)\n\n        # deeper\n  # c\n"
    out = upgraded(source.encode()).decode()
    assert out.endswith("\n\n        # deeper\n  # c\n")
    assert out.count("axis=None") == 2


@pytest.mark.parametrize("ending", [b"\r", b"\r\r", b"\r\r  # c\r\r"])
def test_the_trailing_cr_of_a_cr_only_file_is_kept(ending):
    data = b'x = strategy.reduce("SUM", 1)' + ending
    assert upgraded(data) == b'x = strategy.reduce("SUM", 1, axis=None)' + ending


LINE_ENDINGS = {"lf": ["\n"], "crlf": ["\r\n"], "cr": ["\r"], "mixed": ["\n", "\r\n", "\r"]}


@pytest.mark.parametrize("style", sorted(LINE_ENDINGS))
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("tail", ["", "   ", "\t# end", "\n\n", "\n  \n\t\n", "\n# a\n\n  # b  "])
def test_every_line_ending_bom_and_tail_survive_byte_for_byte(style, bom, tail):
    lines = ["# header comment", "import tensorflow as tf", "", "strategy = tf.distribute."
             "MirroredStrategy()  # keep", "  # odd indent", "if True:",
             "    x = " + CALL + "   ", "", "    # inside", "y = [", "    1,  # one", "]",
             "z = " + CALL]
    endings = LINE_ENDINGS[style]
    text = "".join(line + endings[i % len(endings)] for i, line in enumerate(lines))
    text = text[:-len(endings[(len(lines) - 1) % len(endings)])]  # the tail decides the end
    tail = tail.replace("\n", endings[-1])
    source = text + tail
    data = (b"\xef\xbb\xbf" if bom else b"") + source.encode()
    expected = (b"\xef\xbb\xbf" if bom else b"") + source.replace(CALL, FIXED).encode()
    assert upgraded(data) == expected


def test_todo_lines_are_the_only_additions():
    source = ("import tensorflow as tf\r\n# above\r\nstrategy = tf.distribute.experimental"
              ".TPUStrategy(r)\r\nit = strategy.make_dataset_iterator(ds)  # trailing\r\n")
    out = upgraded(source.encode()).decode()
    kept = [line for line in out.split("\r\n") if "TODO(tpu_compat)" not in line]
    assert "# above" in kept and "it = strategy.make_dataset_iterator(ds)  # trailing" in kept
    assert "\n" not in out.replace("\r\n", "")


# --- the check itself ---------------------------------------------------------------


def test_the_check_accepts_edits_and_todo_lines_only():
    original = "a = 1\nb = f(x)  # c\n"
    edit = (original.index("f(x)"), original.index("f(x)") + 4)
    assert _preserve.unchanged_outside(original, "a = 1\nb = g(x, y)  # c\n", [edit]) is None
    line = original.index("b =")
    todo = "a = 1\n# TODO(tpu_compat): TPC1 x\nb = f(x)  # c\n"
    assert _preserve.unchanged_outside(original, todo, [], [line]) is None
    # Anything else is refused: a lost comment, a changed line ending, a
    # non-TODO insertion, a change beside an edit.
    assert _preserve.unchanged_outside(original, "a = 1\nb = g(x)\n", [edit])
    assert _preserve.unchanged_outside(original, "a = 1\r\nb = g(x)  # c\n", [edit])
    assert _preserve.unchanged_outside(original, "a = 1\n# hi\nb = f(x)  # c\n", [], [line])
    assert _preserve.unchanged_outside(original, "a = 1\nb =  g(x)  # c\n", [edit]) is None
    assert _preserve.unchanged_outside(original, "a = 1\nb  = g(x)  # c\n", [edit])
    assert _preserve.unchanged_outside(original, original + " ", [])
    assert _preserve.unchanged_outside(original, original, []) is None


@pytest.mark.parametrize("text", ["", "\n", "# only\n\n", "x = 1", "x = 1\r\r# c\r",
                                  "x = 1 \\\n\n", "if a:\n  b\n    # c\n"])
def test_split_trailer_keeps_every_character(text):
    code, trailer = _preserve.split_trailer(text)
    assert code + trailer == text
    assert not trailer.strip(" \t\f\r\n") or trailer.lstrip().startswith("#")


def test_a_rewrite_that_would_lose_a_byte_is_refused_and_the_file_left_unchanged(monkeypatch):
    # Simulate a libcst that drops the module's header comments.
    leave = upgrade._Rewriter.on_leave  # pylint: disable=protected-access

    def losing(self, original, updated):
        updated = leave(self, original, updated)
        return updated.with_changes(header=[]) if isinstance(updated, cst.Module) else updated
    monkeypatch.setattr(upgrade._Rewriter, "on_leave", losing)  # pylint: disable=protected-access
    data = ("# header\n" + PROGRAM).encode()
    result = upgrade.upgrade_bytes("t.py", data)
    assert result.error is not None and "outside its edits" in result.error.message
    assert not result.changed and result.output == data


def test_a_refused_file_is_left_untouched_in_place_and_counted(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_preserve, "split_trailer", lambda text: (text, ""))
    target = tmp_path / "t.py"
    data = (PROGRAM + "\n\n    # c1\n").encode()
    target.write_bytes(data)
    (tmp_path / "fine.py").write_text(PROGRAM)
    # Issue 33: a file that could not be upgraded makes the exit code 1.
    assert cli_main(["upgrade", "--in-place", "--force", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "t.py: error: libcst does not reproduce this file exactly; left unchanged" in err
    assert "1 of 2 files changed" in err and "1 files could not be upgraded" in err
    assert target.read_bytes() == data
    assert "axis=None" in (tmp_path / "fine.py").read_text()


def test_a_file_libcst_cannot_reproduce_is_refused(monkeypatch):
    monkeypatch.setattr(_preserve, "split_trailer", lambda text: (text, ""))
    data = (PROGRAM + "\n\n    # c1\n").encode()
    result = upgrade.upgrade_bytes("t.py", data)
    assert result.error is not None and "does not reproduce" in result.error.message
    assert result.output == data


# --- fuzz: comments, blank lines, odd endings, legacy calls in odd places ---------------

# Each legacy call, and what upgrade may turn it into: the fuzz test undoes
# these (and drops TODO lines) to get the input back, byte for byte.
LEGACY = {
    'strategy.reduce("SUM", v)': ['strategy.reduce("SUM", v, axis=None)'],
    "strategy.experimental_run_v2(fn)": ["strategy.run(tf.function(fn))", "strategy.run(fn)"],
    "strategy.make_dataset_iterator(ds)": [],
    "strategy.experimental_make_numpy_dataset(a)": ["tf.data.Dataset.from_tensor_slices(a)"],
    "tf.distribute.experimental.TPUStrategy(r, device_assignment=d)": [
        "tf.distribute.TPUStrategy(r, experimental_device_assignment=d)"],
}
PLACES = ["{}", "out = {}", "print({})", "f(a,\n  {})  # call", "g = lambda: {}",
          "h = [  # list\n\n    {},\n]"]
FILLER = ["x = 1", "# a comment", "", "   ", "\t# tabbed", "y = (1,  # in parens\n     2)",
          "s = \'\'\'a\n# not a comment\n\'\'\'", "pass  # trailing", "z = [\n\n    3,\n]"]
BLOCKS = ["if flag:", "def step(strategy):", "with strategy.scope():", "for i in xs:"]
_TODO_LINE = re.compile(r"[ \t]*# TODO\(tpu_compat\): [^\r\n]*(?:\r\n|\r|\n)")


@st.composite
def snippets(draw):
    if draw(st.booleans()):
        return draw(st.sampled_from(PLACES)).format(draw(st.sampled_from(sorted(LEGACY))))
    return draw(st.sampled_from(FILLER))


@st.composite
def files(draw):
    lines = ["import tensorflow as tf", "strategy = tf.distribute.MirroredStrategy()"]
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            lines.extend(draw(snippets()).split("\n"))
            continue
        lines.append(draw(st.sampled_from(BLOCKS)))
        indent = draw(st.sampled_from(["    ", "  ", "\t"]))
        for _ in range(draw(st.integers(1, 3))):
            lines.extend(indent + part if part.strip() else part
                         for part in draw(snippets()).split("\n"))
        if draw(st.booleans()):
            lines.append(indent + indent + "# deeper comment after the block")
    ending = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    text = ""
    for index, line in enumerate(lines):
        text += line + (ending if ending != "mixed" else ["\n", "\r\n", "\r"][index % 3])
    text += draw(st.sampled_from(["", "\n", "  ", "\n\n    # tail\n", "# end", "\r"]))
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode()


def _parses(data):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data.decode("utf-8-sig"))
    except (SyntaxError, ValueError):
        return False
    return True


def _undo_edits(data):
    """``data`` with TODO lines dropped and every known rewrite undone."""
    text = _TODO_LINE.sub("", data.decode("utf-8"))
    for old, news in LEGACY.items():
        for new in news:
            text = text.replace(new, old)
    return text.encode("utf-8")


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(files())
def test_fuzz_bytes_outside_edits_are_kept_output_parses_and_is_final(data):
    if not _parses(data):
        return
    first = upgrade.upgrade_bytes("fuzz.py", data)
    assert first.error is None, first.error
    out = first.output
    assert _parses(out)
    assert _undo_edits(out) == data
    second = upgrade.upgrade_bytes("fuzz.py", out)
    assert second.error is None and not second.changed
