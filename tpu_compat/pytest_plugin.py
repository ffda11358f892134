"""pytest plugin: TPU strategies as fixtures, tests per replica count, legacy-API policy.

Registered as the ``pytest11`` entry point ``tpu_compat``, so it is active
wherever tpu_compat is installed. Loading it must stay cheap and must not
import TensorFlow: every pytest run of the environment loads it, and the
emulated TPU's device layout can only be chosen before TensorFlow initializes
its devices. TensorFlow is imported by the fixtures, on first use.

* Fixtures ``tpu_resolver`` (session), ``tpu_strategy`` (the v2 adapter),
  ``tpu_strategy_v1`` (the TF 1.15 adapter; ``steps_per_run`` by indirect
  parametrization) and ``tpu_replicas`` (the replica count the test runs with).
* ``@pytest.mark.tpu_replicas(1, 2, 8)`` runs a test once per count. The
  count this process was set up for (``--tpu-compat-replicas``, default
  ``TPU_COMPAT_NUM_REPLICAS`` or 8) runs here; every other count runs in a
  child pytest process whose emulated TPU has that many cores, and the child's
  reports are replayed here (:mod:`tpu_compat._pytest_child`).
  ``tpu_replicas(8, hosts=2)`` runs it on an emulated pod slice of 2 hosts
  (``TPU_COMPAT_NUM_HOSTS``, docs/pods.md), in a child unless this process
  already is one with that many hosts. A child that
  runs longer than ``--tpu-compat-child-timeout`` (ini
  ``tpu_compat_child_timeout``, default 600 s) is killed with every process it
  started, and the test fails saying so.
* ``--tpu`` (or ``TPU_NAME``) uses a real TPU instead; it has the cores it
  has, so a marked count it does not match is skipped.
* ``--tpu-compat-fidelity`` (default ``$TPU_COMPAT_FIDELITY``, else ``tpu``):
  every replica step the tests trace, in this process and in the children, is
  checked as TF's TPU compiler would (docs/emulated_tpu.md), so a test that
  passes here does not fail on a TPU for an op XLA cannot compile.
* ``--tpu-compat-numerics`` (default ``$TPU_COMPAT_NUMERICS``, else ``exact``):
  ``tpu`` rounds the float32 matmul and convolution operands of every replica
  step to bfloat16, as a TPU's default precision does (docs/emulated_tpu.md).
* ``--tpu-compat-warnings=error`` makes every ``TPUCompatDeprecationWarning``
  raised during the tests fail them.
"""

import os
import sys
import warnings

import pytest

from tpu_compat import _config, _pytest_child, deprecation, pytest_marker, settings, tf_support
from tpu_compat.deprecation import TPUCompatDeprecationWarning

MARKER = pytest_marker.MARKER
# The fixture the marker parametrizes (indirectly). It is autouse so that it is
# in every test's fixture closure, which pytest requires of a parameter name.
_REPLICAS_PARAM = pytest_marker.REPLICAS_PARAM
_CATEGORY_PATH = "tpu_compat.TPUCompatDeprecationWarning"
# Besides the rows that have a pytest option: num_hosts, resolved only to
# refuse a bad value before any test runs (issue 33).
_ALSO_RESOLVED = ("num_hosts",)


def options_given(config):
    """``{row name: raw value or None}`` of every settings row's pytest option.

    The rows decide which options there are (tpu_compat/settings.py,
    ``pytest_option``): none is listed here by hand.
    """
    return {setting.name: config.getoption(setting.pytest_dest)
            for setting in settings.pytest_rows()}


def pytest_addoption(parser):
    group = parser.getgroup("tpu_compat",
                            "tpu_compat: legacy TPU code on an emulated or real TPU")
    # One option per settings row that names a pytest option, its help the row's.
    for setting in settings.pytest_rows():
        if setting.pytest_const is not None:
            kind = {"action": "store_const", "const": setting.pytest_const}
        else:
            kind = {"metavar": setting.metavar or setting.name.upper(),
                    "choices": setting.choices}
        group.addoption(setting.pytest_option, dest=setting.pytest_dest, default=None,
                        help=setting.pytest_help(), **kind)
    group.addoption(
        "--tpu-compat-child-timeout", metavar="SECONDS", default=None,
        help=f"time limit of each child pytest process running a tpu_replicas test "
             f"with another replica count (default: ini tpu_compat_child_timeout or "
             f"{_pytest_child.DEFAULT_TIMEOUT_SECONDS:g})")
    parser.addini(
        "tpu_compat_child_timeout",
        help=f"default of --tpu-compat-child-timeout "
             f"({_pytest_child.DEFAULT_TIMEOUT_SECONDS:g} seconds)")
    _pytest_child.add_internal_options(group)


