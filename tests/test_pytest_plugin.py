"""The pytest plugin, tested with pytest's own ``pytester``.

A run whose tests use TensorFlow is a separate process (the emulated TPU's
device layout is fixed once per process), forked by the suite's fork server;
the plugin's loading without TensorFlow is shown by a fresh one
(``runpytest_subprocess``). One run exercises the TensorFlow fixtures and the
per-replica children. Runs that start neither TensorFlow nor a child (usage
and collection errors, the settings' exports) are pytester's in-process runs
(issue 32's CI budget: a fresh pytest costs about a second of CPU).
"""

import configparser
import importlib.metadata
import os
import subprocess
import sys
import textwrap
import time
import types
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import REPO_ROOT, process_gone
from tpu_compat import _config, _process, _pytest_child, settings
from tpu_compat import pytest_plugin as plugin

pytest_plugins = ["pytester"]


def _entry_point_installed():
    return any(ep.name == "tpu_compat" and ep.value == "tpu_compat.pytest_plugin"
               for ep in importlib.metadata.entry_points(group="pytest11"))


# Installed (pip install -e .), pytest loads the plugin from its entry point;
# naming the module with -p as well would register it twice.
# Hypothesis's pytest plugin (an entry point too) imports all of Hypothesis as
# pytest starts: ~2 s of CPU per pytest process (issue 32's CI budget), in every
# run here and in every child it starts (a child gets the parent's -p), for a
# plugin none of these sessions uses.
PLUGIN_ARGS = ([] if _entry_point_installed() else ["-p", "tpu_compat.pytest_plugin"]) + [
    "-p", "no:hypothesispytest"]


@pytest.fixture
def run(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    for name in ("TPU_NAME", "TPU_COMPAT_BACKEND", "TPU_COMPAT_WARNINGS",
                 "TPU_COMPAT_FIDELITY", "TPU_COMPAT_NUMERICS"):
        monkeypatch.delenv(name, raising=False)

    def run_pytest(test_source, *args, directory=None, forked=False, in_process=False):
        """Runs pytest on ``test_module.py`` in ``directory`` (default: the root).

        ``forked``: by the suite's fork server, which has imported TensorFlow
        (a fresh process where it declines), for a session whose tests import
        TensorFlow anyway: no claim of it is about a process without it
        (issue 32's CI budget: a TensorFlow import less).
        ``in_process``: in this process (pytester's inline run), for sessions
        that start no TensorFlow and no child: what the plugin reads and
        exports is the environment, restored afterwards (issue 32's CI budget:
        a fresh pytest costs ~1 s of CPU).
        """
        where = pytester.path if directory is None else pytester.mkdir(directory)
        (where / "test_module.py").write_text(textwrap.dedent(test_source))
        monkeypatch.chdir(where)
        args = (*PLUGIN_ARGS, "-p", "no:cacheprovider", *args)
        if in_process:
            saved = dict(os.environ)  # pytest_configure exports into os.environ
            try:
                # Under xdist, pytest-benchmark's warning that it is disabled
                # would join this session's warnings summary.
                return pytester.runpytest_inprocess("-p", "no:benchmark", *args)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        if not forked:
            return pytester.runpytest_subprocess(*args, timeout=300)
        return _forked_pytest(args, where, pytester.path / "runpytest-forked")
    return run_pytest


def _forked_pytest(args, where, basetemp):
    """``python -m pytest ARGS`` in ``where``, as runpytest_subprocess runs it, but
    forked by the suite's fork server where one is named (conftest.py)."""
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *args]
    started = time.monotonic()
    with _process.popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env=dict(os.environ), cwd=str(where)) as process:
        try:
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
    return pytest.RunResult(process.returncode, stdout.splitlines(), stderr.splitlines(),
                            time.monotonic() - started)


# A conftest that leaves a file behind in every child process the plugin starts.
CHILD_DETECTOR = """
def pytest_configure(config):
    if config.getoption("tpu_compat_report_to", None):
        open("a_child_ran", "w").close()
"""


