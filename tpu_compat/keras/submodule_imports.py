"""Import statements naming a submodule of ``tf.keras`` get tf_keras's patched module.

TensorFlow 2.16+ has no ``tensorflow/keras`` package. Its ``__init__`` puts
``tf_keras/api/_v2`` at the front of ``tensorflow.__path__`` (under
``TF_USE_LEGACY_KERAS=1``; tensorflow/__init__.py of TF 2.21, the lines after
``_KerasLazyLoader``), so ``import tensorflow.keras.mixed_precision`` executes
tf_keras's API module a second time under that name. The copy lacks what
tpu_compat added to the module ``tf.keras.mixed_precision`` is (keras/era.py),
and the import makes the copy ``tf.keras.mixed_precision`` from then on. TF
2.1-2.3 had one module under both names, and so does an installed tpu_compat:
:func:`serve` has the import router put the patched modules in ``sys.modules``
under the names the import statements use (its ALIASES table holds every such
name), and ``uninstall()`` takes them out again.
"""

import os
import sys

from tpu_compat.patching import import_router

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


def serve(router, made_by):
    """Has ``router`` (the installation's import router) serve the ``tensorflow.keras.X``
    rows of its ALIASES that the patch row ``made_by`` asks for.

    Only when importing ``tensorflow.keras.X`` would execute the file of the module
    a row serves (tf_keras, not Keras 3, behind ``tf.keras``); otherwise nothing
    changes and None is returned. A name already imported keeps its module.
    Returns the modules now under the rows' names that are copies (imported
    before install()), one per row serving a tf_keras module, in table order, or
    None when there are none, so the caller can give them its names too.
    """
    rows = import_router.aliases(made_by)
    package = sys.modules.get("tensorflow")
    modules = [row for row in rows if ":" not in row.serves]  # the rest: built objects
    for row in modules:
        module = sys.modules.get(row.serves)
        if module is None or not _same_file(_file_an_import_loads(package, row.name),
                                            getattr(module, "__file__", None)):
            return None  # another Keras stands behind tf.keras: leave its imports alone
    for row in rows:
        router.alias(row)
    loaded = [sys.modules.get(row.name) for row in modules]
    if None in loaded or loaded == [sys.modules.get(row.serves) for row in modules]:
        return None
    return loaded
