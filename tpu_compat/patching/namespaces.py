"""TensorFlow's API modules -> the adapters: the routes by identity, and tf.estimator.

TensorFlow 2.21 exposes each public name in several distinct module objects:
``tf.distribute.experimental``, ``tf.compat.v1.distribute.experimental`` and
``tf.compat.v2.distribute.experimental`` are three modules, so patching
``tf.*`` alone misses a TF 2.1 script that does ``import tensorflow.compat.v2
as tf``. :func:`route_namespaces` therefore walks every TensorFlow API module
and replaces each attribute that *is* one of the native objects of
:func:`routes` (identity, not name).
"""

import sys

from tpu_compat.patching import import_router

__all__ = ["api_modules", "route_estimator", "route_namespaces", "routes"]


def api_modules():
    """Every TensorFlow public-API module object currently imported, once each."""
    seen = {}
    for name, module in list(sys.modules.items()):
        if module is None:
            continue
        if name == "tensorflow" or name.startswith(("tensorflow._api.",
                                                    "tensorflow.compat")):
            seen.setdefault(id(module), (name, module))
    return list(seen.values())


def routes():
    """``(native object, replacement for tf.*, replacement for compat.v2)``.

    First match wins: a native object is listed once.
    """
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    from tpu_compat._tf_internals import native_resolver_lib, tpu_strategy

    from tpu_compat.runtime import devices, resolver, strategy_by_era, strategy_v1, strategy_v2
    from tpu_compat import lowlevel
    v1_tpu = tf.compat.v1.tpu
    # tf.compat.v1.tpu's names, initialize_system and shutdown_system among them.
    low_level = [(getattr(v1_tpu, name), getattr(lowlevel, name), None)
                 for name in lowlevel.ROUTED_NAMES]
    return low_level + [
        (tpu_strategy.TPUStrategyV1, strategy_v1.CompatTPUStrategyV1, None),
        (tpu_strategy.TPUStrategy, strategy_by_era.TPUStrategy,
         strategy_v2.CompatExperimentalTPUStrategy),
        (tpu_strategy.TPUStrategyV2, strategy_v2.CompatTPUStrategy, None),
        (native_resolver_lib.TPUClusterResolver, resolver.TPUClusterResolver, None),
        (tf.tpu.experimental.initialize_tpu_system, resolver.initialize_tpu_system, None),
        (tf.tpu.experimental.shutdown_tpu_system, resolver.shutdown_tpu_system, None),
        (tf.config.experimental_connect_to_cluster, resolver.connect_to_cluster, None),
    ] + [(native, replacement, None) for native, replacement in devices.api_routes()]


def route_namespaces(changes):
    """Replaces, in every API module, each native object :func:`routes` lists."""
    # Looked up by identity: ~17,000 attributes of ~330 modules, each once (a
    # scan of the table for each cost most of install()'s time). The table
    # holds its native objects, so their ids stay theirs for the walk.
    by_identity = {}
    for native, replacement, compat_v2_replacement in routes():
        by_identity.setdefault(id(native), (replacement, compat_v2_replacement))  # first wins
    for module_name, module in api_modules():
        in_compat_v2 = ".compat.v2" in module_name
        for attribute, value in list(vars(module).items()):
            found = by_identity.get(id(value))
            if found is not None:
                replacement, compat_v2_replacement = found
                new = (compat_v2_replacement
                       if in_compat_v2 and compat_v2_replacement else replacement)
                changes.replace(module, attribute, new)
    # `from tensorflow.distribute.experimental import TPUStrategy` worked in
    # TF 2.x; in 2.21 that path is a real package without the name.
    package = sys.modules.get("tensorflow.distribute.experimental")
    if package is not None:
        from tpu_compat.runtime import strategy_by_era  # pylint: disable=import-outside-toplevel
        changes.add(package, "TPUStrategy", strategy_by_era.TPUStrategy)


def route_estimator(changes, router):
    """``tf.estimator`` and ``tf.compat.v1.estimator`` (with ``.tpu``): TF 2.16 removed them.

    Added to every API root module (``tf``, ``tf.compat.v1``, ``tf.compat.v2``
    and their aliases, so ``--tf1``'s ``import tensorflow`` sees it too), and
    ``router`` puts them in ``sys.modules`` (the import router's ALIASES made by
    "estimator") so that ``from tensorflow.compat.v1.estimator import tpu`` imports.
    """
    from tpu_compat import estimator  # pylint: disable=import-outside-toplevel
    for module_name, module in api_modules():
        if module_name == "tensorflow" or module_name.endswith((".compat.v1", ".compat.v2")):
            changes.add(module, "estimator", estimator)
    for row in import_router.aliases("estimator"):
        router.alias(row)
