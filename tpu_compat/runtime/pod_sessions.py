"""TF 1.15's pod session idiom on the emulated pod.

The Cloud TPU reference models of TF 1.13-1.15 (and TPUEstimator's own
``tpu_config``) copied the resolver's cluster into the session config before
opening a session on the pod's master::

    session_config.cluster_def.CopyFrom(resolver.cluster_spec().as_cluster_def())
    tf.Session(resolver.master(), config=session_config)

A session whose config carries a ``cluster_def`` makes the master create a new
worker session on every task from that ``ServerDef``; TensorFlow's session
manager refuses one that names the job and task index a server booted with
("The ClusterSpec names the job and task index to be the same names that were
provided when the server booted"). A Cloud TPU pod's hosts booted their servers
as ``/job:tpu_worker`` (the devices a session on a Cloud TPU lists, as in
tensorflow/tensorflow's tensorflow/python/distribute/cluster_resolver/tpu/
tpu_cluster_resolver_test.py, testGetDeviceDictAndCoresWithTPUs) while the
resolver's cluster names ``worker``, so the copy was a different cluster and was
accepted. The emulated pod's workers boot as ``worker`` (``pod/worker.py``), the
very cluster the resolver reports; a ``cluster_def`` naming exactly that cluster
adds nothing to a session on its master, so it is dropped from the session's
config, leaving the program's ConfigProto untouched. Any other cluster_def is
passed on as given.

The Colab TPU notebooks of TF 1.13-1.15 opened their session on the TPU host
itself, ``tf.Session('grpc://' + os.environ['COLAB_TPU_ADDR'])`` (tensorflow/tpu's
tools/colab notebooks of 2019, e.g. regression_sine_data_with_keras.ipynb, list
the TPU's devices that way). On the emulated TPU (no pod) that host is this
process, as ``resolver.master()`` says (``''``); the address is the placeholder
``tpu-compat run`` puts in ``COLAB_TPU_ADDR`` (``.invalid``, never resolved) or an
address an emulated resolver was given, so dialing it would wait forever. Such a
session becomes a local one.
"""

import os

from tpu_compat._tf_internals import client_session as session_lib
from tpu_compat.pod import session as pod_session
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import resolver as resolver_lib
from tpu_compat.runtime import session_placement

__all__ = ["emulated_tpu_target", "route_pod_sessions", "without_booted_cluster"]


def _target_address(target):
    target = target.decode() if isinstance(target, bytes) else (target or "")
    return target[len("grpc://"):] if target.startswith("grpc://") else target


def without_booted_cluster(target, config):
    """``config`` without a ``cluster_def`` naming the emulated pod as its workers
    booted, when ``target`` is one of them; else ``config`` itself."""
    pod = pod_session.current_pod()
    if pod is None or config is None or not config.HasField("cluster_def"):
        return config
    if _target_address(target) not in pod.addresses:
        return config
    jobs = {job.name: [job.tasks[index] for index in sorted(job.tasks)]
            for job in config.cluster_def.job}
    if jobs != {"worker": list(pod.addresses)}:
        return config
    copy = type(config)()
    copy.CopyFrom(config)
    copy.ClearField("cluster_def")
    return copy


def emulated_tpu_target(target):
    """``''`` (a local session) when ``target`` is the emulated TPU's worker address
    with no pod running; else ``target`` itself."""
    address = _target_address(target)
    if not address or pod_session.current_pod() is not None:
        return target
    if not backend_lib.get_backend().emulated:
        return target
    # Read at each session: the placeholder is set when the run starts, and a
    # resolver records its address when the program builds it.
    emulated = {resolver_lib.EMULATED_WORKER_ADDRESS, *resolver_lib.emulated_addresses()}
    colab = os.environ.get("COLAB_TPU_ADDR")
    if colab:
        emulated.add(colab)
    return "" if address in emulated else target


def route_pod_sessions(changes):
    """``tf.compat.v1.Session`` (and InteractiveSession, through BaseSession)
    accepts the pod's own cluster_def on the emulated pod, and a session on the
    emulated TPU's worker address is a local one, which places only the subgraphs
    it runs (session_placement.py)."""
    original = session_lib.BaseSession.__init__

    def __init__(self, target="", graph=None, config=None):
        local_target = emulated_tpu_target(target)
        config = without_booted_cluster(target, config)
        # A local session of the emulated TPU places only what it runs
        # (session_placement.py: graph extensions cost the whole graph otherwise).
        original(self, local_target, graph,
                 session_placement.placing_run_subgraphs(local_target, config))

    __init__.__wrapped__ = original
    changes.replace(session_lib.BaseSession, "__init__", __init__)
