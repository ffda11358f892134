"""Emulated pod entry points: settings validated up front, each error naming its source.

In process, without TensorFlow (or in subprocesses that fail before importing
it): `tpu-compat run --hosts`, the pod variables, `tpu-compat worker`'s
arguments, the pytest marker's ``hosts=``, doctor's facts and the runner's
handling of pod errors. The multi-process faults are in test_pod_faults.py.
"""

import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import types

import pytest

from conftest import REPO_ROOT, assert_one_error_line, run_cli, subprocess_env
from tpu_compat import _config, _pytest_child, pytest_marker, runner, settings
from tpu_compat.commands import doctor
from tpu_compat.pod import config as pod_config
from tpu_compat.pod import errors as pod_errors
from tpu_compat.pod import faults as pod_faults
from tpu_compat.pod import session as pod_session
from tpu_compat.pod import worker as pod_worker


_ROW_OF = {"hosts": "num_hosts", "replicas": "num_replicas"}  # --hosts, --replicas


def _prepare(environ=None, **flags):
    environ = {} if environ is None else environ
    runner.prepare_environment({_ROW_OF[flag]: value for flag, value in flags.items()},
                               environ=environ)
    return environ


# -- tpu-compat run --hosts and the variables ------------------------------------


def test_hosts_flag_sets_the_variable():
    environ = _prepare(hosts="2", replicas="4")
    assert environ[settings.HOSTS_VAR] == "2" and environ[settings.REPLICAS_VAR] == "4"
    assert _prepare(hosts=4)[settings.HOSTS_VAR] == "4"  # 8 replicas by default


@pytest.mark.parametrize("flags,environ,message", [
    ({"hosts": "0"}, {}, "--hosts='0' is not valid; expected a positive integer"),
    ({"hosts": "two"}, {}, "--hosts='two' is not valid; expected a positive integer"),
    ({}, {"TPU_COMPAT_NUM_HOSTS": "-1"},
     "TPU_COMPAT_NUM_HOSTS='-1' is not valid; expected a positive integer"),
    ({}, {"TPU_COMPAT_POD_TIMEOUT": "soon"},
     "TPU_COMPAT_POD_TIMEOUT='soon' is not valid; expected a positive number of seconds"),
    ({}, {"TPU_COMPAT_POD_TIMEOUT": "0"},
     "TPU_COMPAT_POD_TIMEOUT='0' is not valid; expected a positive number of seconds"),
    ({}, {"TPU_COMPAT_POD_PORT": "70000"},
     "TPU_COMPAT_POD_PORT='70000' is not valid; expected a port number from 1 to 65535"),
    ({}, {"TPU_COMPAT_POD_PORT": "http"},
     "TPU_COMPAT_POD_PORT='http' is not valid; expected a port number from 1 to 65535"),
    ({}, {"TPU_COMPAT_POD_LOGS": "/dev/null"},
     "TPU_COMPAT_POD_LOGS='/dev/null' is not valid; expected a directory, or a path whose "
     "parent directory exists"),
    # An OverflowError in Python's waits, 2 hosts later.
    ({"hosts": "2"}, {"TPU_COMPAT_POD_TIMEOUT": "1e308"},
     "TPU_COMPAT_POD_TIMEOUT='1e308' is not valid; expected a positive number of seconds, "
     "at most 86400"),
    ({"hosts": "4"}, {"TPU_COMPAT_POD_PORT": "65534"},
     "TPU_COMPAT_POD_PORT=65534 is not valid for 4 hosts (ports 65534 to 65537); "
     "expected a port number from 1 to 65532"),
    # The replicas must split evenly: the error names both settings, as given.
    ({"hosts": "3", "replicas": "4"}, {},
     "--replicas=4 cannot be split over --hosts=3 hosts"),
    ({"hosts": "3"}, {},
     "TPU_COMPAT_NUM_REPLICAS=8 (the default) cannot be split over --hosts=3 hosts"),
    ({}, {"TPU_COMPAT_NUM_HOSTS": "3", "TPU_COMPAT_NUM_REPLICAS": "4"},
     "TPU_COMPAT_NUM_REPLICAS=4 cannot be split over TPU_COMPAT_NUM_HOSTS=3 hosts"),
    ({"replicas": "6"}, {"TPU_COMPAT_NUM_HOSTS": "4"},
     "--replicas=6 cannot be split over TPU_COMPAT_NUM_HOSTS=4 hosts"),
    ({}, {"TF_CONFIG": "{not json"}, "TF_CONFIG is not valid JSON"),
    ({}, {"TF_CONFIG": json.dumps({"task": {"type": "chief", "index": 0}})},
     "TF_CONFIG names this process the chief but has no valid cluster.worker list"),
    ({"hosts": "3"}, {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                               "task": {"type": "chief", "index": 0}})},
     "TPU_COMPAT_NUM_HOSTS=3 but TF_CONFIG lists 2 workers"),
])
def test_bad_pod_settings_name_their_source(flags, environ, message):
    with pytest.raises(_config.ConfigError) as error:
        _prepare(dict(environ), **flags)
    assert message in str(error.value)


