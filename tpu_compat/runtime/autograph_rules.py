"""Autograph must call tpu_compat's code, not convert it.

TensorFlow lists its own packages (and Keras) in autograph's
``CONVERSION_RULES`` as "do not convert". A user's step function that calls an
adapter method inside ``tf.function`` would otherwise have tpu_compat's
implementation rewritten by autograph on every trace: its Python ``if``s on
tensors would become ``tf.cond``s, and the legacy-API warning would point at
tpu_compat's own line instead of the user's.

The rule is a process-wide TensorFlow setting, so it is added only when
tpu_compat is put to use, never at import:

* ``install()`` adds it (unless present) and ``uninstall()`` removes exactly
  that rule again (:func:`exclude`);
* an adapter built without ``install()`` (``tpu_compat.distribute.TPUStrategy``
  used directly, the pytest plugin's fixtures) adds it for the rest of the
  process (:func:`ensure_excluded`): there is no uninstall to tie it to.
"""

import threading

from tpu_compat._tf_internals import autograph_config

__all__ = ["PACKAGE", "ensure_excluded", "exclude", "is_excluded"]

PACKAGE = "tpu_compat"
_lock = threading.Lock()


def _is_our_rule(rule):
    return (isinstance(rule, autograph_config.DoNotConvert)
            and getattr(rule, "_prefix", None) == PACKAGE)


def is_excluded():
    """Whether autograph's rules currently leave tpu_compat unconverted."""
    return any(_is_our_rule(rule) for rule in autograph_config.CONVERSION_RULES)


def exclude():
    """Adds the rule unless present; returns the callable that removes it, or None."""
    with _lock:
        if is_excluded():
            return None
        before = autograph_config.CONVERSION_RULES
        rule = autograph_config.DoNotConvert(PACKAGE)
        # First, so no broader Convert rule can win over it.
        after = (rule,) + tuple(before)
        autograph_config.CONVERSION_RULES = after

    def remove():
        with _lock:
            current = autograph_config.CONVERSION_RULES
            if current is after:
                autograph_config.CONVERSION_RULES = before  # the very tuple we found
            else:  # changed since by someone else: take out only our rule
                autograph_config.CONVERSION_RULES = tuple(
                    r for r in current if r is not rule)
    return remove


def ensure_excluded():
    """Adds the rule for good (adapters used without ``install()``)."""
    exclude()
