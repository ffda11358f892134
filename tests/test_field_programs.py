"""The field runner's own parts (scripts/field_programs.py), without TensorFlow.

CI never runs the field programs (they need the fetched snapshots, and CI has
no network); these tests cover what decides their verdicts: recipe
validation, the first error and its program line read from a traceback, the
notebook-to-script conversion and the table.
"""

import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import field_programs as fp  # noqa: E402
import field_recipes as fr  # noqa: E402

TREE = "/tmp/field/run-x/src"


def _recipe(**changes):
    base = dict(name="demo", repo="owner/repo", commit="a" * 40, program="train.py", era="TF 1.x",
                kind="TPUEstimator", args=("--model_dir={model_dir}",), survey="chosen because",
                data="none")
    base.update(changes)
    return fr.Recipe(**base)


def test_the_recipes_are_valid_and_there_are_at_least_twenty():
    assert fp.validate_all(fr.RECIPES) == []
    assert len(fr.RECIPES) >= 20
    assert len({(r.repo, r.program, r.commit) for r in fr.RECIPES}) == len(fr.RECIPES)


@pytest.mark.parametrize("change, names", [
    (dict(commit="abc123"), "commit"),
    (dict(commit="A" * 40), "commit"),
    (dict(repo="no-slash"), "repo"),
    (dict(program="../escape.py"), "program"),
    (dict(program="README.md"), "program"),
    (dict(era="TF 3"), "era"),
    (dict(kind="Trainer"), "kind"),
    (dict(args=("--data={data}",)), "placeholder"),
    (dict(expect="(unclosed"), "expect"),
    (dict(survey=""), "survey"),
    (dict(timeout=0), "timeout"),
    (dict(data_gen=("imagenet_from_the_web",)), "data_gen"),
    (dict(name="Has Space"), "name"),
])
def test_a_bad_recipe_is_refused_naming_the_field_and_the_allowed_values(change, names):
    problems = fp.validate(_recipe(**change))
    assert len(problems) == 1 and names in problems[0], problems
    if names in ("era", "kind"):
        allowed = fr.ERAS if names == "era" else fr.KINDS
        assert all(value in problems[0] for value in allowed)


def test_duplicate_recipe_names_are_refused():
    assert fp.validate_all([_recipe(), _recipe()]) == ["name 'demo' is used by more than one recipe"]


PLAIN = f"""\
I1128 some log line
Traceback (most recent call last):
  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main
  File "{TREE}/models/main.py", line 40, in <module>
    app.run(main)
  File "{TREE}/models/main.py", line 31, in main
    estimator.train(input_fn)
  File "/site-packages/tensorflow/estimator.py", line 900, in train
    raise ValueError("bad")
ValueError: _moments() got an unexpected keyword argument 'mask'
"""


def test_first_error_is_the_exception_at_the_innermost_program_frame():
    assert fp.first_error(PLAIN, TREE) == (
        "ValueError", "_moments() got an unexpected keyword argument 'mask'", "models/main.py:31")


def test_first_error_takes_the_last_traceback_the_one_that_ended_the_run():
    handled = PLAIN.replace("ValueError: _moments", "KeyError: _moments")
    chained = handled + f"""
During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "{TREE}/run.py", line 7, in <module>
    import tensorflow_hub as hub
ModuleNotFoundError: No module named 'tensorflow_hub'
"""
    assert fp.first_error(chained, TREE) == (
        "ModuleNotFoundError", "No module named 'tensorflow_hub'", "run.py:7")


def test_a_tree_that_is_a_prefix_of_another_path_is_not_the_program():
    other = PLAIN.replace(f"{TREE}/models", f"{TREE}2/models")
    assert fp.first_error(other, TREE)[2] is None


