"""tpu-compat numerics-diff: one script under --numerics exact and tpu, its numbers ranked.

The engine and the command's report and exit codes are tested with plain
``python`` runs of a script that reads TPU_COMPAT_NUMERICS itself (no
TensorFlow); one end-to-end run in the slow lane (two `tpu-compat run`s of
tests/scenarios/numerics_diff_program.py) shows a replica step's matmul move
and the host's stay.
"""

import os
import textwrap

import pytest

from tpu_compat import cli
from tpu_compat.regress import measure, numerics_diff, script_process
from conftest import SCENARIOS, check_ok, run_cli

FAKE = textwrap.dedent("""
    import os, sys
    tpu = os.environ["TPU_COMPAT_NUMERICS"] == "tpu"
    print("loss: " + ("1.002" if tpu else "1.0"))
    print("accuracy: " + ("0.5" if tpu else "0.5001"))
    print("steps: 5")
    print("only_" + ("tpu" if tpu else "exact") + ": 1")
    print("args: " + str(len(sys.argv) - 1))
""")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    path = tmp_path / "fake.py"
    path.write_text(FAKE)
    # The command runs `python SCRIPT` instead of `tpu-compat run SCRIPT`.
    monkeypatch.setattr(script_process, "tpu_compat_command", script_process.python_command)
    return str(path)


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