def resolve(config):
    """The plugin's settings: every pytest option's row, each option winning over
    its variable, validated once (a bad value is a usage error naming it)."""
    names = [setting.name for setting in settings.pytest_rows()] + list(_ALSO_RESOLVED)
    try:
        return settings.resolve(settings.PYTEST, flags=options_given(config), names=names)
    except _config.ConfigError as error:
        raise pytest.UsageError(str(error)) from None


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*counts, hosts=1): run the test once per emulated TPU replica "
        f"count, each in a process whose devices are configured for that count; "
        f"hosts=H: on an emulated pod slice of H hosts (worker processes)")
    _pytest_child.register_forwarder(config)
    chosen = resolve(config)
    config.stash[_LAYOUT_KEY] = _Layout.from_settings(chosen)
    config.stash[_CHILD_TIMEOUT_KEY] = _child_timeout(config)
    # tpu_compat.install() and `tpu-compat run` inside the tests, the fixtures
    # (which read a variable when a step is traced) and the children read the
    # environment: export what the options gave, and the plugin's exported
    # defaults (fidelity tpu), as `tpu-compat run` exports its flags.
    settings.export(chosen)
    policy = config.getoption(settings.row("warnings").pytest_dest)
    if policy is not None:
        deprecation.apply_policy(policy)
        # pytest resets the warning filters around every collection and test
        # and would record (swallow) our warnings; an ini filter is re-applied
        # each time, so "error" really raises.
        config.addinivalue_line("filterwarnings",
                                f"{deprecation.filter_action(policy)}::{_CATEGORY_PATH}")


class _Layout:
    """What this process tests on: a real TPU, or an emulated TPU of N cores."""

    def __init__(self, replicas, real_tpu, backend_kind):
        self.replicas = replicas
        self.real_tpu = real_tpu
        self.backend_kind = backend_kind

    @classmethod
    def from_settings(cls, chosen):
        """The layout ``chosen`` (the plugin's resolved settings) asks for."""
        requested = chosen.backend
        real_tpu = requested == "tpu" or bool(os.environ.get("TPU_NAME", "").strip())
        if real_tpu:
            kind = "tpu"
        else:
            # Emulate on logical CPUs unless the user asked for GPUs: "auto"
            # would pick a machine's GPUs, which may be fewer than N.
            kind = "gpu" if requested == "gpu" else "cpu"
        return cls(chosen.num_replicas, real_tpu, kind)

    def in_process_hosts(self):
        """The pod hosts of this process's emulated TPU (1: no pod)."""
        backend_lib = sys.modules.get("tpu_compat.runtime.backend")
        chosen = backend_lib.current_backend() if backend_lib else None
        if chosen is not None:
            return chosen.num_hosts
        from tpu_compat.pod import config as pod_config  # pylint: disable=import-outside-toplevel
        return pod_config.hosts_setting() or 1

    def in_process_replicas(self):
        """The emulated replica count of this process's devices."""
        # A backend someone already chose (a conftest calling
        # tpu_compat.install(), say) fixes the layout; without the module
        # loaded nothing has been chosen yet. (Importing it would import TF.)
        backend_lib = sys.modules.get("tpu_compat.runtime.backend")
        chosen = backend_lib.current_backend() if backend_lib else None
        if chosen is not None and chosen.emulated:
            return chosen.num_replicas
        return self.replicas

    def backend(self):
        """Decides the backend (configuring the devices); imports TensorFlow."""
        # pylint: disable=import-outside-toplevel
        from tpu_compat.runtime import backend as backend_lib
        choice = {"backend": self.backend_kind,
                  "num_replicas": None if self.real_tpu else self.replicas}
        backend_lib.start_pod(**choice)  # the pod of a `hosts=` child
        return backend_lib.get_backend(**choice)


_LAYOUT_KEY = pytest.StashKey()
_CHILD_TIMEOUT_KEY = pytest.StashKey()


def _child_timeout(config):
    """Seconds a child pytest process may run: the option, the ini, the default."""
    for name, value in (("--tpu-compat-child-timeout",
                         config.getoption("tpu_compat_child_timeout")),
                        ("tpu_compat_child_timeout", config.getini("tpu_compat_child_timeout"))):
        if value in (None, ""):
            continue
        try:
            return _config.positive_seconds(name, value)
        except _config.ConfigError as error:
            raise pytest.UsageError(str(error)) from None
    return _pytest_child.DEFAULT_TIMEOUT_SECONDS


def _layout(config):
    return config.stash[_LAYOUT_KEY]


# -- the tpu_replicas marker (its arguments: pytest_marker.py) -------------------------------


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    counts = pytest_marker.replica_counts(marker, metafunc.definition.nodeid)
    hosts = pytest_marker.pod_hosts(marker, counts, metafunc.definition.nodeid)
    suffix = f",hosts={hosts}" if hosts is not None else ""
    metafunc.parametrize(_REPLICAS_PARAM, counts, indirect=True,
                         ids=[f"replicas={n}{suffix}" for n in counts])


marked_replicas = pytest_marker.marked_replicas
marked_hosts = pytest_marker.marked_hosts


def _needs_tensorflow(item):
    """Whether ITEM uses this plugin's TPU fixtures or marker (all need TF)."""
    return ("tpu_resolver" in getattr(item, "fixturenames", ())
            or item.get_closest_marker(MARKER) is not None)


