"""The table's hooks, made to warn: every legacy use is seen where the table says.

Each record of :mod:`tpu_compat.legacy_api` carries a :class:`~tpu_compat.
legacy_api.Hook` naming the code points (``"module:Class.member"``) where a
use of its API can be seen. This module instruments exactly those code points,
so a record's hook and the code that warns cannot drift apart:

* targets in tpu_compat's own modules are instrumented when the module is
  imported (each such module ends with ``hooks.instrument_module(__name__)``);
  the adapters are ours, so that is permanent;
* a module attribute a program reads (``tf.estimator.ModeKeys``) gets a
  ``reads`` hook like an instance attribute: the property goes on the
  module's own class (:func:`_module_with_own_class`);
* targets in TensorFlow, tf_keras and Keras are instrumented by
  ``tpu_compat.install()`` through the installation's changes (:func:`instrument_library`),
  so ``uninstall()`` puts the originals back.

One wrapper per target checks every hook on it, in table order. A wrapper
warns (:func:`tpu_compat.deprecation.warn_direct_use`) only when the code that
called the target is the user's: a call made by tpu_compat itself
(``strategy_by_era`` building the TF 1.15 strategy), by TensorFlow (``run`` calling
``extended.call_for_each_replica``) or by Keras is internal and silent.
Inside ``tf.function`` the warning is mapped back to the user's source line.

This module imports neither TensorFlow nor the runtime modules: it resolves
targets by name when asked.
"""

import functools
import importlib
import inspect
import sys
import threading
import types

from tpu_compat import deprecation, legacy_api

__all__ = ["instrument_module", "instrument_library", "hooked_rules", "imported_records",
           "targets"]

_HOOKS_ATTRIBUTE = "__tpu_compat_hooks__"  # rules a wrapper checks (on wrappers and fgets)
ARGUMENTS_READER = "__tpu_compat_arguments__"  # optional reader a target with *args declares


def targets():
    """``{module: {member path: ((record, hook), ...)}}`` of every observable hook."""
    table = {}
    for record in legacy_api.RECORDS:
        hook = record.hook
        if not hook.observable or hook.kind == legacy_api.HOOK_IMPORT:
            continue  # import hooks name modules, seen by the import router
        for target in hook.targets:
            module, _, path = target.partition(":")
            table.setdefault(module, {}).setdefault(path, []).append((record, hook))
    return {module: {path: tuple(entries) for path, entries in members.items()}
            for module, members in table.items()}


_TARGETS = targets()


def imported_records(module_name):
    """The records whose import hook covers ``module_name`` (the module or a
    package above it), in table order: what a program's import of it warns with."""
    return tuple(
        record for record in legacy_api.RECORDS
        if record.hook.kind == legacy_api.HOOK_IMPORT and any(
            module_name == target or module_name.startswith(target + ".")
            for target in record.hook.targets))


def _owner_and_name(module, path, entries):
    """``(object, member name)`` of the target ``module:path``."""
    owner = module
    parts = path.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    name = parts[-1]
    if isinstance(owner, type) and name not in vars(owner):
        # An inherited member would be instrumented on the wrong class. Only a
        # plain instance attribute (set in __init__) is absent from the class;
        # it becomes a property (_wrap_attribute).
        instance_attribute = name not in dir(owner) and all(
            hook.kind == legacy_api.HOOK_ATTRIBUTE for _, hook in entries)
        if not instance_attribute:
            raise AttributeError(
                f"hook target {module.__name__}:{path} is not defined in "
                f"{owner.__name__} itself")
    return owner, name


