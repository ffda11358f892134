"""How a module named TensorFlow: import aliases resolved to dotted paths.

``import tensorflow.compat.v1 as tf`` makes ``tf.distribute.experimental.
TPUStrategy`` mean ``tensorflow.compat.v1.distribute.experimental.TPUStrategy``
(the TF 1.x class), while the same text under ``import tensorflow as tf``
names the TF 2.0-2.3 class. The scanner resolves every name through the
imports in scope before comparing it with the table of legacy APIs, whose
``symbols`` are written with the conventional ``tf.`` prefix.
"""

import ast
import dataclasses
import re
from typing import Iterable, Mapping, Optional, Sequence, Tuple

__all__ = [
    "Imported",
    "canonical",
    "TENSORFLOW",
    "equivalent_paths",
    "from_import_bindings",
    "import_bindings",
    "module_path",
    "spell",
    "table_name",
]

TENSORFLOW = "tensorflow"
_TF_PREFIX = "tf"
# In TensorFlow 2, tf.compat.v2.X is X: either spelling names the same object.
_V2_COMPAT = "tensorflow.compat.v2"


@dataclasses.dataclass(frozen=True, eq=False)
class Imported:
    """A name bound to a module or object by an import.

    ``implicit`` marks the conventional ``tf`` used without an import (doc
    snippets, notebook cells split from their imports). ``legacy`` is the
    scan finding made where this binding names a legacy symbol, so that its
    uses can be followed (upgrade rewrites a legacy import only when every
    use is a constructor call). ``others`` are the other paths the same name
    may be bound to (``try: import tensorflow.compat.v1 as tf`` / ``except
    ImportError: import tensorflow as tf``, or ``tf = tf.compat.v1``): scan
    still reports what any of them names, and upgrade rewrites none of it,
    since a rewrite valid for one module is not for the other.
    """
    path: str
    implicit: bool = False
    legacy: object = None
    others: Tuple[str, ...] = ()

    def child(self, attribute, legacy=None):
        path = canonical(f"{self.path}.{attribute}")
        others = dict.fromkeys(canonical(f"{other}.{attribute}") for other in self.others)
        others.pop(path, None)  # tf.compat.v1.contrib.X is tf.contrib.X
        return Imported(path, self.implicit, legacy, tuple(others))

    @property
    def paths(self):
        """Every path this binding may stand for, ``path`` first."""
        return (self.path, *self.others)


def import_bindings(node: ast.Import) -> Iterable[Tuple[str, str]]:
    """``(bound name, dotted path)`` for each name an ``import`` binds."""
    for alias in node.names:
        if alias.asname:
            yield alias.asname, alias.name
        else:
            # `import a.b.c` binds `a` to the top-level package.
            top = alias.name.split(".", 1)[0]
            yield top, top


def from_import_bindings(node: ast.ImportFrom) -> Iterable[Tuple[str, str, ast.alias]]:
    """``(bound name, dotted path, alias node)`` for a ``from ... import``.

    Relative imports keep their leading dots, so they never resolve to
    TensorFlow; star imports bind nothing we can follow.
    """
    module = "." * (node.level or 0) + (node.module or "")
    for alias in node.names:
        if alias.name == "*":
            continue
        path = f"{module}.{alias.name}" if module and not module.endswith(".") else (
            module + alias.name)
        yield alias.asname or alias.name, path, alias


_V1_CONTRIB = "tensorflow.compat.v1.contrib"
_NESTED_COMPAT = re.compile(r"^tensorflow\.compat\.v[12]\.compat\.(v[12])(?=\.|$)")


def canonical(path: str) -> str:
    """``path`` without a redundant compat hop.

    ``tf.compat.v2`` and ``tf.compat.v1`` each carry a ``compat`` module, so
    under ``import tensorflow.compat.v2 as tf`` the text
    ``tf.compat.v1.distribute`` means ``tensorflow.compat.v1.distribute``.
    """
    if path == _V1_CONTRIB or path.startswith(_V1_CONTRIB + "."):
        # tf.contrib hangs off TF 1.x's tensorflow, which compat.v1 mirrors:
        # under `import tensorflow.compat.v1 as tf`, tf.contrib.X is tf.contrib.X.
        path = "tensorflow.contrib" + path[len(_V1_CONTRIB):]
    while True:
        shorter = _NESTED_COMPAT.sub(r"tensorflow.compat.\1", path)
        if shorter == path:
            return path
        path = shorter