GRAPH = f"""\
Traceback (most recent call last):
  File "{TREE}/resnet_main.py", line 716, in main
  File "/site/tensorflow/python/client/session.py", line 1500, in _do_call
tensorflow.python.framework.errors_impl.FailedPreconditionError: Graph execution error:

Detected at node 'input_fn/list_files/MatchingFiles' defined at (most recent call last):
    File "{TREE}/resnet_main.py", line 716, in main
    File "/work/tpu_compat/estimator/estimator.py", line 184, in train
    File "{TREE}/imagenet_input.py", line 341, in make_source_dataset
Node: 'input_fn/list_files/MatchingFiles'
Could not resolve host: www.googleapis.com
\t when reading gs://bucket/fake
\t [[{{{{node input_fn/list_files/MatchingFiles}}}}]]

Original stack trace for 'input_fn/list_files/MatchingFiles':
  File "{TREE}/elsewhere.py", line 1, in <module>
"""


def test_a_graph_error_names_its_cause_and_the_line_that_defined_the_op():
    assert fp.first_error(GRAPH, TREE) == (
        "tensorflow.python.framework.errors_impl.FailedPreconditionError",
        "Graph execution error: Could not resolve host: www.googleapis.com", "imagenet_input.py:341")


HANG = f"""\
Fatal Python error: Aborted

Thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "{TREE}/worker.py", line 5 in loop

Current thread 0x00007f0000000000 (most recent call first):
  File "/site/tensorflow/python/client/session.py", line 1400 in _call_tf_sessionrun
  File "{TREE}/train.py", line 88 in train_loop
  File "{TREE}/train.py", line 120 in main
  File "<frozen runpy>", line 88 in _run_code
"""


def test_a_run_killed_at_its_timeout_reports_where_its_main_thread_was():
    assert fp.first_error(HANG, TREE) == ("hang", "killed at the timeout", "train.py:88")


def test_a_crash_is_not_reported_as_a_hang():
    crash = HANG.replace("Fatal Python error: Aborted", "Fatal Python error: Segmentation fault")
    assert fp.first_error(crash, TREE) == ("Fatal Python error", "Segmentation fault",
                                           "train.py:88")


def test_no_traceback_means_no_error():
    assert fp.first_error("all fine\nAccuracy: 0.9;\n", TREE) is None


def test_judge_requires_exit_zero_and_the_programs_own_success_line():
    recipe = _recipe(expect=r"Accuracy: \d")
    assert fp.judge(recipe, 0, False, "Accuracy: 0.5", TREE) == (True, "")
    passed, reason = fp.judge(recipe, 0, False, "done", TREE)
    assert not passed and "was not printed" in reason
    passed, reason = fp.judge(recipe, 1, False, PLAIN, TREE)
    assert (passed, reason) == (False, "ValueError: _moments() got an unexpected keyword argument 'mask' "
                                       "[models/main.py:31]")
    passed, reason = fp.judge(recipe, -6, True, HANG, TREE)
    assert (passed, reason) == (False, "timeout after 300 s at train.py:88")


def test_a_notebook_becomes_its_code_cells_with_magics_and_shell_lines_commented_out():
    notebook = {"cells": [
        {"cell_type": "markdown", "source": ["# Title"]},
        {"cell_type": "code", "source": ["!pip install foo\n", "import os\n", "%matplotlib inline\n", "x = 1"]},
        {"cell_type": "code", "source": "%%bash\necho hi"},
        {"cell_type": "code", "source": ["print(x)"]},
        {"cell_type": "code", "source": ["plot(x)"]},
    ]}
    script = fp.notebook_to_script(json.dumps(notebook), cells=3)
    assert script == "# cell 1\n# !pip install foo\nimport os\n# %matplotlib inline\nx = 1\n\n# cell 3\nprint(x)\n"
    compile(script, "nb.py", "exec")


def _row(name, mode, passed, seconds=12.3, reason="", todos=None):
    row = {"name": name, "mode": mode, "passed": passed, "seconds": seconds, "reason": reason,
           "date": "2026-11-28 15:00 UTC", "tpu_compat_commit": "abc1234567"}
    if todos is not None:
        row["todos"] = todos
    return row


