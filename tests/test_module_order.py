"""The suite's xdist workers take its modules costliest first
(tests/module_order.py), from the seconds scripts/module_seconds.py measures."""

import json
import os
import sys
import types

import pytest

import module_order
from conftest import REPO_ROOT

pytestmark = pytest.mark.tf_free
pytest_plugins = ["pytester"]

sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
import module_seconds  # noqa: E402  pylint: disable=wrong-import-position


def _items(*nodeids):
    return [types.SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_modules_go_costliest_first_and_stay_together():
    items = _items("tests/test_a.py::test_1", "tests/test_b.py::test_1",
                   "tests/test_a.py::test_2", "tests/test_c.py::test_1[x]",
                   "tests/test_c.py::test_1[y]", "tests/test_d.py::T::test_1")
    seconds = {"tests/test_c.py": 90.0, "tests/test_a.py": 5.0}
    module_order.costliest_modules_first(items, seconds)
    assert [item.nodeid for item in items] == [
        "tests/test_c.py::test_1[x]", "tests/test_c.py::test_1[y]",
        "tests/test_a.py::test_1", "tests/test_a.py::test_2",
        # Unmeasured modules: cheap, in the order collected.
        "tests/test_b.py::test_1", "tests/test_d.py::T::test_1"]


def test_every_measured_module_is_a_test_module_of_the_suite():
    seconds = module_order.load_seconds()
    assert seconds, module_order.SECONDS_FILE
    missing = [module for module in seconds if not os.path.isfile(os.path.join(REPO_ROOT, module))]
    assert not missing, (f"modules gone from tests/: regenerate {module_order.SECONDS_FILE} "
                         f"with scripts/module_seconds.py", missing)


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_cli" name="test_a" time="1.25"/>
<testcase classname="tests.test_cli" name="test_b[x]" time="2.5"/>
<testcase classname="tests.test_keras_tpu_model.TestSomething" name="test_c" time="4"/>
</testsuite></testsuites>
"""


def test_module_seconds_sums_each_modules_tests(tmp_path, capsys):
    report = tmp_path / "suite.xml"
    report.write_text(JUNIT, encoding="utf-8")
    output = tmp_path / "module_seconds.json"
    assert module_seconds.main([str(report), "--output", str(output)]) == 0
    assert json.loads(output.read_text(encoding="utf-8")) == {
        "tests/test_cli.py": 3.8, "tests/test_keras_tpu_model.py": 4.0}
    assert "2 modules, 8 s" in capsys.readouterr().out


def test_module_seconds_refuses_a_report_without_tests(tmp_path, capsys):
    report = tmp_path / "empty.xml"
    report.write_text('<testsuites><testsuite name="pytest" tests="0"/></testsuites>',
                      encoding="utf-8")
    output = tmp_path / "module_seconds.json"
    with pytest.raises(SystemExit) as exited:
        module_seconds.main([str(report), "--output", str(output)])
    assert exited.value.code == 2
    assert f"report={str(report)!r} has no test cases" in capsys.readouterr().err
    assert not output.exists()


PYTESTER_CONFTEST = """
import module_order

def pytest_collection_modifyitems(items):
    module_order.costliest_modules_first(items, {"test_late.py": 50.0})
"""

PYTESTER_MODULE = """
import os

def record(name):
    with open(os.path.join(os.environ["ORDER_LOG"]), "a") as log:
        log.write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {{name}}\\n")

{tests}
"""


def test_under_xdist_both_workers_start_with_the_costliest_module(pytester, monkeypatch):
    """Two workers, three modules of six tests each: the measured costliest
    module (test_late.py, collected last) is what each worker starts with."""
    pytester.makeconftest(PYTESTER_CONFTEST)
    for name in ("test_early", "test_middle", "test_late"):
        tests = "\n".join(f"def test_{i}():\n    record('{name}.{i}')\n" for i in range(6))
        pytester.makepyfile(**{name: PYTESTER_MODULE.format(tests=tests)})
    log = pytester.path / "order.log"
    monkeypatch.setenv("ORDER_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [os.path.join(REPO_ROOT, "tests"), os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=18)
    lines = [line.split() for line in log.read_text().splitlines()]
    first_of_each_worker = {}
    for worker, test in lines:
        first_of_each_worker.setdefault(worker, test.split(".")[0])
    assert set(first_of_each_worker) == {"gw0", "gw1"}, lines
    assert set(first_of_each_worker.values()) == {"test_late"}, lines