def table_name(path: str) -> str:
    """``tensorflow.x.y`` written as the table writes it: ``tf.x.y``."""
    if path == TENSORFLOW:
        return _TF_PREFIX
    if path.startswith(TENSORFLOW + "."):
        return _TF_PREFIX + path[len(TENSORFLOW):]
    return path


def module_path(name: str) -> str:
    """The inverse of :func:`table_name`: ``tf.x`` -> ``tensorflow.x``."""
    if name == _TF_PREFIX:
        return TENSORFLOW
    if name.startswith(_TF_PREFIX + "."):
        return TENSORFLOW + name[len(_TF_PREFIX):]
    return name


def equivalent_paths(path: str) -> Tuple[str, ...]:
    """``path`` and its TF2 twin under (or out of) ``tensorflow.compat.v2``."""
    if path.startswith(_V2_COMPAT + "."):
        return path, TENSORFLOW + path[len(_V2_COMPAT):]
    if path.startswith(TENSORFLOW + ".") and not path.startswith(TENSORFLOW + ".compat."):
        return path, _V2_COMPAT + path[len(TENSORFLOW):]
    return (path,)


# TF 2 names that tensorflow.compat.v1 carries as the very same object (checked
# against TF 2.21 by tests/test_migrate_table_walk.py): a program that binds
# `tf` to compat.v1 can spell them through it. Other TF 2 names (tf.nest,
# tf.distribute.TPUStrategy, ...) are absent from or differ in compat.v1.
V1_MIRRORED = ("data.AUTOTUNE", "data.experimental", "distribute.cluster_resolver",
               "tpu.experimental", "train.checkpoints_iterator", "train.list_variables",
               "train.load_checkpoint", "keras.optimizers.schedules")
_V1_COMPAT = "tensorflow.compat.v1"


def _v1_mirror(path):
    """``path``'s twin under tensorflow.compat.v1 when V1_MIRRORED says it is one."""
    if not path.startswith(TENSORFLOW + ".") or path.startswith(TENSORFLOW + ".compat."):
        return None
    rest = path[len(TENSORFLOW) + 1:]
    if any(rest == name or rest.startswith(name + ".") for name in V1_MIRRORED):
        return f"{_V1_COMPAT}.{rest}"
    return None


def spell(target: str, visible: Mapping[str, str],
          prefer: Sequence[str] = (), through_v2: bool = False) -> Optional[str]:
    """How code can name the dotted path ``target`` through names in scope.

    ``visible`` maps names in scope to the module paths they are bound to
    (e.g. ``{"tf": "tensorflow"}``); the spelling is always such a name and
    at least one attribute. Names in ``prefer`` are tried first (the alias the
    code already used at that spot), then the shortest spelling.
    Returns None when no visible name leads there: callers must then leave
    the code alone rather than add an import behind the user's back.
    ``through_v2``: a TF 2 name may also be spelled through a compat.v1 alias
    as ``tf.compat.v2.X`` (tensorflow.compat.v1.compat.v2 is the TF 2 API in
    TF 1.15 and 2.x alike), when nothing shorter names it.
    """
    candidates = []
    variants = list(equivalent_paths(target))
    mirror = _v1_mirror(target)
    if mirror is not None:
        variants.append(mirror)
    if through_v2 and target.startswith(TENSORFLOW + ".") and not target.startswith(
            TENSORFLOW + ".compat."):
        variants.append(f"{_V1_COMPAT}.compat.v2{target[len(TENSORFLOW):]}")
    for variant in variants:
        for name, path in visible.items():
            # Only through modules: a bare name bound to the target itself may
            # be one that this very upgrade just re-imported, and using it
            # would make a second run change the file again.
            if variant.startswith(path + "."):
                spelled = name + variant[len(path):]
                candidates.append((name not in prefer, spelled.count("."), spelled))
    if not candidates:
        return None
    return min(candidates)[2]
