"""tpu-compat numerics-diff: one script under --numerics exact and tpu, its numbers ranked.

The engine and the command's report and exit codes are tested with plain
``python`` runs of a script that reads TPU_COMPAT_NUMERICS itself (no
TensorFlow); one end-to-end run in the slow lane (two `tpu-compat run`s of
tests/scenarios/numerics_diff_program.py) shows a replica step's matmul move
and the host's stay.

--ops-at-step: the report from a fake record (no TensorFlow), then one
numerics-diff of tests/scenarios/numerics_ops_program.py (TF 2.x) naming its
matmul lines, and one `tpu-compat run --tf1` of it recording a Session loop's
chosen run (fidelity/numerics_ops.py's recorder is tested in process in
test_numerics_ops.py).
"""

import json
import os
import subprocess
import textwrap

import pytest

from tpu_compat import cli
from tpu_compat.regress import measure, numerics_diff, script_process
from conftest import SCENARIOS, assert_one_error_line, check_ok, run_cli

FAKE = textwrap.dedent("""
    import os, sys
    tpu = os.environ["TPU_COMPAT_NUMERICS"] == "tpu"
    print("loss: " + ("1.002" if tpu else "1.0"))
    print("accuracy: " + ("0.5" if tpu else "0.5001"))
    print("steps: 5")
    print("only_" + ("tpu" if tpu else "exact") + ": 1")
    print("args: " + str(len(sys.argv) - 1))
""")


# The fake scripts are plain Python: started afresh (~0.1 s each), not forked
# by a fork-server sibling that would import TensorFlow for their environment
# (the runs set PYTHONHASHSEED, which the suite's server was not started with).
_PLAIN_PYTHON = pytest.mark.fresh_process


@pytest.fixture
def fake(tmp_path, monkeypatch):
    path = tmp_path / "fake.py"
    path.write_text(FAKE)
    # The command runs `python SCRIPT` instead of `tpu-compat run SCRIPT`.
    monkeypatch.setattr(script_process, "tpu_compat_command", script_process.python_command)
    return str(path)


@_PLAIN_PYTHON
def test_the_engine_runs_both_numerics_and_ranks_what_moved(fake):
    options = measure.RunOptions(replicas=2, timeout=60.0, seed=0)
    result = numerics_diff.numerics_diff(fake, ["x", "y"], options,
                                         command=script_process.python_command)
    assert result.problem is None
    assert [m.key for m in result.moved] == ["loss", "accuracy", "steps", "args"]
    assert result.largest.relative == pytest.approx(0.002)
    assert result.moved[1].relative == pytest.approx(0.0001 / 0.5001)
    assert [m.relative for m in result.moved[2:]] == [0.0, 0.0]
    assert result.moved[3].exact == 2.0  # the ARGS given
    assert (result.only_exact, result.only_tpu) == (("only_exact",), ("only_tpu",))


@_PLAIN_PYTHON
def test_the_report_and_exit_codes(fake, capsys):
    assert cli.main(["numerics-diff", "--replicas", "2", fake]) == 0
    out = capsys.readouterr().out
    assert "under --numerics exact and tpu with 2 replicas" in out
    assert "largest relative difference: 2.00e-03 (loss); 2 of 4 numbers moved" in out
    assert "only under exact: only_exact" in out and "only under tpu: only_tpu" in out
    table = out[out.index("key"):].splitlines()
    assert [line.split()[0] for line in table] == ["key", "loss", "accuracy"]
    assert cli.main(["numerics-diff", "--rtol", "1e-3", fake]) == 1
    assert "MOVED beyond rtol=0.001" in capsys.readouterr().out
    assert cli.main(["numerics-diff", "--rtol", "1e-2", "--top", "0", fake]) == 0
    assert "key" not in capsys.readouterr().out.split("moved", 1)[1]


