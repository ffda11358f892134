"""tpu_compat: legacy TensorFlow TPU code, running and migratable on current TF.

``import tpu_compat`` is light: it does not import TensorFlow, so the command
line, the scanner, the pytest plugin and ``-W error::tpu_compat.
TPUCompatDeprecationWarning`` can all load it cheaply. The adapters, which
need TensorFlow, load on first use:

    import tpu_compat
    tpu_compat.install()          # route tf.* TPU names to the adapters
    strategy = tpu_compat.distribute.TPUStrategy(resolver)
    v1 = tpu_compat.compat.v1.distribute.experimental.TPUStrategy(resolver, 4)
"""

from tpu_compat._lazy import submodule_getattr
from tpu_compat._version import __version__
from tpu_compat.deprecation import TPUCompatDeprecationWarning, TPUSemanticsWarning

__all__ = [
    "TPUCompatDeprecationWarning",
    "TPUSemanticsWarning",
    "__version__",
    "compat",
    "distribute",
    "install",
    "uninstall",
]

# Subpackages that mirror TensorFlow's namespaces; each imports TensorFlow.
_LAZY_SUBMODULES = ("compat", "distribute")


def install(backend=None, num_replicas=None, warnings=None):
    """Routes TensorFlow's TPU names to the tpu_compat adapters.

    Walks the registry of :mod:`tpu_compat.patching`: it decides the backend
    (configuring the emulated TPU's logical devices, so call it before
    TensorFlow runs any op), applies the warning policy, keeps autograph from
    converting tpu_compat's code, then replaces in every TensorFlow API module
    the three TPUStrategy classes, the ``TPUClusterResolver``, the TPU system
    calls and the low-level ``tf.compat.v1.tpu`` API; gives the native
    strategies the removed legacy methods; resolves TPU-host, TPU-core and
    absent-GPU device names when emulating; patches Keras for legacy TPU
    programs; serves the program's ``tensorflow.python.keras`` and
    ``tensorflow.contrib`` imports; and gives TensorFlow back ``tf.estimator``
    (with TPUEstimator). Everything, the warning filters and autograph's rules
    included, is done under one lock and recorded, so :func:`uninstall`
    restores exactly what was there. Imports TensorFlow.

    Args:
      backend: ``auto``/``tpu``/``gpu``/``cpu``; default ``TPU_COMPAT_BACKEND``.
      num_replicas: emulated cores; default ``TPU_COMPAT_NUM_REPLICAS`` or 8.
      warnings: ``once``/``always``/``error``/``ignore``; default
        ``TPU_COMPAT_WARNINGS``.

    Returns:
      An :class:`~tpu_compat.patching.InstallHandle`, usable as a context manager.
    """
    from tpu_compat import patching  # pylint: disable=import-outside-toplevel
    return patching.install(backend=backend, num_replicas=num_replicas,
                            warnings=warnings)


def uninstall():
    """Restores every TensorFlow object that :func:`install` replaced."""
    from tpu_compat import patching  # pylint: disable=import-outside-toplevel
    return patching.uninstall()


__getattr__ = submodule_getattr(__name__, _LAZY_SUBMODULES)


def _apply_default_warning_policy():
    from tpu_compat import _config, deprecation  # pylint: disable=import-outside-toplevel
    try:
        deprecation.apply_policy()
    except _config.ConfigError:
        # A bad TPU_COMPAT_WARNINGS must not make the import itself fail (the
        # CLI could not report it then); install() and the CLI validate it and
        # name the variable.
        deprecation.apply_policy("once")


_apply_default_warning_policy()
