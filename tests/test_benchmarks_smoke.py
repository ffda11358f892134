"""Every benchmark runs: scripts/run_benchmarks.py --smoke, one benchmark per test.

Each runs at its tiny size in processes of its own, must exit 0 and report
every figure its section of docs/performance.md takes (the runner checks the
figures and says which one is missing). Nothing about timing is asserted. The
runner is given one benchmark per test so that its parametrization can mark
slow the ones that start several TensorFlow processes.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, subprocess_env

sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
import run_benchmarks  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.requires_tf

SCRIPT = os.path.join(REPO_ROOT, "scripts", "run_benchmarks.py")


# Two smoke runs are slow. The pod benchmark's: the emulated pod's chief and
# worker and native MultiWorkerMirroredStrategy's workers, each a TensorFlow
# process (about 58 s of CPU); the pod tests keep the pod itself in CI. The
# model-scale benchmark's: three ResNet-50 graphs even at its tiny size.
SLOW_SMOKE = ("pod", "model_scale")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW_SMOKE else name
    for name in sorted(run_benchmarks.BY_NAME)])
def test_benchmark_smoke_run_exits_0_with_its_figures(name, tmp_path):
    docs = tmp_path / "performance.md"
    shutil.copyfile(os.path.join(REPO_ROOT, "docs", "performance.md"), docs)
    before = docs.read_text(encoding="utf-8")
    result = subprocess.run([sys.executable, SCRIPT, "--smoke", "--only", name,
                             "--docs", str(docs)],
                            capture_output=True, text=True, env=subprocess_env(),
                            timeout=run_benchmarks.SMOKE_TIMEOUT + 60, check=False)
    assert result.returncode == 0, (
        f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
    line = re.search(rf"^run_benchmarks: {name}: (.+)$", result.stdout, flags=re.MULTILINE)
    assert line, result.stdout
    reported = dict(item.rsplit(" ", 1) for item in line.group(1).split(", "))
    expected = run_benchmarks.required_figures(run_benchmarks.BY_NAME[name])
    assert set(expected) <= set(reported)
    assert all(float(value) == float(value) for value in reported.values())  # no NaN
    assert "1 of 1 benchmarks ran" in result.stdout
    assert docs.read_text(encoding="utf-8") == before  # a smoke run writes nothing
