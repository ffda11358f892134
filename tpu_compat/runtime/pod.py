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
bounded times (measured in docs/pods.md): a worker that does not come up
within ``TPU_COMPAT_POD_TIMEOUT`` seconds, a port that is taken, a worker
that dies while the program runs (reported within about a second; the chief
is ended after a grace period if the failed step does not return). Ctrl-C
during a step that does not return stops the workers after a grace period.
"""

import atexit
import ctypes
import dataclasses
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional, Tuple

from tpu_compat import _config, settings
from tpu_compat.runtime import pod_worker

__all__ = ["Pod", "PodError", "WorkerLostError", "current_pod", "failure_behind",
           "report", "requested_pod", "start"]

_POLL_SECONDS = 0.2
# How long a chief blocked in a TensorFlow call on a dead worker gets to
# raise the PodError itself before the process is ended.
_GRACE_SECONDS = 10.0
_PORT_ATTEMPTS = 3
# How long Ctrl-C may wait for the main thread to leave a TensorFlow call.
_INTERRUPT_GRACE_SECONDS = 5.0


class PodError(RuntimeError):
    """A pod worker failed: did not start, lost its port, or died."""


class WorkerLostError(PodError):
    """A worker went away while the program ran (raised in the main thread)."""

    def __init__(self, *args):
        # Raised by the monitor as a class (an async exception): the message is
        # the line it printed.
        super().__init__(*(args or _reported[-1:] or ("emulated pod: a worker went away",)))


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
_workers_lock = threading.RLock()
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
    hosts = settings.read("num_hosts", environ)
    if addresses is not None:
        if hosts not in (None, len(addresses)):
            raise _config.ConfigError(
                f"{settings.HOSTS_VAR}={hosts} but TF_CONFIG lists "
                f"{len(addresses)} workers; unset one of them")
        return len(addresses), addresses
    if hosts is None or hosts == 1:
        return None
    return hosts, None


def cores_per_host(hosts, replicas):
    return _config.cores_per_host(hosts, replicas, hosts_name=settings.HOSTS_VAR,
                                  replicas_name=settings.REPLICAS_VAR)


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
    log = tempfile.NamedTemporaryFile(prefix=f"tpu-compat-worker{task}-",
                                      suffix=".log", delete=False)
    command = [sys.executable, "-m", "tpu_compat.runtime.pod_worker",
               "--cluster", ",".join(addresses), "--task", str(task),
               "--cores", str(cores), "--exit-with-parent"]
    # Its own session: a terminal's Ctrl-C reaches the chief, which stops the
    # workers; stdin is the pipe whose closing ends the worker.
    process = subprocess.Popen(command, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=log,
                               start_new_session=True, env=_worker_environment())
    log.close()
    return process, log.name


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
        (ready if pod_worker.READY_WORD in line else broken).add(task)
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


def _start_workers(hosts, cores, timeout, base_port):
    for attempt in range(_PORT_ATTEMPTS):
        ports = (list(range(base_port, base_port + hosts)) if base_port
                 else _free_ports(hosts))
        addresses = tuple(f"localhost:{port}" for port in ports)
        spawned = []
        with _workers_lock:
            for task in range(hosts):
                spawned.append((task, addresses[task]) + _spawn(task, addresses, cores))
                _workers.append(spawned[-1])
        failed = _await_ready(spawned, time.monotonic() + timeout)
        if not failed:
            return addresses
        described = [_describe_failure(*f, timeout) for f in failed]
        taken = [f for f in failed if f[2].poll() == pod_worker.EXIT_PORT_TAKEN]
        _stop_workers()
        if taken and not base_port and attempt + 1 < _PORT_ATTEMPTS:
            continue  # another program took a port we picked: pick again
        hint = (f"; choose other ports with {settings.POD_PORT_VAR}, or unset it to "
                f"let tpu-compat pick free ones" if taken and base_port else "")
        raise PodError("emulated pod: " + "; ".join(described) + hint)
    raise AssertionError("unreachable")


def _stop_workers():
    """Kills the workers this process started (each with its process group)."""
    with _workers_lock:
        workers = list(_workers)
        del _workers[:]
    for _, _, process, log in workers:
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


def _unreachable(task, address, timeout=1.0):
    """Why worker ``task`` at ``address`` does not accept connections, or None."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except (OSError, ValueError) as error:
        return f"worker {task} ({address}) is not reachable ({error})"


