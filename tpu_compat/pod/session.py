"""The chief's side of an emulated pod: start it, connect to it, know it.

:func:`start` is the one explicit step that brings a pod up, taken by
``tpu_compat.install()`` (so ``tpu-compat run``), ``tpu-compat doctor`` and
the pytest plugin through ``runtime.backend.start_pod``, before the backend
is decided (``get_backend()`` only reads :func:`current_pod`):

* ``TPU_COMPAT_NUM_HOSTS=H`` (``tpu-compat run --hosts H``): this process
  starts H workers on loopback ports (:mod:`.launch`), each with N/H
  emulated cores, and connects to them. They exit with it, whatever way it
  ends.
* ``TF_CONFIG`` naming a ``worker`` job and this process as its ``chief``:
  the workers already run (``tpu-compat worker`` on each machine,
  docs/pods.md); this process connects to them.

Faults end the program with a :class:`~tpu_compat.pod.errors.PodError`
naming the worker, within bounded times (docs/pods.md): a worker that does
not come up within ``TPU_COMPAT_POD_TIMEOUT`` seconds or a port that is
taken (here), a worker that dies while the program runs (:mod:`.faults`).
"""

import atexit
import contextlib
import dataclasses
import os
import threading
from typing import Optional, Tuple

from tpu_compat import settings
from tpu_compat.pod import config as pod_config
from tpu_compat.pod import faults, launch, loopback
from tpu_compat.pod.errors import PodError

__all__ = ["Pod", "current_pod", "start"]


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


def current_pod():
    """The pod this process coordinates, or None (one host, or not started)."""
    return _pod


# TF's eager client streams remote ops asynchronously by default; measured on
# TF 2.21, a read right after a remote assign (tf.train.Checkpoint.save's save
# counter on worker 0) then sometimes fails with "Unable to find the relevant
# tensor remote_handle", and TF's own message advises turning streaming off.
# Read once, when the first eager client is made, so it is set before connecting.
_STREAMING_VAR = "TF_ENABLE_EAGER_CLIENT_STREAMING_ENQUEUE"


def _connect(addresses):
    os.environ.setdefault(_STREAMING_VAR, "False")
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    # TF's own connect, from where install() never routes it (the routed one
    # would treat the emulated pod as local): this process joins the cluster
    # as its coordinator, job "chief".
    from tpu_compat._tf_internals import eager_remote
    # Connecting gives this process a TensorFlow server too (the workers call
    # back): on loopback only when every worker is on this machine's loopback.
    local = all(loopback.is_loopback_host(a.rpartition(":")[0]) for a in addresses)
    try:
        with loopback.loopback_only() if local else contextlib.nullcontext():
            eager_remote.connect_to_cluster(
                tf.train.ClusterSpec({"worker": list(addresses)}), job_name="chief")
            # TensorFlow starts the server when the context initializes: here.
            listed = tf.config.list_logical_devices()
    except loopback.LoopbackUnavailable as error:
        raise PodError(f"emulated pod: the chief would listen on every network "
                       f"interface: keeping it to loopback is not possible here "
                       f"({error})") from None
    devices = []
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


def start(request, replicas):
    """Starts (or joins) the pod ``request`` asks for; returns it.

    Args:
      request: a :class:`tpu_compat.pod.config.PodRequest` (``requested_pod``).
      replicas: the replica count asked for, or None (8, or the workers' cores).

    Called once per process before TensorFlow initializes its devices; a
    later call returns the same pod.
    """
    global _pod  # pylint: disable=global-statement
    with _lock:
        if _pod is not None:
            return _pod
        hosts, addresses = request
        timeout = settings.read("pod_timeout")
        if addresses is None:
            cores = pod_config.cores_per_host(
                hosts, replicas or settings.DEFAULT_EMULATED_REPLICAS)
            addresses = launch.start_workers(hosts, cores, timeout, settings.read("pod_port"))
            # Not killed at exit: TensorFlow still talks to them while it shuts
            # down. Each exits when this process is gone and its stdin closes.
            atexit.register(faults.program_exiting)
        else:
            launch.await_reachable(addresses, timeout)
        try:
            devices = _connect(addresses)
        except BaseException:
            launch.stop_workers()
            raise
        if replicas and replicas != len(devices):
            launch.stop_workers()
            raise PodError(f"emulated pod: {settings.REPLICAS_VAR}={replicas} but "
                           f"the {len(addresses)} workers have {len(devices)} "
                           f"cores in all")
        _pod = Pod(addresses, devices, spawned=bool(launch.worker_pids()))
        faults.watch(_pod)
        return _pod
