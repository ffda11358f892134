"""The ``tpu_replicas`` marker of the pytest plugin: its arguments, checked.

``@pytest.mark.tpu_replicas(1, 2, 8, hosts=2)`` runs a test once per replica
count (on a pod slice of ``hosts`` hosts); pytest_plugin.py generates the
tests and runs them, this module says what a marker asks for and refuses what
it cannot mean, naming the argument and the allowed values.
"""

MARKER = "tpu_replicas"
# The indirect parameter that carries a generated test's replica count.
REPLICAS_PARAM = "_tpu_compat_replicas"


def replica_counts(marker, test_name):
    """The marker's replica counts: positive ints, none repeated."""
    counts = list(marker.args)
    if not counts or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                         for n in counts):
        raise ValueError(
            f"{test_name}: @pytest.mark.{MARKER} takes one or more positive int "
            f"replica counts, got {MARKER}{tuple(counts)!r}")
    if len(set(counts)) != len(counts):
        raise ValueError(f"{test_name}: @pytest.mark.{MARKER}{tuple(counts)!r} "
                         f"repeats a replica count")
    return counts


def pod_hosts(marker, counts, test_name):
    """The marker's ``hosts=`` (None when not given), checked against the counts."""
    unknown = sorted(set(marker.kwargs) - {"hosts"})
    if unknown:
        raise ValueError(f"{test_name}: @pytest.mark.{MARKER} takes replica counts "
                         f"and hosts=H, not {', '.join(unknown)}=")
    hosts = marker.kwargs.get("hosts")
    if hosts is None:
        return None
    # Every host of a pod slice has the same number of cores.
    allowed = [h for h in range(1, min(counts) + 1) if all(n % h == 0 for n in counts)]
    if isinstance(hosts, bool) or not isinstance(hosts, int) or hosts not in allowed:
        raise ValueError(
            f"{test_name}: @pytest.mark.{MARKER}(..., hosts={hosts!r}) is not valid: "
            f"hosts must be an int that divides every replica count "
            f"{tuple(counts)}; allowed values: {', '.join(map(str, allowed))}")
    return hosts


def marked_replicas(item):
    """The replica count ``item`` was generated for by the marker, or None."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(REPLICAS_PARAM) if callspec else None


def marked_hosts(item):
    """The pod hosts the marker asks for (``hosts=``), or None."""
    marker = item.get_closest_marker(MARKER)
    return marker.kwargs.get("hosts") if marker is not None else None
