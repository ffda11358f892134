"""Emulated pod faults end with one clear line naming the worker, bounded, no orphans.

Each test is one multi-process pod run (a chief under ``tpu-compat run`` and
its worker processes): a worker that never comes up, a port that is taken
(given, or picked and then lost), a worker killed or stopped (SIGSTOP)
mid-run, Ctrl-C during a long step, Ctrl-C and SIGTERM while a worker is
stopped, the chief killed while a worker is stopped, the two-machine
TF_CONFIG recipe on loopback, and the pytest marker's ``hosts=`` end to end.
The time bounds asserted are the documented ones
(docs/pods.md, Faults) with a wide margin for a loaded CI machine.
"""

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import fork_server
from tpu_compat import _fork_client, _process
from conftest import REPO_ROOT, SCENARIOS, assert_one_error_line, process_gone, run_cli, \
    subprocess_env
from test_pytest_plugin import PLUGIN_ARGS

pytestmark = pytest.mark.requires_tf

LONG_TRAINING = os.path.join(SCENARIOS, "pod_long_training.py")
EAGER_LOOP = os.path.join(SCENARIOS, "pod_eager_loop.py")
# Generous: two extra TensorFlow imports on a loaded 2-core machine.
START_TIMEOUT = 240
# How long a pod program may take to report a line or file: the chief and its
# two workers import TensorFlow, then the first call traces (a load-15 2-core
# machine took more than 240 s to print `step: 2`). Only a failing run waits it out.
REPORT_TIMEOUT = 600
# How soon after the fault (the kill, the Ctrl-C) the run must end. docs/pods.md
# documents 1-10.5 s on an idle machine; a 2-core machine running two suites side
# by side (load 15) took 33 s to end after Ctrl-C. The programs below run for
# 300 s or more unless stopped, so this bound still tells a bounded end from
# the program's own.
FAULT_BOUND = 90
# Runs that import TensorFlow and then give up after a short pod timeout: a
# bound against hanging, not a measurement (a loaded machine took 121 s for
# the chief's TF import + 2 s); the message names the timeout that was used.
HANG_GUARD = 300


def _worker_pids(chief_pid):
    """The pod worker processes the chief started (running tpu_compat.pod.worker):
    its children, or the fork server's children started for it (tests/fork_server.py)."""
    return [pid for pid in fork_server.children_of(chief_pid)
            if "tpu_compat.pod.worker" in _command_line(pid)]


def _command_line(pid):
    try:
        return fork_server.command_line(pid)
    except OSError:
        return []


def _worker_pid(chief_pid, task):
    for pid in _worker_pids(chief_pid):
        args = _command_line(pid)
        if args[args.index("--task") + 1] == str(task):
            return pid
    raise AssertionError(f"no worker {task} among the chief's children")


