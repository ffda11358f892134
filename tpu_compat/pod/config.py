"""What the settings ask of the pod: ``TF_CONFIG`` and the host count, read once.

``TF_CONFIG`` is read by three parties, each with its own view of one schema
(``{"cluster": {"worker": [...]}, "task": {"type": ..., "index": ...}}``):

* the chief (:func:`requested_pod`): a task type ``chief``/``coordinator``
  and the worker list it is to connect to;
* a worker (:func:`worker_task`): the worker list and its own index;
* the Estimator (:func:`estimator_cluster`): how many tasks a cluster has,
  which it refuses unless it names this process the chief of an emulated pod.

They share :func:`parse_tf_config`, and no other module reads or parses the
variable (tests/test_pod_package.py); each caller words its own errors (the
chief a ``ConfigError``, the worker its ``tpu-compat worker: error:`` line,
``RunConfig`` a ``ValueError``). ``TPU_COMPAT_NUM_HOSTS`` is read here only
(:func:`hosts_setting`) and passed down. Nothing here imports TensorFlow or
starts a process.
"""

import json
import os
from typing import NamedTuple, Optional, Tuple

from tpu_compat import _config, settings

__all__ = ["EstimatorCluster", "PodRequest", "TF_CONFIG_VAR", "cluster_task_count",
           "cores_per_host", "estimator_cluster", "hosts_setting", "parse_tf_config",
           "requested_pod", "worker_task"]

TF_CONFIG_VAR = "TF_CONFIG"
CHIEF_TASK_TYPES = ("chief", "coordinator")
TF_CONFIG_SHAPE = ('{"cluster": {"worker": ["host:port", ...]}, '
                   '"task": {"type": "worker", "index": H}}')


class PodRequest(NamedTuple):
    """The pod this process is to coordinate.

    A tuple, so ``(hosts, addresses)`` unpacks it; ``addresses`` is None when
    the workers are to be started here (``TPU_COMPAT_NUM_HOSTS``), the
    ``TF_CONFIG`` workers' ``host:port`` list otherwise.
    """
    hosts: int
    addresses: Optional[Tuple[str, ...]]


class EstimatorCluster(NamedTuple):
    """``TF_CONFIG`` as an Estimator sees it (:func:`estimator_cluster`).

    ``jobs`` is the number of tasks per job, empty when ``pod_chief``: then
    the cluster is this emulated pod's hosts, which a TPUEstimator drives as
    tpu_estimator.py drove a TPU pod's, not a cluster of Estimator tasks.
    """
    config: dict
    jobs: dict
    pod_chief: bool


def _environ(environ):
    return os.environ if environ is None else environ


def parse_tf_config(environ=None):
    """``TF_CONFIG`` parsed, or None when it is unset or blank.

    Raises ``ValueError`` (json's, with its position) when it is not JSON;
    each caller says so in its own words.
    """
    raw = _environ(environ).get(TF_CONFIG_VAR, "")
    if not raw.strip():
        return None
    return json.loads(raw)


