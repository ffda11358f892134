"""Which hardware backs the strategies: a real TPU, local GPUs, or emulation.

The decision is made once per process (:func:`get_backend`) from local facts
only, so it never blocks on the network:

1. ``TPU_COMPAT_BACKEND`` (``auto``/``tpu``/``gpu``/``cpu``) and
   ``TPU_COMPAT_NUM_REPLICAS`` are read and validated.
2. ``auto`` picks ``tpu`` when TensorFlow sees physical TPU devices (a TPU VM)
   or the environment names a Cloud TPU (``TPU_NAME``,
   ``KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS``, ``TPU_CONFIG``: deployment settings, not
   something a legacy script hard-codes); else ``gpu`` when there are GPUs;
   else ``cpu``. A ``tpu=`` name written in a script does not switch ``auto``
   to real hardware: legacy scripts hard-code names of TPUs that no longer
   exist, and asking the GCE metadata server about them would hang or fail.
   ``TPU_COMPAT_BACKEND=tpu`` forces the real path.
3. ``cpu`` splits the host CPU into N logical devices (default 8, a v2-8/v3-8
   slice). That must happen before TensorFlow initializes its devices; when it
   is too late and the layout differs, :class:`EmulationTooLateError` says how
   to fix it.
4. An emulated pod slice (``TPU_COMPAT_NUM_HOSTS``, a chief's ``TF_CONFIG``)
   is not started by the decision: :func:`start_pod` is the explicit step
   (``install()``, ``doctor``, the pytest plugin), and :func:`get_backend`
   only finds the pod it started (docs/pods.md).
"""

import dataclasses
import os
import threading
from typing import Optional, Tuple

from tpu_compat import _config, settings
from tpu_compat.pod import config as pod_config
from tpu_compat.pod import session as pod_session

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "EmulationTooLateError",
    "TPU_ENV_VARS",
    "get_backend",
    "reset_for_tests",
    "start_pod",
]

# Environment variables through which TensorFlow's TPUClusterResolver finds a
# Cloud TPU when no name is passed (tensorflow/python/tpu/client/client.py).
TPU_ENV_VARS = ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG")


class BackendUnavailableError(RuntimeError):
    """The requested backend does not exist on this machine."""


class EmulationTooLateError(RuntimeError):
    """TensorFlow initialized its devices before the emulated TPU was set up."""


@dataclasses.dataclass(frozen=True)
class Backend:
    """The hardware decision for this process.

    Attributes:
      kind: ``tpu`` (real TPU), ``gpu`` (local GPUs) or ``cpu`` (logical CPUs).
      num_replicas: replicas a default strategy gets (TPU cores when emulated).
      devices: the device names the emulated strategies replicate over (empty
        for a real TPU, whose devices the TPU runtime reports).
      reason: why this backend was chosen, for ``tpu-compat doctor``.
    """
    kind: str
    num_replicas: int
    devices: Tuple[str, ...]
    reason: str
    # Emulated pod slices (tpu_compat/pod/): hosts, each a TF worker process.
    num_hosts: int = 1

    @property
    def emulated(self):
        return self.kind != "tpu"


_lock = threading.Lock()
_backend: Optional[Backend] = None


def _named_tpu_in_environment(environ):
    return [name for name in TPU_ENV_VARS if environ.get(name, "").strip()]


