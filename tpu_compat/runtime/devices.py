"""Device names of the TPU era, resolved onto the emulated TPU.

Legacy programs name hardware this machine may not have:

* the TPU host of TF 2.x: ``tf.config.experimental_connect_to_host(
  resolver.master())`` and input pipelines under ``tf.device('/job:worker')``
  or ``'/job:worker/replica:0/task:0/device:CPU:0'``;
* TPU cores: ``tf.config.list_logical_devices('TPU')``, ``tf.device('/TPU:3')``;
* GPUs of old multi-GPU scripts: ``MirroredStrategy(['/gpu:0', '/gpu:1'])``,
  ``OneDeviceStrategy('/gpu:0')``, ``tf.device('/gpu:1')``.

When the backend is emulated, ``install()`` routes these names so that the
worker host is this process's host (``/job:localhost``), TPU core ``i`` is
emulated core ``i``, and, on a machine without GPUs, GPU ``i`` is emulated
device ``i`` (with a :class:`TPUCompatDeviceWarning` saying so). A device list
that would put two replicas on one device is refused at once: stock
TensorFlow places them both on CPU:0 and hangs forever in the first
all-reduce. On a real TPU these names keep their meaning; only that refusal
applies.
"""

import functools

import tensorflow as tf

from tpu_compat import deprecation
from tpu_compat._tf_internals import (
    framework_config as config_lib, mirrored_strategy, one_device_strategy, ops)
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import hooks

__all__ = [
    "DeviceMappingError",
    "TPUCompatDeviceWarning",
    "connect_to_host",
    "device",
    "device_v1",
    "list_logical_devices",
    "list_physical_devices",
    "api_routes",
    "resolve",
    "route_strategy_devices",
]

# The originals, captured before install() replaces the public names.
_native_device_v2 = ops.device_v2
_native_device_v1 = ops.device
_native_connect_to_host = tf.config.experimental_connect_to_host
_native_list_logical_devices = config_lib.list_logical_devices
_native_list_physical_devices = config_lib.list_physical_devices

# Job names a TPU host had: TPUClusterResolver's default, and Cloud TPU pods'.
HOST_JOBS = ("worker", "tpu_worker")
_LOCAL_JOB = "localhost"


class DeviceMappingError(ValueError):
    """A device name cannot be placed on this machine or the emulated TPU."""


class TPUCompatDeviceWarning(UserWarning):
    """A device name of absent hardware was mapped onto an emulated device."""


def _warn_mapping(message):
    """Warns once per call site, at the user's line (as ``warn_legacy`` does)."""
    deprecation.warn_user(TPUCompatDeviceWarning(message))


@functools.lru_cache(maxsize=None)
def _has_physical(device_type):
    return bool(_native_list_physical_devices(device_type))


def _emulating():
    backend = backend_lib.current_backend()
    return backend if backend is not None and backend.emulated else None


def _indexed_device(backend, spec, original, kind):
    index = spec.device_index or 0
    if index >= len(backend.devices):
        raise DeviceMappingError(
            f"{original!r} names {kind} {index}, but the emulated TPU has "
            f"{len(backend.devices)} device(s) (0-{len(backend.devices) - 1}); run "
            f"with `tpu-compat run --replicas N` (TPU_COMPAT_NUM_REPLICAS) of at "
            f"least {index + 1}")
    return tf.DeviceSpec.from_string(backend.devices[index])