def test_the_table_has_a_verdict_and_a_reason_per_mode():
    recipes = [_recipe(name="a"), _recipe(name="b", program="nb.ipynb"), _recipe(name="c")]
    long = "ImportError: " + "x" * 500 + " [src/a.py:3]"
    results = [_row("a", "unchanged", True), _row("a", "migrated", False, 40.0, long, todos=2),
               _row("b", "unchanged", False, 5.0, "KeyError: 'COLAB_TPU_ADDR' [nb.py:4]"),
               _row("c", "unchanged", False, None, "not fetched")]
    table = fp.render_table(recipes, results).splitlines()
    assert table[0] == ("| # | program | era | kind | unchanged | unchanged: first error [program line] "
                        "| migrated | migrated: first error [program line] |")
    assert len(table) == 2 + len(recipes)
    cells = [line.split(" | ") for line in table[2:]]
    assert cells[0][4:6] == ["**pass** (12 s)", ""]
    assert cells[0][6] == "fail (40 s, 2 TODO)"
    assert cells[0][7].endswith("… [src/a.py:3] |") and len(cells[0][7]) < 300
    assert cells[1][4:7] == ["fail (5 s)", "KeyError: 'COLAB_TPU_ADDR' [nb.py:4]", "not run"]
    assert cells[2][4] == "not fetched"
    assert fp.summary(recipes, results, "unchanged") == (1, 2, 3)
    assert fp.summary(recipes, results, "migrated") == (0, 1, 3)


def test_a_pipe_in_an_error_message_does_not_break_the_table():
    results = [_row("a", "unchanged", False, 1.0, "ValueError: a | b [x.py:1]")]
    line = fp.render_table([_recipe(name="a")], results).splitlines()[2]
    assert "a \\| b [x.py:1]" in line


def test_the_migration_section_replaces_itself(tmp_path, monkeypatch):
    doc = tmp_path / "migration.md"
    doc.write_text("# Migrating\n\nintro\n")
    monkeypatch.setattr(fp, "MIGRATION_DOC", doc)
    monkeypatch.setattr(fp, "FIELD_DOC", tmp_path / "field.md")
    recipes = [_recipe(name="a")]
    fp.write_docs(recipes, [_row("a", "migrated", True, todos=0)])
    fp.write_docs(recipes, [_row("a", "migrated", False, 3.0, "E: x [a.py:1]", todos=1)])
    text = doc.read_text()
    assert text.startswith("# Migrating\n\nintro\n")
    assert text.count(fp.MIGRATION_BEGIN) == 1 and text.count("## Field programs") == 1
    assert "**0 of 1**" in text and "fail (3 s, 1 TODO)" in text
    assert "TPUStrategy-era programs" in text and "**0 of 0** migrate and pass strict" in text
    assert "abc1234567" in (tmp_path / "field.md").read_text()


def test_the_tpustrategy_era_count_leaves_out_tpuestimator_programs(tmp_path, monkeypatch):
    (tmp_path / "migration.md").write_text("# Migrating\n")
    monkeypatch.setattr(fp, "MIGRATION_DOC", tmp_path / "migration.md")
    monkeypatch.setattr(fp, "FIELD_DOC", tmp_path / "field.md")
    recipes = [_recipe(name="est"), _recipe(name="fit", kind="Keras fit"),
               _recipe(name="loop", kind="TPUStrategy custom loop", era="TF 2.0-2.3"),
               _recipe(name="unrun", kind="Keras fit")]
    results = [_row("est", "migrated", True, todos=0), _row("fit", "migrated", True, todos=0),
               _row("loop", "migrated", False, 3.0, "E: x [a.py:1]", todos=0)]
    assert [r.name for r in fp.strategy_era(recipes)] == ["fit", "loop", "unrun"]
    fp.write_docs(recipes, results)
    sentence = "**1 of 3** migrate and pass strict (2 run)"
    assert sentence in (tmp_path / "migration.md").read_text()
    assert sentence in (tmp_path / "field.md").read_text()