def test_entry_point_is_declared():
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO_ROOT, "setup.cfg"))
    assert config["options.entry_points"]["pytest11"].split() == [
        "tpu_compat", "=", "tpu_compat.pytest_plugin"]


@pytest.mark.requires_tf
def test_fixtures_replica_counts_in_children_and_tpu_numerics(run, pytester):
    # Run from a subdirectory of the rootdir: node ids and the current
    # directory then differ, as in `cd tests && pytest`. One child session
    # (it imports TensorFlow) serves the fixtures, the replica counts and
    # --tpu-compat-numerics=tpu (issue 32's CI budget: one TensorFlow run).
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(CHILD_DETECTOR)
    result = run("""
        import pytest
        import tensorflow as tf

        @pytest.mark.tpu_replicas(1, 2)
        def test_strategy_has_the_marked_replicas(tpu_strategy, tpu_replicas):
            assert tpu_strategy.num_replicas_in_sync == tpu_replicas
            ones = tpu_strategy.run(lambda: tf.constant(1.0))
            assert float(tpu_strategy.reduce("SUM", ones, axis=None)) == tpu_replicas

        @pytest.mark.parametrize("tpu_strategy_v1", [1, 3], indirect=True)
        def test_v1_steps_per_run(tpu_strategy_v1, tpu_resolver, request):
            steps = request.node.callspec.params["tpu_strategy_v1"]
            assert tpu_strategy_v1.extended.steps_per_run == steps
            assert tpu_strategy_v1.num_replicas_in_sync == 2
            assert tpu_resolver.master() == ""

        @pytest.mark.tpu_replicas(1)
        def test_failure_in_a_child(tpu_replicas):
            print("printed in the child")
            assert tpu_replicas == 3

        @pytest.mark.tpu_replicas(1)
        def test_skip_in_a_child():
            pytest.skip("skipped in the child")

        def test_matmul_steps_round_under_tpu_numerics(tpu_strategy):
            a = tf.constant([[1.0 + 2.0 ** -8, 1.0 + 2.0 ** -9]])  # a tie, a round-down
            b = tf.constant([[1.0], [1.0]])
            step = tf.function(lambda: tpu_strategy.run(lambda: tf.matmul(a, b)))
            value = tpu_strategy.experimental_local_results(step())[0].numpy()[0, 0]
            # Both operands round to 1 in bfloat16; exact float32 gives 2 + 2^-8 + 2^-9.
            assert value == tf.constant(2.0).numpy(), repr(value)
    """, "--tpu-compat-replicas=2", "--tpu-compat-numerics=tpu", "-rs", "--junitxml=report.xml",
                 directory="sub", forked=True)
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*test_failure_in_a_child*replicas=1*",
        "*assert 1 == 3*",
        "*Captured stdout call*",
        "printed in the child",
        "SKIPPED [[]1[]] test_module.py:*: skipped in the child",
        "*1 failed, 5 passed, 1 skipped*",
    ])
    cases = {case.get("name"): case for case in
             ElementTree.parse(pytester.path / "sub" / "report.xml").getroot().iter("testcase")}
    assert sorted(cases) == [
        "test_failure_in_a_child[replicas=1]", "test_matmul_steps_round_under_tpu_numerics",
        "test_skip_in_a_child[replicas=1]",
        "test_strategy_has_the_marked_replicas[replicas=1]",
        "test_strategy_has_the_marked_replicas[replicas=2]",
        "test_v1_steps_per_run[1]", "test_v1_steps_per_run[3]"]
    assert cases["test_failure_in_a_child[replicas=1]"].find("failure") is not None
    assert (pytester.path / "sub" / "a_child_ran").exists()


