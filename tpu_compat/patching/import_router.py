"""The one import router: what the program's imports get, and packages patched on load.

Three tables, one owner, one undo:

* :data:`REDIRECTS`: import statements written in the program's code
  (:func:`tpu_compat._callsite.is_program_code`) that get something else than
  ``python`` would give them. TensorFlow, tf_keras and every other installed
  library keep getting what they always get, and nothing is put in
  ``sys.modules``. Each row's route is ``route(next_import, name, globals,
  locals, fromlist, level)``: it serves the import or passes it on to
  ``next_import``; rows nest in table order, the first outermost, under ONE
  ``builtins.__import__`` wrapper.
* on-load patches (:meth:`ImportRouter.patch_on_load`): a package not imported
  yet when ``install()`` ran (tf_keras, Keras 3) is patched when anyone first
  imports it, by ONE ``sys.meta_path`` finder.
* :data:`ALIASES`: every name ``install()`` puts in ``sys.modules``, for
  import statements of modules TensorFlow 2.21 does not have under that name
  (``tensorflow.estimator``, ``tensorflow.keras.mixed_precision``); the row
  that asks for each (its ``made_by``) calls :meth:`ImportRouter.alias`.
  Nothing else in tpu_compat writes ``sys.modules`` while installing.

All are installed by ``install()`` and undone by ``uninstall()`` through the
installation's :class:`~tpu_compat.patching.changes.Changes`. Undoing puts
``builtins.__import__`` back when the router's wrapper is still on top, and
otherwise (a foreign wrapper was installed on top of it and still calls it)
makes the wrapper pass every import through untouched; the next install()
takes such a wrapper out again when it is back on top. The finder is removed
from ``sys.meta_path`` wherever it is, and answers nothing once undone, for a
foreign finder that kept a reference to it.
"""

import builtins
import dataclasses
import functools
import importlib
import importlib.abc
import logging
import sys
from typing import Optional

from tpu_compat import _callsite

__all__ = ["ALIASES", "REDIRECTS", "Alias", "ImportRouter", "Redirect", "alias_target",
           "aliases", "redirect_enabled", "tf1_import_route"]

# This module's frames sit inside every import of the program: the runner
# leaves them out of the program's traceback (tpu_compat._callsite).
__tpu_compat_plumbing__ = True

# Every redirect below is about a name under these prefixes: other imports
# skip the routes (and the program-code check) altogether.
_ROUTED_PREFIX = ("tensorflow", "distutils")


@dataclasses.dataclass(frozen=True)
class Redirect:
    """One row: what the program imports, what it gets, and who serves it."""

    imports: str  # the import statements concerned
    serves: str  # what they get
    route: str  # "module:factory"; factory(changes) -> route, or None (unavailable)
    option: Optional[str] = None  # install()'s keyword that enables it; None: always
    why_here: str = ""  # why the row sits where it does in the nesting


REDIRECTS = (
    Redirect(
        imports="import tensorflow (tpu-compat run --tf1)",
        serves="tensorflow.compat.v1, with TF 1.x behaviour",
        route="tpu_compat.patching.import_router:tf1_import_route",
        option="tf1_imports",
        why_here="outermost: `import tensorflow` is compat.v1 whatever the rows below "
                 "made of it (as the runner's own wrapper, installed last, did)"),
    Redirect(
        imports="tensorflow.python.keras[.X] (TF 1.15-2.5 programs)",
        serves="tf_keras.src[.X] views (keras/imports.py)",
        route="tpu_compat.keras.imports:import_route",
        why_here="above tensorflow.contrib, as installed before: the rows concern "
                 "different names, so only the nesting of their frames depends on it"),
    Redirect(
        imports="from tensorflow.python.estimator[.X] import Y (TF 1.x)",
        serves="tpu_compat.estimator's names (estimator/python_imports.py)",
        route="tpu_compat.estimator.python_imports:import_route",
        why_here="concerns names no other row serves"),
    Redirect(
        imports="tensorflow.contrib[.X], from tensorflow import contrib (TF 1.12-1.14)",
        serves="tpu_compat.contrib (contrib/imports.py)",
        route="tpu_compat.contrib.imports:import_route",
        why_here="innermost of the tensorflow rows: it calls `import tensorflow` itself "
                 "and must get TensorFlow's own module"),
    Redirect(
        imports="import distutils (the Colabs' distutils.version.LooseVersion check)",
        serves="distutils with distutils.version imported, as on the era's Pythons "
               "(patching/distutils_imports.py)",
        route="tpu_compat.patching.distutils_imports:import_route",
        why_here="concerns names no other row serves"),
)