def test_placeholders_are_filled_and_other_braces_left_alone(tmp_path):
    args = ("--model_dir={model_dir}", '--hparams={"use_tpu": true, "dir": "{data_dir}"}', "--x={tmp}/y")
    assert fp.format_args(args, tmp_path) == [
        f"--model_dir={tmp_path}/model_dir", f'--hparams={{"use_tpu": true, "dir": "{tmp_path}/data"}}',
        f"--x={tmp_path}/y"]


def test_a_converted_notebooks_error_line_is_said_as_its_cell_and_line(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": ["import os\n", "x = 1"]},
                          {"cell_type": "code", "source": ["!ls\n", "import distutils\n", "distutils.version"]}]}
    script = fp.notebook_to_script(json.dumps(notebook))
    (tmp_path / "nb.py").write_text(script)
    line = script.splitlines().index("distutils.version") + 1
    assert fp.notebook_cell_line(script, line) == (2, 3)
    output = (f'Traceback (most recent call last):\n  File "{tmp_path}/nb.py", line {line}, in <module>\n'
              "AttributeError: module 'distutils' has no attribute 'version'\n")
    passed, reason = fp.judge(_recipe(program="nb.ipynb"), 1, False, output, tmp_path)
    assert reason == "AttributeError: module 'distutils' has no attribute 'version' [nb.ipynb code cell 2, line 3]"


def test_the_header_names_each_package_commit_once_per_column(tmp_path, monkeypatch):
    # Three branch HEADs that changed only the runner measure one package
    # commit: the header said it three times (issue 34's first table).
    monkeypatch.setattr(fp, "MIGRATION_DOC", tmp_path / "migration.md")
    monkeypatch.setattr(fp, "FIELD_DOC", tmp_path / "field.md")
    (tmp_path / "migration.md").write_text("# Migrating\n")
    package = {"aaa": "`6383b5c` (2026-11-27)", "bbb": "`6383b5c` (2026-11-27)",
               "ccc": "`6383b5c` (2026-11-27)", "ddd": "`be1bd13` (2026-11-28)"}
    monkeypatch.setattr(fp, "_package_commit", lambda commit: package[commit])
    monkeypatch.setattr(fp.field_recipes, "RUN_NOTES", ("re-run notes",))
    recipes = [_recipe(name=n) for n in "abcd"]
    results = []
    for name, mode, commit, date, load in [("a", "unchanged", "aaa", "2026-11-28 14:47 UTC", None),
                                           ("b", "unchanged", "bbb", "2026-11-28 15:10 UTC", None),
                                           ("c", "migrated", "ccc", "2026-11-28 16:10 UTC", 5.8),
                                           ("d", "unchanged", "ddd", "2026-11-28 18:30 UTC", 3.1)]:
        row = _row(name, mode, True)
        row.update(tpu_compat_commit=commit, date=date, load=load)
        results.append(row)
    fp.write_docs(recipes, results)
    header = (tmp_path / "field.md").read_text().split("| # |")[0]
    assert header.count("`6383b5c`") == 2, header  # once per column, not once per HEAD
    assert "\n- re-run notes\n" in header
    assert ("- unchanged: 2026-11-28 14:47 UTC to 2026-11-28 18:30 UTC, tpu_compat at commit "
            "`6383b5c` (2026-11-27), `be1bd13` (2026-11-28); 1-minute load average at the end of a run: "
            "3.1 to 3.1") in header
    assert ("- migrated: 2026-11-28 16:10 UTC to 2026-11-28 16:10 UTC, tpu_compat at commit "
            "`6383b5c` (2026-11-27); 1-minute load average at the end of a run: 5.8 to 5.8") in header
    section = (tmp_path / "migration.md").read_text()
    assert section.count("`6383b5c`") == 1 and "be1bd13" not in section


