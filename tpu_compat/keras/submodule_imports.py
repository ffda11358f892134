"""Import statements naming a submodule of ``tf.keras`` get tf_keras's patched module.

TensorFlow 2.16+ has no ``tensorflow/keras`` package. Its ``__init__`` puts
``tf_keras/api/_v2`` at the front of ``tensorflow.__path__`` (under
``TF_USE_LEGACY_KERAS=1``; tensorflow/__init__.py of TF 2.21, the lines after
``_KerasLazyLoader``), so ``import tensorflow.keras.mixed_precision`` executes
tf_keras's API module a second time under that name. The copy lacks what
tpu_compat added to the module ``tf.keras.mixed_precision`` is (keras/era.py),
and the import makes the copy ``tf.keras.mixed_precision`` from then on. TF
2.1-2.3 had one module under both names, and so does an installed tpu_compat:
:func:`serve` puts the patched modules in ``sys.modules`` under the names the
import statements use, and ``uninstall()`` takes them out again.
"""

import os
import sys

__all__ = ["serve"]


def _file_an_import_loads(package, name):
    """The ``__init__.py`` importing ``name`` (a subpackage of the imported
    ``package``) would execute, found without importing anything."""
    parts = name.split(".")[1:]
    for entry in getattr(package, "__path__", ()):
        candidate = os.path.join(entry, *parts, "__init__.py")
        if os.path.isfile(candidate):
            return candidate
    return None


def _same_file(one, other):
    try:
        return one is not None and other is not None and os.path.samefile(one, other)
    except OSError:
        return False


def _put_in_sys_modules(state, name, module):
    def undo():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    if state.on_undo(undo):
        sys.modules[name] = module


def serve(state, public, root, children, extra):
    """Serves ``root.CHILD`` as ``public.CHILD`` for each of ``children``, and
    each ``extra`` module as ``public.SUFFIX``, through ``state``.

    Only when ``public`` is ``root`` for TensorFlow, i.e. importing
    ``public.CHILD`` would execute ``root.CHILD``'s file (tf_keras, not Keras 3,
    behind ``tf.keras``); otherwise nothing changes and None is returned. A name
    already imported keeps its module. Returns the modules now under
    ``public.CHILD`` that are copies (imported before install()), one per child,
    or None when there are none, so the caller can give them its names too.
    """
    package = sys.modules.get(public.split(".")[0])
    served = {}
    for child in children:
        module = sys.modules.get(f"{root}.{child}")
        name = f"{public}.{child}"
        if module is None or not _same_file(_file_an_import_loads(package, name),
                                            getattr(module, "__file__", None)):
            return None  # another Keras stands behind tf.keras: leave its imports alone
        served[name] = module
    for suffix, module in extra.items():
        served[f"{public}.{suffix}"] = module
    for name, module in served.items():
        if name not in sys.modules:
            _put_in_sys_modules(state, name, module)
    loaded = [sys.modules.get(f"{public}.{child}") for child in children]
    if None in loaded or loaded == [served[f"{public}.{child}"] for child in children]:
        return None
    return loaded
