"""`scan` and `upgrade` of everything the suite migrates, with no TensorFlow and no NumPy.

CI's TF-free lane (.ci/run) runs the tests marked ``tf_free``: what a missing
TensorFlow can break. The migration tests' claims are about the text they
write, which lane 1 checks; what lane 2 adds is that none of that code needs
TensorFlow (or NumPy, which comes with it). This one run proves it for every
rewrite path the suite exercises: every program the suite upgrades, and one
snippet per case of every legacy-table row (tests/test_migrate_table_walk.py),
through the command line, in one process that finds no TensorFlow, tf-keras,
Keras or NumPy. Where they are installed (lane 1) the path finder hides them,
so the claim is checked there too.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

import test_migrate_table_walk as table_walk
from conftest import EXAMPLES, REPO_ROOT, subprocess_env
from test_tf_support import NO_TENSORFLOW
from tpu_compat import legacy_api

pytestmark = pytest.mark.tf_free

# What the suite migrates, under tests/ and examples/ (tests/scenarios are
# programs the suite runs, not migrates).
CORPUS = (EXAMPLES,
          os.path.join(REPO_ROOT, "tests", "migrate_corpus"),
          os.path.join(REPO_ROOT, "tests", "migrate_programs"),
          os.path.join(REPO_ROOT, "tests", "seeds"))

HIDDEN = ("tensorflow", "tf_keras", "keras", "numpy")

NO_NUMPY = NO_TENSORFLOW.replace('("tensorflow", "tf_keras", "keras")', repr(HIDDEN))

SCAN_AND_UPGRADE = """
import json
from tpu_compat.cli import main
tree, report, out, out_tf2 = sys.argv[1:5]
# scan's analysis of every file runs in the upgrade below (scan.analyze_text, one
# run over the tree, not two); its JSON report is written for the examples.
print("SCAN", main(["scan", "--format", "json", "--exit-zero", tree + "/examples"]))
# The README's examples as a user first sees them: text findings (exit 1), a diff.
print("SCAN_TEXT", main(["scan", tree + "/examples"]))
print("DIFF", main(["upgrade", "--diff", tree + "/examples"]))
print("UPGRADE", main(["upgrade", "--output", out, "--report", report, tree]))
# The TPUEstimator programs, through the TF 2 driver's migration too.
print("TF2", main(["upgrade", "--estimator-to-tf2", "--output", out_tf2,
                   tree + "/migrate_programs"]))
print("LOADED", json.dumps(sorted(name for name in sys.modules
                                  if name.split(".")[0] in HIDDEN)))
"""


def test_scan_and_upgrade_of_the_whole_corpus_need_no_tensorflow_or_numpy(tmp_path):
    assert NO_NUMPY != NO_TENSORFLOW  # the finder hides NumPy too
    tree = tmp_path / "tree"
    for source in CORPUS:
        shutil.copytree(source, tree / os.path.basename(source))
    walk = tree / "table_walk"
    walk.mkdir()
    for number, (_, _, snippet) in enumerate(table_walk.CASES):
        (walk / f"case_{number:05d}.py").write_text(snippet, encoding="utf-8")
    report = tmp_path / "report.json"
    code = (NO_NUMPY + f"HIDDEN = {HIDDEN!r}\n" + SCAN_AND_UPGRADE)
    result = subprocess.run(
        [sys.executable, "-c", code, str(tree), str(report), str(tmp_path / "out"),
         str(tmp_path / "out_tf2")],
        capture_output=True, text=True, env=subprocess_env(), timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines()
                 if line.split(" ", 1)[0] in ("SCAN", "SCAN_TEXT", "DIFF", "UPGRADE", "TF2",
                                              "LOADED"))
    assert json.loads(lines["LOADED"]) == []
    assert lines["SCAN"] == "0"  # --exit-zero: findings, and no error
    assert lines["SCAN_TEXT"] == "1" and lines["DIFF"] == "0"
    text = result.stdout[result.stdout.index("\nSCAN "):]
    assert "TPC001" in text and "+++ " in text
    assert lines["UPGRADE"] == lines["TF2"] == "0", result.stderr[-3000:]
    scanned = json.loads(result.stdout[:result.stdout.index("\nSCAN ")])
    assert "TPC001" in {finding["rule"] for finding in scanned["findings"]}
    # Every row of the legacy table was found (upgrade's report lists each
    # finding of scan's analysis), so every rule's path ran.
    found = {finding["rule"] for finding in json.loads(report.read_text())["findings"]}
    assert {record.rule for record in legacy_api.RECORDS} <= found
    assert (tmp_path / "out" / "table_walk").is_dir()
    assert any((tmp_path / "out_tf2").rglob("tpu_estimator_tf2.py"))
