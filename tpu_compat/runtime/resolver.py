"""TPU bring-up calls, routed: real TPU when there is one, emulation otherwise.

The TF 1.15/2.x bring-up idiom is::

    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.config.experimental_connect_to_cluster(resolver)
    topology = tf.tpu.experimental.initialize_tpu_system(resolver)

On TF 2.21 without a TPU the first line raises ``ValueError: Please provide a
TPU Name to connect to.`` (1.15 read ``''`` as "the local master"), a name
that is not a ``grpc://`` address makes HTTP calls to the GCE metadata server,
and a graph-mode query of a dead ``grpc://`` master retries for about a day.
When the backend is emulated, the resolver below therefore never calls the
Cloud TPU client: its ``master()`` is ``''`` (a local session), it reports the
emulated cores, and the system calls return the emulated topology.
"""

import threading

import tensorflow as tf

from tpu_compat._tf_internals import device_util, metadata_lib, native_resolver_lib, ops
from tpu_compat.pod import session as pod_session
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import topology as topology_lib

__all__ = [
    "TPUClusterResolver",
    "emulated_addresses",
    "connect_to_cluster",
    "initialize_system",
    "initialize_tpu_system",
    "shutdown_system",
    "shutdown_tpu_system",
]

# The originals, captured before tpu_compat.install() replaces the public names.
_native_connect_to_cluster = tf.config.experimental_connect_to_cluster
_native_initialize_tpu_system = native_resolver_lib.initialize_tpu_system
_native_shutdown_tpu_system = native_resolver_lib.shutdown_tpu_system
_native_initialize_system = tf.compat.v1.tpu.initialize_system
_native_shutdown_system = tf.compat.v1.tpu.shutdown_system

EMULATED_TPU_NAME = "emulated-tpu"
# Where the emulated TPU's one worker "is": the address `tpu-compat run` puts
# in COLAB_TPU_ADDR. It is never dialed (.invalid never resolves, RFC 2606).
EMULATED_WORKER_ADDRESS = "emulated-tpu.invalid:8470"
GRPC_PREFIX = "grpc://"

_topology_lock = threading.Lock()
_topologies = {}


def emulated_topology_for(num_cores):
    """The (cached) emulated topology of ``num_cores`` cores."""
    with _topology_lock:
        if num_cores not in _topologies:
            _topologies[num_cores] = topology_lib.emulated_topology(num_cores)
        return _topologies[num_cores]


def _grpc_address(tpu):
    """``host:port`` of the first ``grpc://`` address in ``tpu``, else None."""
    names = tpu if isinstance(tpu, (list, tuple)) else [tpu]
    for name in names:
        if isinstance(name, str) and name.startswith(GRPC_PREFIX):
            return name[len(GRPC_PREFIX):]
    return None


# Every worker address an emulated resolver reported: a ClusterSpec made of
# them describes the emulated TPU, so connecting to it must not dial them.
_emulated_addresses = set()


def emulated_addresses():
    """The worker addresses emulated resolvers reported so far (a copy)."""
    return set(_emulated_addresses)


