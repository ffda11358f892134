"""The schema of the legacy-API table: what a record is, and how its hook and
rewrite are written.

A :class:`LegacyAPI` record names one legacy API, the eras that had it, what
replaces it, its run-time :class:`Hook` (built with :func:`calls`,
:func:`passes`, :func:`omits`, :func:`reads`, :func:`imports` or
:func:`not_observable`) and, when ``tpu-compat upgrade`` can fix a use, its
:class:`Rewrite` (built with :func:`rename_method`, :func:`add_keyword`,
:func:`replace_call`, :func:`replace_symbol` or :func:`rename_keyword`). The
records themselves are in :mod:`tpu_compat.legacy.records`; users and the
rest of the package reach both through :mod:`tpu_compat.legacy_api`.

This module imports nothing heavy; :func:`present_in_installed` imports
TensorFlow only when called.
"""

import dataclasses
import importlib
from typing import Optional, Tuple

__all__ = ["ERAS", "KIND_SYMBOL", "KIND_METHOD", "KIND_ARGUMENT", "KIND_ATTRIBUTE",
           "HOOK_CALL", "HOOK_ARGUMENT", "HOOK_ARGUMENT_OMITTED", "HOOK_ATTRIBUTE",
           "HOOK_IMPORT", "HOOK_NOT_OBSERVABLE", "HOOK_KINDS", "Hook", "calls", "passes",
           "omits", "reads", "imports", "not_observable",
           "REWRITE_RENAME_METHOD", "REWRITE_ADD_KEYWORD", "REWRITE_REPLACE_CALL",
           "REWRITE_REPLACE_SYMBOL", "REWRITE_RENAME_KEYWORD", "REWRITE_REPLACE_MODULE",
           "REWRITE_DROP_IMPORT", "REWRITE_TF2_STRATEGY", "REWRITE_CALL_TO_METHOD",
           "REWRITE_GRAPH_LOOP", "drop_import", "tf2_strategy", "call_to_method", "graph_loop",
           "REWRITE_VERSION_COMPARE", "version_compare", "REWRITE_KERAS_TPU_SCOPE",
           "keras_tpu_scope",
           "REWRITE_KINDS", "Rewrite", "rename_method", "add_keyword", "replace_call",
           "replace_symbol", "rename_keyword", "replace_module", "LegacyAPI", "present_in_installed"]

# TensorFlow releases whose TPU programs tpu_compat runs. TF 1.13 had the
# TPU strategy only in tf.contrib (programs reached tf.distribute.Strategy's
# methods through it); TF 1.14 and 1.15 the compat.v1 TPUStrategy with
# steps_per_run; 2.0-2.3 the experimental TPUStrategy and the Strategy methods
# TF 2.4 removed. A record whose eras start at 1.15 is the TF 1.15 surface;
# many of those APIs were already in 1.13/1.14.
ERAS = ("1.13", "1.14", "1.15", "2.0", "2.1", "2.2", "2.3")

# Where a legacy API lives.
KIND_SYMBOL = "symbol"        # a class or function reached by a dotted name
KIND_METHOD = "method"        # a method called on a strategy (or its iterator)
KIND_ARGUMENT = "argument"    # a keyword argument of a constructor or method
KIND_ATTRIBUTE = "attribute"  # an attribute read on a strategy or its extended

# How a use is seen at run time (Hook.kind).
HOOK_CALL = "call"                  # a call of the target (method, function, __init__)
HOOK_ARGUMENT = "argument"          # the target called with `argument` (keyword or position)
HOOK_ARGUMENT_OMITTED = "omitted"   # the target called without `argument`
HOOK_ATTRIBUTE = "attribute"        # a read of the target attribute (property or plain)
HOOK_IMPORT = "import"              # the program's import statement of a target module
HOOK_NOT_OBSERVABLE = "not observable"
HOOK_KINDS = (HOOK_CALL, HOOK_ARGUMENT, HOOK_ARGUMENT_OMITTED, HOOK_ATTRIBUTE,
              HOOK_IMPORT, HOOK_NOT_OBSERVABLE)