def test_tf_config_chief_brings_its_own_workers():
    # Their cores are theirs: no split check against the replica default.
    environ = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["m1:2222", "m2:2222", "m3:2222"]},
                                        "task": {"type": "chief", "index": 0}})}
    _prepare(environ)
    assert pod_config.requested_pod(environ) == (3, ("m1:2222", "m2:2222", "m3:2222"))
    # A worker's TF_CONFIG, or none: no pod for this process.
    assert pod_config.requested_pod({"TF_CONFIG": json.dumps(
        {"cluster": {"worker": ["m1:2222"]}, "task": {"type": "worker", "index": 0}})}) is None
    assert pod_config.requested_pod({"TPU_COMPAT_NUM_HOSTS": "1"}) is None


def test_run_reports_a_bad_split_in_one_line_before_importing_tensorflow(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('not reached')\n")
    result = run_cli("run", "--hosts", "3", "--replicas", "4", str(script), cwd=str(tmp_path))
    assert_one_error_line(result, "--replicas=4 cannot be split over --hosts=3 hosts")
    result = run_cli("run", str(script), cwd=str(tmp_path),
                     env={"TPU_COMPAT_NUM_HOSTS": "2", "TPU_COMPAT_POD_TIMEOUT": "-5"})
    assert_one_error_line(result, "TPU_COMPAT_POD_TIMEOUT='-5' is not valid")


# -- tpu-compat worker -----------------------------------------------------------


def _tf_config(kind, index, workers=("localhost:1", "localhost:2")):
    return json.dumps({"cluster": {"worker": list(workers)}, "task": {"type": kind, "index": index}})


def _needs_tf(*values):
    # `tpu-compat worker` looks for TensorFlow before it reads its cluster.
    return pytest.param(*values, marks=pytest.mark.requires_tf)


@pytest.mark.parametrize("args,env,code,message", [
    _needs_tf((), {"TF_CONFIG": None}, 2, "give --cluster and --task, or set TF_CONFIG"),
    _needs_tf(("--cluster", "localhost:5,localhost:6", "--task", "2"), {}, 2,
              "--task=2 is not valid; allowed values: 0 to 1 (the cluster has 2 workers)"),
    _needs_tf(("--cluster", "localhost:5", "--task", "0", "--cores", "0"), {}, 2,
              "--cores='0' is not valid; expected an integer from 1 to 4096"),
    _needs_tf(("--cluster", "localhost:5", "--task", "0", "--cores", "\u0663"), {}, 2,
              "--cores='\u0663' is not valid; expected an integer from 1 to 4096"),
    _needs_tf(("--cluster", "localhost:5", "--task", "\uff10"), {}, 2,
              "--task='\uff10' is not valid; expected a non-negative integer"),
    # bind() raised OverflowError: the port is checked with the address.
    _needs_tf(("--cluster", "localhost:99999", "--task", "0"), {}, 2,
              "worker 0's address 'localhost:99999' is not valid; expected host:port with "
              "a port from 1 to 65535"),
    _needs_tf(("--cluster", "localhost:5,localhost:\u0665", "--task", "0"), {}, 2,
              "worker 1's address 'localhost:\u0665' is not valid"),
    _needs_tf(("--cluster", "machine-a", "--task", "0"), {}, 2,
              "worker 0's address 'machine-a' is not valid; expected host:port"),
    _needs_tf((), {"TF_CONFIG": "{"}, 2, "TF_CONFIG is not valid (JSONDecodeError"),
    _needs_tf((), {"TF_CONFIG": _tf_config("chief", 0)}, 2,
              "TF_CONFIG's task type is 'chief'; a worker's is 'worker'"),
    _needs_tf((), {"TF_CONFIG": _tf_config("worker", 5)}, 2, "--task=5 is not valid"),
    (("--device", "tpu"), {}, 2, "argument --device: invalid choice: 'tpu'"),
])
def test_worker_usage_errors_are_one_line(args, env, code, message):
    result = run_cli("worker", *args, env=env)
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0] and message in lines[0], result.stderr