class TPUClusterResolver(native_resolver_lib.TPUClusterResolver):
    """``tf.distribute.cluster_resolver.TPUClusterResolver``, emulation-aware.

    Same signature as TensorFlow's. On a real TPU backend it is TensorFlow's
    resolver unchanged. On an emulated backend it accepts any ``tpu`` value
    (``None``, ``''``, a name, a ``grpc://`` address), contacts nothing, and
    describes the emulated slice as a one-host TPU would: a ``worker`` job (the
    ``job_name``) with one task, at the ``grpc://`` address given, else at
    ``emulated-tpu.invalid:8470`` (a name that never resolves); ``master()``
    ``''`` (a local session runs the emulated cores); the TPU cores in
    ``num_accelerators()`` and ``get_tpu_system_metadata()``.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None,
                 credentials="default", service=None, discovery_url=None):
        backend = backend_lib.get_backend()
        self._tpu_compat_backend = backend
        if not backend.emulated:
            super().__init__(tpu=tpu, zone=zone, project=project,
                             job_name=job_name,
                             coordinator_name=coordinator_name,
                             coordinator_address=coordinator_address,
                             credentials=credentials, service=service,
                             discovery_url=discovery_url)
            return
        if isinstance(tpu, (list, tuple)) and not tpu:
            # Same check, same words, as TensorFlow's Cloud TPU client.
            raise ValueError("At least one TPU must be specified.")
        # Deliberately no super().__init__: it builds the Cloud TPU client
        # (and, given a coordinator_name alone, starts a local gRPC server).
        self._cloud_tpu_client = native_resolver_lib._LocalCloudTpuClient()  # pylint: disable=protected-access
        self._tpu = EMULATED_TPU_NAME
        self._requested_tpu = tpu
        self._worker_address = _grpc_address(tpu) or EMULATED_WORKER_ADDRESS
        _emulated_addresses.add(self._worker_address)
        self.task_type = job_name
        self.task_id = 0
        self._coordinator_name = coordinator_name
        self._coordinator_address = coordinator_address
        self._tpu_topology = None
        self._rpc_layer = None

    @staticmethod
    def connect(tpu=None, zone=None, project=None):
        """Resolves, connects to and initializes the TPU; returns the resolver.

        TF 2.3+'s shorthand for the three bring-up lines; when emulated,
        none of them contacts anything.
        """
        resolver = TPUClusterResolver(tpu, zone, project)
        connect_to_cluster(resolver)
        initialize_tpu_system(resolver)
        return resolver

    @property
    def emulated(self):
        """True when this resolver describes an emulated TPU."""
        return self._tpu_compat_backend.emulated

    @property
    def num_emulated_cores(self):
        return self._tpu_compat_backend.num_replicas

    def __enter__(self):
        if not self.emulated:
            return super().__enter__()
        return None

    def __exit__(self, type, value, traceback):  # pylint: disable=redefined-builtin
        if not self.emulated:
            return super().__exit__(type, value, traceback)
        return None

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if not self.emulated:
            return super().master(task_type, task_id, rpc_layer)
        pod = pod_session.current_pod()
        # tf.compat.v1.Session("") is a local session; a pod's sessions run on
        # worker 0's master service, which places ops on every host.
        return pod.master if pod else ""

    def get_master(self):
        return self.master()

    def cluster_spec(self):
        if not self.emulated:
            return super().cluster_spec()
        pod = pod_session.current_pod()
        # One task per host.
        jobs = {self.task_type: list(pod.addresses) if pod else [self._worker_address]}
        if self._coordinator_name and self._coordinator_address:
            jobs[self._coordinator_name] = [self._coordinator_address]
        return tf.train.ClusterSpec(jobs)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        if not self.emulated:
            return super().num_accelerators(task_type, task_id, config_proto)
        # TF's TPUClusterResolver counts the cores of one worker (host).
        return {"TPU": self.num_emulated_cores // self._tpu_compat_backend.num_hosts}

    def get_tpu_system_metadata(self):
        if not self.emulated:
            return super().get_tpu_system_metadata()
        backend = self._tpu_compat_backend
        devices = [tf.config.LogicalDevice(name, backend.kind.upper())
                   for name in backend.devices]
        return metadata_lib.TPUSystemMetadata(
            num_cores=backend.num_replicas, num_hosts=backend.num_hosts,
            num_of_cores_per_host=backend.num_replicas // backend.num_hosts,
            topology=emulated_topology_for(backend.num_replicas),
            devices=devices)

    @property
    def environment(self):
        return ""

    def __repr__(self):
        if self.emulated:
            return (f"<TPUClusterResolver emulated, {self.num_emulated_cores} "
                    f"cores, requested tpu={self._requested_tpu!r}>")
        return super().__repr__()


def _describes_emulated_tpu(cluster_spec):
    """Whether a ClusterSpec (or its dict/ClusterDef) lists only emulated workers."""
    if not backend_lib.get_backend().emulated:
        return False
    try:
        jobs = tf.train.ClusterSpec(cluster_spec).as_dict()
    except (TypeError, ValueError):
        return False
    addresses = [address for tasks in jobs.values()
                 for address in (tasks.values() if isinstance(tasks, dict) else tasks)]
    pod = pod_session.current_pod()
    # A pod's workers: this process connected to them when it started them.
    known = _emulated_addresses | set(pod.addresses if pod else ())
    return bool(addresses) and set(addresses) <= known


def _is_emulated(cluster_resolver):
    if isinstance(cluster_resolver, TPUClusterResolver):
        return cluster_resolver.emulated
    if cluster_resolver is None:
        return backend_lib.get_backend().emulated
    return False


def _enter_pod_master_device(cluster_spec_or_resolver):
    """On an emulated pod, the master host becomes the default device.

    TensorFlow's connect, given a resolver with a ``master()``, enters the
    master task's device scope: on a Cloud TPU pod every op the program does
    not place (a checkpoint's save counter, eager arithmetic, a dataset made
    outside ``scope()``) then runs on host 0, so a ``tf.train.Checkpoint`` is
    written by that one host. The emulated pod's master is worker 0 (the
    process itself joined the cluster as its chief); given a ClusterSpec,
    TensorFlow leaves the default device alone, and so does this.
    """
    pod = pod_session.current_pod()
    if (pod is None or not isinstance(cluster_spec_or_resolver, TPUClusterResolver)
            or not tf.executing_eagerly()):
        return
    master_device = device_util.canonicalize("/job:worker/replica:0/task:0")
    current = device_util.current()
    if current and device_util.canonicalize(current) != master_device:
        raise ValueError(
            f"`connect_to_cluster` is called inside existing device scope "
            f"{current}, which is different from the master device scope "
            f"{master_device} to enter. This is not allowed.")
    if not current:
        ops.device(master_device).__enter__()  # for the rest of the program, as TF does


def connect_to_cluster(cluster_spec_or_resolver, job_name="localhost",
                       task_index=0, protocol=None,
                       make_master_device_default=True,
                       cluster_device_filters=None):
    """``tf.config.experimental_connect_to_cluster``; a no-op when emulated.

    Emulated means an emulated resolver, or the ``cluster_spec()`` of one.
    """
    if (_is_emulated(cluster_spec_or_resolver)
            or _describes_emulated_tpu(cluster_spec_or_resolver)):
        if make_master_device_default:
            _enter_pod_master_device(cluster_spec_or_resolver)
        return None
    return _native_connect_to_cluster(
        cluster_spec_or_resolver, job_name=job_name, task_index=task_index,
        protocol=protocol,
        make_master_device_default=make_master_device_default,
        cluster_device_filters=cluster_device_filters)


def initialize_tpu_system(cluster_resolver=None):
    """``tf.tpu.experimental.initialize_tpu_system``.

    When emulated, returns the emulated slice's ``Topology``, which
    ``tf.tpu.experimental.DeviceAssignment.build`` accepts.
    """
    if _is_emulated(cluster_resolver):
        topology = emulated_topology_for(backend_lib.get_backend().num_replicas)
        if isinstance(cluster_resolver, TPUClusterResolver):
            # As TensorFlow does: the resolver then knows the topology.
            cluster_resolver.set_tpu_topology(topology.serialized())
        return topology
    return _native_initialize_tpu_system(cluster_resolver)


def shutdown_tpu_system(cluster_resolver=None):
    """``tf.tpu.experimental.shutdown_tpu_system``; nothing to do when emulated."""
    if _is_emulated(cluster_resolver):
        return None
    return _native_shutdown_tpu_system(cluster_resolver)


def initialize_system(embedding_config=None, job=None,
                      compilation_failure_closes_chips=True,
                      tpu_cancellation_closes_chips=None):
    """``tf.compat.v1.tpu.initialize_system`` (graph mode).

    When emulated, the op evaluates to the serialized emulated topology, as
    the real op evaluates to the serialized TPU topology.
    """
    if backend_lib.get_backend().emulated:
        topology = emulated_topology_for(backend_lib.get_backend().num_replicas)
        return tf.constant(topology.serialized(), name="InitializeSystem")
    return _native_initialize_system(
        embedding_config=embedding_config, job=job,
        compilation_failure_closes_chips=compilation_failure_closes_chips,
        tpu_cancellation_closes_chips=tpu_cancellation_closes_chips)


def shutdown_system(job=None):
    """``tf.compat.v1.tpu.shutdown_system`` (graph mode); a no-op when emulated."""
    if backend_lib.get_backend().emulated:
        return tf.no_op(name="ShutdownSystem")
    return _native_shutdown_system(job=job)
