"""scripts/run_benchmarks.py without running a benchmark, and the release checklist.

Text only, no TensorFlow: that every benchmark has its row, that each row's
table cells and quoted figures are where docs/performance.md has them, how a
section is rewritten, the one-line usage errors, and that the release
checklist's commands name scripts that exist.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, subprocess_env

sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
import run_benchmarks  # noqa: E402  pylint: disable=wrong-import-position

PERFORMANCE = os.path.join(REPO_ROOT, "docs", "performance.md")
RELEASE = os.path.join(REPO_ROOT, "docs", "release.md")


def test_every_benchmark_file_has_a_row_and_every_row_a_file():
    assert run_benchmarks.benchmark_files() == sorted(run_benchmarks.BY_NAME)


@pytest.mark.parametrize("row", run_benchmarks.BENCHMARKS, ids=lambda b: b.name)
def test_each_row_places_every_figure_in_the_current_docs(row):
    """All figures 1.0: each cell and each required quote is found exactly once."""
    with open(PERFORMANCE, encoding="utf-8") as handle:
        document = handle.read()
    names = [n for cells in row.cells.values() for n in cells if n] + [
        p.figure for p in row.prose]
    result = {"figures": dict.fromkeys(names, 1.0), "goals": []}
    if row.reader == "scan":
        result["section"] = "## scan vs tf_upgrade_v2\n\nthe benchmark's own text\n"
    updated, problems = run_benchmarks.update_section(document, row, result,
                                                      "Measured at commit x.")
    assert problems == []
    assert updated != document


DOC = """# Performance

## Alpha: one thing

Some text about alpha.

| variant | s | steps/s |
|---|---|---|
| (a) fast | 0.1220 | 1,819.8 |
| (b) slow | 0.4546 | 220.0 |

* (b)/(a) = **3.73**, measured well.

## Beta

Untouched 1.23.
"""

ALPHA = run_benchmarks.Benchmark(
    "alpha", "Alpha", full=(), smoke=(), timeout=1,
    cells={"(a) ": ("a_s", "a_rate"), "(b) ": ("b_s", None)},
    prose=(run_benchmarks.Prose(r"\(b\)/\(a\) = \*\*([\d.]+)\*\*", "ratio"),))


def test_a_section_is_rewritten_in_place_keeping_each_numbers_format():
    figures = {"a_s": 0.25, "a_rate": 4000.04, "b_s": 0.5, "ratio": 2.0}
    updated, problems = run_benchmarks.update_section(
        DOC, ALPHA, {"figures": figures, "goals": []}, "Measured at commit abc1234 (today).")
    assert problems == []
    assert "| (a) fast | 0.2500 | 4,000.0 |" in updated
    assert run_benchmarks.format_like("498", 1581.4) == "1,581"  # grown past a thousand
    assert run_benchmarks.format_like("0.8", -20.16) == "-20.2"
    assert "| (b) slow | 0.5000 | 220.0 |" in updated  # None: the cell is left alone
    assert "(b)/(a) = **2.00**, measured well." in updated
    assert "## Alpha: one thing\n\nMeasured at commit abc1234 (today).\n\nSome text" in updated
    assert updated.endswith("## Beta\n\nUntouched 1.23.\n")
    # Measured again: the commit line is replaced, not repeated.
    again, _ = run_benchmarks.update_section(
        updated, ALPHA, {"figures": figures, "goals": []}, "Measured at commit def5678 (later).")
    assert again.count("Measured at commit") == 1 and "def5678" in again


def test_a_figure_the_benchmark_did_not_report_is_a_problem_and_left_alone():
    updated, problems = run_benchmarks.update_section(
        DOC, ALPHA, {"figures": {"a_s": 1.0, "a_rate": 1.0, "b_s": 1.0}, "goals": []},
        "Measured at commit x.")
    assert problems == ["the benchmark reported no figure 'ratio'"]
    assert "(b)/(a) = **3.73**" in updated


def test_pod_rows_are_read_from_its_printed_table():
    stdout = ("| variant | s / 100 steps | steps/s |\n|---|---|---|\n"
              "| (a) 1 host x 8 cores | 0.0953 | 1049.1 |\n"
              "| (b) 2 hosts x 4 cores | 0.3811 | 262.4 |\n"
              "start-up (TF import, install, pod): 1x8 2.0 s, 2x4 3.9 s\n")
    figures = run_benchmarks.read_pod(stdout)["figures"]
    assert figures["(a)#1"] == 0.0953 and figures["(b)#2"] == 262.4
    assert figures["ratio_b_a"] == pytest.approx(0.3811 / 0.0953)
    assert (figures["start_one_s"], figures["start_pod_s"]) == (2.0, 3.9)


@pytest.mark.parametrize("arguments,message", [
    (["--only", "nope"], "--only 'nope': choose from"),
    (["--docs", "/nonexistent/performance.md"],
     "--docs /nonexistent/performance.md: no such file"),
])
def test_bad_input_is_one_line_and_exit_2(arguments, message):
    script = os.path.join(REPO_ROOT, "scripts", "run_benchmarks.py")
    result = subprocess.run([sys.executable, script, *arguments], capture_output=True,
                            text=True, env=subprocess_env(), timeout=60, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr.strip().splitlines()[-1]


def _checklist_commands():
    with open(RELEASE, encoding="utf-8") as handle:
        blocks = re.findall(r"```sh\n(.*?)```", handle.read(), flags=re.DOTALL)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def test_release_checklist_runs_the_benchmarks_matrix_and_slow_tests():
    commands = [" ".join(c) for c in _checklist_commands()]
    for needed in ("python scripts/run_benchmarks.py", "scripts/slow_tests.sh",
                   "scripts/tf_version_matrix.py"):
        assert any(needed in command for command in commands), needed


def test_release_checklist_commands_name_existing_scripts():
    paths = [word for command in _checklist_commands() for word in command
             if "/" in word and not word.startswith("-")]
    assert paths
    missing = [p for p in paths if not os.path.isfile(os.path.join(REPO_ROOT, p))]
    assert missing == []


def test_each_benchmark_program_starts_in_runs_tensorflow_environment(monkeypatch, tmp_path):
    # Native and tpu_compat figures alike come from TensorFlow imported as
    # `tpu-compat run` imports it (oneDNN off, tf-keras): like with like.
    from tpu_compat import _process, settings  # pylint: disable=import-outside-toplevel
    started = []

    def record(command, timeout, **popen_kwargs):
        started.append(popen_kwargs["env"])
        return _process.Finished(None, "", "")  # as if it timed out: nothing to read

    monkeypatch.setattr(_process, "run_in_own_group", record)
    monkeypatch.delenv(settings.ONEDNN_VAR, raising=False)
    for benchmark in run_benchmarks.BY_NAME.values():
        _, problem = run_benchmarks.run_one(benchmark, True, str(tmp_path))
        assert "did not finish" in problem
    assert len(started) == len(run_benchmarks.BY_NAME)
    expected = _process.tensorflow_environment({})  # tf-keras: where it is installed
    assert all(env[settings.ONEDNN_VAR] == "0"
               and env.get(settings.LEGACY_KERAS_VAR) == expected.get(settings.LEGACY_KERAS_VAR)
               for env in started)