def test_loads_without_tensorflow_and_shows_its_options(run):
    result = run("""
        import sys

        def test_tensorflow_not_imported(request):
            assert request.config.pluginmanager.hasplugin("tpu_compat") or \\
                request.config.pluginmanager.hasplugin("tpu_compat.pytest_plugin")
            assert "tensorflow" not in sys.modules
    """)
    result.assert_outcomes(passed=1)
    help_text = run("", "--help").stdout.str()
    # One option per settings row that names one (tpu_compat/settings_rows.py).
    for setting in settings.pytest_rows():
        shown = (f"{setting.pytest_option} " if setting.pytest_const is not None else
                 f"{setting.pytest_option}={setting.metavar or setting.name.upper()}")
        assert shown in help_text
    for option in ("--tpu-compat-replicas=N", "--tpu ", "--tpu-compat-warnings=WARNINGS",
                   "--tpu-compat-child-timeout=SECONDS", "--tpu-compat-fidelity=FIDELITY",
                   "--tpu-compat-numerics=NUMERICS"):
        assert option in help_text
    assert "--tpu-compat-report-to" not in help_text


@pytest.fixture
def probe_row(monkeypatch):
    """A settings row the plugin has never heard of, with a pytest option."""
    row = settings.Setting(
        "probe", "TPU_COMPAT_PROBE_OF_TEST_PYTEST_PLUGIN", _config.any_text,
        {settings.PYTEST: None}, values="text", meaning="a row only this test has",
        summary="probe", pytest_option="--tpu-compat-probe")
    monkeypatch.setattr(settings, "ROWS", settings.ROWS + (row,))
    monkeypatch.setitem(settings._BY_NAME, row.name, row)  # pylint: disable=protected-access
    saved = dict(os.environ)  # pytest_configure exports into os.environ
    yield row
    os.environ.clear()
    os.environ.update(saved)


def test_a_new_settings_row_gets_an_option_an_export_and_a_child_flag(pytester, probe_row):
    # Issue #32: the options and exports are walked from the rows, not written
    # out in the plugin; this row is added without touching the plugin.
    os.environ.pop(probe_row.variable, None)
    config = pytester.parseconfigure(*PLUGIN_ARGS, "--tpu-compat-probe=given")
    assert config.getoption("tpu_compat_probe") == "given"
    assert plugin.resolve(config).probe == "given"
    assert os.environ[probe_row.variable] == "given"  # exported, as run exports flags
    item = types.SimpleNamespace(config=config, nodeid="t.py::test_x", path="t.py")
    command = _pytest_child.child_command(item, 2, "reports.jsonl", "basetemp")
    assert command[command.index("--tpu-compat-probe") + 1] == "given"
    assert command[command.index("--tpu-compat-replicas") + 1] == "2"
    help_text = config._parser.optparser.format_help()  # pylint: disable=protected-access
    assert "--tpu-compat-probe=PROBE" in help_text and "probe (default: " in help_text


def test_bad_marker_arguments_are_a_collection_error(run):
    result = run("""
        import pytest

        @pytest.mark.tpu_replicas(0, 2)
        def test_bad_counts():
            pass
    """, "-rs", in_process=True)
    result.stdout.fnmatch_lines([
        "*test_module.py::test_bad_counts: @pytest.mark.tpu_replicas takes one or more "
        "positive int replica counts, got tpu_replicas(0, 2)*"])
    assert result.ret != 0


@pytest.mark.requires_tf
def test_unconditional_skip_starts_no_child(run, pytester):
    pytester.makeconftest(CHILD_DETECTOR)
    result = run("""
        import pytest

        @pytest.mark.tpu_replicas(3)
        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass
    """, "-rs", in_process=True)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_module.py:*: not today"])
    assert not (pytester.path / "a_child_ran").exists()


