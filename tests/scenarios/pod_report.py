"""What the pod scenarios (pod_*.py) print, for tests/test_pod_parity.py.

Numbers are ``KEY: number`` lines (conftest's ``parse_numbers``); structured
results are ``KEY {json}`` lines (:func:`read_json` in the test).
"""
import json

import numpy as np


def emit(key, value):
    if isinstance(value, (int, float, np.integer, np.floating)):
        print(f"{key}: {value}", flush=True)
    else:
        print(f"{key} {json.dumps(value)}", flush=True)


def worker_pids():
    """The pids of the pod's worker processes this chief started (none on one host)."""
    from tpu_compat.pod import launch  # pylint: disable=import-outside-toplevel
    pids = launch.worker_pids()
    emit("WORKER_PIDS", pids)
    return pids


def task_of(device):
    """The host (worker task) a device name is on; 0 on one host."""
    for part in device.split("/"):
        if part.startswith("task:"):
            return int(part[len("task:"):])
    return 0


def dataset_host(dataset):
    """The host a dataset was built on (where its input pipeline runs)."""
    return task_of(dataset._variant_tensor.device)  # pylint: disable=protected-access


def pod_semantics(strategy, resolver):
    """Issue 16's layout semantics, as the program reads them."""
    emit("NUM_REPLICAS", strategy.num_replicas_in_sync)
    emit("NUM_HOSTS", strategy.extended.num_hosts)
    emit("REPLICAS_PER_HOST", strategy.extended.num_replicas_per_host)
    spec = resolver.cluster_spec()
    emit("CLUSTER_WORKERS", len(spec.job_tasks("worker")))
    emit("CLUSTER_JOBS", len(spec.jobs))


def components_report(prefix, named_components):
    """Every component of every variable: how far apart, on how many hosts.

    ``named_components`` maps a variable name to ``[(device, value), ...]``.
    Prints PREFIX_COMPONENTS (how many values were read), PREFIX_HOSTS (on
    how many hosts) and PREFIX_SPREAD (the largest difference between two
    components of one variable: 0 when every host holds the same values).
    Returns ``{name: first component}``.
    """
    spread, count, hosts, first = 0.0, 0, set(), {}
    for name, components in named_components.items():
        values = [np.asarray(value, np.float64) for _, value in components]
        hosts.update(task_of(device) for device, _ in components)
        count += len(values)
        for value in values[1:]:
            spread = max(spread, float(np.max(np.abs(value - values[0]), initial=0.0)))
        first[name] = values[0]
    emit(f"{prefix}_COMPONENTS", count)
    emit(f"{prefix}_HOSTS", len(hosts))
    emit(f"{prefix}_SPREAD", spread)
    return first


def max_differences(got, want):
    """``(max abs diff, max rel diff)`` between two lists of arrays."""
    absolute = relative = 0.0
    for a, b in zip(got, want):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        diff = np.abs(a - b)
        absolute = max(absolute, float(np.max(diff, initial=0.0)))
        relative = max(relative, float(np.max(diff / np.maximum(np.abs(b), 1e-6), initial=0.0)))
    return absolute, relative
