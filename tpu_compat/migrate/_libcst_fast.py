"""Whether scan's three fast paths through libcst's private internals may run.

setup.cfg allows ``libcst>=1.1,<2``, and a minor release of libcst may rename
or change what these paths use, none of which libcst promises to keep. So each
path asks here first, by feature (never by version number): the private names
it needs exist and behave as in the libcst releases it was checked with
(1.1.0 and 1.9.0). When a check fails, its caller uses libcst's public API
instead, which gives the same answers, slower:

* :mod:`~tpu_compat.migrate._walk` reads each node type's child order from
  ``CSTNode._visit_and_replace_children`` (the fallback: ``node.visit``);
* :mod:`~tpu_compat.migrate._positions` subclasses
  ``libcst._nodes.internal.CodegenState`` and calls ``Module._codegen``
  (the fallback: ``MetadataWrapper.resolve(PositionProvider)``);
* ``analysis.scopes_of`` runs ``ScopeProvider`` and
  ``ExpressionContextProvider`` by hand and reads their ``_computed`` results
  (the fallback: ``MetadataWrapper.resolve(ScopeProvider)``).

tests/test_migrate_fast_paths.py compares each fast path with libcst, and runs
scan and upgrade over the migrate corpus with all three off.

Each check runs once, on first use; ``ENABLED = False`` turns every fast path
off (the tests do).
"""

import dataclasses
import functools

import libcst as cst
from libcst import metadata

__all__ = ["ENABLED", "children_visit", "codegen_state", "provider_results"]

ENABLED = True

try:
    # The state every code generation uses (libcst 0.3 through 1.9 at least).
    from libcst._nodes.internal import CodegenState
except ImportError:  # renamed or moved: _positions falls back
    CodegenState = None


class _FieldRecorder(cst.CSTVisitor):
    """Notes the fields a node's ``_visit_and_replace_children`` visits, and
    descends no further."""

    def __init__(self):
        super().__init__()
        self.fields = []

    def on_visit(self, node):
        return False

    def on_visit_attribute(self, node, attribute):
        self.fields.append(attribute)


def record_fields(node):
    """The fields of ``node`` holding children, in the order libcst visits them."""
    recorder = _FieldRecorder()
    node._visit_and_replace_children(recorder)  # pylint: disable=protected-access
    return tuple(dict.fromkeys(recorder.fields))


@functools.lru_cache(maxsize=None)
def _children_visit_works():
    if not callable(getattr(cst.CSTNode, "_visit_and_replace_children", None)):
        return False
    try:
        fields = record_fields(cst.parse_expression("f(x)"))
    except Exception:  # pylint: disable=broad-except  # any change of its contract
        return False
    # A Call visits its callee before its arguments (and its parentheses around both).
    return "func" in fields and "args" in fields and fields.index("func") < fields.index("args")


@functools.lru_cache(maxsize=None)
def _codegen_state_works():
    if CodegenState is None or not callable(getattr(cst.Module, "_codegen", None)):
        return False
    if not dataclasses.is_dataclass(CodegenState):
        return False
    fields = {field.name for field in dataclasses.fields(CodegenState)}
    hooks = ("before_codegen", "after_codegen", "record_syntactic_position")
    return ({"default_indent", "default_newline", "tokens"} <= fields
            and all(callable(getattr(CodegenState, hook, None)) for hook in hooks))


@functools.lru_cache(maxsize=None)
def _provider_results_work():
    # scopes_of (and names_resolved) may skip MetadataWrapper's batched pass only
    # while the providers do all their work in visit_Module, storing it in _computed.
    for provider in (metadata.ScopeProvider, metadata.ExpressionContextProvider,
                     metadata.QualifiedNameProvider):
        hooks = {name for klass in provider.__mro__
                 if klass.__module__.startswith("libcst.metadata")
                 for name in vars(klass)
                 if name.startswith(("visit_", "leave_")) or name in ("on_visit", "on_leave")}
        if hooks != {"visit_Module"}:
            return False
        if not isinstance(getattr(provider(), "_computed", None), dict):
            return False
    # analysis.names_resolved hands the results to the wrapper's cache of resolved
    # providers, which it resolves only the rest of.
    wrapper = metadata.MetadataWrapper(cst.Module([]), unsafe_skip_copy=True)
    return isinstance(getattr(wrapper, "_metadata", None), dict)


def children_visit():
    """Whether ``_walk`` may read child order from ``_visit_and_replace_children``."""
    return ENABLED and _children_visit_works()


def codegen_state():
    """Whether ``_positions`` may run code generation with its own ``CodegenState``."""
    return ENABLED and _codegen_state_works()


def provider_results():
    """Whether ``scopes_of`` may run the scope providers by hand and read ``_computed``."""
    return ENABLED and _provider_results_work()