def test_each_unchanged_failure_is_listed_with_its_reason_or_as_not_analysed():
    recipes = [_recipe(name=n) for n in ("a", "b", "c", "d")]
    results = [_row("a", "unchanged", True), _row("b", "unchanged", False, 3.0, "E: x [b.py:1]"),
               _row("c", "unchanged", False, 4.0, "hang [c.py:2]"), _row("d", "migrated", False, 1.0, "E")]
    text = fp.render_failures(recipes, results, {"b": "needs tf.contrib.slim (issue 34, research)"})
    assert text.splitlines() == ["- **b** (E: x [b.py:1]): needs tf.contrib.slim (issue 34, research)",
                                 "- **c** (hang [c.py:2]): not analysed yet"]
    assert fp.render_failures(recipes, results[:1], {}) == "None: every program that ran passed."
    assert fp.render_failures(recipes, results, {"d": "needs keras_to_tpu_model's rewrite"}, "migrated") \
        == "- **d** (E): needs keras_to_tpu_model's rewrite"


# -- issue 36: --mode estimator-tf2 ------------------------------------------------------------

_TPUESTIMATOR_LOG = """I1129 loss = 2.302585, step = 2
W1129 unrelated 3.5
I1129 Loss for final step: 2.25.
I1129 Saving dict for global step 4: accuracy = 0.125, global_step = 4, loss = 2.2
"""


def test_printed_numbers_are_the_recipe_lines_numbers_labelled_by_their_line():
    twice = "".join(f"INFO:tensorflow:{line.split(' ', 1)[1]}\n{line}\n"
                    for line in _TPUESTIMATOR_LOG.splitlines())
    found = fp.printed_numbers(twice, fr.NUMBERS)     # TF 1's logger and absl: one record
    assert found == fp.printed_numbers(_TPUESTIMATOR_LOG, fr.NUMBERS)
    assert [value for _, value in found] == [2.302585, 2, 2.25, 4, 0.125, 4, 2.2]
    assert found[0][0] == "loss = #, step = #"
    assert found[3][0] == "Saving dict for global step #: accuracy = #, global_step = #, loss = #"


def test_compare_numbers_uses_verifys_tolerance_and_names_the_first_difference():
    reference = fp.printed_numbers(_TPUESTIMATOR_LOG, fr.NUMBERS)
    assert fp.compare_numbers(reference, reference) is None
    close = fp.printed_numbers(_TPUESTIMATOR_LOG.replace("2.302585", "2.30260"), fr.NUMBERS)
    assert fp.compare_numbers(reference, close) is None           # within rtol 1e-4
    off = fp.printed_numbers(_TPUESTIMATOR_LOG.replace("0.125", "0.25"), fr.NUMBERS)
    assert fp.compare_numbers(reference, off) == (
        "number 5 of `Saving dict for global step #: accuracy = #, global_step = #, loss = #`: "
        "unchanged 0.125, migrated 0.25")
    assert "7 numbers in the unchanged run, 3" in fp.compare_numbers(reference, reference[:3])
    assert fp.compare_numbers([], []) == "the unchanged run printed none of the recipe's numbers"
    nan = [("loss = #", float("nan"))]
    assert fp.compare_numbers(nan, nan) is None


