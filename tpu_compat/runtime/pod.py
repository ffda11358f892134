"""Emulated TPU pod slices: H hosts, each its own TensorFlow worker process.

A pod slice (v3-32 = 4 hosts x 8 cores) is H TensorFlow workers and one
coordinator: the program runs once, as the coordinator (here: the *chief*,
the user's unchanged program), and places each replica's ops and each host's
input pipeline on that host's devices through TensorFlow's distributed
runtime (gRPC worker services; eager remote execution in TF 2.x, a
``grpc://`` session master in TF 1.x). The emulation is exactly that, with
:mod:`tpu_compat.runtime.pod_worker` processes as the hosts:

* ``TPU_COMPAT_NUM_HOSTS=H`` (``tpu-compat run --hosts H``): this process
  starts H workers on loopback ports, each with N/H emulated cores, and
  connects to them. They exit with it, whatever way it ends.
* ``TF_CONFIG`` naming a ``worker`` job and this process as its ``chief``:
  the workers already run (``tpu-compat worker`` on each machine,
  docs/pods.md); this process connects to them.

Faults end the program with a :class:`PodError` naming the worker, within
bounded times (see docs/pods.md): a worker that does not come up within
``TPU_COMPAT_POD_TIMEOUT`` seconds, a port that is taken, a worker that dies
while the program runs (detected within a second; the chief is stopped
after a short grace period if the failed step does not return).
"""

import atexit
import ctypes
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional, Tuple

from tpu_compat import _config
from tpu_compat.runtime import pod_worker

__all__ = ["Pod", "PodError", "WorkerLostError", "current_pod", "requested_pod", "start"]

_POLL_SECONDS = 0.2
# How long a chief blocked in a TensorFlow call on a dead worker gets to
# raise the PodError itself before the process is ended.
_GRACE_SECONDS = 10.0
_PORT_ATTEMPTS = 3


class PodError(RuntimeError):
    """A pod worker failed: did not start, lost its port, or died."""


_lost = []  # what the monitor saw, for the error it raises in the main thread


class WorkerLostError(PodError):
    """A worker went away while the program ran (raised in the main thread)."""

    def __init__(self, *args):
        super().__init__(*(args or _lost[-1:] or ("emulated pod: a worker went away",)))


@dataclasses.dataclass(frozen=True)
class Pod:
    """The hosts of an emulated pod slice, as the chief sees them.

    Attributes:
      addresses: each worker's ``host:port``, in task order.
      devices: the replica devices, host by host (``/job:worker/task:h/...``).
      spawned: True when this process started the workers (loopback).
    """
    addresses: Tuple[str, ...]
    devices: Tuple[str, ...]
    spawned: bool

    @property
    def num_hosts(self):
        return len(self.addresses)

    @property
    def cores_per_host(self):
        return len(self.devices) // self.num_hosts

    @property
    def master(self):
        """The TF 1.x session target: worker 0's master service, as on a pod."""
        return f"grpc://{self.addresses[0]}"

    def cluster_spec_dict(self):
        return {"worker": list(self.addresses)}


_lock = threading.Lock()
_pod: Optional[Pod] = None
_workers = []  # (task, address, Popen, log path) of the workers we started
_exiting = threading.Event()


def current_pod():
    """The pod this process coordinates, or None (one host)."""
    return _pod


# -- configuration -----------------------------------------------------------

def _chief_cluster(environ):
    """Worker addresses from TF_CONFIG when this process is its chief, else None."""
    raw = environ.get("TF_CONFIG", "")
    if not raw.strip():
        return None
    try:
        config = json.loads(raw)
    except ValueError as error:
        raise _config.ConfigError(f"TF_CONFIG is not valid JSON ({error})") from None
    task = config.get("task", {}) if isinstance(config, dict) else {}
    cluster = config.get("cluster", {}) if isinstance(config, dict) else {}
    if task.get("type") not in ("chief", "coordinator"):
        return None  # a worker's TF_CONFIG, or one this program reads itself
    workers = cluster.get("worker") if isinstance(cluster, dict) else None
    if not workers or not all(isinstance(a, str) and ":" in a for a in workers):
        raise _config.ConfigError(
            "TF_CONFIG names this process the chief but has no valid "
            "cluster.worker list; expected {\"cluster\": {\"worker\": "
            "[\"host:port\", ...]}, \"task\": {\"type\": \"chief\", \"index\": 0}}")
    return tuple(workers)