@pytest.mark.requires_tf
def test_worker_on_a_taken_port_fails_before_importing_tensorflow():
    with socket.socket() as holder:
        holder.bind(("localhost", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        result = run_cli("worker", env={"TF_CONFIG": _tf_config(
            "worker", 1, ("localhost:1", f"localhost:{port}"))})
    assert result.returncode == pod_worker.EXIT_PORT_TAKEN, result.stderr
    assert result.stderr.strip() == (
        f"tpu-compat worker: error: worker 1 cannot listen on localhost:{port}: "
        f"port {port} is taken or not available (Address already in use)")


def test_worker_subcommand_shares_the_workers_arguments():
    from tpu_compat import cli
    args = cli.build_parser().parse_args(
        ["worker", "--cluster", "a:1,b:2", "--task", "1", "--cores", "4", "--device", "gpu"])
    # Numbers stay text here: serve() parses them (ASCII digits, in range) with
    # one error line naming the flag.
    assert (args.cluster, args.task, args.cores, args.device) == ("a:1,b:2", "1", "4", "gpu")
    assert args.handler.__module__ == "tpu_compat.commands.worker"


# -- the pytest marker ------------------------------------------------------------


@pytest.mark.parametrize("marker,hosts", [
    (pytest.mark.tpu_replicas(8), None),
    (pytest.mark.tpu_replicas(4, 8, hosts=2), 2),
    (pytest.mark.tpu_replicas(8, hosts=8), 8),
])
def test_marker_hosts(marker, hosts):
    counts = pytest_marker.replica_counts(marker.mark, "test_x")
    assert pytest_marker.pod_hosts(marker.mark, counts, "test_x") == hosts


@pytest.mark.parametrize("marker,message", [
    (pytest.mark.tpu_replicas(2, 8, hosts=4),
     "test_x: @pytest.mark.tpu_replicas(..., hosts=4) is not valid: hosts must be an int "
     "that divides every replica count (2, 8); allowed values: 1, 2"),
    (pytest.mark.tpu_replicas(8, hosts=0), "allowed values: 1, 2, 4, 8"),
    (pytest.mark.tpu_replicas(8, hosts="2"), "(..., hosts='2') is not valid"),
    (pytest.mark.tpu_replicas(8, host=2), "takes replica counts and hosts=H, not host="),
])
def test_bad_marker_hosts_name_the_argument_and_allowed_values(marker, message):
    counts = pytest_marker.replica_counts(marker.mark, "test_x")
    with pytest.raises(ValueError) as error:
        pytest_marker.pod_hosts(marker.mark, counts, "test_x")
    assert message in str(error.value)


def test_child_gets_the_hosts_variable():
    env = _pytest_child.child_environment(8, hosts=2, environ={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "TPU_COMPAT_NUM_REPLICAS": "8", "TPU_COMPAT_NUM_HOSTS": "2"}
    # No hosts= on the marker: the child inherits whatever this process has.
    env = _pytest_child.child_environment(2, environ={"TPU_COMPAT_NUM_HOSTS": "2"})
    assert env["TPU_COMPAT_NUM_HOSTS"] == "2" and env["TPU_COMPAT_NUM_REPLICAS"] == "2"


# -- doctor ---------------------------------------------------------------------------


def test_doctor_facts_describe_the_pod_settings():
    assert dict(doctor.pod_settings({})) == {
        "TPU_COMPAT_NUM_HOSTS": "1 (no pod)", "TPU_COMPAT_POD_TIMEOUT": "60 s",
        "TPU_COMPAT_POD_PORT": "free loopback ports"}
    facts = dict(doctor.pod_settings({"TPU_COMPAT_NUM_HOSTS": "2",
                                      "TPU_COMPAT_POD_TIMEOUT": "90",
                                      "TPU_COMPAT_POD_PORT": "9000"}))
    assert facts["TPU_COMPAT_NUM_HOSTS"].startswith("2: worker processes started on loopback")
    assert (facts["TPU_COMPAT_POD_TIMEOUT"], facts["TPU_COMPAT_POD_PORT"]) == ("90 s", 9000)
    chief = dict(doctor.pod_settings({"TF_CONFIG": _tf_config("chief", 0, ("m1:1", "m2:1"))}))
    assert chief["TPU_COMPAT_NUM_HOSTS"] == (
        "2: TF_CONFIG names this process the chief of the workers m1:1, m2:1")
    with pytest.raises(_config.ConfigError, match="TPU_COMPAT_NUM_HOSTS=3 hosts"):
        doctor.pod_settings({"TPU_COMPAT_NUM_HOSTS": "3"})


@pytest.mark.parametrize("tf_config,message", [
    ("[]", "TF_CONFIG is a list; expected an object: "),
    ('{"cluster": 5}', "TF_CONFIG's \"cluster\" is a number (5); expected an object of "
                       "job names to lists of host:port"),
    ('{"cluster": {"worker": "a:1"}}', "TF_CONFIG's cluster job 'worker' is 'a:1'; "
                                       "expected a list of host:port strings"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "x"}}',
     "expected a string \"type\" and an integer \"index\""),
    ("{", "TF_CONFIG is not valid JSON"),
])
def test_doctor_names_a_tf_config_tensorflow_cannot_read(tf_config, message):
    """Issue 33: a well-formed but invalid TF_CONFIG was passed over in silence."""
    with pytest.raises(_config.ConfigError) as error:
        doctor.pod_settings({"TF_CONFIG": tf_config})
    assert message in str(error.value)
    # A valid worker's TF_CONFIG is not a problem.
    assert doctor.pod_settings({"TF_CONFIG": _tf_config("worker", 0)})


# -- the runner and pod errors ----------------------------------------------------------


def test_pod_errors_are_tpu_compats_own_and_printed_once(monkeypatch):
    assert pod_errors.PodError in runner.own_errors()
    assert issubclass(pod_errors.WorkerLostError, pod_errors.PodError)
    monkeypatch.setattr(pod_errors, "_reported", [])
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    message = "emulated pod: worker 1 (localhost:9, pid 7) was killed by signal 9"
    pod_errors.report(message)  # the monitor thread was first
    runner.print_own_error(pod_errors.WorkerLostError())  # the main thread's async exception
    assert stderr.getvalue() == f"tpu-compat: error: {message}\n"
    assert str(pod_errors.WorkerLostError()) == message


def test_without_a_pod_errors_are_the_programs_own():
    assert pod_session.current_pod() is None
    assert pod_faults.failure_behind(RuntimeError("the program's own")) is None


def test_tensorflow_errors_are_told_by_the_programs_tensorflow(monkeypatch):
    # A worker's death reaches the program as a tf.errors.OpError (UnavailableError);
    # the pod asks the TensorFlow the program loaded and never loads it.
    class OpError(Exception):
        pass

    loaded = types.ModuleType("tensorflow")
    loaded.errors = types.SimpleNamespace(OpError=OpError)
    monkeypatch.setitem(sys.modules, "tensorflow", loaded)
    assert pod_faults._is_tensorflow_error(OpError())  # pylint: disable=protected-access
    assert not pod_faults._is_tensorflow_error(RuntimeError())  # pylint: disable=protected-access
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))  # importing
    assert not pod_faults._is_tensorflow_error(OpError())  # pylint: disable=protected-access
    monkeypatch.delitem(sys.modules, "tensorflow")
    assert not pod_faults._is_tensorflow_error(OpError())  # pylint: disable=protected-access


