"""benchmarks/bench_scan.py runs on a tree where scan finds something.

Scan exits 1 when it reports a finding (linter-style, tpu_compat/exit_codes.py);
the benchmark must take that as success and still fail on anything else.
"""

import os
import subprocess
import sys

from conftest import REPO_ROOT, subprocess_env

BENCH = os.path.join(REPO_ROOT, "benchmarks", "bench_scan.py")
LEGACY = ("import tensorflow as tf\n"
          "strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=4)\n")


def _bench(*args):
    return subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)


def test_a_tree_with_findings_is_measured(tmp_path):
    (tmp_path / "legacy.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text("x = 1\n")
    completed = _bench(str(tmp_path), "--repeat", "1", "--skip-tf-upgrade")
    assert completed.returncode == 0, completed.stderr
    assert "| 1 |" in completed.stdout  # one run
    assert "2 high + 0 low-confidence findings, 0 errors" in completed.stdout


def test_a_failing_scan_fails_the_benchmark(tmp_path):
    completed = _bench(str(tmp_path / "missing"), "--repeat", "1", "--skip-tf-upgrade")
    assert completed.returncode != 0
    assert "failed (exit code 2)" in completed.stderr