def test_a_difference_is_judged_against_a_second_run_of_the_unchanged_program(tmp_path, monkeypatch):
    """Numbers differ: the unchanged program runs again. If it does not repeat its own
    numbers (mnist_tpu.py: unseeded dropout and shuffle), the row says so, with its own
    verdict, and is no pass; if it does, the difference stays the migration's."""
    recipe = _recipe()
    (tmp_path / "ref.log").write_text(_TPUESTIMATOR_LOG)
    (tmp_path / "again.log").write_text(_TPUESTIMATOR_LOG.replace("2.25", "2.375"))
    (tmp_path / "off.log").write_text(_TPUESTIMATOR_LOG.replace("2.25", "2.5"))
    reference = {"passed": True, "reason": "", "log": str(tmp_path / "ref.log")}

    def judged(second_log):
        monkeypatch.setattr(fp, "run_one", lambda *a, **k: {
            "passed": True, "seconds": 1.0, "reason": "", "log": str(tmp_path / second_log)})
        row = fp.judge_numbers(recipe, {"name": recipe.name, "mode": fp.TF2_MODE, "passed": True,
                                        "seconds": 2.0, "reason": "",
                                        "log": str(tmp_path / "off.log")}, reference)
        return fp.repeat_reference(recipe, row, reference, None, tmp_path, ["tpu-compat"])

    random = judged("again.log")
    assert random["unrepeatable"] and not random["passed"]
    assert random["reason"] == (
        "the unchanged program does not repeat its own numbers (number 3 of `Loss for final step: #.`: "
        "first unchanged 2.25, second unchanged 2.375); migrated: number 3 of `Loss for final step: #.`: "
        "unchanged 2.25, migrated 2.5")
    assert fp._verdict(random) == "runs strict; the original does not repeat its numbers (2 s)"
    repeated = judged("ref.log")
    assert not repeated.get("unrepeatable") and repeated["reference_repeated"]["difference"] is None
    assert repeated["reason"].startswith("numbers differ: ") and fp._verdict(repeated) == "fail (2 s)"


def test_judge_numbers_passes_only_a_strict_run_with_the_references_numbers(tmp_path):
    recipe = _recipe()
    (tmp_path / "ref.log").write_text(_TPUESTIMATOR_LOG)
    (tmp_path / "same.log").write_text(_TPUESTIMATOR_LOG)
    (tmp_path / "off.log").write_text(_TPUESTIMATOR_LOG.replace("2.25", "2.5"))
    reference = {"passed": True, "reason": "", "log": str(tmp_path / "ref.log")}
    same = fp.judge_numbers(recipe, {"passed": True, "reason": "", "log": str(tmp_path / "same.log")},
                            reference)
    assert same["passed"] and same["numbers_compared"] == 7
    off = fp.judge_numbers(recipe, {"passed": True, "reason": "", "log": str(tmp_path / "off.log")},
                           reference)
    assert not off["passed"] and off["reason"].startswith("numbers differ: number 3 of ")
    failed = {"passed": False, "reason": "ValueError: x [a.py:1]", "log": str(tmp_path / "same.log")}
    assert fp.judge_numbers(recipe, dict(failed), reference)["reason"] == failed["reason"]
    no_reference = fp.judge_numbers(recipe, {"passed": True, "reason": "", "log": "x"},
                                    {"passed": False, "reason": "timeout after 9 s", "log": None})
    assert not no_reference["passed"]
    assert no_reference["reason"] == "no reference: the unchanged run failed (timeout after 9 s)"


def test_the_estimator_tf2_upgrade_adds_the_flag_and_takes_the_programs_files():
    argv = fp.upgrade_argv(["tc"], fp.TF2_MODE, "r.json", "a.py", "b/c.py")
    assert argv == ["tc", "upgrade", "--estimator-to-tf2", "--in-place", "--force", "--report",
                    "r.json", "a.py", "b/c.py"]
    assert "--estimator-to-tf2" not in fp.upgrade_argv(["tc"], "migrated", "r.json", "t")
    assert fp.upgrade_argv(["tc"], fp.TF2_MODE, "r.json", "a.py", tf1=True)[2:4] == [
        "--estimator-to-tf2", "--from-tf1"]
    assert "--from-tf1" not in fp.upgrade_argv(["tc"], "migrated", "r.json", "t", tf1=True)