def _await_reachable(addresses, timeout):
    """External workers (TF_CONFIG): each must accept connections in time."""
    deadline = time.monotonic() + timeout
    for task, address in enumerate(addresses):
        while True:
            why = _unreachable(task, address,
                               timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            if why is None:
                break
            if time.monotonic() >= deadline:
                raise PodError(
                    f"emulated pod: {why} after {settings.POD_TIMEOUT_VAR}="
                    f"{timeout:g} s; start it with `tpu-compat worker` on its "
                    f"machine (docs/pods.md)")
            time.sleep(_POLL_SECONDS)


# -- connecting ---------------------------------------------------------------

# TF's eager client streams remote ops asynchronously by default; measured on
# TF 2.21, a read right after a remote assign (tf.train.Checkpoint.save's save
# counter on worker 0) then sometimes fails with "Unable to find the relevant
# tensor remote_handle", and TF's own message advises turning streaming off.
# Read once, when the first eager client is made, so it is set before connecting.
_STREAMING_VAR = "TF_ENABLE_EAGER_CLIENT_STREAMING_ENQUEUE"


def _connect(addresses):
    os.environ.setdefault(_STREAMING_VAR, "False")
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
        timeout = settings.read("pod_timeout")
        if addresses is None:
            cores = cores_per_host(hosts, replicas or settings.DEFAULT_EMULATED_REPLICAS)
            addresses = _start_workers(hosts, cores, timeout, settings.read("pod_port"))
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
            raise PodError(f"emulated pod: {settings.REPLICAS_VAR}={replicas} but "
                           f"the {len(addresses)} workers have {len(devices)} "
                           f"cores in all")
        _pod = Pod(addresses, devices, spawned=bool(_workers))
        _Monitor(_pod, _InterruptWatch.install()).start()
        return _pod


# -- faults while the program runs ----------------------------------------------
#
# The main thread runs the user's program; a daemon thread (the monitor) polls
# the workers. Whoever notices a lost worker first reports it, in one line:
#
# * usually TensorFlow does: the step in flight fails within about a second
#   (the dead worker's connections are reset) and the runner, asking
#   :func:`failure_behind`, reports the lost worker instead of gRPC's error;
# * the monitor, within _POLL_SECONDS, prints the line, stops the other
#   workers and raises WorkerLostError in the main thread when it next runs
#   Python; if the main thread is still inside TensorFlow after
#   _GRACE_SECONDS, the process ends there (exit code 2).

_report_lock = threading.Lock()
_reported = []       # the one error line printed about the pod
_disarmed = []       # the main thread handles the failure: no async exception
_interrupted = []    # the pod was stopped because Ctrl-C could not get through


def report(message):
    """Prints ``tpu-compat: error: MESSAGE`` unless a pod error was already printed."""
    with _report_lock:
        if _reported:
            return
        _reported.append(message)
    print(f"tpu-compat: error: {message}", file=sys.stderr, flush=True)


def _set_async_exception(exception_type):
    """Raises ``exception_type`` in the main thread (None clears a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(threading.main_thread().ident),
        ctypes.py_object(exception_type) if exception_type is not None else None)


def _lost_worker(pod):
    """What happened to the first worker found gone, or None."""
    with _workers_lock:
        workers = list(_workers)
    for task, address, process, _ in workers:
        code = process.poll()
        if code is not None:
            how = (f"was killed by signal {-code}" if code < 0
                   else f"exited with code {code}")
            return f"worker {task} ({address}, pid {process.pid}) {how}"
    if not pod.spawned:
        for task, address in enumerate(pod.addresses):
            why = _unreachable(task, address)
            if why is not None:
                return why.replace("is not reachable", "stopped answering")
    return None


def _is_tensorflow_error(error):
    errors = sys.modules.get("tensorflow.python.framework.errors_impl")
    return errors is not None and isinstance(error, errors.OpError)


def failure_behind(error, settle_seconds=1.0):
    """The pod failure that explains ``error`` ending the program, or None.

    Called by the runner (main thread) with whatever ended the program. A
    TensorFlow error raised because a worker died (``UnavailableError``:
    socket closed) becomes the :class:`WorkerLostError` naming the worker; a
    step stopped because Ctrl-C could not interrupt it becomes the
    ``KeyboardInterrupt`` it stands for. The monitor's pending exception is
    withdrawn: the main thread reports now.
    """
    if _pod is None:
        return None
    with _report_lock:
        _disarmed.append(True)
        _set_async_exception(None)
    if _interrupted and not isinstance(error, KeyboardInterrupt):
        return KeyboardInterrupt()
    if isinstance(error, WorkerLostError):
        return error
    if _reported and not _interrupted:
        return WorkerLostError(_reported[0])  # the monitor saw it first
    lost = _lost_worker(_pod)
    # TensorFlow can notice a dead worker (its sockets close) a moment before
    # its exit is visible here.
    deadline = time.monotonic() + (settle_seconds if _is_tensorflow_error(error) else 0)
    while lost is None and time.monotonic() < deadline:
        time.sleep(0.05)
        lost = _lost_worker(_pod)
    if lost is None:
        return None
    _stop_workers()
    return WorkerLostError(_lost_message(_pod, lost))


def _lost_message(pod, lost):
    stopped = ("the pod is stopped" if pod.spawned else
               "the program is stopped (the other workers keep running)")
    return f"emulated pod: {lost} while the program was running; {stopped}"


class _InterruptWatch:
    """Bounds Ctrl-C while the main thread waits inside TensorFlow.

    Python turns SIGINT into KeyboardInterrupt only when the main thread runs
    Python again; a step running on the pod (one TensorFlow call) keeps it in
    C++ until the step ends, however long that is. The C-level wakeup fd tells
    the monitor that SIGINT arrived; the handler (Python's, plus a note) tells
    it the main thread got it. If it does not within _INTERRUPT_GRACE_SECONDS,
    the monitor stops the workers: the step fails at once, and the program
    gets its KeyboardInterrupt (exit code 130 under ``tpu-compat run``).
    """

    def __init__(self, read_fd):
        self.read_fd = read_fd
        self.handler = None
        # Counts, not flags: the handler may run before the monitor reads the
        # wakeup byte of the same signal.
        self.arrived = 0    # SIGINTs the wakeup fd reported (monitor thread)
        self.delivered = 0  # SIGINTs the main thread took (the handler)

    @classmethod
    def install(cls):
        # Only the main thread may set handlers; a program (or a library) with
        # its own SIGINT handling or wakeup fd keeps it.
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            return None
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except ValueError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if previous != -1:
            signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
            return None
        watch = cls(read_fd)

        def on_interrupt(signum, frame):
            watch.delivered += 1
            signal.default_int_handler(signum, frame)

        signal.signal(signal.SIGINT, on_interrupt)
        watch.handler = on_interrupt
        return watch

    def wait(self, seconds):
        """Sleeps ``seconds``, counting the SIGINTs that arrive meanwhile."""
        ready, _, _ = select.select([self.read_fd], [], [], seconds)
        if ready:
            try:
                self.arrived += os.read(self.read_fd, 512).count(signal.SIGINT)
            except OSError:
                pass

    def pending(self):
        """Whether a SIGINT arrived that the main thread has not taken."""
        return (self.arrived > self.delivered
                and signal.getsignal(signal.SIGINT) is self.handler)


class _Monitor(threading.Thread):
    """Ends the program with a clear error when a worker goes away."""

    def __init__(self, pod, interrupts):
        super().__init__(daemon=True, name="tpu-compat-pod-monitor")
        self._pod = pod
        self._interrupts = interrupts
        self._interrupted_at = None

    def _sleep(self, seconds):
        if self._interrupts is None:
            time.sleep(seconds)
        else:
            self._interrupts.wait(seconds)

    def _interrupt_stuck(self):
        """Whether Ctrl-C has not reached the main thread for too long."""
        if self._interrupts is None or not self._interrupts.pending():
            self._interrupted_at = None  # none, or the program has it
            return False
        if self._interrupted_at is None:
            self._interrupted_at = time.monotonic()
        return time.monotonic() - self._interrupted_at >= _INTERRUPT_GRACE_SECONDS

    def run(self):
        period = _POLL_SECONDS if self._pod.spawned else 1.0
        while True:
            self._sleep(period)
            if _exiting.is_set():
                return
            if self._interrupt_stuck():
                self._stop_for_interrupt()
                return
            lost = _lost_worker(self._pod)
            if lost and not _exiting.is_set():
                break
        report(_lost_message(self._pod, lost))
        _stop_workers()
        with _report_lock:
            if not _disarmed:
                # Raised in the main thread as soon as it runs Python again.
                _set_async_exception(WorkerLostError)
        self._end_after_grace(2)

    def _stop_for_interrupt(self):
        _interrupted.append(True)
        print(f"tpu-compat: interrupted; the program is still inside a "
              f"TensorFlow call on the pod after {_INTERRUPT_GRACE_SECONDS:g} s, "
              f"so the pod's workers are stopped", file=sys.stderr, flush=True)
        _stop_workers()
        self._end_after_grace(130)

    @staticmethod
    def _end_after_grace(code):
        # The main thread normally ends the program first (the failed step
        # raises); if it is still stuck in TensorFlow, the process ends here.
        time.sleep(_GRACE_SECONDS)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # pylint: disable=protected-access
