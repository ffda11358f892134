"""``install()`` / ``uninstall()``: route TensorFlow's TPU names to the adapters.

TensorFlow 2.21 exposes each public name in several distinct module objects:
``tf.distribute.experimental``, ``tf.compat.v1.distribute.experimental`` and
``tf.compat.v2.distribute.experimental`` are three modules, so patching
``tf.*`` alone misses a TF 2.1 script that does ``import tensorflow.compat.v2
as tf``. ``install()`` therefore walks every TensorFlow API module and replaces
each attribute that *is* one of the native objects below (identity, not name),
records what it replaced, and ``uninstall()`` puts every original back.

It also gives TensorFlow's own strategies (Mirrored, OneDevice, the default
strategy) the methods TF 2.4 removed, because legacy TPU programs fall back
to them when no TPU is found and then call ``experimental_run_v2``.
"""

import contextlib
import sys
import threading

from tpu_compat import _config, deprecation

__all__ = ["InstallHandle", "install", "uninstall", "is_installed"]

_lock = threading.RLock()
_state = None  # _Installed while installed


class _Installed:
    """What install() changed, so uninstall() can undo exactly that."""

    def __init__(self):
        self.replaced = []  # (owner, attribute, original)
        self.added = []     # (owner, attribute)
        self.undo_actions = []  # callables, for changes that are not attributes

    def replace(self, owner, attribute, new):
        self.replaced.append((owner, attribute, getattr(owner, attribute)))
        setattr(owner, attribute, new)

    def add(self, owner, attribute, new):
        if attribute in vars(owner):
            self.replace(owner, attribute, new)
        else:
            self.added.append((owner, attribute))
            setattr(owner, attribute, new)

    def on_undo(self, action):
        self.undo_actions.append(action)

    def undo(self):
        for action in reversed(self.undo_actions):
            action()
        for owner, attribute in reversed(self.added):
            delattr(owner, attribute)
        for owner, attribute, original in reversed(self.replaced):
            setattr(owner, attribute, original)


class InstallHandle(contextlib.AbstractContextManager):
    """Returned by :func:`install`; ``with install(): ...`` uninstalls on exit."""

    def __init__(self, backend):
        self.backend = backend

    def uninstall(self):
        uninstall()

    def __exit__(self, *exc_info):
        uninstall()
        return False


def _api_modules():
    """Every TensorFlow public-API module object currently imported, once each."""
    seen = {}
    for name, module in list(sys.modules.items()):
        if module is None:
            continue
        if name == "tensorflow" or name.startswith(("tensorflow._api.",
                                                    "tensorflow.compat")):
            seen.setdefault(id(module), (name, module))
    return list(seen.values())


def _routes():
    """``(native object, replacement for tf.*, replacement for compat.v2)``."""
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    from tensorflow.python.distribute import tpu_strategy
    from tensorflow.python.distribute.cluster_resolver.tpu import (
        tpu_cluster_resolver)

    from tpu_compat.runtime import devices, resolver, strategy_by_era, strategy_v1, strategy_v2
    from tpu_compat.runtime import tpu_lowlevel
    v1_tpu = tf.compat.v1.tpu
    low_level = [(getattr(v1_tpu, name), getattr(tpu_lowlevel, name), None)
                 for name in tpu_lowlevel.ROUTED_NAMES]
    return low_level + [
        (tpu_strategy.TPUStrategyV1, strategy_v1.CompatTPUStrategyV1, None),
        (tpu_strategy.TPUStrategy, strategy_by_era.TPUStrategy,
         strategy_v2.CompatExperimentalTPUStrategy),
        (tpu_strategy.TPUStrategyV2, strategy_v2.CompatTPUStrategy, None),
        (tpu_cluster_resolver.TPUClusterResolver, resolver.TPUClusterResolver, None),
        (tf.tpu.experimental.initialize_tpu_system, resolver.initialize_tpu_system, None),
        (tf.tpu.experimental.shutdown_tpu_system, resolver.shutdown_tpu_system, None),
        (tf.config.experimental_connect_to_cluster, resolver.connect_to_cluster, None),
        (tf.compat.v1.tpu.initialize_system, resolver.initialize_system, None),
        (tf.compat.v1.tpu.shutdown_system, resolver.shutdown_system, None),
        # The TPU host, TPU cores and absent GPUs by name (runtime/devices.py).
        (devices._native_connect_to_host, devices.connect_to_host, None),  # pylint: disable=protected-access
        (devices._native_device_v2, devices.device, None),  # pylint: disable=protected-access
        (devices._native_device_v1, devices.device_v1, None),  # pylint: disable=protected-access
        (devices._native_list_logical_devices, devices.list_logical_devices, None),  # pylint: disable=protected-access
        (devices._native_list_physical_devices, devices.list_physical_devices, None),  # pylint: disable=protected-access
    ]


