"""Starting and stopping the pod's worker processes (``TPU_COMPAT_NUM_HOSTS``).

Each worker (:mod:`.worker`) runs in its own process group
(:mod:`tpu_compat._process`), so stopping it kills whatever it started too,
and a terminal's Ctrl-C reaches the chief only, which decides. Its standard
input is a pipe from the chief: it exits when the chief is gone, however the
chief ended; on Linux the kernel also SIGKILLs it then (``PR_SET_PDEATHSIG``),
which ends a stopped worker too, one that cannot read its pipe. Its stderr is
a log (:mod:`.logs`). Workers started by hand (``TF_CONFIG``) are not ours:
they are only checked for reachability and health here (:func:`silent`).
"""

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

from tpu_compat import _process, settings
from tpu_compat.pod import logs
from tpu_compat.pod import worker as worker_lib
from tpu_compat.pod.errors import PodError

__all__ = ["await_reachable", "exited_worker", "silent", "start_workers", "stop_workers",
           "unreachable", "worker_name", "worker_pids"]

POLL_SECONDS = 0.2
_PORT_ATTEMPTS = 3
# How long a killed worker may take to be reaped before its pipes are closed.
_REAP_SECONDS = 10
# How long a worker asked to stop (SIGCONT, SIGTERM) may take before SIGKILL.
STOP_GRACE_SECONDS = 1.0

_workers_lock = threading.RLock()
_workers = []  # (task, address, Popen, log file) of the workers we started


def worker_pids():
    """The process ids of the workers this process started and has not stopped."""
    with _workers_lock:
        return [process.pid for _, _, process, _ in _workers]