def requested_pod(environ=None):
    """``(hosts, addresses)`` this process should coordinate, or None.

    ``addresses`` is None when the workers are to be started here.
    """
    environ = os.environ if environ is None else environ
    addresses = _chief_cluster(environ)
    hosts = _config.num_hosts(environ)
    if addresses is not None:
        if hosts not in (None, len(addresses)):
            raise _config.ConfigError(
                f"{_config.HOSTS_VAR}={hosts} but TF_CONFIG lists "
                f"{len(addresses)} workers; unset one of them")
        return len(addresses), addresses
    if hosts is None or hosts == 1:
        return None
    return hosts, None


def cores_per_host(hosts, replicas):
    if replicas % hosts:
        raise _config.ConfigError(
            f"{_config.REPLICAS_VAR}={replicas} cannot be split over "
            f"{_config.HOSTS_VAR}={hosts} hosts; the number of replicas must "
            f"be a multiple of the number of hosts")
    return replicas // hosts


# -- starting the workers -----------------------------------------------------

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


def _tail(path, lines=5):
    try:
        with open(path, errors="replace") as log:
            text = [line.rstrip() for line in log if line.strip()]
    except OSError:
        return ""
    errors = [line for line in text if line.startswith("tpu-compat worker: error:")]
    return " | ".join(errors or text[-lines:])


def _spawn(task, addresses, cores):
    log = tempfile.NamedTemporaryFile(prefix=f"tpu-compat-worker{task}-",
                                      suffix=".log", delete=False)
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for name in ("TF_CONFIG", _config.HOSTS_VAR):
        env.pop(name, None)
    command = [sys.executable, "-m", "tpu_compat.runtime.pod_worker",
               "--cluster", ",".join(addresses), "--task", str(task),
               "--cores", str(cores), "--exit-with-parent"]
    # Its own session: a terminal's Ctrl-C reaches the chief, which stops the
    # workers; stdin is the pipe whose closing ends the worker.
    process = subprocess.Popen(command, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=log,
                               start_new_session=True, env=env)
    log.close()
    return process, log.name


def _await_ready(spawned, deadline):
    """Waits for every worker's ready line; returns the failed ones."""
    waiting = {task: process for task, _, process, _ in spawned}
    lines = {}

    def read(task, process):
        lines[task] = process.stdout.readline().decode(errors="replace")

    readers = [threading.Thread(target=read, args=(task, process), daemon=True)
               for task, process in waiting.items()]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    failed = []
    for task, address, process, log in spawned:
        line = lines.get(task, "")
        if pod_worker.READY_WORD not in line:
            failed.append((task, address, process, log))
    return failed


def _describe_failure(task, address, process, log, timeout):
    code = process.poll()
    if code is None:
        return (f"worker {task} ({address}, pid {process.pid}) did not come up "
                f"within {_config.POD_TIMEOUT_VAR}={timeout:g} s")
    detail = _tail(log)
    return (f"worker {task} ({address}) exited with code {code} while starting"
            + (f": {detail}" if detail else ""))


def _start_workers(hosts, cores, timeout, base_port):
    for attempt in range(_PORT_ATTEMPTS):
        ports = (list(range(base_port, base_port + hosts)) if base_port
                 else _free_ports(hosts))
        addresses = tuple(f"localhost:{port}" for port in ports)
        spawned = [(task, addresses[task]) + _spawn(task, addresses, cores)
                   for task in range(hosts)]
        _workers.extend(spawned)
        failed = _await_ready(spawned, time.monotonic() + timeout)
        if not failed:
            return addresses
        taken = [f for f in failed if f[2].poll() == pod_worker.EXIT_PORT_TAKEN]
        _stop_workers()
        if taken and not base_port and attempt + 1 < _PORT_ATTEMPTS:
            continue  # another program took a port we picked: pick again
        raise PodError("emulated pod: " + "; ".join(
            _describe_failure(*f, timeout) for f in failed))
    raise AssertionError("unreachable")


def _stop_workers():
    for _, _, process, log in _workers:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        try:
            os.unlink(log)
        except OSError:
            pass
    del _workers[:]


def _await_reachable(addresses, timeout):
    """External workers (TF_CONFIG): each must accept connections in time."""
    deadline = time.monotonic() + timeout
    for task, address in enumerate(addresses):
        host, port = address.rsplit(":", 1)
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=1.0):
                    break
            except OSError as error:
                if time.monotonic() >= deadline:
                    raise PodError(
                        f"emulated pod: worker {task} ({address}) is not "
                        f"reachable after {_config.POD_TIMEOUT_VAR}="
                        f"{timeout:g} s ({error}); start it with `tpu-compat "
                        f"worker` (docs/pods.md)") from None
                time.sleep(_POLL_SECONDS)


