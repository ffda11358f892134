"""Whole programs through the migration (issue 35): upgrade a real-shaped
legacy program, run the result under TF 2.21's rules, get the same numbers.

* A TPUStrategy custom loop of the TF 2.1 era (absl flags, TPU bring-up,
  model_dir): the original under `tpu-compat run`, the upgraded copy under
  `tpu-compat run --warnings error --strict on` (no legacy API may be used),
  2 emulated cores each in CI, 8 in the slow run; every `KEY: number` line must agree.
* A program that uses no TPU: its upgraded copy runs with plain `python` on
  stock TF 2.21 (tf_keras, `TF_USE_LEGACY_KERAS=1`), with tpu_compat neither
  on the path nor in sys.modules, and prints the legacy run's numbers.
"""

import math
import os
import shutil
import subprocess
import sys

import pytest
from conftest import check_ok, parse_numbers, run_cli

from tpu_compat.migrate import report, upgrade

pytestmark = pytest.mark.requires_tf

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrate_programs")


def _upgraded_copy(name, tmp_path):
    legacy = tmp_path / name
    shutil.copy(os.path.join(PROGRAMS, name), legacy)
    result = upgrade.upgrade_file(str(legacy))
    assert result.error is None, result.error
    assert result.changed and report.legacy_free(result), result.outcomes
    migrated = tmp_path / name.replace("_legacy", "_migrated")
    migrated.write_bytes(result.output)
    return legacy, migrated


def _same_numbers(legacy, migrated):
    assert legacy and set(legacy) == set(migrated), (legacy, migrated)
    for key, value in legacy.items():
        assert math.isclose(value, migrated[key], rel_tol=1e-5, abs_tol=1e-6), (
            key, value, migrated[key])


# The claim is the migration's (the migrated program computes what the legacy one
# did), which two replicas show in CI, as in test_migrate_keras_era; eight are slow
# (a TF 2 custom loop's 8-core parity stays in CI in test_parity).
@pytest.mark.whole_program(ci_replicas=2)
@pytest.mark.parametrize("replicas", [2, 8])
def test_tpu_program_migrates_and_runs_strict_with_the_same_numbers(tmp_path, replicas):
    legacy, migrated = _upgraded_copy("tpu_custom_loop_legacy.py", tmp_path)
    before = run_cli("run", "--replicas", str(replicas), str(legacy),
                     f"--model_dir={tmp_path / 'a'}")
    check_ok(before)
    after = run_cli("run", "--replicas", str(replicas), "--warnings", "error", "--strict", "on",
                    str(migrated), f"--model_dir={tmp_path / 'b'}")
    check_ok(after)
    numbers = parse_numbers(before.stdout)
    assert {"loss_0", "loss_2", "w_sum"} <= set(numbers)
    assert numbers["loss_2"] < numbers["loss_0"]  # it trains
    _same_numbers(numbers, parse_numbers(after.stdout))
    assert os.listdir(tmp_path / "b")  # the checkpoint was written


def test_program_without_tpu_runs_migrated_on_stock_tf_with_plain_python(tmp_path):
    legacy, migrated = _upgraded_copy("mirrored_numpy_legacy.py", tmp_path)
    before = run_cli("run", "--replicas", "1", str(legacy))
    check_ok(before)
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("TPU_COMPAT")}
    env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    after = subprocess.run([sys.executable, str(migrated)], capture_output=True, text=True,
                           env=env, cwd=str(tmp_path), timeout=300)
    assert after.returncode == 0, after.stderr[-3000:]
    numbers = parse_numbers(after.stdout)
    assert numbers.pop("tpu_compat_loaded") == 0
    legacy_numbers = parse_numbers(before.stdout)
    legacy_numbers.pop("tpu_compat_loaded")
    _same_numbers(legacy_numbers, numbers)
