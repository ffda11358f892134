"""The earlier name of :mod:`tpu_compat.patching`'s install()/uninstall(), kept for
code that imports it (``from tpu_compat import routing; routing.install()``)."""

from tpu_compat.patching import InstallHandle, install, is_installed, uninstall

__all__ = ["InstallHandle", "install", "is_installed", "uninstall"]