@dataclasses.dataclass(frozen=True)
class Hook:
    """Where a use of a legacy API is seen at run time.

    Attributes:
        kind: one of the HOOK_* constants.
        targets: the code points observed, each ``"module:Class.member"`` (or
            ``"module:function"``); for HOOK_IMPORT, dotted module names. Targets in ``tpu_compat`` modules are
            instrumented when the module is imported; targets in TensorFlow,
            tf_keras or Keras by ``tpu_compat.install()`` (and restored by
            ``uninstall()``). A member must be defined in that class itself.
        argument: for HOOK_ARGUMENT / HOOK_ARGUMENT_OMITTED, the parameter
            name, matched by keyword or by position through the target's
            signature (or the ``__tpu_compat_arguments__`` reader a target
            with ``*args`` declares, e.g. ``strategy_by_era``'s TPUStrategy).
        reason: for HOOK_NOT_OBSERVABLE, why no run-time code point sees it.
    """
    kind: str
    targets: Tuple[str, ...] = ()
    argument: Optional[str] = None
    reason: str = ""

    def __post_init__(self):
        if self.kind not in HOOK_KINDS:
            raise ValueError(f"Hook kind {self.kind!r} is not valid; allowed values: "
                             f"{', '.join(HOOK_KINDS)}")
        if self.kind == HOOK_NOT_OBSERVABLE:
            if not self.reason or self.targets:
                raise ValueError("a not-observable Hook needs a reason and no targets")
            return
        if not self.targets:
            raise ValueError(f"a {self.kind!r} Hook needs at least one target")
        for target in self.targets:
            module, sep, path = target.partition(":")
            if self.kind == HOOK_IMPORT:
                if sep or not all(part.isidentifier() for part in target.split(".")):
                    raise ValueError(f"import Hook target {target!r} must be a dotted "
                                     f"module name")
            elif not (module and sep and path):
                raise ValueError(f"Hook target {target!r} must read 'module:Class.member'")
        needs_argument = self.kind in (HOOK_ARGUMENT, HOOK_ARGUMENT_OMITTED)
        if needs_argument != bool(self.argument):
            raise ValueError(f"a {self.kind!r} Hook {'needs' if needs_argument else 'takes no'} "
                             f"argument name")

    @property
    def observable(self):
        return self.kind != HOOK_NOT_OBSERVABLE

    def describe(self):
        """How the hook sees a use, for the documentation table."""
        if self.kind == HOOK_CALL:
            return "on call"
        if self.kind == HOOK_ARGUMENT:
            return f"when `{self.argument}` is passed"
        if self.kind == HOOK_ARGUMENT_OMITTED:
            return f"when `{self.argument}` is omitted"
        if self.kind == HOOK_ATTRIBUTE:
            return "on read"
        if self.kind == HOOK_IMPORT:
            return "on import"
        return f"never: {self.reason}"


def calls(*targets):
    """A hook that warns when any of ``targets`` is called."""
    return Hook(HOOK_CALL, targets)


def passes(argument, *targets):
    """A hook that warns when ``argument`` is given to any of ``targets``."""
    return Hook(HOOK_ARGUMENT, targets, argument=argument)


def omits(argument, *targets):
    """A hook that warns when any of ``targets`` is called without ``argument``."""
    return Hook(HOOK_ARGUMENT_OMITTED, targets, argument=argument)


def reads(*targets):
    """A hook that warns when any of the attributes ``targets`` is read."""
    return Hook(HOOK_ATTRIBUTE, targets)


def imports(*modules):
    """A hook that warns when the program's code imports any of ``modules``
    (or a module below one). The program's import statements are seen by the
    import routing that serves them (``keras/imports.py``), which asks
    :func:`tpu_compat.runtime.hooks.imported_records` which records to warn."""
    return Hook(HOOK_IMPORT, modules)


def not_observable(reason):
    """The hook of an API no run-time code point can see; ``reason`` says why."""
    return Hook(HOOK_NOT_OBSERVABLE, reason=reason)


