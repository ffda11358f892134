"""--numerics on the command line and in the environment (no TensorFlow needed)."""

from tpu_compat import runner, settings
from tpu_compat.regress import script_process
from conftest import assert_one_error_line, run_cli


def test_run_exports_the_flag_for_the_program():
    environ = {}
    runner.prepare_environment(numerics="tpu", environ=environ)
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