def test_program_files_follow_the_programs_imports_inside_the_tree_only(tmp_path):
    (tmp_path / "models" / "official" / "resnet").mkdir(parents=True)
    (tmp_path / "models" / "official" / "other").mkdir(parents=True)
    (tmp_path / "models" / "common").mkdir()
    main = tmp_path / "models" / "official" / "resnet" / "main.py"
    main.write_text("import tensorflow as tf\nimport resnet_model\n"
                    "from official.resnet import lars_util\nfrom common import inference_warmup\n")
    (main.parent / "resnet_model.py").write_text("from . import helpers\n")
    (main.parent / "helpers.py").write_text("x = 1\n")
    (main.parent / "lars_util.py").write_text("import absl\n")
    (tmp_path / "models" / "common" / "inference_warmup.py").write_text("")
    (tmp_path / "models" / "official" / "other" / "unrelated.py").write_text("")
    files = fp.program_files(tmp_path, main, roots=("models",))
    assert [str(f.relative_to(tmp_path)) for f in files] == [
        "models/common/inference_warmup.py", "models/official/resnet/helpers.py",
        "models/official/resnet/lars_util.py", "models/official/resnet/main.py",
        "models/official/resnet/resnet_model.py"]


def test_list_todos_and_the_summary_by_rule(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n    # TODO(tpu_compat): TPC071 host_call is not migrated: why\n"
                                   "# TODO(tpu_compat): TPC070 predict is not migrated\n")
    todos = fp.list_todos(tmp_path)
    assert todos == [
        {"file": "a.py", "line": 2, "rule": "TPC071", "text": "host_call is not migrated: why"},
        {"file": "a.py", "line": 3, "rule": "TPC070", "text": "predict is not migrated"}]
    results = [{"name": "p", "mode": fp.TF2_MODE, "todo_list": todos},
               {"name": "q", "mode": fp.TF2_MODE, "todo_list": todos[:1]},
               {"name": "q", "mode": "migrated", "todo_list": todos}]
    assert fp.todo_summary(results) == [
        ("TPC071", "host_call is not migrated: why", 2, ["p", "q"]),
        ("TPC070", "predict is not migrated", 1, ["p"])]


def test_the_estimator_tf2_section_counts_passes_over_the_tpuestimator_recipes(tmp_path, monkeypatch):
    (tmp_path / "migration.md").write_text("# Migrating\n")
    monkeypatch.setattr(fp, "MIGRATION_DOC", tmp_path / "migration.md")
    monkeypatch.setattr(fp, "FIELD_DOC", tmp_path / "field.md")
    recipes = [_recipe(name="a"), _recipe(name="b"), _recipe(name="c"), _recipe(name="d"),
               _recipe(name="fit", kind="Keras fit")]
    todo = {"file": "a.py", "line": 1, "rule": "TPC070", "text": "predict is not migrated"}
    results = [dict(_row("a", fp.TF2_MODE, True, todos=0), todo_list=[]),
               dict(_row("b", fp.TF2_MODE, False, 9.0, "numbers differ: number 1", todos=1),
                    todo_list=[todo]),
               dict(_row("d", fp.TF2_MODE, False, 9.0, "numbers differ: number 2", todos=0),
                    todo_list=[], eval_of_reference_checkpoint={
                        "passed": True, "reason": "", "numbers_compared": 4}),
               dict(_row("c", fp.TF2_MODE, False, None, "upgraded only, not run", todos=1),
                    todo_list=[todo])]
    fp.write_docs(recipes, results)
    fp.write_docs(recipes, results)
    text = (tmp_path / "migration.md").read_text()
    assert text.count(fp.TF2_BEGIN) == 1
    section = text[text.index(fp.TF2_BEGIN):]
    assert "**1 of 4** pass (3 run;" in section and "**1 of 4** run strict and, evaluating" in section
    assert "| d | fail (9 s, 0 TODO) | 0 | numbers differ: number 2 | same metrics (4 numbers) |" in section
    assert "| b | fail (9 s, 1 TODO) | 1 | numbers differ: number 1 |  |" in section
    assert "| TPC070 | predict is not migrated | 2 | b, c |" in section
    assert "| fit |" not in section