# How `tpu-compat upgrade` rewrites a use: each kind is one module of
# tpu_compat/migrate/rewrites/ (its plan and its edit), registered under this name.
REWRITE_RENAME_METHOD = "rename_method"    # strategy.old(...) -> strategy.<to>(...)
REWRITE_ADD_KEYWORD = "add_keyword"        # f(a, b) -> f(a, b, <to>=<value>)
REWRITE_REPLACE_CALL = "replace_call"      # strategy.old(x) -> <to>(x)
REWRITE_REPLACE_SYMBOL = "replace_symbol"  # the legacy dotted name -> <to>
REWRITE_RENAME_KEYWORD = "rename_keyword"  # f(old=x) -> f(<to>=x)
REWRITE_REPLACE_MODULE = "replace_module"  # from <legacy package>.m import x -> from <to>.m import x
# Issue 35's TPUStrategy-era rewrites (kept together, apart from the others):
REWRITE_DROP_IMPORT = "drop_import"        # an import whose every use was rewritten goes
REWRITE_TF2_STRATEGY = "tf2_strategy"      # the TF 1.15 class built for Keras -> <to>(resolver)
REWRITE_CALL_TO_METHOD = "call_to_method"  # f(obj, x) -> obj.<to>(x, <value>)
REWRITE_GRAPH_LOOP = "graph_loop"          # TF 1.15's iterator loop -> its TF 2 graph-mode form
REWRITE_VERSION_COMPARE = "version_compare"  # LooseVersion(tf.__version__) < '1.14' -> packaging's
REWRITE_KERAS_TPU_SCOPE = "keras_tpu_scope"  # keras_to_tpu_model -> <to>(resolver).scope() around the model
REWRITE_KINDS = (REWRITE_RENAME_METHOD, REWRITE_ADD_KEYWORD, REWRITE_REPLACE_CALL,
                 REWRITE_REPLACE_SYMBOL, REWRITE_RENAME_KEYWORD, REWRITE_REPLACE_MODULE,
                 REWRITE_DROP_IMPORT, REWRITE_TF2_STRATEGY, REWRITE_CALL_TO_METHOD,
                 REWRITE_GRAPH_LOOP, REWRITE_VERSION_COMPARE, REWRITE_KERAS_TPU_SCOPE)


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """A record's rewrite, as data: the kind and the names it writes.

    ``to`` is a method or keyword name, or a dotted path written the way the
    table writes paths (``tf.data.Dataset.from_tensor_slices``); ``value`` the
    source text of an added keyword's value; ``keep_argument`` the legacy
    method's parameter whose argument a replaced call keeps (so that a call
    passing it by keyword can be rewritten too).
    """
    kind: str
    to: str
    value: str = ""
    keep_argument: str = ""

    def __post_init__(self):
        if self.kind not in REWRITE_KINDS:
            raise ValueError(f"Rewrite kind {self.kind!r} is not one of {REWRITE_KINDS}")


def rename_method(to):
    return Rewrite(REWRITE_RENAME_METHOD, to)


def add_keyword(keyword, value):
    return Rewrite(REWRITE_ADD_KEYWORD, keyword, value=value)


def replace_call(to, keep_argument):
    return Rewrite(REWRITE_REPLACE_CALL, to, keep_argument=keep_argument)


def replace_symbol(to):
    return Rewrite(REWRITE_REPLACE_SYMBOL, to)


def rename_keyword(to):
    return Rewrite(REWRITE_RENAME_KEYWORD, to)


def replace_module(to, submodules):
    """Import statements of the record's import-hook package (or of one of
    ``submodules``, a space-separated list of its public modules) name ``to``."""
    return Rewrite(REWRITE_REPLACE_MODULE, to, value=submodules)


def drop_import():
    """An import of the record's import-hook package goes once every use of the
    name it binds is rewritten to a TF 2 name (nothing is left that needs it)."""
    return Rewrite(REWRITE_DROP_IMPORT, "")


def tf2_strategy(to):
    """The TF 1.15 strategy class, built for Keras only (its object is used for
    ``scope()`` and ``num_replicas_in_sync``), becomes ``to``; ``steps_per_run``
    goes (Keras' results do not depend on it)."""
    return Rewrite(REWRITE_TF2_STRATEGY, to)


def call_to_method(to, value):
    """``f(obj, x)`` -> ``obj.<to>(x, <value>)``: a function of an object
    becomes the object's method (``value``: keyword arguments added)."""
    return Rewrite(REWRITE_CALL_TO_METHOD, to, value=value)


def graph_loop(to):
    """A piece of TF 1.15's graph-mode input loop (``make_dataset_iterator``,
    ``experimental_run``, ``initialize()``) becomes ``to``, its TF 2.21 graph-mode
    form, in a module that runs a graph."""
    return Rewrite(REWRITE_GRAPH_LOOP, to)