# -- worker logs and the health check (no TensorFlow, no worker process) ---------------


def test_worker_logs_leave_no_file_unless_a_folder_is_named(tmp_path, monkeypatch):
    from tpu_compat.pod import logs  # pylint: disable=import-outside-toplevel
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.delenv("TPU_COMPAT_POD_LOGS", raising=False)
    with logs.worker_log(1) as log:
        log.write(b"starting\ntpu-compat worker: error: port 9 is taken\n")
        log.flush()
        assert os.listdir(temporary) == []  # unlinked from the start: no path leaks it
        assert logs.tail(log).endswith("port 9 is taken\n")
    kept = tmp_path / "kept"  # made when first used
    monkeypatch.setenv("TPU_COMPAT_POD_LOGS", str(kept))
    with logs.worker_log(1) as log:
        log.write(b"served\n")
    assert (kept / f"worker1-{os.getpid()}.log").read_bytes() == b"served\n"


class _Answering(threading.Thread):
    """A server that answers each connection with ``reply``, once, or never (None)."""

    def __init__(self, reply):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("localhost", 0))
        self.sock.listen(4)
        self.address = f"localhost:{self.sock.getsockname()[1]}"
        self.reply = reply

    def run(self):
        if self.reply is None:
            return  # listening, never accepting: a stopped worker's kernel
        connection, _ = self.sock.accept()
        with connection:
            connection.recv(64)
            connection.sendall(self.reply)