class _Chief:
    """``tpu-compat run --hosts 2 --replicas 4 PROGRAM`` in the background
    (pod_long_training.py unless told).

    Every wait is for something the program reports (a line, a file), each
    bounded, and a reader thread takes its output, so no read can block a test.
    """

    def __init__(self, *script_args, env=None, program=LONG_TRAINING):
        # The workers may take START_TIMEOUT to come up: a side-by-side run
        # (load 5) took over the default 60 s for one worker's TF import. The
        # faults below are found by the health checks (5 s, capped by half the
        # pod timeout, so unchanged) and by the workers' exits, not by it.
        env = subprocess_env(**{"TPU_COMPAT_POD_TIMEOUT": str(START_TIMEOUT), **(env or {})})
        args = ["run", "--hosts", "2", "--replicas", "4", program, *script_args]
        # Forked by the suite's fork server, as run_cli forks `tpu-compat run`
        # (no claim here is about how the chief starts; issue 32's CI budget:
        # a fresh chief cost a TensorFlow import per test). Fresh where the
        # server declines; _worker_pids finds the workers either way.
        self.process = _process.popen(
            [sys.executable, "-m", "tpu_compat", *args],
            import_env=fork_server.import_environment(args, env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
        self.lines = []
        self._stdout = queue.Queue()  # its lines, then None at the end of the stream
        self._stderr = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(
            target=lambda: self._stderr.append(self.process.stderr.read()), daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self):
        for line in self.process.stdout:
            self._stdout.put(line)
        self._stdout.put(None)

    def _fail(self, what):
        self.process.kill()
        raise AssertionError(f"{what}; stdout: {''.join(self.lines)[-2000:]}"
                             f"\nstderr: {self.stderr()[-3000:]}")

    def wait_for(self, prefix, timeout=REPORT_TIMEOUT):
        """Reads stdout up to a line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._stdout.get(timeout=remaining)
            except queue.Empty:
                break
            if line is None:
                self._fail(f"no {prefix!r} line before the program ended")
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        self._fail(f"no {prefix!r} line within {timeout} s")

    def wait_for_file(self, path, timeout=REPORT_TIMEOUT):
        """Waits until the program has written ``path`` (while it still runs)."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if self.process.poll() is not None:
                self._fail(f"the program ended (exit code {self.process.returncode}) "
                           f"without writing {path}")
            if time.monotonic() > deadline:
                self._fail(f"the program did not write {path} within {timeout} s")
            time.sleep(0.05)

    def finish(self, timeout=2 * FAULT_BOUND):
        """Waits for the exit; returns (exit code, seconds waited)."""
        start = time.monotonic()
        try:
            self.process.wait(timeout=timeout)
        finally:
            self.process.kill()
        seconds = time.monotonic() - start
        while True:  # the rest of stdout; the reader ends with the process's pipe
            try:
                line = self._stdout.get(timeout=30)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
        return self.process.returncode, seconds

    def stderr(self):
        self._stderr_reader.join(timeout=5)
        return self._stderr[0] if self._stderr else ""


def _first_line(process, timeout=START_TIMEOUT):
    """The first line ``process`` prints, read with a bound."""
    lines = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()),
                              daemon=True)
    reader.start()
    reader.join(timeout)
    if not lines:
        process.kill()
        raise AssertionError(f"pid {process.pid} printed no line within {timeout} s")
    return lines[0]


# /proc/net/tcp{,6}'s hex local addresses on loopback: 127.0.0.0/8 (little-endian
# 32-bit words, so the 127 is the last byte), ::1, and ::ffff:127.x.y.z.
_LOOPBACK_HEX = re.compile(r"[0-9A-F]{6}7F|0{24}01000000|0{16}FFFF0000[0-9A-F]{6}7F")


def _listening_addresses(pid):
    """The (hex address, port) pairs ``pid``'s own TCP sockets listen on (/proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}", encoding="ascii") as handle:
            for row in list(handle)[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: TCP_LISTEN
                    address, port = fields[1].split(":")
                    found.append((address, int(port, 16)))
    return found


def _held_port():
    """A listening socket on a loopback port (the port is taken while it lives)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("localhost", 0))
    sock.listen(1)
    return sock


def _pids_in(message):
    return [int(pid) for pid in re.findall(r"pid (\d+)", message)]


def _ports_of(pid):
    """The loopback ports of a pod worker, from its command line."""
    args = fork_server.command_line(pid)
    return [int(address.rsplit(":", 1)[1])
            for address in args[args.index("--cluster") + 1].split(",")]


