"""--numerics on the command line and in the environment (no TensorFlow needed)."""

import re

import pytest

from tpu_compat import _config, runner, settings
from tpu_compat.regress import script_process
from conftest import assert_one_error_line, run_cli


def test_run_exports_the_flag_for_the_program():
    environ = {}
    runner.prepare_environment({"numerics": "tpu"}, environ=environ)
    assert environ[settings.NUMERICS_VAR] == "tpu"
    environ = {}
    runner.prepare_environment(environ=environ)
    assert settings.read("numerics", environ) == "exact"


def test_regress_and_verify_pass_it_to_each_script(monkeypatch):
    monkeypatch.delenv(settings.NUMERICS_VAR, raising=False)
    environment = script_process._environment  # pylint: disable=protected-access
    launch = script_process.Launch(script="x.py", replicas=2, timeout=1.0, numerics="tpu")
    assert environment(launch)[settings.NUMERICS_VAR] == "tpu"
    launch = script_process.Launch(script="x.py", replicas=2, timeout=1.0)
    assert environment(launch)[settings.NUMERICS_VAR] == "exact"


def test_a_bad_value_is_one_line_naming_the_flag_or_variable(tmp_path):
    script = tmp_path / "never_runs.py"
    script.write_text("open('ran', 'w').close()\n")
    result = run_cli("run", "--numerics", "bf16", str(script), cwd=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "tpu-compat run: error: argument --numerics: invalid choice: 'bf16' "
        "(choose from 'exact', 'tpu')")
    for command in (["run"], ["regress", "--check", "--golden", str(tmp_path)]):
        result = run_cli(*command, str(script), cwd=str(tmp_path),
                         env={settings.NUMERICS_VAR: "bf16"})
        assert_one_error_line(
            result, "TPU_COMPAT_NUMERICS='bf16' is not valid; allowed values: exact, tpu")
    assert not (tmp_path / "ran").exists()


def test_numerics_ops_is_step_colon_file_and_only_numerics_diff_sets_it(tmp_path, monkeypatch):
    parse = settings.row("numerics_ops").parse
    record = tmp_path / "ops.json"
    assert parse("V", f"3:{record}") == (3, str(record))
    assert parse("V", f"1000000000:{record}") == (10**9, str(record))
    for bad in ("3", f"0:{record}", f"x:{record}", "3:", f"3:{tmp_path}",
                f"1000000001:{record}", f"{'9' * 30}:{record}",  # issue 33: bounded
                f"3:{tmp_path / 'absent' / 'ops.json'}"):
        with pytest.raises(_config.ConfigError, match=f"^V={re.escape(repr(bad))} is not "
                                                      f"valid; expected STEP:FILE"):
            parse("V", bad)
    # regress and verify runs never inherit it; numerics-diff's tpu run gets it.
    monkeypatch.setenv(settings.NUMERICS_OPS_VAR, f"1:{record}")
    environment = script_process._environment  # pylint: disable=protected-access
    launch = script_process.Launch(script="x.py", replicas=2, timeout=1.0)
    assert settings.NUMERICS_OPS_VAR not in environment(launch)
    launch = script_process.Launch(script="x.py", replicas=2, timeout=1.0,
                                   numerics_ops=f"2:{record}")
    assert environment(launch)[settings.NUMERICS_OPS_VAR] == f"2:{record}"


def test_a_bad_numerics_ops_variable_stops_run_before_the_program(tmp_path):
    script = tmp_path / "never_runs.py"
    script.write_text("open('ran', 'w').close()\n")
    result = run_cli("run", str(script), cwd=str(tmp_path),
                     env={settings.NUMERICS_OPS_VAR: "0:ops.json"})
    assert_one_error_line(result, "TPU_COMPAT_NUMERICS_OPS='0:ops.json' is not valid; "
                                  "expected STEP:FILE")
    assert not (tmp_path / "ran").exists()