@dataclasses.dataclass(frozen=True)
class Alias:
    """One ``sys.modules`` entry: the name import statements use -> the module they get."""

    name: str  # the key in sys.modules
    serves: str  # "package.module", or "module:attribute" for a module object built there
    made_by: str  # the patch row that asks for it (registry.PATCHES or keras/routes.py's)
    why: str
    # A module already imported under ``name`` (a copy, made before install()) stays;
    # otherwise the entry replaces what is there and uninstall() puts that back.
    keeps_existing: bool = False


_ESTIMATOR = ("TF 2.16 removed tf.estimator: `from tensorflow.compat.v1.estimator "
              "import tpu` imports tpu_compat.estimator's (namespaces.route_estimator)")
# tensorflow/__init__.py of TF 2.21 puts tf_keras/api/_v2 on tensorflow.__path__, so
# `import tensorflow.keras.X` would execute tf_keras's API module a second time;
# TF 2.1-2.3 had one module under both names (keras/submodule_imports.py).
_KERAS = ("`tensorflow.keras.X` import statements get the module tf.keras.X is, "
          "patched, not a copy of it (keras/submodule_imports.py)")
_KERAS_API = "tf_keras.api._v2.keras"

ALIASES = tuple(
    Alias(f"tensorflow{root}.estimator{sub}", f"tpu_compat.estimator{sub}", "estimator",
          _ESTIMATOR)
    for root in ("", ".compat.v1", ".compat.v2") for sub in ("", ".tpu", ".export")) + (
    Alias("tensorflow.keras.mixed_precision", f"{_KERAS_API}.mixed_precision", "era names",
          _KERAS, keeps_existing=True),
    Alias("tensorflow.keras.experimental", f"{_KERAS_API}.experimental", "era names",
          _KERAS, keeps_existing=True),
    Alias("tensorflow.keras.mixed_precision.experimental",
          "tpu_compat.keras.era:MIXED_PRECISION_EXPERIMENTAL", "era names",
          "TF 2.1-2.3's tf.keras.mixed_precision.experimental (keras/era.py)",
          keeps_existing=True),
    Alias("tensorflow.keras.optimizers", f"{_KERAS_API}.optimizers", "optimizer base",
          _KERAS, keeps_existing=True),
)


def aliases(made_by):
    """The rows of :data:`ALIASES` the patch row ``made_by`` asks for, in table order."""
    return [row for row in ALIASES if row.made_by == made_by]


def alias_target(row):
    """The module ``row`` puts in ``sys.modules`` (imported when asked for)."""
    return _load(row.serves) if ":" in row.serves else importlib.import_module(row.serves)


def _load(target):
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def redirect_enabled(router, option=None):
    """Enables, in ``router``, every row of :data:`REDIRECTS` that ``option`` (None:
    the default rows) enables: the registry's "import redirects" and "tf1" rows."""
    for row in router.enabled(option):
        router.redirect(row)