def resolve(name):
    """``(device name to use, mapped GPU?)`` for ``name`` on this machine.

    Unchanged unless the backend is emulated and ``name`` names the TPU host's
    job, a TPU core, or a GPU this machine lacks.
    """
    backend = _emulating()
    if backend is None or not isinstance(name, (str, tf.DeviceSpec)):
        return name, False
    text = name if isinstance(name, str) else name.to_string()
    lowered = text.lower()
    if not ("tpu" in lowered or "gpu" in lowered or "job:" in lowered):
        return name, False  # the fast path: every other name means itself
    spec = tf.DeviceSpec.from_string(text)
    device_type = (spec.device_type or "").upper()
    mapped_gpu = False
    host_index = 0
    if spec.job in HOST_JOBS:
        hosts = backend.num_hosts
        host_index = spec.task or 0
        if host_index >= hosts or spec.replica not in (None, 0):
            raise DeviceMappingError(
                f"{text!r} names task {host_index} of the TPU host job "
                f"{spec.job!r}, but the emulated TPU has {hosts} host(s) (tasks "
                f"0-{hosts - 1}); run with `tpu-compat run --hosts N` "
                f"(TPU_COMPAT_NUM_HOSTS) for a pod slice")
        # One host: this process. A pod: its worker processes, job "worker".
        spec = (spec.replace(job="worker", replica=0, task=host_index) if hosts > 1
                else spec.replace(job=_LOCAL_JOB, replica=0, task=0))
    if device_type == "TPU":
        # On a host, TPU core i is that host's i-th core.
        if spec.job == "worker" and spec.device_index is not None:
            per_host = len(backend.devices) // backend.num_hosts
            if spec.device_index >= per_host:
                raise DeviceMappingError(
                    f"{text!r} names TPU core {spec.device_index} of host "
                    f"{host_index}, but each emulated host has {per_host} cores "
                    f"(0-{per_host - 1})")
            spec = spec.replace(device_index=host_index * per_host + spec.device_index)
        target = _indexed_device(backend, spec, text, "TPU core")
        spec = spec.replace(job=target.job, replica=target.replica, task=target.task,
                            device_type=target.device_type,
                            device_index=target.device_index)
    elif device_type == "GPU" and backend.kind != "gpu" and not _has_physical("GPU"):
        target = _indexed_device(backend, spec, text, "GPU")
        spec = spec.replace(device_type=target.device_type,
                            device_index=target.device_index)
        mapped_gpu = True
    return spec.to_string(), mapped_gpu


def _placed(native, name):
    mapped, mapped_gpu = resolve(name)
    if mapped_gpu:
        _warn_mapping(f"{name!r} names a GPU this machine lacks; placed on the "
                      f"emulated device {mapped!r} instead")
    return native(mapped)


def device(device_name):
    """``tf.device``: TPU-host, TPU-core and absent-GPU names resolved (see module doc)."""
    return _placed(_native_device_v2, device_name)


def device_v1(device_name_or_function):
    """``tf.compat.v1.device``; functions are passed through unchanged."""
    return _placed(_native_device_v1, device_name_or_function)


def connect_to_host(remote_host=None, job_name="worker"):
    """``tf.config.experimental_connect_to_host``; the emulated host is this process.

    ``resolver.master()`` of the emulated TPU is ``''`` (a local session),
    which TensorFlow's function refuses ("Must provide at least one
    remote_host"); when emulating there is no remote host to connect to.
    """
    if _emulating() is not None:
        if job_name not in HOST_JOBS:
            raise DeviceMappingError(
                f"experimental_connect_to_host: job_name={job_name!r} is not valid "
                f"on the emulated TPU; allowed values: {', '.join(HOST_JOBS)}")
        return None
    return _native_connect_to_host(remote_host, job_name)


def list_logical_devices(device_type=None):
    """``tf.config.list_logical_devices``; ``'TPU'`` lists the emulated cores."""
    backend = _emulating()
    if backend is None or not isinstance(device_type, str) or device_type.upper() != "TPU":
        return _native_list_logical_devices(device_type)
    if backend.num_hosts > 1:  # an emulated pod: each host's cores, host by host
        per_host = backend.num_replicas // backend.num_hosts
        return [tf.config.LogicalDevice(
            name=f"/job:worker/replica:0/task:{i // per_host}/device:TPU:{i % per_host}",
            device_type="TPU") for i in range(backend.num_replicas)]
    return [tf.config.LogicalDevice(
        name=f"/job:{_LOCAL_JOB}/replica:0/task:0/device:TPU:{i}", device_type="TPU")
        for i in range(backend.num_replicas)]


