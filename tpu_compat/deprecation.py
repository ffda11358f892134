"""Deprecation warnings for legacy TPU APIs, and the policy that governs them.

Every legacy API's record in :mod:`tpu_compat.legacy_api` names the code points
(its hook) where a use is seen; :mod:`tpu_compat.runtime.hooks` makes them call
:func:`warn_direct_use`, so the message always names the modern replacement and
the rule id the scanner uses for the same API, at the line the user wrote.

Policy (``TPU_COMPAT_WARNINGS`` or ``tpu-compat run --warnings``):

=========  ================================================================
once       show each legacy use once per call site (Python's ``default``)
always     show every use
error      raise, so CI fails on any legacy use
ignore     stay silent
=========  ================================================================

Only this package's own categories are filtered: TensorFlow's deprecation
noise is not ours to escalate.
"""

import os
import sys
import threading
import warnings

from tpu_compat import _config

__all__ = [
    "PolicyChange",
    "TPUCompatDeprecationWarning",
    "apply_policy",
    "filter_action",
    "warn_direct_use",
    "warn_legacy",
]

_POLICY_TO_ACTION = {
    "once": "default",  # once per (message, category, module, line): per call site
    "always": "always",
    "error": "error",
    "ignore": "ignore",
}


class TPUCompatDeprecationWarning(DeprecationWarning):
    """A legacy TPU-strategy API was used; the message names its replacement."""


def filter_action(policy):
    """The ``warnings`` filter action that implements ``policy`` (e.g. ``"once"``)."""
    return _POLICY_TO_ACTION[policy]


# The filter entries apply_policy() inserted, so that a later call replaces
# them (and only them: a user's own -W or filterwarnings stays). Entries are
# found again by identity: a user's filter may be equal to ours.
_installed_filters = []
# apply_policy() and its undo are read-modify-write of warnings.filters.
_filters_lock = threading.RLock()


def _index_of(entry):
    for index, candidate in enumerate(warnings.filters):
        if candidate is entry:
            return index
    return None


def _insert_filter(index, action, added):
    entry = (action, None, TPUCompatDeprecationWarning, None, 0)
    warnings.filters.insert(index, entry)
    _installed_filters.append(entry)
    added.append(entry)


class PolicyChange:
    """What one :func:`apply_policy` call did to ``warnings.filters``.

    Calling it undoes exactly that: the entries it inserted are removed and
    the ones it replaced are put back where they were. ``install()`` records
    it so that ``uninstall()`` leaves the filters as it found them.
    """

    def __init__(self, removed, added):
        self._removed = removed  # [(index, entry)] in the order removed
        self._added = added

    def __call__(self):
        with _filters_lock:
            for entry in self._added:
                index = _index_of(entry)
                if index is not None:
                    del warnings.filters[index]
                if entry in _installed_filters:
                    _installed_filters.remove(entry)
            for index, entry in reversed(self._removed):
                warnings.filters.insert(index, entry)
                _installed_filters.append(entry)
            self._removed, self._added = [], []
            warnings._filters_mutated()  # pylint: disable=protected-access


def apply_policy(policy=None):
    """Installs the ``warnings`` filter for :class:`TPUCompatDeprecationWarning`.

    Args:
      policy: one of ``once``, ``always``, ``error``, ``ignore``; None reads
        ``TPU_COMPAT_WARNINGS``. With neither set, the only change made is to
        lift Python's default ``ignore::DeprecationWarning`` for our category,
        so a ``-W error::DeprecationWarning`` or a filter the user installed
        first still wins.

    Returns:
      A :class:`PolicyChange`; calling it undoes this call's change.
    """
    if policy is None:
        policy = _config.warning_policy()
    elif policy not in _POLICY_TO_ACTION:
        raise _config.ConfigError(
            f"warnings={policy!r} is not valid; allowed values: "
            f"{', '.join(_config.WARNING_POLICIES)}")
    removed, added = [], []
    with _filters_lock:
        # Drop the filters this function added before, so switching is exact.
        while _installed_filters:
            entry = _installed_filters.pop()
            index = _index_of(entry)
            if index is not None:
                del warnings.filters[index]
                removed.append((index, entry))
        if policy is not None:
            _insert_filter(0, _POLICY_TO_ACTION[policy], added)
        else:
            # No explicit policy: find the filter that currently decides our category.
            for index, (action, message, category, module, _) in enumerate(
                    warnings.filters):
                if message is None and module is None and issubclass(
                        TPUCompatDeprecationWarning, category):
                    if action == "ignore" and category is DeprecationWarning:
                        _insert_filter(index, "default", added)
                    break
        warnings._filters_mutated()  # pylint: disable=protected-access
    return PolicyChange(removed, added)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_IMPORT_SYSTEM = "<frozen importlib."  # importlib._bootstrap's frames' filename