@pytest.mark.parametrize("reply,why", [
    # An HTTP/2 SETTINGS frame header (RFC 7540 6.5): what a gRPC server sends.
    (bytes((0, 0, 6, 4, 0, 0, 0, 0, 0)) + bytes(6), None),
    (None, "no answer to a health check within 0.3 s"),
    (b"HTTP/1.1 400 Bad Request\r\n", "its answer to a health check is not gRPC's"),
])
def test_health_check_tells_a_silent_server_from_an_answering_one(reply, why):
    from tpu_compat.pod import launch  # pylint: disable=import-outside-toplevel
    server = _Answering(reply)
    server.start()
    with server.sock:
        assert launch.silent(server.address, 0.3) == why
    # Nothing listens there any more.
    assert launch.silent(server.address, 0.3).startswith("not reachable: ")


@pytest.mark.parametrize("timeout,timing", [("60", (5.0, 1.0)), ("4", (2.0, 1.0)),
                                            ("2", (1.0, 0.5))])
def test_heartbeat_reports_within_the_pod_timeout(monkeypatch, timeout, timing):
    monkeypatch.setenv("TPU_COMPAT_POD_TIMEOUT", timeout)
    assert pod_faults._heartbeat_timing() == timing  # pylint: disable=protected-access
    # The check's deadline plus one period, well within the timeout.
    assert sum(timing) <= 0.75 * float(timeout)


def test_at_exit_workers_that_no_longer_answer_are_stopped_first(monkeypatch):
    """TensorFlow's shutdown would wait forever on a stopped worker: all are stopped before it."""
    from tpu_compat.pod import launch, logs  # pylint: disable=import-outside-toplevel
    calls = []
    pod = pod_session.Pod(("localhost:1", "localhost:2"), (), spawned=True)
    monkeypatch.setattr(pod_faults, "_watched", pod)
    monkeypatch.setattr(pod_faults, "_exiting", threading.Event())
    monkeypatch.setattr(pod_faults, "_heartbeats", [])
    monkeypatch.setattr(launch, "worker_pids", lambda: [11, 12])
    monkeypatch.setattr(launch, "stop_workers", lambda grace=0.0: calls.append("stop"))
    monkeypatch.setattr(logs, "quiet_native_stderr", lambda: calls.append("quiet"))
    answers = {"localhost:1": None, "localhost:2": None}
    monkeypatch.setattr(launch, "silent", lambda address, deadline: answers[address])
    pod_faults.program_exiting()
    assert calls == []  # every worker answers: TensorFlow shuts down with them
    answers["localhost:2"] = "no answer to a health check within 5 s"
    pod_faults.program_exiting()
    assert calls == ["quiet", "stop"]