def list_physical_devices(device_type=None):
    """``tf.config.list_physical_devices``; ``'TPU'`` lists the emulated cores."""
    backend = _emulating()
    if backend is None or not isinstance(device_type, str) or device_type.upper() != "TPU":
        return _native_list_physical_devices(device_type)
    return [tf.config.PhysicalDevice(name=f"/physical_device:TPU:{i}", device_type="TPU")
            for i in range(backend.num_replicas)]


# -- device lists of TensorFlow's own strategies -------------------------------

def _canonical(name):
    spec = tf.DeviceSpec.from_string(name)
    return spec.replace(job=spec.job or _LOCAL_JOB, replica=spec.replica or 0,
                        task=spec.task or 0, device_type=(spec.device_type or "CPU").upper(),
                        device_index=spec.device_index or 0).to_string()


def _strategy_devices(strategy_name, devices):
    """``devices`` resolved for a strategy; refuses two replicas on one device."""
    if devices is None:
        return None, False
    given = [devices] if isinstance(devices, (str, tf.DeviceSpec)) else list(devices)
    resolved, any_gpu_mapped = [], False
    for name in given:
        mapped, mapped_gpu = resolve(name)
        text = mapped if isinstance(mapped, str) else mapped.to_string()
        if (_emulating() is None and "gpu" in text.lower()
                and not _has_physical("GPU")):
            raise DeviceMappingError(
                f"{strategy_name}: {name!r} names a GPU this machine lacks; "
                f"TensorFlow would run every replica on the CPU and hang in the "
                f"first step. Name devices that exist "
                f"(tf.config.list_logical_devices())")
        resolved.append(mapped)
        any_gpu_mapped = any_gpu_mapped or mapped_gpu
    seen = {}
    for name, mapped in zip(given, resolved):
        key = _canonical(mapped if isinstance(mapped, str) else mapped.to_string())
        if key in seen:
            raise DeviceMappingError(
                f"{strategy_name}: {seen[key]!r} and {name!r} both resolve to "
                f"{key}; two replicas on one device would never finish their "
                f"first step. Name distinct devices")
        seen[key] = name
    if isinstance(devices, (str, tf.DeviceSpec)):
        return resolved[0], any_gpu_mapped
    if isinstance(devices, (list, tuple)):
        resolved = type(devices)(resolved)
    return resolved, any_gpu_mapped


def _mapped_init(native_init, strategy_name, argument):
    """``native_init`` with its ``argument`` (a device or list) resolved first."""

    @functools.wraps(native_init)
    def __init__(self, *args, **kwargs):
        if args:
            value, args = args[0], args[1:]
        else:
            value = kwargs.pop(argument, None)
        mapped, gpu_mapped = _strategy_devices(strategy_name, value)
        if gpu_mapped:
            _warn_mapping(
                f"{strategy_name}({value!r}): this machine has no GPU; the named "
                f"GPUs are emulated devices instead, one per name: {mapped!r}")
        native_init(self, mapped, *args, **kwargs)

    __init__.__tpu_compat_added__ = True
    return __init__


def api_routes():
    """``(TensorFlow's function, its replacement)``: what install() routes in
    every TensorFlow API module (the TPU host, TPU cores and absent GPUs by name)."""
    return ((_native_connect_to_host, connect_to_host),
            (_native_device_v2, device),
            (_native_device_v1, device_v1),
            (_native_list_logical_devices, list_logical_devices),
            (_native_list_physical_devices, list_physical_devices))


def route_strategy_devices(state):
    """Resolves the device arguments of TensorFlow's Mirrored/OneDevice strategies."""
    for cls, name, argument in (
            (mirrored_strategy.MirroredStrategy, "MirroredStrategy", "devices"),
            (mirrored_strategy.MirroredStrategyV1, "MirroredStrategy", "devices"),
            (one_device_strategy.OneDeviceStrategy, "OneDeviceStrategy", "device"),
            (one_device_strategy.OneDeviceStrategyV1, "OneDeviceStrategy", "device")):
        state.replace(cls, "__init__", _mapped_init(cls.__init__, name, argument))


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