def keras_tpu_scope(to):
    """TF 1.13's ``tpu_model = keras_to_tpu_model(model, strategy=TPUDistributionStrategy(r))``:
    the statements that build (and compile) ``model`` go into ``<to>(r).scope()`` and
    ``tpu_model`` is the model itself."""
    return Rewrite(REWRITE_KERAS_TPU_SCOPE, to)


def version_compare(to):
    """``LooseVersion(tf.__version__) < '1.14'`` (distutils) -> ``<to>(tf.__version__) <
    <to>('1.14')`` (``to``: packaging's parse), where both order every TF the
    migrated program can run on the same way against the literal."""
    return Rewrite(REWRITE_VERSION_COMPARE, to)


@dataclasses.dataclass(frozen=True)
class LegacyAPI:
    """One legacy API.

    Attributes:
        rule: stable rule id (``TPC###``) shared by warnings, scan and upgrade.
        api: how users know it, e.g. ``Strategy.experimental_run_v2``.
        kind: one of the KIND_* constants.
        name: the bare name matched in source: a method, argument or attribute
            name, or the final component of a symbol.
        eras: the TF eras whose code used it.
        removed_in: the first TF release without it (None: still present, only
            deprecated or changed).
        replacement: the modern spelling, as text for messages and docs.
        rewrite: how ``tpu-compat upgrade`` rewrites a use (a :class:`Rewrite`),
            or None when a person must change it (upgrade adds a TODO).
        note: one sentence on why, or what the rewrite cannot know.
        symbols: for KIND_SYMBOL, the dotted TF paths that name it; for
            KIND_ARGUMENT, the callables (symbol paths or ``.method``) taking it.
        probe: ``(module, attribute path)`` checked by :func:`present_in_installed`;
            None when presence is not a question of one attribute.
        hook: the :class:`Hook` through which a use warns at run time
            (required).
    """
    rule: str
    api: str
    kind: str
    name: str
    eras: Tuple[str, ...]
    removed_in: Optional[str]
    replacement: str
    rewrite: Optional[Rewrite] = None
    note: str = ""
    symbols: Tuple[str, ...] = ()
    probe: Optional[Tuple[str, str]] = None
    hook: Optional[Hook] = None

    def __post_init__(self):
        if not isinstance(self.hook, Hook):
            raise ValueError(
                f"legacy-API record {self.rule} has no run-time hook: pass hook=calls(...), "
                f"passes(...), omits(...), reads(...) or not_observable(reason)")
        unknown = [era for era in self.eras if era not in ERAS]
        if not self.eras or unknown:
            raise ValueError(f"legacy-API record {self.rule}: eras {self.eras!r} must be a "
                             f"non-empty tuple of {', '.join(ERAS)}")
        if self.removed_in is not None and self.removed_in in self.eras:
            raise ValueError(f"legacy-API record {self.rule}: removed in TF {self.removed_in} "
                             f"cannot also be an API of TF {self.removed_in}")

    @property
    def autofix(self):
        """Whether ``tpu-compat upgrade`` can rewrite a use (it has a ``rewrite``)."""
        return self.rewrite is not None

    def era_text(self):
        """A short era range such as ``TF 1.15-2.3``."""
        if len(self.eras) == 1:
            return f"TF {self.eras[0]}"
        return f"TF {self.eras[0]}-{self.eras[-1]}"

    def warning_message(self):
        """The runtime warning text for a use of this API."""
        status = (f"removed in TF {self.removed_in}" if self.removed_in
                            else "deprecated")
        return (f"{self.api} is a {self.era_text()} API ({status}); "
                        f"use {self.replacement} instead. [{self.rule}]")


def present_in_installed(record):
    """Whether the installed TensorFlow still has ``record``'s API natively.

    Returns True/False, or None when the question has no single-attribute
    answer (``probe`` is None). Imports TensorFlow.
    """
    if record.probe is None:
        return None
    module_name, path = record.probe
    try:
        obj = importlib.import_module(module_name)
    except ImportError:
        return False
    for part in path.split("."):
        # Look through the class dicts only: our own install() adds methods to
        # TensorFlow classes, and those must not count as "TF still has it".
        if isinstance(obj, type):
            found = None
            for klass in obj.__mro__:
                if part in vars(klass):
                    found = vars(klass)[part]
                    break
            if found is None or getattr(found, "__tpu_compat_added__", False):
                return False
            obj = found
        else:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
    return True