def tf1_import_route(changes):
    """``--tf1``: the program's ``import tensorflow`` is ``tf.compat.v1``.

    TF 1.x behaviour (``disable_v2_behavior``) goes with it and is not undone
    by ``uninstall()``: like the emulated TPU's device layout, TensorFlow sets
    it once per process, before the program builds anything.
    """
    del changes
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    # TF 2.21 logs "disable_resource_variables ... is deprecated" (a WARNING on
    # TensorFlow's logger) from inside disable_v2_behavior(); the program under
    # TF 1.15 never saw it, and the call is ours, not the program's.
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        tf.compat.v1.disable_v2_behavior()
    finally:
        logger.setLevel(level)
    compat_v1 = tf.compat.v1

    def route(next_import, name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
        module = next_import(name, globals, locals, fromlist, level)
        return compat_v1 if name == "tensorflow" else module

    return route


class _PatchingLoader(importlib.abc.Loader):
    """Runs a package's own loader, then patches the freshly imported package."""

    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._patch(module)

    def __getattr__(self, name):  # get_source, is_package, resource readers...
        return getattr(self._loader, name)


class _OnLoadFinder(importlib.abc.MetaPathFinder):
    """The router's finder: hands a package to be patched on load the
    :class:`_PatchingLoader` of the finder that really finds it."""

    def __init__(self, router):
        self._router = router

    def find_spec(self, fullname, path=None, target=None):
        patch = self._router.on_load_patch(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


def _take_out_passive_routers():
    """Takes passive routers (undone under a foreign wrapper that is gone since)
    off the top of ``builtins.__import__``."""
    while True:
        current = builtins.__import__
        router = getattr(current, "__tpu_compat_router__", None)
        if router is None or router.active:
            return
        builtins.__import__ = current.__wrapped__


class ImportRouter:
    """The import router of one installation (see the module docstring)."""

    def __init__(self, changes, lock):
        self._changes = changes
        self._lock = lock  # the install lock: an on-load patch never races uninstall()
        self._routes = []  # (row, route), in REDIRECTS order
        self._chain = None  # the routes composed over the original __import__
        self._original_import = None
        self._on_load = {}  # package -> patch(module)
        self._finder = None
        self.active = True
        # Recorded first, so undone last: passive for good once uninstall() is done.
        changes.on_undo(self._deactivate)

    # -- redirects -------------------------------------------------------------

    def enabled(self, option=None):
        """The rows of :data:`REDIRECTS` that ``option`` (None: the default rows) enables."""
        return [row for row in REDIRECTS if row.option == option]

    def redirect(self, row):
        """Enables ``row`` (once); wraps ``builtins.__import__`` on first use."""
        if any(enabled is row for enabled, _ in self._routes):
            return
        route = _load(row.route)(self._changes)
        if route is None:
            return  # e.g. tf_keras not installed: nothing to serve
        if self._original_import is None:
            self._wrap_import()
        self._routes.append((row, route))
        self._routes.sort(key=lambda entry: REDIRECTS.index(entry[0]))
        chain = self._original_import
        for _, each in reversed(self._routes):
            chain = functools.partial(each, chain)
        self._chain = chain

    def _wrap_import(self):
        _take_out_passive_routers()
        original = self._original_import = builtins.__import__
        router = self

        def route_import(name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
            chain = router._chain  # pylint: disable=protected-access
            if (chain is None or level != 0 or not name.startswith(_ROUTED_PREFIX)
                    or not _callsite.is_program_code(globals)):
                return original(name, globals, locals, fromlist, level)
            return chain(name, globals, locals, fromlist, level)

        route_import.__wrapped__ = original
        route_import.__tpu_compat_router__ = self
        builtins.__import__ = route_import

        def undo():
            self._chain = None  # passive from now on, wherever it sits
            if builtins.__import__ is route_import:
                builtins.__import__ = original

        self._changes.on_undo(undo)

    # -- sys.modules aliases ----------------------------------------------------------

    def alias(self, row):
        """Puts ``row`` of :data:`ALIASES` in ``sys.modules`` until uninstall(), which
        takes it out (or puts back what it replaced) if it is still there."""
        if row not in ALIASES:
            raise ValueError(f"{row.name!r} is not a row of import_router.ALIASES")
        if row.keeps_existing and row.name in sys.modules:
            return
        module = alias_target(row)
        previous = sys.modules.get(row.name)

        def undo():
            if sys.modules.get(row.name) is module:
                if previous is None:
                    del sys.modules[row.name]
                else:
                    sys.modules[row.name] = previous
        if self._changes.on_undo(undo):
            sys.modules[row.name] = module

    # -- on-load patches -----------------------------------------------------------

    def patch_on_load(self, package, patch):
        """Runs ``patch(module)`` when ``package`` is first imported, while installed."""
        self._on_load[package] = patch
        if self._finder is None:
            finder = self._finder = _OnLoadFinder(self)
            sys.meta_path.insert(0, finder)
            self._changes.on_undo(
                lambda: sys.meta_path.remove(finder) if finder in sys.meta_path else None)

    def on_load_patch(self, package):
        """The patch to apply when ``package`` loads now, or None."""
        if not self.active or package not in self._on_load:
            return None

        def apply(module):
            with self._lock:
                patch = self._on_load.pop(package, None) if self.active else None
                if patch is not None:
                    patch(module)
        return apply

    def _deactivate(self):
        self.active = False
        self._chain = None
