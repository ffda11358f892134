"""A patch row's shape: its payload (what it installs, and how) and its targets
(what it replaces), the one installer that applies rows, and the order check.

A :class:`Patch` is one change ``install()`` makes (the rows of
:data:`tpu_compat.patching.registry.PATCHES`, and of Keras's inner tables,
:data:`tpu_compat.keras.routes.TF_KERAS_PATCHES`). A row is data:

* its **payload** says what it installs, by name, and how:

  - :class:`Wrap`: ``owner.attribute`` replaced (or added to a class) by
    ``wrapper(original, *args)``; the row's target is that attribute;
  - :class:`Call`: a function of tpu_compat that makes the row's changes itself
    (a table of them, a condition first), given the parts of the installation it
    names; it records each change in the installation's ``changes``, or returns
    the callable that reverts it.

  :meth:`Patch.apply`, the one installer, resolves the names (importing what
  they name only then: a table imports neither TensorFlow nor its payloads) and
  applies the payload into the installation's
  :class:`~tpu_compat.patching.changes.Changes`; ``uninstall()`` undoes every
  row's changes last first (the one undo rule).
* its **targets** name what it replaces, so two rows on one thing cannot go
  unnoticed. :func:`check_order` refuses a table in which

  - a row comes before a row it declares it must follow (``after``), or
  - two rows replace one target (or one replaces a class and the other one of
    its members) and neither says it comes ``after`` the other: the one applied
    later wraps the other, and which wraps which changes what a program computes
    (the "empty batches" and "numerics" rows both wrap ``gen_nn_ops.conv2d``).

Imports no TensorFlow and no tpu_compat module: ``import tpu_compat`` loads it.
"""

import dataclasses
import importlib
from typing import Any, Mapping, Optional, Tuple

__all__ = ["Call", "Installation", "Patch", "Ref", "Wrap", "check_order", "overlap",
           "resolve", "target_name"]


def resolve(name):
    """``"package.module"`` -> that module; ``"package.module:Class.attribute"`` ->
    that object (the module imported first)."""
    module, _, path = name.partition(":")
    found = importlib.import_module(module)
    for part in filter(None, path.split(".")):
        found = getattr(found, part)
    return found


@dataclasses.dataclass(frozen=True)
class Installation:
    """What a payload is applied into: the record of the installation's changes
    (undone last first), its import router, and the install() call's warning policy."""

    changes: Any
    router: Any = None
    policy: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Ref:
    """A :class:`Call` argument that is an object named ``"module:attribute"``,
    resolved when the row is applied (a literal string stays a string)."""

    name: str


_PARTS = ("changes", "router", "policy")  # Installation's fields a Call may get
_UNDO = ("changes", "returned")


@dataclasses.dataclass(frozen=True)
class Call:
    """Payload: ``function(*parts of the installation named by gets, *args)``.

    ``undo="changes"``: the function records each change in ``changes``;
    ``undo="returned"``: it returns the callable that reverts what it did (None:
    it did nothing), and the installer records that.
    """

    function: str  # "tpu_compat.runtime.devices:route_strategy_devices"
    gets: Tuple[str, ...] = ("changes",)
    args: Tuple[Any, ...] = ()
    undo: str = "changes"

    def __post_init__(self):
        if ":" not in self.function or not set(self.gets) <= set(_PARTS) or \
                self.undo not in _UNDO:
            raise ValueError(f"Call({self.function!r}): function is \"module:name\", gets "
                             f"names parts of {_PARTS} (got {self.gets!r}), undo is one of "
                             f"{_UNDO} (got {self.undo!r})")

    def apply(self, installation):
        args = [resolve(arg.name) if isinstance(arg, Ref) else arg for arg in self.args]
        made = resolve(self.function)(*(getattr(installation, part) for part in self.gets),
                                      *args)
        if self.undo == "returned" and made is not None:
            installation.changes.on_undo(made)


_HOW = ("replace", "add")  # Changes.replace (put back on undo), Changes.add (deleted on undo)


@dataclasses.dataclass(frozen=True)
class Wrap:
    """Payload: ``owner.attribute`` becomes ``wrapper(original, *args)``.

    ``owner`` is ``"module"`` or ``"module:Class"``; ``args`` name modules (or
    ``"module:attribute"`` objects) the wrapper gets after the original.
    ``how="add"`` sets the attribute on the class itself (Changes.add: deleted
    on undo, so an inherited one shows through again).
    """

    owner: str
    attribute: str
    wrapper: str  # "tpu_compat.keras.compile:tf_keras_compile"
    args: Tuple[str, ...] = ()
    how: str = "replace"

    def __post_init__(self):
        if self.how not in _HOW or ":" not in self.wrapper:
            raise ValueError(f"Wrap({self.owner!r}, {self.attribute!r}): how is one of {_HOW} "
                             f"(got {self.how!r}), wrapper is \"module:name\" "
                             f"(got {self.wrapper!r})")

    @property
    def target(self):
        module, _, qualname = self.owner.partition(":")
        return f"{module_name(module)}:{qualname + '.' if qualname else ''}{self.attribute}"

    def apply(self, installation):
        owner = resolve(self.owner)
        new = resolve(self.wrapper)(getattr(owner, self.attribute),
                                    *(resolve(arg) for arg in self.args))
        getattr(installation.changes, self.how)(owner, self.attribute, new)