def test_tests_run_with_tpu_fidelity_and_exact_numerics_unless_chosen(run, monkeypatch):
    # One source, three runs, for both settings (issue 32's CI budget).
    source = """
        import os
        from tpu_compat import settings

        def test_settings(request):
            # What the fixtures read at trace time and the children inherit.
            assert settings.read("fidelity") == os.environ["TPU_COMPAT_FIDELITY"]
            print("FIDELITY=" + settings.read("fidelity"))
            print("NUMERICS=" + settings.read("numerics"))
    """
    run(source, "-s", in_process=True).stdout.fnmatch_lines(
        ["*FIDELITY=tpu*", "NUMERICS=exact*"])
    run(source, "-s", "--tpu-compat-fidelity=cpu", "--tpu-compat-numerics=tpu", in_process=True
        ).stdout.fnmatch_lines(["*FIDELITY=cpu*", "NUMERICS=tpu*"])
    monkeypatch.setenv("TPU_COMPAT_FIDELITY", "cpu")
    run(source, "-s", in_process=True).stdout.fnmatch_lines(
        ["*FIDELITY=cpu*", "NUMERICS=exact*"])


def test_warnings_error_fails_tests_that_use_legacy_apis(run):
    source = """
        import pytest
        from tpu_compat.deprecation import warn_legacy

        @pytest.mark.filterwarnings("ignore::DeprecationWarning")
        def test_calls_a_legacy_api():
            warn_legacy("TPC001")   # what an adapter does for experimental_run_v2

        def test_clean():
            pass
    """
    strict = run(source, "--tpu-compat-warnings=error")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(["*TPUCompatDeprecationWarning: Strategy.experimental_run_v2*"
                                 "[[]TPC001[]]*"])
    run(source).assert_outcomes(passed=2)


@pytest.mark.requires_tf
def test_real_tpu_without_one_is_a_clear_setup_error(run):
    result = run("""
        def test_needs_a_tpu(tpu_strategy):
            pass
    """, "--tpu", forked=True)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*TPU_COMPAT_BACKEND=tpu but no TPU is reachable*"])


# A child that hangs at start-up, after starting a grandchild of its own.
HANGING_CHILD = """
import os, subprocess, sys, time

def pytest_configure(config):
    if config.getoption("tpu_compat_report_to", None):
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open("pids.tmp", "w") as handle:
            handle.write(f"{os.getpid()} {grandchild.pid}")
        os.replace("pids.tmp", "pids")
        time.sleep(120)
"""


@pytest.mark.requires_tf
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_hanging_child_is_killed_at_its_timeout(run, pytester):
    pytester.makeconftest(HANGING_CHILD)
    result = run("""
        import pytest

        @pytest.mark.tpu_replicas(1)
        def test_in_a_child():
            pass
    """, "--tpu-compat-child-timeout=5")  # the child's start-up (no TensorFlow) must fit in it
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_module.py::test_in_a_child[[]replicas=1[]]: the child pytest process "
        "running this test on an emulated TPU with 1 replicas did not finish within 5 s "
        "(--tpu-compat-child-timeout); it and every process it started were killed*"])
    pids = [int(pid) for pid in (pytester.path / "pids").read_text().split()]
    assert all(process_gone(pid) for pid in pids)


@pytest.mark.parametrize("args,message", [
    (["--tpu-compat-child-timeout=0"],
     "--tpu-compat-child-timeout='0' is not valid; expected a positive number of seconds"),
    (["-o", "tpu_compat_child_timeout=soon"],
     "tpu_compat_child_timeout='soon' is not valid; expected a positive number of seconds"),
    (["--tpu-compat-child-timeout=1e308"],
     "--tpu-compat-child-timeout='1e308' is not valid; expected a positive number of "
     "seconds, at most 86400"),
])
def test_bad_child_timeout_is_a_usage_error(run, args, message):
    result = run("def test_nothing():\n    pass\n", *args, in_process=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_bad_num_hosts_variable_is_a_usage_error(run, monkeypatch):
    """Issue 33: the plugin ignored TPU_COMPAT_NUM_HOSTS=abc."""
    monkeypatch.setenv("TPU_COMPAT_NUM_HOSTS", "abc")
    result = run("def test_nothing():\n    pass\n", in_process=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*TPU_COMPAT_NUM_HOSTS='abc' is not valid; expected a "
                                 "positive integer*"])
