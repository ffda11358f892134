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

The policy governs :class:`TPUSemanticsWarning` too (fidelity ``tpu``'s lint of
ops a TPU computes differently). Only this package's own categories are
filtered: TensorFlow's deprecation noise is not ours to escalate.
"""

import os
import sys
import threading
import warnings

from tpu_compat import _callsite, _config, settings

__all__ = [
    "PolicyChange",
    "TPUCompatDeprecationWarning",
    "TPUSemanticsWarning",
    "apply_policy",
    "filter_action",
    "warn_direct_use",
    "warn_at",
    "warn_legacy",
    "warn_user",
]

_POLICY_TO_ACTION = {
    "once": "default",  # once per (message, category, module, line): per call site
    "always": "always",
    "error": "error",
    "ignore": "ignore",
}


class TPUCompatDeprecationWarning(DeprecationWarning):
    """A legacy TPU-strategy API was used; the message names its replacement."""


class TPUSemanticsWarning(UserWarning):
    """An op of a replica step computes differently on a TPU (fidelity ``tpu``).

    The lint of :mod:`tpu_compat.fidelity.tpu_semantics`; the same policy as
    :class:`TPUCompatDeprecationWarning` governs it.
    """

    # Raised (under the `error` policy) while autograph traces a step: passed
    # through as it is, as TPUCompilationError is.
    ag_pass_through = True


# The categories apply_policy() governs.
_POLICY_CATEGORIES = (TPUCompatDeprecationWarning, TPUSemanticsWarning)


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


def _insert_filter(index, action, added, category=TPUCompatDeprecationWarning):
    entry = (action, None, category, None, 0)
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
        policy = settings.read("warnings")
    elif policy not in _POLICY_TO_ACTION:
        raise _config.ConfigError(
            f"warnings={policy!r} is not valid; allowed values: "
            f"{', '.join(settings.WARNING_POLICIES)}")
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
            for category in reversed(_POLICY_CATEGORIES):
                _insert_filter(0, _POLICY_TO_ACTION[policy], added, category)
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


def warn_legacy(rule, detail=None):
    """Warns that the legacy API ``rule`` (a record or a rule id) was used.

    For code that serves a legacy API outside the table's hooks: the warning
    points at the first frame above tpu_compat (and TensorFlow's tracing
    machinery), and is not given when TensorFlow or Keras made the call.
    """
    _warn(rule, detail, _callsite.user_frame(sys._getframe(1)))  # pylint: disable=protected-access


def warn_direct_use(rule, caller):
    """Warns for a use of ``rule``'s API by the code running in frame ``caller``.

    Called by the hooks of :mod:`tpu_compat.runtime.hooks` with the frame
    that called the hooked method: only a use written in the user's code
    warns, not one by tpu_compat, TensorFlow or Keras.
    """
    _warn(rule, None, _callsite.user_frame(caller, direct=True))


def warn_user(warning):
    """Warns ``warning`` (a Warning instance) at the user's line, once per call site.

    For tpu_compat's other warnings (device names mapped onto the emulated
    TPU): the same frame as :func:`warn_legacy` and the same warn path, the
    policy aside, which governs only :class:`TPUCompatDeprecationWarning`.
    """
    _warn(warning, None, _callsite.user_frame(sys._getframe(1)))  # pylint: disable=protected-access


def warn_at_frame(message, category, frame):
    """Warns at FRAME's file and line, as ``warnings.warn(stacklevel=...)`` would.

    The frame's globals go to ``warn_explicit`` as ``module_globals`` (so the
    source line of a module imported from a zip or by a custom loader is
    still shown) only when their ``__spec__`` names the loader: since Python
    3.12, ``warn_explicit`` raises "Module globals is missing a
    __spec__.loader" when ``__loader__`` and ``__spec__`` are both None
    (a script run as ``__main__`` by ``tpu-compat run``, a notebook cell),
    and gives a DeprecationWarning (an error under ``-W error``) when only
    ``__loader__`` is set (``python script.py``). Without them the source line
    is read from the file by name, which is where such code comes from.
    """
    module_globals = frame.f_globals
    warnings.warn_explicit(
        message, category, frame.f_code.co_filename, frame.f_lineno,
        module=module_globals.get("__name__", "<string>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals if _spec_names_the_loader(module_globals) else None)


def _spec_names_the_loader(module_globals):
    """True if Python 3.12+'s ``warn_explicit`` takes these globals silently."""
    spec_loader = getattr(module_globals.get("__spec__"), "loader", None)
    loader = module_globals.get("__loader__")
    return spec_loader is not None and (loader is None or loader == spec_loader)


def _warn(rule, detail, frame):
    if frame is None:
        return
    if isinstance(rule, Warning):  # warn_user's: the category is its class
        message = rule
    else:
        from tpu_compat import legacy_api  # local: legacy_api imports nothing heavy
        record = legacy_api.get(rule) if isinstance(rule, str) else rule
        message = record.warning_message()
        if detail:
            message = f"{message} {detail}"
    origin = _callsite.autograph_source(frame.f_code.co_filename, frame.f_lineno)
    if origin is None:
        warn_at_frame(message, TPUCompatDeprecationWarning, frame)
        return
    # Inside tf.function: report the line the user wrote, not autograph's copy.
    warn_at(message, *origin)


def warn_at(message, filename, lineno, category=TPUCompatDeprecationWarning):
    """Warns ``message`` (a str, or a Warning instance) at ``filename:lineno``.

    For a line known by name, not by frame: the user's source behind
    autograph's copy, or the line that created an op.
    """
    if isinstance(message, Warning):
        category = type(message)
    module = os.path.splitext(os.path.basename(filename))[0]
    registry = _autograph_registries.setdefault(filename, {})
    warnings.warn_explicit(message, category, filename, lineno,
                           module=module, registry=registry)


# Once-per-call-site bookkeeping for warnings given at a (file, line).
_autograph_registries = {}