@dataclasses.dataclass(frozen=True)
class Patch:
    """One row of a patch table."""

    name: str
    payload: Any  # a Call or a Wrap: what the row installs, and how
    changes: str  # what it changes, for the next engineer
    after: Mapping[str, str] = dataclasses.field(default_factory=dict)  # row -> why
    option: Optional[str] = None  # the install() keyword that enables it; None: always
    each_call: bool = False  # applied by every install() call, stacking
    # What it replaces, each named as target_name() names it: "module:attribute"
    # or "module:Class.attribute" ("gen_nn_ops:conv2d", "tf.config:list_logical_devices",
    # "sys.modules:tensorflow.estimator", "builtins:__import__"); a bare module
    # ("tf_keras") claims everything in it. Every row names at least one; a Wrap
    # row's is its attribute, unless the row names them.
    targets: Tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.payload, (Call, Wrap)):
            raise ValueError(f"patch {self.name!r}: payload must be a Call or a Wrap, "
                             f"got {self.payload!r}")
        if self.targets == () and isinstance(self.payload, Wrap):
            object.__setattr__(self, "targets", (self.payload.target,))
        if isinstance(self.targets, str) or not self.targets or not all(
                isinstance(target, str) and target for target in self.targets):
            raise ValueError(f"patch {self.name!r}: targets must be a non-empty tuple of "
                             f"names of what it replaces (\"module:attribute\"), got "
                             f"{self.targets!r}")

    @property
    def gets(self):
        """The parts of the installation the payload uses."""
        return self.payload.gets if isinstance(self.payload, Call) else ("changes",)

    def apply(self, installation):
        """The one installer: applies the payload into ``installation`` (an
        :class:`Installation`); its changes are undone by ``installation.changes``."""
        self.payload.apply(installation)


def _api_module(name):
    """``tensorflow._api.v2.compat.v1.config`` -> ``tf.config``: TensorFlow's
    public API exists as several module objects, one name for all of them."""
    rest = name.removeprefix("tensorflow").removeprefix("._api.v2")
    while rest.startswith((".compat.v1", ".compat.v2")):
        rest = rest[len(".compat.v1"):]
    return "tf" + rest


def module_name(name):
    """How a target names the module called ``name`` in ``sys.modules``."""
    if name.startswith("tensorflow.python."):
        return name.rpartition(".")[2]  # as TensorFlow's own code names it: gen_nn_ops
    if name == "tensorflow" or name.startswith(("tensorflow._api.", "tensorflow.compat.")):
        return _api_module(name)
    if name.startswith("tensorflow."):  # tensorflow.distribute.experimental, a real package
        return "tf" + name.removeprefix("tensorflow")
    for api in ("tf_keras.api._v1.keras", "tf_keras.api._v2.keras"):
        if name == api or name.startswith(api + "."):
            return "tf_keras" + name.removeprefix(api)
    return name


def target_name(owner, attribute):
    """The target that replacing ``owner.attribute`` changes (a module or a class)."""
    if isinstance(owner, type):
        return f"{module_name(owner.__module__)}:{owner.__qualname__}.{attribute}"
    return f"{module_name(owner.__name__)}:{attribute}"


def _covers(outer, inner):
    return inner == outer or inner.startswith((outer + ".", outer + ":"))


def overlap(one, other):
    """Whether targets ``one`` and ``other`` name one thing, or one holds the other
    (``session:BaseSession`` holds ``session:BaseSession.__init__``)."""
    return _covers(one, other) or _covers(other, one)


def check_order(patches):
    """Raises ValueError naming the row and the reason when the declared order is
    broken, or naming both rows and the target when two rows replace one target
    and neither is declared ``after`` the other."""
    names = {row.name for row in patches}
    seen = []
    for row in patches:
        for earlier, why in row.after.items():
            if earlier not in names:
                raise ValueError(f"patch {row.name!r} must come after {earlier!r}, "
                                 f"which is not a row of the table")
            if earlier not in {done.name for done in seen}:
                raise ValueError(f"patch {row.name!r} must come after {earlier!r}: {why}")
        for done in seen:
            if done.name in row.after:
                continue
            for target in row.targets:
                shared = next((other for other in done.targets if overlap(target, other)),
                              None)
                if shared is not None:
                    shown = target if target == shared else f"{shared} and {target}"
                    raise ValueError(
                        f"patches {done.name!r} and {row.name!r} both replace {shown}; "
                        f"declare their order ({row.name!r} after={{{done.name!r}: why}})")
        seen.append(row)