def _json_kind(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def tf_config_problem(environ=None):
    """What is wrong with ``TF_CONFIG`` for TensorFlow's cluster resolvers, or None.

    For ``doctor``: TensorFlow (``TFConfigClusterResolver``, RunConfig) reads
    a JSON object whose ``cluster`` maps job names to lists of ``host:port``
    and whose ``task`` has a ``type`` and an ``index``; anything else fails
    there, later and less clearly.
    """
    try:
        config = parse_tf_config(environ)
    except ValueError as error:
        return f"{TF_CONFIG_VAR} is not valid JSON ({error})"
    if config is None:
        return None
    if not isinstance(config, dict):
        return (f"{TF_CONFIG_VAR} is {_json_kind(config)}; expected an object: "
                f"{TF_CONFIG_SHAPE}")
    cluster, task = config.get("cluster", {}), config.get("task", {})
    if not isinstance(cluster, dict):
        return (f"{TF_CONFIG_VAR}'s \"cluster\" is {_json_kind(cluster)} ({cluster!r}); "
                f"expected an object of job names to lists of host:port")
    for job, tasks in cluster.items():
        addresses = tasks.values() if isinstance(tasks, dict) else tasks
        if not isinstance(tasks, (list, dict)) or not all(
                isinstance(address, str) for address in addresses):
            return (f"{TF_CONFIG_VAR}'s cluster job {job!r} is {tasks!r}; expected a "
                    f"list of host:port strings")
    if not isinstance(task, dict):
        return (f"{TF_CONFIG_VAR}'s \"task\" is {_json_kind(task)} ({task!r}); expected "
                f"an object with \"type\" and \"index\"")
    if task and (not isinstance(task.get("type"), str) or isinstance(task.get("index"), bool)
                 or not isinstance(task.get("index", 0), int)):
        return (f"{TF_CONFIG_VAR}'s \"task\" is {task!r}; expected a string \"type\" "
                f"and an integer \"index\"")
    return None


def hosts_setting(environ=None):
    """``TPU_COMPAT_NUM_HOSTS`` as a positive int, or None when unset.

    The one place the host count is read (validated, naming the variable);
    everything else gets it from here or from :func:`requested_pod`.
    """
    return settings.read("num_hosts", _environ(environ))


def _chief_workers(environ):
    """Worker addresses from TF_CONFIG when this process is its chief, else None."""
    try:
        config = parse_tf_config(environ)
    except ValueError as error:
        raise _config.ConfigError(f"{TF_CONFIG_VAR} is not valid JSON ({error})") from None
    return _workers_if_chief(config)


def _workers_if_chief(config):
    """A parsed TF_CONFIG's worker addresses when it names this process the chief."""
    if config is None:
        return None
    task = config.get("task", {}) if isinstance(config, dict) else {}
    cluster = config.get("cluster", {}) if isinstance(config, dict) else {}
    if task.get("type") not in CHIEF_TASK_TYPES:
        return None  # a worker's TF_CONFIG, or one this program reads itself
    workers = cluster.get("worker") if isinstance(cluster, dict) else None
    if not workers or not all(isinstance(a, str) and ":" in a for a in workers):
        raise _config.ConfigError(
            f"{TF_CONFIG_VAR} names this process the chief but has no valid "
            "cluster.worker list; expected {\"cluster\": {\"worker\": "
            "[\"host:port\", ...]}, \"task\": {\"type\": \"chief\", \"index\": 0}}")
    return tuple(workers)


def requested_pod(environ=None):
    """The :class:`PodRequest` this process should coordinate, or None (one host).

    Raises ``ConfigError`` naming the variable for a bad host count, a chief's
    ``TF_CONFIG`` without a worker list, or the two disagreeing.
    """
    environ = _environ(environ)
    return _pod_request(_chief_workers(environ), environ)


def _pod_request(addresses, environ):
    hosts = hosts_setting(environ)
    if addresses is not None:
        if hosts not in (None, len(addresses)):
            raise _config.ConfigError(
                f"{settings.HOSTS_VAR}={hosts} but {TF_CONFIG_VAR} lists "
                f"{len(addresses)} workers; unset one of them")
        return PodRequest(len(addresses), addresses)
    if hosts is None or hosts == 1:
        return None
    return PodRequest(hosts, None)


def worker_task(environ=None):
    """``(workers, task type, index)`` for a worker, or None when unset.

    ``index`` is None when the task type is not ``worker``. Raises
    ``ValueError``, ``KeyError`` or ``TypeError`` when ``TF_CONFIG`` does not
    have :data:`TF_CONFIG_SHAPE`; the worker reports it.
    """
    config = parse_tf_config(environ)
    if config is None:
        return None
    workers = list(config["cluster"]["worker"])
    task = config.get("task", {})
    kind = task.get("type", "worker")
    index = int(task["index"]) if kind == "worker" else None
    return workers, kind, index


def estimator_cluster(environ=None):
    """``TF_CONFIG`` parsed once for ``RunConfig``: an :class:`EstimatorCluster`,
    or None when it is unset.

    Raises ``ValueError`` (json's) when it is not JSON. A chief's ``TF_CONFIG``
    that :func:`requested_pod` refuses (no worker list, a host count that
    disagrees) is no pod here: its tasks are counted like any cluster's, and
    the backend reports the error.
    """
    environ = _environ(environ)
    config = parse_tf_config(environ)
    if config is None:
        return None
    try:
        request = _pod_request(_workers_if_chief(config), environ)
    except _config.ConfigError:
        request = None
    if request is not None and request.addresses is not None:
        return EstimatorCluster(config, {}, True)
    return EstimatorCluster(config, cluster_task_count(config), False)


def cluster_task_count(config):
    """The number of tasks in a parsed ``TF_CONFIG``'s cluster, by job."""
    cluster = config.get("cluster") or {}
    return {job: len(tasks) if isinstance(tasks, (list, dict)) else 1
            for job, tasks in cluster.items()}


def cores_per_host(hosts, replicas, hosts_name=settings.HOSTS_VAR,
                   replicas_name=settings.REPLICAS_VAR, replicas_defaulted=False):
    """Emulated cores per host; the names word the error (see ``_config``)."""
    return _config.cores_per_host(hosts, replicas, hosts_name, replicas_name,
                                  replicas_defaulted)
