"""Where an Estimator's sessions run when its replicas are the backend's devices.

TPUEstimator, and an Estimator with a distribution strategy, place replica
*k*'s ops on the backend's device *k*. On the emulated TPU those are logical
CPU devices of this process (or the workers of an emulated pod).
"""

import tensorflow as tf

__all__ = ["emulated_master", "with_emulated_devices"]


def with_emulated_devices(config):
    """``config`` (a ConfigProto) seeing every emulated device of this process.

    A graph Session made with an explicit ConfigProto has one CPU device
    unless device_count says more, so replica k's ops (placed on CPU:k)
    either fell back to CPU:0 (soft placement: 8 "cores" ran as one device)
    or failed to place. On a TPU every core was there whatever the config;
    here the emulator's device layout is merged in, as a strategy's
    ``update_config_proto`` does for TPUStrategy programs. A pod's devices
    live in its workers' servers, whose own config holds the layout; a real
    TPU needs nothing from the config.
    """
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    from tpu_compat.pod import session as pod_lib  # pylint: disable=import-outside-toplevel
    chosen = backend_lib.get_backend()
    if not chosen.emulated or pod_lib.current_pod() is not None:
        return config
    kind = chosen.kind.upper()
    if config.device_count.get(kind, 0) >= len(chosen.devices):
        return config
    merged = tf.compat.v1.ConfigProto()
    merged.CopyFrom(config)
    merged.device_count[kind] = len(chosen.devices)
    return merged


def emulated_master(default):
    """The session master of the backend's replicas.

    The emulated TPU is where the backend put it, whatever master the program
    named: in this process (a local session), or on an emulated pod, whose
    replica devices (/job:worker/task:h/...) only a session on worker 0's
    master service can place. Otherwise ``default``, the program's master.
    """
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    from tpu_compat.pod import session as pod_session  # pylint: disable=import-outside-toplevel
    if backend_lib.get_backend().emulated:
        pod = pod_session.current_pod()
        return pod.master if pod else ""
    return default