def _free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("localhost", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _tail(log, lines=5):
    text = [line.rstrip() for line in logs.tail(log).splitlines() if line.strip()]
    errors = [line for line in text if line.startswith(worker_lib.ERROR_PREFIX)]
    return " | ".join(errors or text[-lines:])


def _worker_environment():
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for name in ("TF_CONFIG", settings.HOSTS_VAR):
        env.pop(name, None)
    # The worker runs this process's tpu_compat, wherever it was imported from
    # (a checkout on sys.path, say), not whichever the interpreter finds first.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _spawn(task, addresses, cores):
    log = logs.worker_log(task)
    command = [sys.executable, "-m", worker_lib.__name__,
               "--cluster", ",".join(addresses), "--task", str(task),
               "--cores", str(cores), "--exit-with-parent"]
    # The kernel's parent-death signal follows the thread that started the
    # child, not the process: asked for only when that thread lives as long as
    # this process does.
    if threading.current_thread() is threading.main_thread():
        command.append("--kill-with-parent")
    # stdin is the pipe whose closing ends the worker.
    try:
        # The chief's own TensorFlow was imported in this environment under
        # `tpu-compat run`; a program that installed tpu_compat itself gets
        # workers with run's kernels and Keras all the same (_process).
        process = _process.start_tensorflow_child(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            env=_worker_environment())
    except BaseException:
        log.close()
        raise
    return process, log


def _await_ready(spawned, deadline):
    """Waits for every worker's ready line; returns the failed ones.

    Stops waiting as soon as one worker fails (its output ends without the
    ready line): the pod cannot start, and the others need not be waited
    for; only the failed one is named then. At the deadline, every worker
    not ready has failed.
    """
    finished = queue.Queue()

    def read(task, process):
        finished.put((task, process.stdout.readline().decode(errors="replace")))

    for task, _, process, _ in spawned:
        threading.Thread(target=read, args=(task, process), daemon=True,
                         name=f"tpu-compat-pod-ready-{task}").start()
    ready, broken = set(), set()
    while len(ready) < len(spawned) and not broken:
        try:
            task, line = finished.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break  # the deadline
        (ready if worker_lib.READY_WORD in line else broken).add(task)
    failed = [entry for entry in spawned
              if entry[0] in broken or (not broken and entry[0] not in ready)]
    # Give a failed worker a moment to exit, so that its exit code (port
    # taken?) and its last words are known.
    for _, _, process, _ in failed:
        try:
            process.wait(timeout=2.0 if broken else 0.0)
        except subprocess.TimeoutExpired:
            pass
    return failed


def _describe_failure(task, address, process, log, timeout):
    code = process.poll()
    if code is None:
        return (f"worker {task} ({address}, pid {process.pid}) did not come up "
                f"within {settings.POD_TIMEOUT_VAR}={timeout:g} s")
    detail = _tail(log)
    return (f"worker {task} ({address}, pid {process.pid}) exited with code "
            f"{code} while starting" + (f": {detail}" if detail else ""))


def start_workers(hosts, cores, timeout, base_port):
    """Starts ``hosts`` workers of ``cores`` cores on loopback; returns their addresses.

    ``base_port`` None picks free ports (and picks again, up to three times,
    when another program takes one meanwhile). Raises :class:`PodError`
    naming each worker that failed, after stopping them all.
    """
    for attempt in range(_PORT_ATTEMPTS):
        ports = (list(range(base_port, base_port + hosts)) if base_port
                 else _free_ports(hosts))
        addresses = tuple(f"localhost:{port}" for port in ports)
        spawned = []
        try:
            with _workers_lock:
                for task in range(hosts):
                    spawned.append((task, addresses[task]) + _spawn(task, addresses, cores))
                    _workers.append(spawned[-1])
        except BaseException:
            stop_workers()  # those already started; the log folder failed, say
            raise
        failed = _await_ready(spawned, time.monotonic() + timeout)
        if not failed:
            return addresses
        described = [_describe_failure(*f, timeout) for f in failed]
        taken = [f for f in failed if f[2].poll() == worker_lib.EXIT_PORT_TAKEN]
        stop_workers()
        if taken and not base_port and attempt + 1 < _PORT_ATTEMPTS:
            continue  # another program took a port we picked: pick again
        hint = (f"; choose other ports with {settings.POD_PORT_VAR}, or unset it to "
                f"let tpu-compat pick free ones" if taken and base_port else "")
        raise PodError("emulated pod: " + "; ".join(described) + hint)
    raise AssertionError("unreachable")


def _signal_group(process, signum):
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop_workers(grace=0.0):
    """Ends the workers this process started (each with its process group) and reaps them.

    With ``grace``, each is first continued (SIGCONT: a stopped worker could
    not act on anything else) and asked to end (SIGTERM); whatever still runs
    ``grace`` seconds later is killed (SIGKILL, which also ends a stopped
    process). All are signalled before any is waited for, so one slow worker
    does not hold back the others' end.
    """
    with _workers_lock:
        workers = list(_workers)
        del _workers[:]
    running = [process for _, _, process, _ in workers if process.poll() is None]
    if grace > 0 and running:
        for process in running:
            _signal_group(process, signal.SIGCONT)
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for process in running:
        if process.poll() is None:
            _process.kill_group(process)
    deadline = time.monotonic() + _REAP_SECONDS
    for _, _, process, log in workers:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        for stream in (process.stdin, process.stdout, log):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


def worker_name(task, address):
    """``worker T (ADDRESS, pid P)`` for a worker this process started, else
    ``worker T (ADDRESS)``."""
    with _workers_lock:
        pids = [process.pid for t, a, process, _ in _workers if (t, a) == (task, address)]
    return f"worker {task} ({address}" + (f", pid {pids[0]})" if pids else ")")


def exited_worker():
    """``worker T (ADDRESS, pid P) <how it ended>`` for the first started worker gone, or None."""
    with _workers_lock:
        workers = list(_workers)
    for task, address, process, _ in workers:
        code = process.poll()
        if code is not None:
            how = (f"was killed by signal {-code}" if code < 0
                   else f"exited with code {code}")
            return f"worker {task} ({address}, pid {process.pid}) {how}"
    return None


# The HTTP/2 connection preface and an empty SETTINGS frame (RFC 7540, sections
# 3.5 and 6.5): a worker's gRPC server answers them with a SETTINGS frame of its
# own, from its own threads. A stopped or wedged worker's kernel still accepts
# the connection, but nothing answers.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes((0, 0, 0, 4, 0, 0, 0, 0, 0))
_HTTP2_SETTINGS = 4
# How silent() begins when the server was there but did not answer in time.
NO_ANSWER = "no answer to a health check"
_FRAME_HEADER_BYTES = 9


def silent(address, deadline):
    """Why the gRPC server at ``address`` did not answer a health check within
    ``deadline`` seconds, or None when it did."""
    host, port = address.rsplit(":", 1)
    start = time.monotonic()
    try:
        with socket.create_connection((host, int(port)), timeout=deadline) as sock:
            sock.sendall(_HTTP2_HELLO)
            header = b""
            while len(header) < _FRAME_HEADER_BYTES:
                sock.settimeout(max(0.01, deadline - (time.monotonic() - start)))
                chunk = sock.recv(_FRAME_HEADER_BYTES - len(header))
                if not chunk:
                    return "it closed the health check's connection"
                header += chunk
    except socket.timeout:
        return f"{NO_ANSWER} within {deadline:g} s"
    except (OSError, ValueError) as error:
        return f"not reachable: {error}"
    if header[3] != _HTTP2_SETTINGS:
        return "its answer to a health check is not gRPC's"
    return None


def unreachable(task, address, timeout=1.0):
    """Why worker ``task`` at ``address`` does not accept connections, or None."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except (OSError, ValueError) as error:
        return f"worker {task} ({address}) is not reachable ({error})"


def await_reachable(addresses, timeout):
    """External workers (TF_CONFIG): each must accept connections in time."""
    deadline = time.monotonic() + timeout
    for task, address in enumerate(addresses):
        while True:
            why = unreachable(task, address,
                              timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            if why is None:
                break
            if time.monotonic() >= deadline:
                raise PodError(
                    f"emulated pod: {why} after {settings.POD_TIMEOUT_VAR}="
                    f"{timeout:g} s; start it with `tpu-compat worker` on its "
                    f"machine (docs/pods.md)")
            time.sleep(POLL_SECONDS)