_QUIET = """
import os, signal, sys
from tpu_compat.pod import faults, logs
handler = lambda signum, frame: None
signal.signal(signal.SIGTERM, handler)
watch = faults._InterruptWatch.install()
print("own SIGTERM handler kept:", signal.getsignal(signal.SIGTERM) is handler
      and watch.term_handler is None and watch.handler is not None, file=sys.stderr)
logs.quiet_native_stderr()
os.write(2, b"a C++ log line\\n")
print("the program's own line", file=sys.stderr)
"""


def test_after_a_fault_native_stderr_goes_to_the_log_and_python_output_stays():
    result = subprocess.run([sys.executable, "-c", _QUIET], capture_output=True, text=True,
                            env=subprocess_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("own SIGTERM handler kept: True\n"
                             "the program's own line\n")


def test_a_suite_started_with_sigint_ignored_gives_its_programs_their_ctrl_c():
    # A CI script's `pytest &` without job control starts the suite with SIGINT
    # ignored, which every program a test starts would inherit (conftest.py).
    test = ("tests/test_pod_cli.py::"
            + test_after_a_fault_native_stderr_goes_to_the_log_and_python_output_stays.__name__)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        # The child suite's test starts its program with subprocess.run: the
        # fork server the suite's conftest would start (a TensorFlow import)
        # serves nothing there (issue 32's CI budget).
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        env=subprocess_env(TPU_COMPAT_TEST_FORK_SERVER="0"))
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 passed" in result.stdout


def test_ctrl_c_ends_the_run_as_ctrl_c_even_with_a_worker_lost(monkeypatch):
    """Issue 33: a KeyboardInterrupt that ended the program became exit code 2
    (WorkerLostError) when a worker had stopped answering meanwhile."""
    monkeypatch.setattr(pod_faults, "_watched", types.SimpleNamespace(spawned=True))
    monkeypatch.setattr(pod_faults, "_disarmed", [])
    monkeypatch.setattr(pod_faults, "_interrupted", [])
    monkeypatch.setattr(pod_faults, "_lost_worker",
                        lambda pod: "worker 1 (localhost:9, pid 7) stopped answering")
    monkeypatch.setattr(pod_faults, "first_report", lambda: None)
    assert pod_faults.failure_behind(KeyboardInterrupt()) is None
    # Any other error is still explained by the lost worker.
    monkeypatch.setattr(pod_faults.launch, "stop_workers", lambda **kwargs: None)
    monkeypatch.setattr(pod_faults.logs, "quiet_native_stderr", lambda: None)
    assert isinstance(pod_faults.failure_behind(RuntimeError()), pod_errors.WorkerLostError)


def test_tensorflow_errors_ignored_at_exit_after_a_fault_go_to_the_log(monkeypatch, capfd):
    """Issue 33: 'Exception ignored in Executor.__del__ ... UnavailableError' (9
    lines) followed the one error line."""
    class OpError(Exception):
        pass

    loaded = types.ModuleType("tensorflow")
    loaded.errors = types.SimpleNamespace(OpError=OpError)
    monkeypatch.setitem(sys.modules, "tensorflow", loaded)
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    pod_faults.logs._tensorflow_unraisables_to_fd2()  # pylint: disable=protected-access

    def unraisable(error):
        return types.SimpleNamespace(exc_type=type(error), exc_value=error,
                                     exc_traceback=None, object="Executor.__del__")
    sys.unraisablehook(unraisable(OpError("Unavailable: socket closed")))
    assert seen == []  # not Python's printer: file descriptor 2 (the pod's log then)
    assert "Unavailable: socket closed" in capfd.readouterr().err
    other = unraisable(RuntimeError("the program's own"))
    sys.unraisablehook(other)
    assert seen == [other]