def _port_free(port, within=30.0):
    """Whether ``port`` can be listened on again (as a worker binds it) within ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("", port))
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        finally:
            probe.close()


# What TensorFlow's C++ code logs as it loads, before the program runs (absl's
# preamble, then "I0000 00:00:1795888295.937412   22506 cudart_stub.cc:31] ...").
_TF_START_UP_LOG = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to "
    r"STDERR$|[IWE]\d{4} \d\d:\d\d:[\d.]+ +\d+ \w+\.cc:\d+\] ")


def _no_native_log(stderr):
    """TensorFlow's C++ log lines about gRPC in the chief's stderr (after a fault: none)."""
    return [line for line in stderr.splitlines() if "grpc" in line.lower()] == []


def _chief_forked_workers_fresh(args, env, cwd):
    """``tpu-compat run ARGS`` forked by the suite's fork server (as run_cli
    forks it), in ``env`` without the server's variable: the pod workers it
    starts are fresh processes."""
    env = subprocess_env(**env, **{fork_server.SOCKET_VAR: None})
    command = [sys.executable, "-m", "tpu_compat", *args]
    server = os.environ.get(fork_server.SOCKET_VAR)
    popen_kwargs = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                        cwd=cwd)
    process = (_fork_client.ForkedPopen(command, server=server, **popen_kwargs,
                                        import_env=fork_server.import_environment(args, env))
               if server else subprocess.Popen(command, **popen_kwargs))
    with process:
        try:
            stdout, stderr = process.communicate(timeout=HANG_GUARD)
        finally:
            process.kill()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def test_worker_that_never_comes_up_is_named_and_stopped(tmp_path):
    # A real cause: a worker needs seconds to import TensorFlow, more than the
    # 0.5 s this pod grants it. The workers without the fork server (a forked
    # worker has TensorFlow imported already and comes up in time): fresh, as
    # users run. The chief forked (issue 32's CI budget: its import is not
    # what this test is about).
    start = time.monotonic()
    result = _chief_forked_workers_fresh(
        ["run", "--hosts", "2", "--replicas", "4", LONG_TRAINING],
        {"TPU_COMPAT_POD_TIMEOUT": "0.5"}, str(tmp_path))
    elapsed = time.monotonic() - start
    assert_one_error_line(result, "did not come up within TPU_COMPAT_POD_TIMEOUT=0.5 s")
    message = result.stderr.strip().splitlines()[-1]
    assert "worker 0 (localhost:" in message and "worker 1 (localhost:" in message
    pids = _pids_in(message)
    assert len(pids) == 2 and all(process_gone(pid, within=5) for pid in pids)
    assert "replicas:" not in result.stdout  # the program never ran
    assert elapsed < HANG_GUARD, elapsed  # the chief's TF import + the timeout


def test_taken_port_is_named_with_its_variable(tmp_path):
    holder = _held_port()
    with holder:
        port = holder.getsockname()[1]
        result = run_cli("run", "--hosts", "2", "--replicas", "4", LONG_TRAINING,
                         env={"TPU_COMPAT_POD_PORT": str(port)}, cwd=str(tmp_path))
    assert_one_error_line(result, f"worker 0 (localhost:{port}, pid ")
    message = result.stderr.strip().splitlines()[-1]
    assert f"port {port} is taken" in message and "exited with code 3" in message
    assert "TPU_COMPAT_POD_PORT" in message
    # Worker 1 was still starting when worker 0 failed: stopped, not blamed.
    assert "worker 1" not in message
    assert all(process_gone(pid, within=5) for pid in _pids_in(message))


def test_picked_port_taken_meanwhile_is_picked_again(monkeypatch):
    """When tpu_compat picked the port itself and lost it, it picks another."""
    from tpu_compat.pod import launch
    holder = _held_port()
    picks = []
    real_free_ports = launch._free_ports

    def free_ports(count):
        # First pick: a port someone else took after it was found free.
        picks.append(holder.getsockname()[1] if not picks else real_free_ports(count)[0])
        return [picks[-1]]

    monkeypatch.setattr(launch, "_free_ports", free_ports)
    try:
        with holder:
            addresses = launch.start_workers(1, 1, timeout=START_TIMEOUT, base_port=None)
        assert len(picks) == 2 and addresses == (f"localhost:{picks[1]}",)
        pids = launch.worker_pids()
    finally:
        launch.stop_workers()
    assert len(pids) == 1 and process_gone(pids[0])


def test_worker_killed_mid_run_is_named_within_bound_and_nothing_is_left():
    chief = _Chief("300", "0.5")
    chief.wait_for("step: 2")
    workers = _worker_pids(chief.process.pid)
    # Issue 33: TensorFlow's servers (no authentication) listen on loopback
    # only, the workers' and the chief's (remote eager execution gives it one).
    listening = {pid: _listening_addresses(pid) for pid in [chief.process.pid, *workers]}
    assert all(listening.values()), listening
    assert all(_LOOPBACK_HEX.fullmatch(address)
               for found in listening.values() for address, _ in found), listening
    victim = _worker_pid(chief.process.pid, 1)
    os.kill(victim, signal.SIGKILL)
    code, seconds = chief.finish()
    stderr = chief.stderr()
    assert code == 2, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if "tpu-compat" in line]
    assert len(lines) == 1, stderr[-3000:]
    assert lines[0] == (f"tpu-compat: error: emulated pod: worker 1 (localhost:"
                        f"{lines[0].split('localhost:')[1].split(',')[0]}, pid {victim}) "
                        f"was killed by signal 9 while the program was running; "
                        f"the pod is stopped")
    assert "Traceback" not in stderr and "UnavailableError" not in stderr
    # gRPC's errors about the dead worker went to the pod's log, not here.
    assert stderr.strip().splitlines()[-1] == lines[0] and _no_native_log(stderr)
    assert "finished: 1" not in "".join(chief.lines)
    assert len(workers) == 2 and all(process_gone(pid) for pid in workers)
    # Documented: ~1 s when the step fails at once; at most ~10.5 s (grace).
    assert seconds < FAULT_BOUND, seconds


def test_stopped_worker_is_named_within_the_pod_timeout(tmp_path):
    """A stopped worker keeps its port open but answers nothing: the heartbeat says so.

    The program is TF 2.1's tutorial loop (the dataset iterated in Python).
    Its worker stops while the program does its own work between steps, so
    the call that waits on the worker is the eager input fetch, whose executor
    keeps the lost worker's error: issue 33 found it printed at exit as
    "Exception ignored in Executor.__del__" and a traceback, 9 lines after the
    one error line (a step's own call leaves none: that run prints one line
    either way).
    """
    kept = tmp_path / "logs"
    chief = _Chief("300", _HOST_SECONDS, program=EAGER_LOOP,
                   env={"TPU_COMPAT_POD_LOGS": str(kept), "TPU_COMPAT_WARNINGS": "ignore"})
    chief.wait_for("step: 2")
    workers = _worker_pids(chief.process.pid)
    victim = _worker_pid(chief.process.pid, 1)
    os.kill(victim, signal.SIGSTOP)
    code, seconds = chief.finish()
    stderr = chief.stderr()
    assert code == 2, stderr[-3000:]
    # The one line is all the run printed, and the last: only TensorFlow's
    # start-up log comes before it.
    *before, last = stderr.strip().splitlines()
    assert [line for line in before if not _TF_START_UP_LOG.match(line)] == [], stderr[-3000:]
    assert re.fullmatch(
        rf"tpu-compat: error: emulated pod: worker 1 \(localhost:\d+, pid {victim}\) stopped "
        r"answering \(no answer to a health check within 5 s\) while the program was "
        r"running; the pod is stopped", last), stderr[-3000:]
    assert "Exception ignored" not in stderr and "Traceback" not in stderr
    assert _no_native_log(stderr)
    assert len(workers) == 2 and all(process_gone(pid) for pid in workers)
    # Documented: the 5 s health check + its 1 s period, within TPU_COMPAT_POD_TIMEOUT (60 s).
    assert seconds < FAULT_BOUND, seconds
    # TPU_COMPAT_POD_LOGS keeps the workers' logs, and what TensorFlow's C++ code
    # of the chief wrote after the error line.
    chief_pid = chief.process.pid
    assert sorted(os.listdir(kept)) == [f"chief-{chief_pid}.log", f"worker0-{chief_pid}.log",
                                        f"worker1-{chief_pid}.log"]
    assert "grpc" in (kept / f"chief-{chief_pid}.log").read_text(errors="replace").lower()


# pod_eager_loop.py's own work after each step's line: a test that stops a
# worker on reading the line stops it while the program is in Python, and the
# program's next call, the one that waits on the stopped worker, is the eager
# input fetch.
_HOST_SECONDS = "1.5"
# How long after the worker stops Ctrl-C comes: once the program waits in that
# input fetch, and before the heartbeat can find the worker silent (its 5 s
# health check), which it then does while Ctrl-C's own 5 s grace runs. The
# fetch ends with the program's KeyboardInterrupt (raised in its `finally`),
# which then meets a worker known to be lost: issue 33 found that run ending
# with exit code 2 (a WorkerLostError) about 6.7 s after Ctrl-C, not by SIGINT.
_CTRL_C_AFTER_STOP = 3.0


# Ctrl-C: the program's KeyboardInterrupt ends it by SIGINT, as python does (a
# shell reports 130).
# SIGTERM is slow: the same shutdown path as ctrl-c, whose case stays in CI.
@pytest.mark.parametrize("signum,code,after", [
    (signal.SIGINT, -signal.SIGINT, _CTRL_C_AFTER_STOP),
    pytest.param(signal.SIGTERM, -signal.SIGTERM, 0, marks=pytest.mark.slow)],
    ids=["ctrl-c", "sigterm"])
def test_interrupt_with_a_stopped_worker_ends_the_run_and_its_workers(signum, code, after):
    chief = _Chief("300", _HOST_SECONDS, program=EAGER_LOOP)
    chief.wait_for("step: 2")
    workers = _worker_pids(chief.process.pid)
    os.kill(_worker_pid(chief.process.pid, 1), signal.SIGSTOP)
    time.sleep(after)
    chief.process.send_signal(signum)
    returned, seconds = chief.finish()
    stderr = chief.stderr()
    assert returned == code, stderr[-3000:]
    assert "tpu-compat: error:" not in stderr, stderr[-3000:]
    if signum == signal.SIGINT:
        # docs/pods.md: the interrupt line, then the program's KeyboardInterrupt.
        assert ("tpu-compat: interrupted; the program is still inside a TensorFlow call on "
                "the pod after 5 s, so the pod's workers are stopped") in stderr, stderr[-3000:]
        assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr[-3000:]
    assert _no_native_log(stderr), stderr[-3000:]
    assert len(workers) == 2 and all(process_gone(pid, within=5) for pid in workers)
    # Documented: Ctrl-C 5 s grace + 1 s to stop the workers; SIGTERM at once.
    assert seconds < FAULT_BOUND, seconds


def test_ctrl_c_inside_a_long_step_ends_the_run_bounded_with_130(tmp_path):
    # Each call trains for 300 s: Python's KeyboardInterrupt cannot get in
    # until the call returns, so tpu_compat stops the pod after its grace.
    inside = str(tmp_path / "inside_the_call")
    chief = _Chief("600", "300", inside)
    chief.wait_for("calling: 1")
    workers = _worker_pids(chief.process.pid)
    # Not a guessed delay: the first call traces in Python (where Ctrl-C gets
    # in at once) for as long as the machine needs; the file is written from
    # inside TensorFlow's execution of the call, which then runs for 300 s.
    chief.wait_for_file(inside)
    chief.process.send_signal(signal.SIGINT)
    code, seconds = chief.finish()
    stderr = chief.stderr()
    # The program's KeyboardInterrupt ends it by SIGINT, as python does (a
    # shell reports 130).
    assert code == -signal.SIGINT, stderr[-3000:]
    assert "KeyboardInterrupt" in stderr
    assert "tpu-compat: interrupted; the program is still inside a TensorFlow call" in stderr
    assert "step: 1" not in "".join(chief.lines)
    assert len(workers) == 2 and all(process_gone(pid) for pid in workers)
    # Documented: 5 s grace + about a second.
    assert seconds < FAULT_BOUND, seconds


def test_killed_chief_leaves_no_worker_behind_even_a_stopped_one():
    chief = _Chief("120", "0.5")
    chief.wait_for("step: 1")
    workers = _worker_pids(chief.process.pid)
    ports = _ports_of(workers[0])
    # A stopped worker cannot read its stdin: the kernel's SIGKILL at its
    # parent's death (PR_SET_PDEATHSIG) ends it.
    os.kill(_worker_pid(chief.process.pid, 1), signal.SIGSTOP)
    chief.process.kill()
    chief.finish()
    # Documented: within 1 s; a loaded machine needs longer to end a process.
    assert len(workers) == 2 and all(process_gone(pid, within=30) for pid in workers)
    assert all(_port_free(port) for port in ports)


pytest_plugins = ["pytester"]


def test_marker_hosts_runs_the_test_on_a_pod_in_a_child(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", REPO_ROOT)
    monkeypatch.delenv("TPU_COMPAT_NUM_HOSTS", raising=False)
    monkeypatch.delenv("TPU_COMPAT_POD_LOGS", raising=False)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    pytester.makepyfile(test_on_pod="""
        import os
        import pytest

        @pytest.mark.tpu_replicas(4, hosts=2)
        def test_on_two_hosts(tpu_strategy, tpu_resolver, tpu_replicas):
            assert os.environ["TPU_COMPAT_NUM_HOSTS"] == "2"
            assert tpu_replicas == tpu_strategy.num_replicas_in_sync == 4
            assert tpu_strategy.extended.num_hosts == 2
            assert len(tpu_resolver.cluster_spec().as_dict()["worker"]) == 2
    """)
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, "-p", "no:cacheprovider", "-v",
                                           timeout=START_TIMEOUT)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_on_two_hosts?replicas=4,hosts=2? PASSED*"])
    # A pod that ends well leaves no worker log behind either.
    leftovers = [path for path in temporary.rglob("*") if "tpu-compat-worker" in path.name]
    assert leftovers == []


def _tf_config(addresses, kind, index):
    return json.dumps({"cluster": {"worker": addresses},
                       "task": {"type": kind, "index": index}})


@pytest.mark.slow  # test_pod_docs runs the same recipe in CI
def test_tf_config_two_machine_recipe_on_loopback(tmp_path):
    """docs/pods.md's recipe: a `tpu-compat worker` per machine, the program as chief."""
    ports = [_held_port() for _ in range(2)]
    addresses = [f"localhost:{sock.getsockname()[1]}" for sock in ports]
    for sock in ports:
        sock.close()
    workers = [subprocess.Popen(
        [sys.executable, "-m", "tpu_compat", "worker", "--cores", "2"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=subprocess_env(TF_CONFIG=_tf_config(addresses, "worker", index)), cwd=str(tmp_path))
        for index in range(2)]
    try:
        for index, worker in enumerate(workers):
            assert _first_line(worker).startswith(
                f"tpu-compat worker {index} ready on {addresses[index]} (2 CPU cores)")
        chief_env = {"TF_CONFIG": _tf_config(addresses, "chief", 0)}
        result = run_cli("run", LONG_TRAINING, "1", env=chief_env, cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr[-3000:]
        assert "replicas: 4\nhosts: 2\ncluster_workers: 2\n" in result.stdout
        assert "finished: 1" in result.stdout and "step: 1" in result.stdout

        # A worker that is not (or no longer) there: named, within the timeout.
        workers[1].send_signal(signal.SIGINT)
        assert workers[1].wait(timeout=30) == 130
        start = time.monotonic()
        result = run_cli("run", LONG_TRAINING, "1", cwd=str(tmp_path),
                         env=dict(chief_env, TPU_COMPAT_POD_TIMEOUT="2"))
        elapsed = time.monotonic() - start
        assert_one_error_line(
            result, f"emulated pod: worker 1 ({addresses[1]}) is not reachable")
        assert "TPU_COMPAT_POD_TIMEOUT=2 s" in result.stderr and "tpu-compat worker" in result.stderr
        assert elapsed < HANG_GUARD, elapsed  # the chief's TF import + the timeout
        # The remaining worker serves on: a real machine's worker outlives a chief.
        assert workers[0].poll() is None
    finally:
        for worker in workers:
            worker.kill()
            worker.wait(timeout=30)
