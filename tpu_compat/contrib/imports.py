"""Serving ``tensorflow.contrib`` to the program's own code, and only to it.

The ``tensorflow.contrib`` row of the import router
(:mod:`tpu_compat.patching.import_router`), enabled by ``tpu_compat.install()``
and undone by ``uninstall()``:

* ``tf.contrib`` on every ``tensorflow.compat.v1`` module object, for
  ``import tensorflow.compat.v1 as tf`` programs and for ``--tf1`` programs
  (whose ``import tensorflow`` is compat.v1). The TF 2 ``tensorflow`` module
  gets no ``contrib``: libraries test ``hasattr(tf, "contrib")`` to tell TF 1
  from TF 2.
* the route for ``import tensorflow.contrib[.x]`` and ``from
  tensorflow.contrib[.x] import y`` written in the program's code (not in
  TensorFlow or other installed libraries, which keep getting
  ``ModuleNotFoundError`` as under plain TF 2). Nothing is put in
  ``sys.modules``.
"""

import sys
import threading
import types

from tpu_compat import contrib as contrib_lib
from tpu_compat import deprecation
from tpu_compat.runtime import hooks

__all__ = ["import_route"]

# This module's frames sit inside the program's imports: the runner leaves
# them out of the program's traceback (tpu_compat._callsite).
__tpu_compat_plumbing__ = True

_PREFIX = "tensorflow.contrib"


class _TopLevelWithContrib(types.ModuleType):
    """What ``import tensorflow.contrib.x`` binds to ``tensorflow``.

    The statement binds the top-level package and the program then reads
    ``tensorflow.contrib.x``; this module delegates every other attribute to
    the ``tensorflow`` the plain import returned.
    """

    def __init__(self, wrapped):
        super().__init__(wrapped.__name__)
        self.__dict__["_tpu_compat_wrapped"] = wrapped
        self.__dict__["contrib"] = contrib_lib.contrib_module()

    def __getattr__(self, name):
        return getattr(self.__dict__["_tpu_compat_wrapped"], name)


def _resolve(name, fromlist):
    """The module ``from tensorflow.contrib[.x] import ...`` needs."""
    parts = name.split(".")[2:]  # after tensorflow.contrib
    deep = contrib_lib.deep_module(name) if len(parts) > 1 else None
    if deep is None and ".".join(parts) in contrib_lib.deep_paths():
        parts = [".".join(parts)]  # tensorflow.contrib.tpu.ops.gen_tpu_ops
    if len(parts) > 1 and deep is None:
        raise ImportError(contrib_lib.not_provided_message(
            "tf.contrib." + ".".join(parts)), name=name)
    try:
        if deep is not None:  # tensorflow.contrib.tpu.python.tpu.tpu_config, ...
            module = deep
        else:
            module = (contrib_lib.submodule(parts[0]) if parts
                      else contrib_lib.contrib_module())
        for item in fromlist or ():
            if item != "*":
                getattr(module, item)  # the name's own error, not "cannot import"
    except contrib_lib.ContribNotProvidedError as error:
        raise ImportError(str(error), name=name) from None
    return module


def import_route(changes):
    """Adds ``tf.contrib`` to compat.v1 (through ``changes``); returns the route.

    The route serves the program's import statements (the router checked that
    they are the program's, at level 0) and passes any other on.
    """
    contrib = contrib_lib.contrib_module()
    lock = threading.Lock()

    def add_to_compat_v1_modules():
        # `import tensorflow.compat.v1` run for the first time after install()
        # makes a new module object: called again after such imports.
        with lock:
            for module_name, module in list(sys.modules.items()):
                if (module is not None and module_name.startswith("tensorflow")
                        and module_name.endswith("compat.v1")
                        and getattr(module, "contrib", None) is not contrib):
                    changes.add(module, "contrib", contrib)

    add_to_compat_v1_modules()

    def route(next_import, name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
        if name == _PREFIX or name.startswith(_PREFIX + "."):
            module = _resolve(name, fromlist)
            # The table's import hook (TPC100): a tensorflow.contrib import is
            # where such a program first stops on TF 2; warned at its line.
            for record in hooks.imported_records(name):
                deprecation.warn_legacy(record)
            if fromlist:
                return module
            return _TopLevelWithContrib(next_import("tensorflow", globals, locals, (), 0))
        if name == "tensorflow" and fromlist and "contrib" in fromlist:
            for record in hooks.imported_records(_PREFIX):
                deprecation.warn_legacy(record)
            top = next_import(name, globals, locals, fromlist, level)
            return top if hasattr(top, "contrib") else _TopLevelWithContrib(top)
        module = next_import(name, globals, locals, fromlist, level)
        if name.startswith("tensorflow.compat.v1") and not changes.closed:
            add_to_compat_v1_modules()
        return module

    return route
