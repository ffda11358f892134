"""``tensorflow.python.keras`` imports of the program's code reach tf_keras.

TF 1.15-2.5 programs (Google's own TPU models among them) import Keras as
``from tensorflow.python.keras import layers, models, backend``, ``from
tensorflow.python.keras.layers import Dense`` or ``from
tensorflow.python.keras.engine import base_layer``. In TF 2.21 that package is
a leftover without most layers; tf_keras, the Keras 2 legacy code expects,
keeps the same modules under ``tf_keras.src``.

The redirection is one row of the import router
(:mod:`tpu_compat.patching.import_router`), scoped to the program's code as
``--tf1`` is: TensorFlow's own modules import ``tensorflow.python.keras`` too
and must keep getting it. So it changes no entry of ``sys.modules``; for an
import statement in the program's code, the route (:func:`import_route`) returns a view in which
``tensorflow.python.keras.X`` is ``tf_keras.src.X`` (with the few modules
tf_keras renamed, and TF 2.1-2.3's ``mixed_precision.experimental`` from
:mod:`tpu_compat.keras.era`). ``importlib.import_module`` calls are
not import statements and are left alone.
"""

import importlib
import importlib.util
import types

from tpu_compat.deprecation import warn_legacy
from tpu_compat.runtime import hooks

__all__ = ["LEGACY_PACKAGE", "import_route", "tf_keras_module"]

# This module's frames sit inside the program's imports (and its views'
# attribute reads): the runner leaves them out of the program's traceback
# (tpu_compat._callsite).
__tpu_compat_plumbing__ = True

LEGACY_PACKAGE = "tensorflow.python.keras"
_TARGET_PACKAGE = "tf_keras.src"
# Modules tf_keras moved: TF 2.x path suffix -> tf_keras.src path suffix.
_RENAMED = {
    "optimizer_v2": "optimizers.legacy",
    "engine.network": "engine.functional",  # Network became Functional in TF 2.3
}


def _special(rest):
    if rest == "mixed_precision.experimental":
        from tpu_compat.keras import era  # pylint: disable=import-outside-toplevel
        return era.MIXED_PRECISION_EXPERIMENTAL
    return None


def _target_name(rest):
    for old, new in _RENAMED.items():
        if rest == old or rest.startswith(old + "."):
            rest = new + rest[len(old):]
            break
    return f"{_TARGET_PACKAGE}.{rest}" if rest else _TARGET_PACKAGE


def tf_keras_module(legacy_name):
    """The tf_keras module that ``tensorflow.python.keras[.X]`` stands for.

    Raises ModuleNotFoundError naming both modules when tf_keras has none.
    """
    rest = legacy_name[len(LEGACY_PACKAGE):].lstrip(".")
    special = _special(rest)
    if special is not None:
        return special
    target = _target_name(rest)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name and not target.startswith(error.name):
            raise  # something the tf_keras module itself imports is missing
        raise ModuleNotFoundError(
            f"No module named {legacy_name!r}: tpu_compat routes "
            f"{LEGACY_PACKAGE} to tf_keras, which has no {target!r}",
            name=legacy_name) from None


class _View(types.ModuleType):
    """A module as the program's import sees it.

    ``tensorflow`` and ``tensorflow.python`` views are the real modules except
    on the way to ``keras``; a view of ``tensorflow.python.keras[.X]`` is its
    tf_keras module, except for submodules tf_keras moved.
    """

    def __init__(self, path):
        super().__init__(path)
        self.__dict__["_tpu_compat_path"] = path

    def _target(self):
        path = self.__dict__["_tpu_compat_path"]
        if path.startswith(LEGACY_PACKAGE):
            return tf_keras_module(path)
        return importlib.import_module(path)

    def __getattr__(self, attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            return getattr(self._target(), attribute)
        path = self.__dict__["_tpu_compat_path"]
        child = f"{path}.{attribute}"
        if not path.startswith(LEGACY_PACKAGE):  # a view of tensorflow[.python]
            if child == LEGACY_PACKAGE or LEGACY_PACKAGE.startswith(child + "."):
                return _view(child)
            return getattr(self._target(), attribute)
        rest = child[len(LEGACY_PACKAGE) + 1:]
        special = _special(rest)
        if special is not None:
            return special
        if rest in _RENAMED:
            return _view(child)
        try:
            value = getattr(self._target(), attribute)
        except AttributeError:
            try:
                tf_keras_module(child)  # a submodule not imported yet
            except ModuleNotFoundError:
                raise AttributeError(
                    f"module {path!r} (tf_keras's {_target_name(rest[:-len(attribute)].rstrip('.'))!r} "
                    f"under tpu_compat) has no attribute {attribute!r}") from None
            return _view(child)
        # Submodules stay views, so that modules tf_keras moved resolve below them.
        if isinstance(value, types.ModuleType) and value.__name__ == _target_name(rest):
            return _view(child)
        return value

    def __dir__(self):
        return dir(self._target())

    def __repr__(self):
        return f"<tpu_compat view of {self.__dict__['_tpu_compat_path']!r}>"


_views = {}


def _view(path):
    view = _views.get(path)
    if view is None:
        view = _views[path] = _View(path)
    return view


def _is_legacy_import(name, fromlist):
    if name == LEGACY_PACKAGE or name.startswith(LEGACY_PACKAGE + "."):
        return True
    # from tensorflow.python import keras
    return name == "tensorflow.python" and bool(fromlist) and "keras" in fromlist


def import_route(changes):
    """The import router's ``tensorflow.python.keras`` route, or None without tf_keras."""
    del changes  # the route changes nothing: it serves views
    if importlib.util.find_spec("tf_keras") is None:
        return None
    return _route


def _route(next_import, name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
    """Serves a program's ``tensorflow.python.keras`` import (the router checked
    that it is the program's, at level 0); passes any other on."""
    if not (name.startswith("tensorflow.python") and _is_legacy_import(name, fromlist)):
        return next_import(name, globals, locals, fromlist, level)
    # The table's import hooks (legacy_api.imports) name the modules whose
    # import warns; warn_legacy attributes it to the import statement, above
    # the router and any other import wrapper.
    imported = name if name.startswith(LEGACY_PACKAGE) else LEGACY_PACKAGE
    for record in hooks.imported_records(imported):
        warn_legacy(record)
    if name.startswith(LEGACY_PACKAGE):
        tf_keras_module(name)  # a module tf_keras lacks fails here, by name
    if fromlist:
        if "*" in fromlist and name.startswith(LEGACY_PACKAGE):
            return tf_keras_module(name)
        return _view(name)
    # `import tensorflow.python.keras.layers [as x]` binds (or walks from) the
    # top package.
    next_import("tensorflow", globals, locals, (), 0)
    return _view("tensorflow")