def pytest_collection_modifyitems(config, items):
    del config
    # Without TensorFlow the fixtures cannot work: one line with the fix, not a
    # traceback per test. Suites that never use the fixtures are left alone.
    needing = sum(1 for item in items if _needs_tensorflow(item))
    if needing and not tf_support.tensorflow_importable():
        pytest.exit(f"tpu_compat: {needing} tests use TPU fixtures, but "
                    f"{tf_support.MISSING_TENSORFLOW}",
                    returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Runs an item whose replica count differs from this process's in a child."""
    del nextitem  # the child sets up and tears down everything it needs
    count = marked_replicas(item)
    hosts = marked_hosts(item)
    layout = _layout(item.config)
    if (count is None or layout.real_tpu or _pytest_child.is_child(item.config)
            or (count == layout.in_process_replicas()
                and hosts in (None, layout.in_process_hosts()))
            # An unconditional skip needs no devices: report it from here
            # rather than start a process to skip.
            or item.get_closest_marker("skip") is not None):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    timeout = item.config.stash[_CHILD_TIMEOUT_KEY]
    for report in _pytest_child.run_in_child(item, count, timeout, hosts=hosts):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


# -- the warning policy, over the tests' own filterwarnings marks ---------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    policy = item.config.getoption(settings.row("warnings").pytest_dest)
    if policy is not None:
        # Inside pytest's per-test catch_warnings, after the test's own
        # filterwarnings marks: a blanket ignore::DeprecationWarning in the
        # suite must not hide the legacy APIs a finished migration forbids.
        for category in (TPUCompatDeprecationWarning, deprecation.TPUSemanticsWarning):
            warnings.filterwarnings(deprecation.filter_action(policy), category=category)


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tpu_resolver(pytestconfig):
    """A ``TPUClusterResolver`` for the session's TPU, connected and initialized.

    The emulated TPU (N logical CPU devices), configured on first use; or the
    real TPU with ``--tpu`` / ``TPU_NAME``.
    """
    # pylint: disable=import-outside-toplevel
    _layout(pytestconfig).backend()
    from tpu_compat.distribute.cluster_resolver import TPUClusterResolver
    from tpu_compat.runtime import resolver as resolver_lib
    from tpu_compat.patching import registry
    from tpu_compat.patching.changes import Changes
    resolver = TPUClusterResolver()
    resolver_lib.connect_to_cluster(resolver)
    resolver_lib.initialize_tpu_system(resolver)
    # --tpu-compat-numerics tpu: the fixtures' replica steps round as install()'s do.
    changes = Changes()
    registry.apply_alone("numerics", changes)  # install()'s own row
    yield resolver
    changes.undo()
    resolver_lib.shutdown_tpu_system(resolver)


@pytest.fixture(autouse=True)
def _tpu_compat_replicas(request):
    """For tests marked ``tpu_replicas``: the count, checked against the devices."""
    count = getattr(request, "param", None)
    if count is None:
        return None
    metadata = request.getfixturevalue("tpu_resolver").get_tpu_system_metadata()
    cores, hosts = metadata.num_cores, metadata.num_hosts
    wanted_hosts = marked_hosts(request.node)
    if cores != count or wanted_hosts not in (None, hosts):
        layout = f"{count} cores" + (f" on {wanted_hosts} hosts" if wanted_hosts else "")
        if _layout(request.config).real_tpu:
            pytest.skip(f"the real TPU has {cores} cores on {hosts} hosts; "
                        f"{layout} need the emulated TPU")
        pytest.fail(f"this process's emulated TPU has {cores} cores on {hosts} "
                    f"hosts, not {layout}: TensorFlow's devices were configured "
                    f"before the test ran", pytrace=False)
    return count


@pytest.fixture
def tpu_replicas(request, tpu_resolver):
    """The replica count this test runs with (the marker's, or the TPU's cores)."""
    count = request.getfixturevalue(_REPLICAS_PARAM)
    return count or tpu_resolver.get_tpu_system_metadata().num_cores


@pytest.fixture
def tpu_strategy(tpu_resolver):
    """``tpu_compat.distribute.TPUStrategy`` (TF 2.4+ API, plus the removed methods)."""
    from tpu_compat.distribute import TPUStrategy  # pylint: disable=import-outside-toplevel
    return TPUStrategy(tpu_resolver)


@pytest.fixture
def tpu_strategy_v1(request, tpu_resolver):
    """TF 1.15's ``tf.compat.v1.distribute.experimental.TPUStrategy``.

    ``steps_per_run`` is 1 unless given by indirect parametrization:
    ``@pytest.mark.parametrize("tpu_strategy_v1", [1, 4], indirect=True)``.
    """
    # pylint: disable=import-outside-toplevel
    from tpu_compat.compat.v1.distribute.experimental import TPUStrategy
    return TPUStrategy(tpu_resolver, steps_per_run=getattr(request, "param", None))
