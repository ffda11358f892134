"""Running one test item in a child pytest process, and replaying its reports.

The emulated TPU's device layout is fixed once per process, so a test that
must see another replica count runs in a fresh ``python -m pytest NODEID``
whose ``--tpu-compat-replicas`` is that count. The child writes each of its
test reports, serialized with pytest's own ``pytest_report_to_serializable``
hook, to a file; the parent deserializes them and logs them as its own, so
terminal output, JUnit XML, xfail/skip handling and xdist see an ordinary test.

The child runs in its own process group (:mod:`tpu_compat._process`) with a
time limit: at the limit, or when this process is interrupted, the child and
everything it started are killed; a timeout fails the test with a report
naming the test and the limit.
"""

import argparse
import json
import os
import sys
import tempfile

import pytest

from tpu_compat import _process, settings

# Hidden option: "you are the child; append your reports to FILE". Its
# presence is also what stops a child from delegating again.
_REPORT_TO = "--tpu-compat-report-to"
_TAIL_LINES = 40
# Generous: a child imports TensorFlow and may train a small model; a test
# that needs longer sets --tpu-compat-child-timeout (or the ini option).
DEFAULT_TIMEOUT_SECONDS = 600.0

# The pytest plugin module, which a child pytest must load under the parent's name.
_PLUGIN_MODULE = "tpu_compat.pytest_plugin"


def add_internal_options(group):
    group.addoption(_REPORT_TO, dest="tpu_compat_report_to", metavar="FILE",
                    default=None, help=argparse.SUPPRESS)


def is_child(config):
    return config.getoption("tpu_compat_report_to") is not None


class ReportForwarder:
    """Registered in a child: appends each test report to the parent's file."""

    def __init__(self, config):
        self._config = config
        self._path = config.getoption("tpu_compat_report_to")

    def pytest_runtest_logreport(self, report):
        data = self._config.hook.pytest_report_to_serializable(
            config=self._config, report=report)
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(data) + "\n")


def register_forwarder(config):
    if is_child(config):
        config.pluginmanager.register(ReportForwarder(config), "tpu_compat_report_forwarder")


def _plugin_name(config):
    """The name the parent registered this plugin under, for the child's ``-p``.

    ``tpu_compat`` when loaded from the entry point; the module path when
    given with ``-p`` or ``pytest_plugins``. Loading it under another name
    too would make pytest refuse the duplicate registration.
    """
    # The plugin module is loaded (it calls this), so it is looked up, not
    # imported: this module stays below pytest_plugin, with no import circle.
    plugin = sys.modules.get(_PLUGIN_MODULE)
    return (config.pluginmanager.get_name(plugin) if plugin is not None else None) or _PLUGIN_MODULE


def _test_argument(item):
    """``item`` as a command-line argument that works from any directory.

    Node ids are relative to the rootdir, but arguments are resolved from the
    current directory (the parent's, which the test may rely on).
    """
    _, separator, name_in_file = item.nodeid.partition("::")
    return f"{item.path}{separator}{name_in_file}"


def child_command(item, count, report_path, basetemp):
    """The ``python -m pytest`` command running ``item`` on ``count`` replicas."""
    config = item.config
    option = config.option
    command = [sys.executable, "-m", "pytest", _test_argument(item), "-p", _plugin_name(config),
               "--rootdir", str(config.rootpath), "--basetemp", basetemp,
               settings.row("num_replicas").pytest_option, str(count), _REPORT_TO, report_path,
               # The parent owns the cache (lastfailed) and the distribution.
               "-p", "no:cacheprovider", "-q"]
    if config.inipath is not None:
        command += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        command += ["-n", "0"]
    # The settings rows' options the parent was given (the replica count is
    # the child's own): their exports reach the child through the environment
    # anyway, but an option can do more (--tpu-compat-warnings's test filters).
    for setting in settings.pytest_rows():
        given = config.getoption(setting.pytest_dest)
        if given is None or setting.name == "num_replicas":
            continue
        command += [setting.pytest_option] if setting.pytest_const is not None else [
            setting.pytest_option, str(given)]
    for plugin in getattr(option, "plugins", None) or ():
        if plugin != _plugin_name(config):
            command += ["-p", plugin]
    for warning_filter in getattr(option, "pythonwarnings", None) or ():
        command += ["-W", warning_filter]
    for override in getattr(option, "override_ini", None) or ():
        command += ["-o", override]
    return command


