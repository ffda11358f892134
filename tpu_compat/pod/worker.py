"""One host of an emulated TPU pod: a TensorFlow gRPC server, nothing else.

A TPU pod's host runs TensorFlow's worker service; the program's coordinator
(the chief) places the replicas' ops and input pipelines on its devices. This
is that worker: ``tf.distribute.Server`` for task ``--task`` of the cluster's
``worker`` job, with ``--cores`` emulated cores (logical CPU devices), or the
machine's GPUs with ``--device gpu``.

Started by :mod:`tpu_compat.pod.launch` (``tpu-compat run --hosts H`` starts
H of them on loopback ports) or by hand on each machine of a real cluster
(``tpu-compat worker``, docs/pods.md). It prints one line when it serves::

    tpu-compat worker 1 ready on localhost:41234 (4 CPU cores)

and, with ``--exit-with-parent``, exits as soon as its standard input closes:
the chief holds the other end, so a chief that dies for any reason (even
SIGKILL) leaves no worker behind. A stopped worker (SIGSTOP) cannot read its
pipe: with ``--kill-with-parent`` the kernel SIGKILLs it when the chief's
thread that started it ends (Linux's ``PR_SET_PDEATHSIG``; SIGKILL ends a
stopped process too).
"""

import argparse
import contextlib
import ctypes
import os
import signal
import socket
import sys
import threading
import time

# Exit codes, read by the chief to say what went wrong (defined once, there).
from tpu_compat.exit_codes import EXIT_INTERRUPTED, EXIT_PORT_TAKEN, EXIT_USAGE
from tpu_compat import _config
from tpu_compat.pod import config as pod_config
from tpu_compat.pod import loopback

READY_PREFIX = "tpu-compat worker "
# Its error lines start so; the chief quotes them when the worker fails to start.
ERROR_PREFIX = "tpu-compat worker: error:"
READY_WORD = " ready on "


def parser(**kwargs):
    """The worker's arguments (also `tpu-compat worker`'s, commands/worker.py)."""
    parser = argparse.ArgumentParser(  # pylint: disable=redefined-outer-name
        prog="tpu-compat worker", **kwargs,
        description="Serve one host of an emulated TPU pod (TensorFlow's gRPC "
                    "worker service). The chief program connects to it.")
    parser.add_argument("--cluster", metavar="ADDR[,ADDR...]",
                        help="every worker's host:port, in task order (default: "
                             "TF_CONFIG's cluster.worker)")
    parser.add_argument("--task", metavar="H",
                        help="this worker's index in --cluster (default: "
                             "TF_CONFIG's task.index)")
    parser.add_argument("--cores", default=None, metavar="C",
                        help=f"emulated TPU cores on this host (logical CPU "
                             f"devices, 1 to {_config.MAX_REPLICAS}; default 8, or 1 "
                             f"with --device gpu)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="what backs the cores: logical CPU devices, or "
                             "this machine's GPUs (default cpu)")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="exit when standard input closes (used by the "
                             "chief for the workers it starts)")
    parser.add_argument("--kill-with-parent", action="store_true",
                        help="Linux: be killed (SIGKILL) when the parent thread "
                             "that started this worker ends, even while stopped "
                             "(used by the chief for the workers it starts)")
    return parser


def _cluster_from_tf_config():
    try:
        entry = pod_config.worker_task(os.environ)
    except (ValueError, KeyError, TypeError) as error:
        _fail(EXIT_USAGE, f"TF_CONFIG is not valid ({type(error).__name__}: "
                          f"{error}); expected {pod_config.TF_CONFIG_SHAPE}")
    if entry is None:
        return None, None
    workers, kind, index = entry
    if index is None:
        _fail(EXIT_USAGE, f"TF_CONFIG's task type is {kind!r}; a worker's is "
                          f"'worker' (the chief is the program: `tpu-compat run` "
                          f"with TF_CONFIG task type chief)")
    return workers, index


def _fail(code, message):
    print(f"{ERROR_PREFIX} {message}", file=sys.stderr, flush=True)
    # The server's threads would keep a normal exit waiting.
    os._exit(code)  # pylint: disable=protected-access


def _port_taken(address):
    """Why the worker cannot listen on ``address``'s port, or None.

    Checked before importing TensorFlow (seconds), which reports the same
    failure only once its server starts; TensorFlow's check still stands.
    """
    host, _, port = address.rpartition(":")
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # As the server will bind (_listening_scope): loopback for a loopback
        # address, else every interface; TIME_WAIT reusable.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1" if loopback.is_loopback_host(host) else "", int(port)))
        probe.listen(1)
        return None
    except OSError as error:
        return error.strerror or str(error)
    finally:
        probe.close()


def _serve_until_stopped():
    """Sleeps in Python, so that Ctrl-C reaches this process.

    ``server.join()`` would wait inside TensorFlow, where Python never runs
    the signal handlers. Short sleeps: the kernel may hand SIGINT to one of
    the server's threads, and then only the main thread's next wake-up runs
    Python's handler.
    """
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("tpu-compat worker: interrupted; the worker stops", file=sys.stderr,
              flush=True)
        os._exit(EXIT_INTERRUPTED)  # pylint: disable=protected-access