def _positional_index(function, argument):
    """Index of ``argument`` among ``function``'s positional parameters, or None."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    for index, parameter in enumerate(parameters):
        if parameter.name == argument:
            if parameter.kind in (parameter.POSITIONAL_ONLY,
                                  parameter.POSITIONAL_OR_KEYWORD):
                return index
            return None
    return None


def _argument_given(function, argument, index, args, kwargs):
    reader = getattr(function, ARGUMENTS_READER, None)
    if reader is not None:
        return argument in reader(*args, **kwargs)
    return argument in kwargs or (index is not None and len(args) > index)


def _used(function, hook, index, args, kwargs):
    if hook.kind == legacy_api.HOOK_ARGUMENT:
        return _argument_given(function, hook.argument, index, args, kwargs)
    if hook.kind == legacy_api.HOOK_ARGUMENT_OMITTED:
        return not _argument_given(function, hook.argument, index, args, kwargs)
    return True


def _wrap_function(function, entries):
    indices = {hook.argument: _positional_index(function, hook.argument)
               for _, hook in entries if hook.argument}

    @functools.wraps(function)
    def with_legacy_warning(*args, **kwargs):
        caller = sys._getframe(1)  # pylint: disable=protected-access
        for record, hook in entries:
            if _used(function, hook, indices.get(hook.argument), args, kwargs):
                deprecation.warn_direct_use(record, caller)
        return function(*args, **kwargs)

    setattr(with_legacy_warning, _HOOKS_ATTRIBUTE,
            tuple(record.rule for record, _ in entries))
    return with_legacy_warning


def _wrap_attribute(original, name, entries):
    """A property that warns on read; a plain instance attribute keeps its value
    in the instance ``__dict__`` (so removing the property leaves it readable)."""
    if isinstance(original, property):
        fget, fset, fdel, doc = original.fget, original.fset, original.fdel, original.__doc__
    else:
        def fget(self):
            try:
                return vars(self)[name]
            except KeyError:
                raise AttributeError(
                    f"{type(self).__name__!r} object has no attribute {name!r}") from None

        def fset(self, value):
            vars(self)[name] = value

        fdel, doc = None, None

    def read_with_legacy_warning(self):
        caller = sys._getframe(1)  # pylint: disable=protected-access
        for record, _ in entries:
            deprecation.warn_direct_use(record, caller)
        return fget(self)

    setattr(read_with_legacy_warning, _HOOKS_ATTRIBUTE,
            tuple(record.rule for record, _ in entries))
    read_with_legacy_warning.__wrapped__ = fget
    return property(read_with_legacy_warning, fset, fdel, doc)


def _module_with_own_class(module):
    """``module``'s class, made its own so a property on it sees reads of a
    module attribute (a module consults its type for data descriptors first;
    the value stays in the module ``__dict__``, where the property reads it)."""
    klass = type(module)
    if getattr(klass, "__tpu_compat_module__", None) != module.__name__:
        klass = type("ModuleWithReadHooks", (klass,),
                     {"__tpu_compat_module__": module.__name__, "__slots__": ()})
        module.__class__ = klass
    return klass


def _instrumented(owner, name, entries):
    """The replacement for ``owner.name`` that warns per ``entries``."""
    if isinstance(owner, type):
        original = vars(owner).get(name)
    else:
        original = getattr(owner, name)
    if hooked_rules(original):
        raise RuntimeError(f"{getattr(owner, '__name__', owner)}.{name} is already "
                           f"instrumented")
    kinds = {hook.kind for _, hook in entries}
    if legacy_api.HOOK_ATTRIBUTE in kinds:
        if kinds != {legacy_api.HOOK_ATTRIBUTE}:
            raise ValueError(f"{name}: an attribute target takes only attribute hooks")
        return _wrap_attribute(original, name, entries)
    if isinstance(original, staticmethod):
        # A class's __new__ (a namedtuple-based TPUConfig): staying a
        # staticmethod keeps super().__new__(cls, ...) in subclasses working.
        return staticmethod(_wrap_function(original.__func__, entries))
    if not callable(original):
        raise TypeError(f"hook target {name} is not callable")
    return _wrap_function(original, entries)


def hooked_rules(member):
    """The rules an instrumented member (function or property) checks; () if none."""
    if isinstance(member, property):
        member = member.fget
    elif isinstance(member, staticmethod):
        member = member.__func__
    return getattr(member, _HOOKS_ATTRIBUTE, ())


_lock = threading.Lock()
_instrumented_modules = set()


def instrument_module(module_name):
    """Instruments, for good, the hook targets defined in tpu_compat's ``module_name``."""
    if not module_name.startswith("tpu_compat."):
        raise ValueError(f"instrument_module is for tpu_compat's own modules, "
                         f"got {module_name!r}; use instrument_library")
    with _lock:
        if module_name in _instrumented_modules:
            return
        module = sys.modules[module_name]
        for path, entries in _TARGETS.get(module_name, {}).items():
            owner, name = _owner_and_name(module, path, entries)
            replacement = _instrumented(owner, name, entries)
            if isinstance(owner, types.ModuleType) and isinstance(replacement, property):
                # reads() of a module attribute (tf.estimator.ModeKeys): the
                # property goes on the module's own class.
                owner = _module_with_own_class(owner)
            setattr(owner, name, replacement)
        _instrumented_modules.add(module_name)


def instrument_library(state, package):
    """Instruments the hook targets in ``package`` (``tensorflow``, ``tf_keras``
    or ``keras``) through ``state``, the installation's ``patching.changes.Changes``, which undoes it.
    """
    for module_name, members in _TARGETS.items():
        if module_name.partition(".")[0] != package:
            continue
        module = importlib.import_module(module_name)
        for path, entries in members.items():
            owner, name = _owner_and_name(module, path, entries)
            state.add(owner, name, _instrumented(owner, name, entries))
