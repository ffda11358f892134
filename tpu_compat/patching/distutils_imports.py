"""The program's ``import distutils``, with ``distutils.version`` loaded as the era's Pythons had it.

TPU Colab notebooks of 2019-2020 checked the TensorFlow version with::

    import distutils
    if distutils.version.LooseVersion(tf.__version__) < '1.14':

(tensorflow/tpu, tools/colab/fashion_mnist.ipynb at 0d4120f, code cell 2; the
same check is in the TF 2 edition at da262fc and in many copies). ``import
distutils`` alone does not import the ``version`` submodule: the check worked
because in the Python 3.5-3.8 environments TF 1.14-2.3 ran on (Colab's among
them) something imported at or before ``import tensorflow`` had already
imported ``distutils.version``. Under TF 2.21 on Python 3.11 nothing does, so
the notebook died with ``AttributeError: module 'distutils' has no attribute
'version'``; Python 3.12 removed ``distutils`` altogether (setuptools provides
it when installed).

The import router's row (patching/import_router.py) serves the program's own
``import distutils``: the package with ``distutils.version`` imported, as it
was then. Without any ``distutils`` (Python 3.12+ and no setuptools) the
program's import fails with one line naming the fix.
"""

import importlib

__all__ = ["import_route", "MISSING_DISTUTILS"]

# This module's frames sit inside the program's imports (see import_router).
__tpu_compat_plumbing__ = True

MISSING_DISTUTILS = (
    "No module named 'distutils': Python 3.12 removed it from the standard library, "
    "and TF 1.x-2.3 programs import it (distutils.version.LooseVersion checks); "
    "`pip install setuptools` provides it")


def import_route(changes):
    """The router's route for ``distutils`` and its submodules."""
    del changes

    def route(next_import, name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
        if name != "distutils" and not name.startswith("distutils."):
            return next_import(name, globals, locals, fromlist, level)
        try:
            module = next_import(name, globals, locals, fromlist, level)
        except ModuleNotFoundError as error:
            if error.name != "distutils":
                raise
            raise ModuleNotFoundError(MISSING_DISTUTILS, name="distutils") from None
        # ``import distutils`` binds the package: give it its ``version``
        # attribute by importing the submodule, as the era's environment had.
        importlib.import_module("distutils.version")
        return module

    return route