# prctl's option that sets the signal sent when the parent ends
# (linux/prctl.h; man 2 prctl).
_PR_SET_PDEATHSIG = 1


def _killed_with_parent():
    """Asks the kernel for SIGKILL when the parent ends; whether it agreed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0


def _exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    os._exit(0)  # pylint: disable=protected-access


def _usage(parse, name, value):
    """``parse(name, value)`` (a :mod:`tpu_compat._config` parser); exit 2 naming it."""
    try:
        return parse(name, value)
    except _config.ConfigError as error:
        _fail(EXIT_USAGE, str(error))


def _checked_cluster(args):
    """``(workers, task)``: the flags, else TF_CONFIG; each checked before any work."""
    workers = args.cluster.split(",") if args.cluster else None
    task = None if args.task is None else _usage(_config.non_negative_int, "--task",
                                                 args.task)
    if workers is None or task is None:
        env_workers, env_task = _cluster_from_tf_config()
        workers = workers or env_workers
        task = env_task if task is None else task
    if not workers or task is None:
        _fail(EXIT_USAGE, "give --cluster and --task, or set TF_CONFIG with "
                          "cluster.worker and task.index")
    if not 0 <= task < len(workers):
        _fail(EXIT_USAGE, f"--task={task} is not valid; allowed values: 0 to "
                          f"{len(workers) - 1} (the cluster has {len(workers)} "
                          f"workers)")
    for index, address in enumerate(workers):
        host, _, port = address.rpartition(":")
        if not host or _config.ascii_int(port) is None or not 1 <= int(port) <= 65535:
            _fail(EXIT_USAGE, f"worker {index}'s address {address!r} is not valid; "
                              f"expected host:port with a port from 1 to 65535")
    return workers, task


def _listening_scope(address):
    """Where the server may listen: loopback only for a loopback address.

    TensorFlow's server listens on every interface and has no authentication;
    a worker whose cluster address is loopback (every worker of an emulated
    pod, ``localhost:P``) is reached on loopback only, so it listens there
    alone (:mod:`tpu_compat.pod.loopback`). A worker of a real multi-machine
    pod must be reachable from the others: TensorFlow's every interface
    (docs/pods.md, "Two machines", says how to restrict that).
    """
    if not loopback.is_loopback_host(address.rpartition(":")[0]):
        return contextlib.nullcontext()
    return loopback.loopback_only()


def _checked_cores(args):
    if args.cores is None:
        return 8 if args.device == "cpu" else 1
    return _usage(_config.replica_count, "--cores", args.cores)


def main(argv=None):
    return serve(parser().parse_args(argv))


def serve(args):
    """Serves one host until stopped; ``args`` as :func:`parser` parses them."""
    workers, task = _checked_cluster(args)
    cores = _checked_cores(args)
    address = workers[task]
    if args.kill_with_parent:
        # Before the stdin watch: a chief that ended before this call closed
        # the pipe, so the watch below still ends this worker.
        _killed_with_parent()
    if args.exit_with_parent:
        threading.Thread(target=_exit_when_stdin_closes, daemon=True,
                         name="tpu-compat-exit-with-parent").start()
    taken = _port_taken(address)
    if taken:
        _fail(EXIT_PORT_TAKEN, f"worker {task} cannot listen on {address}: port "
                               f"{address.rsplit(':', 1)[1]} is taken or not "
                               f"available ({taken})")

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    if args.device == "gpu":
        # The worker service's devices come from the ConfigProto, not from
        # tf.config's logical-device settings (those apply to eager only).
        found = len(tf.config.list_physical_devices("GPU"))
        if found < cores:
            _fail(EXIT_USAGE, f"--cores={cores} GPUs requested but this machine "
                              f"has {found}")
        config = tf.compat.v1.ConfigProto(device_count={"GPU": cores})
        config.gpu_options.visible_device_list = ",".join(map(str, range(cores)))
    else:
        config = tf.compat.v1.ConfigProto(device_count={"CPU": cores, "GPU": 0})
    try:
        with _listening_scope(address):
            server = tf.distribute.Server(
                tf.train.ClusterSpec({"worker": workers}), job_name="worker",
                task_index=task, protocol="grpc", config=config, start=True)
    except loopback.LoopbackUnavailable as error:
        _fail(EXIT_USAGE, f"worker {task} ({address}) would listen on every network "
                          f"interface: keeping it to loopback is not possible here "
                          f"({error})")
    except (tf.errors.UnknownError, tf.errors.InvalidArgumentError,
            tf.errors.UnavailableError) as error:
        port = address.rsplit(":", 1)[-1]
        detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
        _fail(EXIT_PORT_TAKEN, f"worker {task} cannot listen on {address}: port "
                               f"{port} is taken or not available ({detail})")
    print(f"{READY_PREFIX}{task}{READY_WORD}{address} ({cores} "
          f"{args.device.upper()} cores)", flush=True)
    _serve_until_stopped()
    # Not reached (the worker ends by _fail or os._exit); the server must stay
    # referenced until then, or it would be stopped.
    server.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