def _package_dir(name):
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


def _user_frame(frame, direct=False):
    """The user's frame that used a legacy API, walking up from ``frame``.

    Frames of TensorFlow's function-tracing machinery (autograph,
    tf.function) are skipped: inside a ``tf.function`` the user's call
    reaches us through them. Frames of tpu_compat itself are skipped too,
    unless ``direct``: a hook wrapper passes the frame that called the legacy
    API, and when that is tpu_compat's own code (``strategy_by_era`` building the v1
    strategy, an adapter reading ``extended.steps_per_run``) the use is
    internal and does not warn. If the first remaining frame belongs to
    TensorFlow or Keras, the library called the legacy API itself (e.g.
    tf_keras's TF1 training loop calling ``make_dataset_iterator``), not the
    user: None says do not warn. The import system's frames are skipped too,
    and a hook read made by it directly is silent: for ``from
    tf.estimator import ModeKeys`` importlib first checks the name with
    ``hasattr``, then the user's own frame reads it (and that read warns).
    """
    tf_dir = _package_dir("tensorflow")
    library_dirs = tuple(d for d in (tf_dir, _package_dir("tf_keras"),
                                     _package_dir("keras")) if d)
    tracing_dirs = tuple(os.path.join(tf_dir, "python", sub) + os.sep
                         for sub in ("autograph", "eager", "util")) if tf_dir else ()
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            if direct:
                return None
            frame = frame.f_back
            continue
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(_PACKAGE_DIR):
            if direct:
                return None
        elif not filename.startswith(tracing_dirs):
            return None if filename.startswith(library_dirs) else frame
        frame = frame.f_back
    return None


def _autograph_origin(frame):
    """The user's ``(filename, lineno)`` behind an autograph-generated frame."""
    return _autograph_source(frame.f_code.co_filename, frame.f_lineno)


def _autograph_source(filename, lineno):
    """The user's ``(filename, lineno)`` behind an autograph-generated location."""
    if "__autograph_generated_file" not in filename:
        return None
    try:
        from tensorflow.python.util import tf_stack  # pylint: disable=import-outside-toplevel
        mapper = tf_stack._source_mapper_stacks[threading.get_ident()][-1]  # pylint: disable=protected-access
        origin = mapper.get_effective_source_map().get((filename, lineno))
    except Exception:  # pylint: disable=broad-except
        return None  # private API moved: fall back to the generated location
    return (origin[0], origin[1]) if origin else None


def warn_legacy(rule, detail=None):
    """Warns that the legacy API ``rule`` (a record or a rule id) was used.

    For code that serves a legacy API outside the table's hooks: the warning
    points at the first frame above tpu_compat (and TensorFlow's tracing
    machinery), and is not given when TensorFlow or Keras made the call.
    """
    _warn(rule, detail, _user_frame(sys._getframe(1)))  # pylint: disable=protected-access


def warn_direct_use(rule, caller):
    """Warns for a use of ``rule``'s API by the code running in frame ``caller``.

    Called by the hooks of :mod:`tpu_compat.runtime.hooks` with the frame
    that called the hooked method: only a use written in the user's code
    warns, not one by tpu_compat, TensorFlow or Keras.
    """
    _warn(rule, None, _user_frame(caller, direct=True))


def _warn(rule, detail, frame):
    if frame is None:
        return
    from tpu_compat import legacy_api  # local: legacy_api imports nothing heavy
    record = legacy_api.get(rule) if isinstance(rule, str) else rule
    message = record.warning_message()
    if detail:
        message = f"{message} {detail}"
    origin = _autograph_origin(frame)
    if origin is None:
        # What warnings.warn(stacklevel=...) would do for this frame.
        module_globals = frame.f_globals
        warnings.warn_explicit(
            message, TPUCompatDeprecationWarning, frame.f_code.co_filename,
            frame.f_lineno, module=module_globals.get("__name__", "<string>"),
            registry=module_globals.setdefault("__warningregistry__", {}),
            module_globals=module_globals)
        return
    # Inside tf.function: report the line the user wrote, not autograph's copy.
    filename, lineno = origin
    module = os.path.splitext(os.path.basename(filename))[0]
    registry = _autograph_registries.setdefault(filename, {})
    warnings.warn_explicit(message, TPUCompatDeprecationWarning, filename, lineno,
                           module=module, registry=registry)


# Once-per-call-site bookkeeping for warnings re-attributed to user files.
_autograph_registries = {}
