"""The shape of a patch row, the names of what it replaces, and the order check.

A :class:`Patch` is one change ``install()`` makes (the rows of
:data:`tpu_compat.patching.registry.PATCHES`, and of Keras's inner table,
:data:`tpu_compat.keras.routes.TF_KERAS_PATCHES`). Every row names its
*targets*: what it replaces, so two rows on one thing cannot go unnoticed.
:func:`check_order` refuses a table in which

* a row comes before a row it declares it must follow (``after``), or
* two rows replace one target (or one replaces a class and the other one of
  its members) and neither says it comes ``after`` the other: the one applied
  later wraps the other, and which wraps which changes what a program computes
  (the "empty batches" and "numerics" rows both wrap ``gen_nn_ops.conv2d``).

Walking a table applies its rows in order into the installation's
:class:`~tpu_compat.patching.changes.Changes`; ``uninstall()`` undoes them
last first (the one undo rule).

Imports nothing: ``import tpu_compat`` loads it.
"""

import dataclasses
from typing import Any, Callable, Mapping, Optional, Tuple

__all__ = ["Patch", "check_order", "overlap", "target_name"]


@dataclasses.dataclass(frozen=True)
class Patch:
    """One row of a patch table."""

    name: str
    apply: Callable[[Any], None]  # registry rows: the installation; Keras's: the Changes
    changes: str  # what it changes, for the next engineer
    after: Mapping[str, str] = dataclasses.field(default_factory=dict)  # row -> why
    option: Optional[str] = None  # the install() keyword that enables it; None: always
    each_call: bool = False  # applied by every install() call, stacking
    # What it replaces, each named as target_name() names it: "module:attribute"
    # or "module:Class.attribute" ("gen_nn_ops:conv2d", "tf.config:list_logical_devices",
    # "sys.modules:tensorflow.estimator", "builtins:__import__"); a bare module
    # ("tf_keras") claims everything in it. Every row names at least one.
    targets: Tuple[str, ...] = ()

    def __post_init__(self):
        if isinstance(self.targets, str) or not self.targets or not all(
                isinstance(target, str) and target for target in self.targets):
            raise ValueError(f"patch {self.name!r}: targets must be a non-empty tuple of "
                             f"names of what it replaces (\"module:attribute\"), got "
                             f"{self.targets!r}")


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
