"""The command line: usage errors are one line, exit code 2, no traceback."""

import json
import sys

import pytest

from tpu_compat import _process, cli
from conftest import check_ok, run_cli, subprocess_env


@pytest.mark.parametrize("argv,message", [
    (["frob"], "tpu-compat: error: argument COMMAND: invalid choice: 'frob'"),
    (["run", "--backend", "fpga", "x.py"], "argument --backend: invalid choice: 'fpga'"),
    (["run"], "tpu-compat run: error: give a SCRIPT or -m MODULE"),
    (["matrix", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
])
def test_usage_errors_in_process(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("argv,env,message", [
    # `run` looks for TensorFlow before it looks for the script or module.
    pytest.param(["run", "missing_script.py"], {},
                 "tpu-compat run: error: cannot run 'missing_script.py': no such file",
                 marks=pytest.mark.requires_tf),
    (["run", "--replicas", "0", "x.py"], {},
     "tpu-compat: error: --replicas='0' is not valid; expected an integer from 1 to 4096"),
    (["run", "x.py"], {"TPU_COMPAT_NUM_REPLICAS": "many"},
     "tpu-compat: error: TPU_COMPAT_NUM_REPLICAS='many' is not valid; expected an integer "
     "from 1 to 4096"),
    (["run", "x.py"], {"TPU_COMPAT_WARNINGS": "loud"},
     "tpu-compat: error: TPU_COMPAT_WARNINGS='loud' is not valid; allowed values: once, always, error, ignore"),
    (["run", "x.py"], {"TPU_COMPAT_STRICT": "maybe"},
     "tpu-compat: error: TPU_COMPAT_STRICT='maybe' is not valid; allowed values: auto, on, off"),
    (["run", "--strict", "yes", "x.py"], {},
     "tpu-compat run: error: argument --strict: invalid choice: 'yes' (choose from "
     "'auto', 'on', 'off')"),
    # `run -m` of a missing module exits 1 as python does (test_runner.py).
])
def test_usage_errors_exit_2_one_line(argv, env, message, tmp_path):
    result = run_cli(*argv, env=env, cwd=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == message
    assert result.stdout == ""


def test_backend_variable_error_from_run(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    result = run_cli("run", str(script), env={"TPU_COMPAT_BACKEND": "fpga"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("tpu-compat: error: TPU_COMPAT_BACKEND='fpga' is not "
                                     "valid; allowed values: auto, tpu, gpu, cpu")


@pytest.mark.requires_tf
def test_matrix_json_lists_every_record_with_installed_presence():
    from tpu_compat import legacy_api
    data = json.loads(check_ok(run_cli("matrix", "--format", "json")).stdout)
    assert data["tensorflow"].startswith("2.")
    assert [row["rule"] for row in data["apis"]] == [r.rule for r in legacy_api.RECORDS]
    by_rule = {row["rule"]: row for row in data["apis"]}
    assert by_rule["TPC001"]["installed_tf_has_it"] is False
    assert by_rule["TPC001"]["autofix"] is True


@pytest.mark.requires_tf
def test_doctor_reports_backend_keras_and_versions():
    result = run_cli("doctor", env={"TPU_COMPAT_NUM_REPLICAS": "2", "TF_USE_LEGACY_KERAS": None})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "backend" in out and "cpu: no TPU or GPU found; emulating a 2-core TPU" in out
    assert "tf.keras" in out and "tpu-compat run switches to tf-keras" in out
    assert "tensorflow" in out and "cloud-tpu-client" in out


@pytest.mark.requires_tf
def test_doctor_reports_misconfiguration():
    # The backend's problem line needs no fresh process (the Keras facts do:
    # test_doctor_reports_backend_keras_and_versions): doctor forked by the test
    # fork server, with TensorFlow imported as `tpu-compat run` imports it.
    result = _process.run_tensorflow_child([sys.executable, "-m", "tpu_compat", "doctor"], 600,
                                           env=subprocess_env(TPU_COMPAT_BACKEND="tpu"))
    assert result.returncode == 1
    assert "problem: backend: TPU_COMPAT_BACKEND=tpu but no TPU is reachable" in result.stdout


@pytest.mark.tf_free
def test_version_flag():
    from tpu_compat import __version__
    result = run_cli("--version")
    assert result.stdout.strip() == f"tpu-compat {__version__}"


@pytest.mark.tf_free
def test_import_tpu_compat_does_not_import_tensorflow():
    import subprocess
    code = ("import sys, tpu_compat, tpu_compat.cli; "
            "print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, env=subprocess_env())
    assert result.stdout.strip() == "False", result.stderr