def _route_namespaces(state):
    routes = _routes()
    for module_name, module in _api_modules():
        in_compat_v2 = ".compat.v2" in module_name
        for attribute, value in list(vars(module).items()):
            for native, replacement, compat_v2_replacement in routes:
                if value is native:
                    new = (compat_v2_replacement
                           if in_compat_v2 and compat_v2_replacement else replacement)
                    state.replace(module, attribute, new)
                    break
    # `from tensorflow.distribute.experimental import TPUStrategy` worked in
    # TF 2.x; in 2.21 that path is a real package without the name.
    package = sys.modules.get("tensorflow.distribute.experimental")
    if package is not None:
        from tpu_compat.runtime import strategy_by_era  # pylint: disable=import-outside-toplevel
        state.add(package, "TPUStrategy", strategy_by_era.TPUStrategy)


def _install_contrib(state):
    """``tf.contrib`` for TF 1.12-1.14 programs (see tpu_compat.contrib._hook)."""
    # pylint: disable=import-outside-toplevel
    from tpu_compat import _program_code
    from tpu_compat.contrib import _hook
    _hook.install_contrib(state, _program_code.is_program_code)


def _route_estimator(state):
    """``tf.estimator`` and ``tf.compat.v1.estimator`` (with ``.tpu``): TF 2.16 removed them.

    Added to every API root module (``tf``, ``tf.compat.v1``, ``tf.compat.v2``
    and their aliases, so ``--tf1``'s ``import tensorflow`` sees it too), and
    registered in ``sys.modules`` so that ``from tensorflow.compat.v1.estimator
    import tpu`` imports.
    """
    from tpu_compat import estimator  # pylint: disable=import-outside-toplevel
    for module_name, module in _api_modules():
        if module_name == "tensorflow" or module_name.endswith((".compat.v1", ".compat.v2")):
            state.add(module, "estimator", estimator)
    aliases = {f"tensorflow{root}.estimator{sub}": target
               for root in ("", ".compat.v1", ".compat.v2")
               for sub, target in (("", estimator), (".tpu", estimator.tpu),
                                   (".export", estimator.export))}
    for name, module in aliases.items():
        previous = sys.modules.get(name)
        sys.modules[name] = module
        state.on_undo(lambda name=name, previous=previous: (
            sys.modules.__setitem__(name, previous) if previous is not None
            else sys.modules.pop(name, None)))