def test_the_migrated_run_starts_from_the_references_step_zero_checkpoint_only(tmp_path):
    source = tmp_path / "reference"
    source.mkdir()
    for name in ("model.ckpt-0.index", "model.ckpt-0.data-00000-of-00001", "model.ckpt-4.index",
                 "graph.pbtxt", "checkpoint"):
        (source / name).write_text(name)
    fp.step_zero_model_dir(source, tmp_path / "migrated")
    assert sorted(p.name for p in (tmp_path / "migrated").iterdir()) == [
        "checkpoint", "model.ckpt-0.data-00000-of-00001", "model.ckpt-0.index"]
    assert (tmp_path / "migrated" / "checkpoint").read_text().startswith(
        'model_checkpoint_path: "model.ckpt-0"\n')


def test_both_estimator_tf2_runs_get_the_recipes_data_without_random_draws(tmp_path, monkeypatch):
    # The reference and the migrated run must read the same data: the recipe's tf2_data_gen
    # (dropout 0, training records a shuffle cannot reorder), not its ordinary data_gen.
    seen = []

    def fake_run_one(recipe, mode, *args, **kwargs):
        seen.append((mode, recipe.data_gen))
        run = Path(fp.tempfile.mkdtemp(dir=tmp_path))
        (run / "model_dir").mkdir()
        (run / "model_dir" / "model.ckpt-0.index").write_text("")
        (run / f"{mode}.log").write_text(_TPUESTIMATOR_LOG)
        return {"name": recipe.name, "passed": True, "seconds": 1.0, "reason": "",
                "date": "d", "log": str(run / f"{mode}.log")}

    monkeypatch.setattr(fp, "run_one", fake_run_one)
    recipe = _recipe(data_gen=("bert_pretraining", "n=64"),
                     tf2_data_gen=("bert_pretraining", "n=64", "dropout=0", "same=1"))
    row = fp.run_estimator_tf2(recipe, "mirror", tmp_path, ["tc"])
    assert row["passed"] and seen == [("unchanged", recipe.tf2_data_gen), (fp.TF2_MODE, recipe.tf2_data_gen)]
    seen.clear()
    fp.run_estimator_tf2(recipe._replace(tf2_data_gen=None), "mirror", tmp_path, ["tc"])
    assert [data for _, data in seen] == [recipe.data_gen] * 2
    assert fp.validate(recipe._replace(tf2_data_gen=("nope",))) == [
        f"tf2_data_gen 'nope': allowed {', '.join(fr.DATA_KINDS)}"]


def test_the_bert_family_compares_training_with_no_dropout_and_identical_training_records(tmp_path):
    import field_data  # noqa: PLC0415 - classifier_tsv needs no TensorFlow
    bert_family = [r for r in fr.RECIPES if r.name in ("bert-pretraining", "bert-classifier",
                                                         "albert-pretraining")]
    assert len(bert_family) == 3
    for recipe in bert_family:
        assert {"dropout=0", "same=1"} <= set(recipe.tf2_data_gen), recipe.name
        assert recipe.tf2_data_gen[:len(recipe.data_gen)] == recipe.data_gen, recipe.name
    field_data.classifier_tsv(str(tmp_path), n="5", same_train="1")
    train = (tmp_path / "train.tsv").read_text().splitlines()[1:]
    dev = (tmp_path / "dev.tsv").read_text().splitlines()[1:]
    # identical pairs and labels (the ID columns are not features), a distinct dev set
    assert len({tuple(row.split("\t")[i] for i in (0, 3, 4)) for row in train}) == 1
    assert len({row.split("\t")[3] for row in dev}) == 5