# -- connecting ---------------------------------------------------------------

def _connect(addresses):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import resolver  # pylint: disable=import-outside-toplevel
    # TF's own connect (the routed one would treat the emulated pod as local):
    # this process joins the cluster as its coordinator, job "chief".
    resolver._native_connect_to_cluster(  # pylint: disable=protected-access
        tf.train.ClusterSpec({"worker": list(addresses)}), job_name="chief")
    devices = []
    listed = tf.config.list_logical_devices()
    for task, address in enumerate(addresses):
        prefix = f"/job:worker/replica:0/task:{task}/device:"
        mine = [d.name for d in listed if d.name.startswith(prefix)]
        gpus = [name for name in mine if ":GPU:" in name]
        cores = gpus or [name for name in mine if ":CPU:" in name]
        if not cores:
            raise PodError(f"emulated pod: worker {task} ({address}) reports no "
                           f"CPU or GPU devices")
        devices.extend(sorted(cores, key=lambda n: int(n.rsplit(":", 1)[1])))
    counts = {sum(1 for d in devices if f"/task:{t}/" in d) for t in range(len(addresses))}
    if len(counts) != 1:
        raise PodError(f"emulated pod: the workers have different numbers of "
                       f"cores ({sorted(counts)}); every host of a pod slice "
                       f"has the same")
    return tuple(devices)


def start(replicas):
    """Starts (or joins) the requested pod; returns it, or None for one host.

    Called once per process, by the backend decision, before TensorFlow
    initializes its devices.
    """
    global _pod  # pylint: disable=global-statement
    with _lock:
        if _pod is not None:
            return _pod
        request = requested_pod()
        if request is None:
            return None
        hosts, addresses = request
        timeout = _config.pod_timeout()
        if addresses is None:
            cores = cores_per_host(hosts, replicas or _config.DEFAULT_EMULATED_REPLICAS)
            addresses = _start_workers(hosts, cores, timeout, _config.pod_port())
            # Not killed at exit: TensorFlow still talks to them while it shuts
            # down. Each exits when this process is gone and its stdin closes.
            atexit.register(_exiting.set)
        else:
            _await_reachable(addresses, timeout)
        try:
            devices = _connect(addresses)
        except BaseException:
            _stop_workers()
            raise
        if replicas and replicas != len(devices):
            _stop_workers()
            raise PodError(f"emulated pod: {_config.REPLICAS_VAR}={replicas} but "
                           f"the {len(addresses)} workers have {len(devices)} "
                           f"cores in all")
        _pod = Pod(addresses, devices, spawned=bool(_workers))
        _Monitor(_pod).start()
        return _pod


# -- watching the workers while the program runs --------------------------------

class _Monitor(threading.Thread):
    """Ends the program with a clear error when a worker goes away."""

    def __init__(self, pod):
        super().__init__(daemon=True, name="tpu-compat-pod-monitor")
        self._pod = pod

    def _lost_worker(self):
        for task, address, process, _ in list(_workers):
            code = process.poll()
            if code is not None:
                how = (f"was killed by signal {-code}" if code < 0
                       else f"exited with code {code}")
                return f"worker {task} ({address}, pid {process.pid}) {how}"
        if not self._pod.spawned:
            for task, address in enumerate(self._pod.addresses):
                host, port = address.rsplit(":", 1)
                try:
                    with socket.create_connection((host, int(port)), timeout=1.0):
                        pass
                except OSError as error:
                    return f"worker {task} ({address}) stopped answering ({error})"
        return None

    def run(self):
        while True:
            time.sleep(_POLL_SECONDS if self._pod.spawned else 1.0)
            if _exiting.is_set():
                return
            lost = self._lost_worker()
            if lost and not _exiting.is_set():
                break
        _lost.append(f"emulated pod: {lost} while the program was running; "
                     f"the pod is stopped")
        print(f"tpu-compat: error: {_lost[-1]}", file=sys.stderr, flush=True)
        _stop_workers()
        # The main thread gets the error as soon as it runs Python again (a
        # step blocked on the dead worker fails first); if it does not within
        # the grace period, the process ends here, with the message above.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(threading.main_thread().ident), ctypes.py_object(WorkerLostError))
        time.sleep(_GRACE_SECONDS)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(2)  # pylint: disable=protected-access