def _tail(text):
    return "\n".join(text.rstrip().splitlines()[-_TAIL_LINES:])


def _outputs(finished):
    return (f"--- its stdout (tail) ---\n{_tail(finished.stdout)}\n"
            f"--- its stderr (tail) ---\n{_tail(finished.stderr)}")


def _crash_report(item, count, finished):
    """A failed call report for a child that reported nothing about the test."""
    return pytest.TestReport(
        nodeid=item.nodeid, location=item.location, keywords={},
        outcome="failed", when="call",
        longrepr=(f"the child pytest process running this test on an emulated TPU "
                  f"with {count} replicas exited with code {finished.returncode} "
                  f"without reporting a result\n{_outputs(finished)}"))


def _timeout_report(item, count, timeout, finished, when):
    return pytest.TestReport(
        nodeid=item.nodeid, location=item.location, keywords={},
        outcome="failed", when=when,
        longrepr=(f"{item.nodeid}: the child pytest process running this test on an "
                  f"emulated TPU with {count} replicas did not finish within "
                  f"{timeout:g} s (--tpu-compat-child-timeout); it and every process "
                  f"it started were killed\n{_outputs(finished)}"))


def child_environment(count, hosts=None, environ=None):
    """The environment of a child testing on ``count`` replicas (over ``hosts``)."""
    env = dict(os.environ if environ is None else environ)
    # A child process starts without TensorFlow: this is what its
    # tpu_compat configures the devices with.
    env[settings.REPLICAS_VAR] = str(count)
    if hosts is not None:
        # An emulated pod slice: the child starts its hosts' worker processes
        # (their own sessions), which end when it ends: their stdin closes.
        env[settings.HOSTS_VAR] = str(hosts)
    return env


def run_in_child(item, count, timeout=DEFAULT_TIMEOUT_SECONDS, hosts=None):
    """Runs ``item`` in a child process on ``count`` replicas; returns its reports.

    ``hosts``: the emulated pod's hosts, when the marker asks for them. The
    child gets ``timeout`` seconds. An interrupt here (Ctrl-C) kills it,
    with everything it started, and propagates.
    """
    config = item.config
    with tempfile.TemporaryDirectory(prefix="tpu_compat_child_") as workdir:
        report_path = os.path.join(workdir, "reports.jsonl")
        open(report_path, "w", encoding="utf-8").close()
        command = child_command(item, count, report_path, os.path.join(workdir, "basetemp"))
        env = child_environment(count, hosts)
        finished = _process.run_in_own_group(
            command, timeout, cwd=str(config.invocation_params.dir), env=env)
        with open(report_path, encoding="utf-8") as handle:
            lines = [line for line in handle if line.strip()]
    reports = []
    for line in lines:
        report = config.hook.pytest_report_from_serializable(
            config=config, data=json.loads(line))
        if isinstance(report, pytest.TestReport):
            # The child ran this one item; its id is the parent's by construction.
            report.nodeid = item.nodeid
            if report.skipped and isinstance(report.longrepr, list):
                # (path, line, reason) came back from JSON as a list; the
                # terminal's skip summary insists on a tuple.
                report.longrepr = tuple(report.longrepr)
            reports.append(report)
    if finished.timed_out:
        # Hung before its call report (setup, the test) or after it (teardown).
        ran = any(report.when == "call" for report in reports)
        reports.append(_timeout_report(item, count, timeout, finished,
                                       "teardown" if ran else "call"))
    elif not any(report.when == "call" or report.outcome != "passed" for report in reports):
        reports.append(_crash_report(item, count, finished))
    return reports