def install(backend=None, num_replicas=None, warnings=None):
    """Routes TensorFlow's TPU names to tpu_compat; idempotent and thread-safe.

    Decides the backend (configuring the emulated TPU's logical devices, so
    call it before TensorFlow runs any op), applies the warning policy, keeps
    autograph from converting tpu_compat's code
    (:mod:`tpu_compat.runtime.autograph_rules`), then replaces in every
    TensorFlow API module: the three TPUStrategy classes, the
    ``TPUClusterResolver``, ``experimental_connect_to_cluster``,
    ``initialize_tpu_system``/``shutdown_tpu_system`` and the graph-mode
    ``tf.compat.v1.tpu.initialize_system``/``shutdown_system`` and the rest of
    the low-level ``tf.compat.v1.tpu`` API (:mod:`tpu_compat.runtime.tpu_lowlevel`);
    serves ``tf.contrib``'s TPU names to the program (:mod:`tpu_compat.contrib`); gives the
    native strategies the removed legacy methods; and patches Keras for
    legacy TPU programs (:mod:`tpu_compat.runtime.keras`, the TF 2.0-2.3
    names of :mod:`tpu_compat.runtime.keras_era`, the program's
    ``tensorflow.python.keras`` imports via
    :mod:`tpu_compat.runtime.keras_imports`). When emulating, it resolves the
    TPU host's, TPU cores' and absent GPUs' device names
    (``tf.device``, ``experimental_connect_to_host``, ``list_*_devices``,
    Mirrored/OneDevice strategies' device lists: :mod:`tpu_compat.runtime.devices`).
    It also gives TensorFlow back ``tf.estimator`` / ``tf.compat.v1.estimator``
    (with TPUEstimator), which TF 2.16 removed (:mod:`tpu_compat.estimator`).
    Everything, the warning filters and autograph's rules included, is done
    under one lock and recorded, so :func:`uninstall` restores exactly what was
    there.

    Args:
      backend: ``auto``/``tpu``/``gpu``/``cpu``; default ``TPU_COMPAT_BACKEND``.
      num_replicas: emulated cores; default ``TPU_COMPAT_NUM_REPLICAS`` or 8.
      warnings: ``once``/``always``/``error``/``ignore``; default
        ``TPU_COMPAT_WARNINGS``.

    Returns:
      An :class:`InstallHandle`, usable as a context manager.
    """
    global _state
    # pylint: disable=import-outside-toplevel
    from tpu_compat.runtime import autograph_rules
    from tpu_compat.runtime import backend as backend_lib
    from tpu_compat.runtime import devices
    from tpu_compat.runtime import keras as keras_routing
    from tpu_compat.runtime import hooks, keras_imports, native_methods
    with _lock:
        # Validated (naming the argument or the variable) before anything changes.
        policy = warnings if warnings is not None else _config.warning_policy()
        chosen = backend_lib.get_backend(backend=backend, num_replicas=num_replicas)
        state = _state if _state is not None else _Installed()
        policy_change = deprecation.apply_policy(policy)
        # Undone at uninstall, after everything else (actions run last first);
        # a second install() while installed stacks its own change on top.
        state.on_undo(policy_change)
        if _state is None:
            _warn_if_tensorflow_unproven()
            try:
                remove_rule = autograph_rules.exclude()
                if remove_rule is not None:
                    state.on_undo(remove_rule)
                _route_namespaces(state)
                native_methods.add_removed_methods(state)
                _install_contrib(state)
                devices.route_strategy_devices(state)
                # The table's hooks on TensorFlow's own classes (legacy_api);
                # after the device routing, so they wrap it and see the user's call.
                hooks.instrument_library(state, "tensorflow")
                keras_routing.route_keras(state, _lock)
                keras_imports.route_keras_imports(state)
                _route_estimator(state)
            except BaseException:
                state.undo()
                raise
            _state = state
        return InstallHandle(chosen)


def _warn_if_tensorflow_unproven():
    """One warning per process on a TensorFlow outside the proven range."""
    from tensorflow.python.framework import versions  # pylint: disable=import-outside-toplevel
    from tpu_compat import tf_support  # pylint: disable=import-outside-toplevel
    tf_support.warn_if_unproven(versions.__version__)


def uninstall():
    """Restores everything :func:`install` changed; idempotent and thread-safe.

    TensorFlow's modules and classes, Keras, autograph's conversion rules and
    ``warnings.filters`` are left as they were before the first ``install()``.
    The backend's device layout is not undone: TensorFlow fixes its logical
    devices once per process.
    """
    global _state
    with _lock:
        if _state is not None:
            _state.undo()
            _state = None


def is_installed():
    return _state is not None