def _configure_logical_cpus(count):
    """Splits CPU:0 into ``count`` logical devices; returns their names."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError:
        # Devices are already initialized: acceptable only if the layout is
        # already the one we want (e.g. a second tpu_compat.install()).
        existing = tf.config.list_logical_devices("CPU")
        if len(existing) != count:
            raise EmulationTooLateError(
                f"cannot emulate a TPU with {count} cores: TensorFlow already "
                f"initialized its devices with {len(existing)} logical CPU "
                f"device(s). Configure the emulated TPU before TensorFlow runs "
                f"any op: call tpu_compat.install() at the top of the program, "
                f"run it with `tpu-compat run`, or set "
                f"{settings.REPLICAS_VAR}={len(existing)} to use the existing "
                f"layout.") from None
    return tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}"
                 for i in range(count))


def _pod_request(requested, local_tpus, environ):
    """The pod the settings ask for, or None; refused on a real TPU backend."""
    request = pod_config.requested_pod(environ)
    if request is not None and (requested == "tpu" or local_tpus
                                or _named_tpu_in_environment(environ)):
        raise BackendUnavailableError(
            f"{settings.HOSTS_VAR} / TF_CONFIG's worker list describe an emulated "
            f"TPU pod, but the backend is a real TPU, whose hosts come from its "
            f"TPUClusterResolver; unset them or use {settings.BACKEND_VAR}=cpu")
    return request


def _decide(requested, replicas, environ):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    # Physical-device listing does not initialize the logical devices, so the
    # CPU split below is still possible afterwards.
    local_tpus = tf.config.list_physical_devices("TPU")
    named = _named_tpu_in_environment(environ)

    pod = pod_session.current_pod()
    if pod is None and _pod_request(requested, local_tpus, environ) is not None:
        raise BackendUnavailableError(
            f"{settings.HOSTS_VAR} / TF_CONFIG's worker list describe an emulated "
            f"TPU pod, which is started by tpu_compat.install() (or `tpu-compat "
            f"run`) before the backend is used; call tpu_compat.install() first")
    if pod is not None:
        kind = "gpu" if ":GPU:" in pod.devices[0] else "cpu"
        return Backend(kind, len(pod.devices), pod.devices,
                       f"emulating a {pod.num_hosts}-host TPU pod slice: "
                       f"{pod.num_hosts} worker processes x {pod.cores_per_host} "
                       f"cores ({', '.join(pod.addresses)})",
                       num_hosts=pod.num_hosts)

    if requested in ("auto", "tpu"):
        if local_tpus:
            return Backend("tpu", replicas or len(local_tpus), (),
                           f"{len(local_tpus)} local TPU device(s) found")
        if named:
            # TensorFlow's own lookup of TPU_NAME's TPU has no bound: asked
            # first, with one (TPU_COMPAT_TPU_TIMEOUT).
            from tpu_compat.runtime import tpu_name  # pylint: disable=import-outside-toplevel
            why = tpu_name.unreachable(environ)
            if why:
                raise BackendUnavailableError(why)
            return Backend("tpu", replicas or 0, (),
                           f"{named[0]} names a Cloud TPU")
        if requested == "tpu":
            raise BackendUnavailableError(
                f"{settings.BACKEND_VAR}=tpu but no TPU is reachable: TensorFlow "
                f"lists no local TPU devices and none of "
                f"{', '.join(TPU_ENV_VARS)} is set. Set TPU_NAME to your TPU, "
                f"or use {settings.BACKEND_VAR}=auto to emulate one.")

    if requested in ("auto", "gpu"):
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            count = replicas or len(gpus)
            if count > len(gpus):
                raise BackendUnavailableError(
                    f"{settings.REPLICAS_VAR}={count} but only {len(gpus)} GPU(s) "
                    f"are present")
            devices = tuple(f"/job:localhost/replica:0/task:0/device:GPU:{i}"
                            for i in range(count))
            return Backend("gpu", count, devices,
                           f"no TPU; emulating {count} TPU core(s) on local GPUs")
        if requested == "gpu":
            raise BackendUnavailableError(
                f"{settings.BACKEND_VAR}=gpu but TensorFlow lists no GPU")

    count = replicas or settings.DEFAULT_EMULATED_REPLICAS
    why = ("requested" if requested == "cpu" else "no TPU or GPU found")
    devices = _configure_logical_cpus(count)
    return Backend("cpu", count, devices,
                   f"{why}; emulating a {count}-core TPU on {count} logical CPU "
                   f"devices")


def _requested(backend, num_replicas):
    """The backend kind and replica count asked for: the arguments, else the variables."""
    requested = (_config.choice("backend", backend, settings.BACKENDS)
                 if backend is not None else settings.read("backend"))
    replicas = (_config.replica_count("num_replicas", num_replicas)
                if num_replicas is not None else settings.read("num_replicas"))
    return requested, replicas


def start_pod(backend=None, num_replicas=None):
    """Starts (or joins) the emulated pod the settings ask for; returns it or None.

    The explicit step before :func:`get_backend` for ``install()``, ``tpu-compat
    doctor`` and the pytest plugin: with ``TPU_COMPAT_NUM_HOSTS`` it starts the
    worker processes, with a chief's ``TF_CONFIG`` it waits for the workers,
    and then connects to them (tpu_compat/pod/session.py). Arguments as
    :func:`get_backend`'s. Once the backend is decided it starts nothing.
    """
    with _lock:
        requested, replicas = _requested(backend, num_replicas)
        if _backend is not None:
            return pod_session.current_pod()
        environ = os.environ
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        request = _pod_request(requested, tf.config.list_physical_devices("TPU"), environ)
        return pod_session.start(request, replicas) if request is not None else None


def get_backend(backend=None, num_replicas=None):
    """The process's backend, decided (and devices configured) on first call.

    Args:
      backend: overrides ``TPU_COMPAT_BACKEND`` on the first call.
      num_replicas: overrides ``TPU_COMPAT_NUM_REPLICAS`` on the first call.

    Later calls return the same decision; asking for a different one is an
    error, because the device layout is fixed once per process. It starts no
    process: an emulated pod must have been started by :func:`start_pod`.
    """
    global _backend
    with _lock:
        requested, replicas = _requested(backend, num_replicas)
        if _backend is None:
            _backend = _decide(requested, replicas, os.environ)
        elif ((backend is not None and requested not in ("auto", _backend.kind))
              or (num_replicas is not None and _backend.emulated
                  and replicas != _backend.num_replicas)):
            raise EmulationTooLateError(
                f"this process already uses the {_backend.kind} backend with "
                f"{_backend.num_replicas} replica(s); the device layout is "
                f"fixed once per process, so backend={requested!r}, "
                f"num_replicas={replicas!r} needs a new process")
        return _backend


def current_backend():
    """The backend if already decided, else None (never decides)."""
    return _backend


def reset_for_tests():
    """Forgets the decision (devices stay configured). For tests only."""
    global _backend
    with _lock:
        _backend = None