@_PLAIN_PYTHON
def test_a_failing_run_and_a_missing_script(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(script_process, "tpu_compat_command", script_process.python_command)
    broken = tmp_path / "broken.py"
    broken.write_text("import os\nif os.environ['TPU_COMPAT_NUMERICS'] == 'tpu':\n"
                      "    raise SystemExit(3)\nprint('loss: 1.0')\n")
    assert cli.main(["numerics-diff", str(broken)]) == 1
    assert f"FAILED: {broken} under --numerics tpu exited with code 3" in capsys.readouterr().out
    assert cli.main(["numerics-diff", str(tmp_path / "absent.py")]) == 2


@pytest.mark.requires_tf
@pytest.mark.slow  # ~30 s; in CI the engine, the report and --numerics's way to the
# script (test_numerics_cli.py) and the host staying exact (test_numerics.py) cover it
def test_a_replica_step_moves_and_the_host_does_not():
    result = check_ok(run_cli("numerics-diff", "--replicas", "2",
                              os.path.join(SCENARIOS, "numerics_diff_program.py"),
                              "--scale", "2"))
    lines = result.stdout.splitlines()
    assert any(line.startswith("largest relative difference: ") and "(matmul_sum); "
               "1 of 3 numbers moved" in line for line in lines), result.stdout
    relative = float(next(line for line in lines if "(matmul_sum)" in line)
                     .split(": ")[1].split()[0])
    assert 1e-4 < relative < 1e-2  # a bfloat16 operand rounding, not a bug's size


# -- --ops-at-step: the rounded ops of one replica step ------------------------------

FAKE_OPS = textwrap.dedent("""
    import json, os
    chosen = os.environ.get("TPU_COMPAT_NUMERICS_OPS")
    tpu = os.environ["TPU_COMPAT_NUMERICS"] == "tpu"
    assert (chosen is not None) == tpu, chosen  # only the tpu run records
    print("loss: " + ("1.002" if tpu else "1.0"))
    if chosen:
        step, path = chosen.split(":", 1)
        ops = [{"op": "MatMul", "name": "dense/MatMul", "pass": "forward",
                "file": "model.py", "line": 7, "relative": 0.0},
               {"op": "Conv2D", "name": "conv/Conv2D", "pass": "backward",
                "file": "model.py", "line": 3, "relative": 0.004}]
        ops.sort(key=lambda op: -op["relative"])
        with open(path, "w") as stream:
            json.dump({"step": int(step), "steps_run": 5, "ops": ops}, stream)
""")


@_PLAIN_PYTHON
def test_ops_at_step_reaches_the_tpu_run_only_and_is_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(script_process, "tpu_compat_command", script_process.python_command)
    script = tmp_path / "fake_ops.py"
    script.write_text(FAKE_OPS)
    assert cli.main(["numerics-diff", "--ops-at-step", "5", str(script)]) == 0
    out = capsys.readouterr().out
    assert "ops at replica step 5 of replica 0 (5 counted): 2 rounded op(s)" in out
    table = out[out.index("rel diff  pass"):].splitlines()
    assert [line.split() for line in table[1:]] == [
        ["4.00e-03", "backward", "Conv2D", "model.py:3", "conv/Conv2D"],
        ["0", "forward", "MatMul", "model.py:7", "dense/MatMul"]]
    # Step 6 never ran: the asked-for record is missing, so the command fails.
    assert cli.main(["numerics-diff", "--ops-at-step", "6", str(script)]) == 1
    assert ("FAILED: ops at step 6: replica 0 ran 5 counted replica step(s), so there is "
            "no step 6") in capsys.readouterr().out


def test_ops_at_step_takes_a_positive_step(capsys):
    # In process (cli.main, as test_cli's usage errors): argument checking is
    # all this claims; three fresh interpreters cost ~8 s.
    for bad in ("0", "1.5", "1000000001"):  # issue 33: bounded as TPU_COMPAT_NUMERICS_OPS
        code = cli.main(["numerics-diff", "--ops-at-step", bad, "absent.py"])
        captured = capsys.readouterr()
        result = subprocess.CompletedProcess([], code, captured.out, captured.err)
        assert_one_error_line(result, f"--ops-at-step={bad!r} is not valid; expected an "
                                      f"integer from 1 to 1000000000")


@pytest.mark.requires_tf
def test_a_training_program_names_its_matmul_lines_tf2():
    """TF 2: strategy.run in a tf.function, one trace per step, GradientTape."""
    script = os.path.join(SCENARIOS, "numerics_ops_program.py")
    result = check_ok(run_cli("numerics-diff", "--replicas", "2", "--ops-at-step", "2",
                              script))
    out = result.stdout
    assert "ops at replica step 2 of replica 0 (3 counted): 3 rounded op(s)" in out, out
    rows = [line.split() for line in out[out.index("rel diff  pass"):].splitlines()[1:]]
    where = {(row[1], row[3].rsplit(":", 1)[1]): float(row[0]) for row in rows}
    lines = _lines_of(script, "the hidden matmul", "the exact matmul", "tape.gradient")
    assert set(where) == {("forward", lines[0]), ("forward", lines[1]),
                          ("backward", lines[2])}
    assert 1e-4 < where["forward", lines[0]] < 1e-2  # bfloat16 operands: ~1e-3
    assert 1e-4 < where["backward", lines[2]] < 1e-2
    assert where["forward", lines[1]] == 0  # operands bfloat16 holds exactly


def _lines_of(path, *texts):
    with open(path, encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    return [str(1 + next(i for i, line in enumerate(lines) if text in line)) for text in texts]


@pytest.mark.requires_tf
def test_a_tf1_session_loop_records_its_chosen_run(tmp_path):
    """TF 1: tpu.replicate built once, run by a Session per step; backward ops
    carry the forward op's line (gradients_util's _original_op)."""
    script = os.path.join(SCENARIOS, "numerics_ops_program.py")
    record = tmp_path / "ops.json"
    check_ok(run_cli("run", "--tf1", "--replicas", "2", "--numerics", "tpu", script,
                     env={"TPU_COMPAT_NUMERICS_OPS": f"1:{record}"}))
    report = json.loads(record.read_text())
    assert (report["step"], report["steps_run"]) == (1, 3)
    hidden, exact = _lines_of(script, "the hidden matmul", "the exact matmul")
    found = {(op["pass"], str(op["line"])): op for op in report["ops"]}
    # The hidden matmul forward, its two gradients (x and w), the exact matmul.
    assert set(found) == {("backward", hidden), ("forward", exact), ("forward", hidden)}
    assert len(report["ops"]) == 4
    assert all(op["executions"] == 1 for op in report["ops"])  # steps 2 and 3 not filed
    assert found["forward", exact]["relative"] == 0
    # Step 1's batch is small integers: the forward rounds only the weights.
    assert 1e-4 < found["forward", hidden]["relative"] < 1e-2
