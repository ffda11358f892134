"""install()/uninstall(): every change tpu_compat makes to TensorFlow, Keras and Python.

* :mod:`~tpu_compat.patching.registry`: the rows ``install()`` walks, in a
  declared order with the reason for each constraint, and install/uninstall;
* :mod:`~tpu_compat.patching.rows`: a row's shape (what it installs: its
  payload, as data; what it replaces: its targets), the one installer and the
  order check, shared with Keras's inner rows;
* :mod:`~tpu_compat.patching.changes`: the record of one installation and the
  one undo rule (last change first);
* :mod:`~tpu_compat.patching.namespaces`: TensorFlow's API modules -> the
  adapters (by identity), and ``tf.estimator``;
* :mod:`~tpu_compat.patching.import_router`: the one import router, the
  program's redirected imports (``--tf1``, ``tensorflow.python.keras``,
  ``tensorflow.contrib``) and packages patched when they load.

Importing this package imports neither TensorFlow nor ``runtime/``; the rows do,
when ``install()`` applies them.
"""

from tpu_compat.patching.registry import (InstallHandle, install, is_installed,
                                          uninstall)

__all__ = ["InstallHandle", "install", "is_installed", "uninstall"]
