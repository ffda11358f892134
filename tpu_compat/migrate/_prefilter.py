"""Which files can hold a finding: a cheap test that never says no wrongly.

Scan and upgrade send a file to the libcst analysis only if this says it may
hold a finding; on tf_keras that is 10 files of 586 (see docs/migration.md).
The test must be *conservative*: every finding the analysis
(:mod:`tpu_compat.migrate.analysis`) can report needs something this test
looks for, so a file it rejects has no finding. tests/test_migrate_prefilter.py
checks that over the migrate corpus, tf_keras and sources built to slip past it.

What each kind of finding needs, derived from the table (:mod:`_rules`):

* a method or attribute record: an attribute access with the record's name;
* a symbol record (a legacy class, its import, or a positional
  ``steps_per_run``) and an argument record of a symbol: a dotted path that
  resolves to the symbol, so the symbol's last name written as an attribute
  whose owner may have the path above it, or in an import of that path (paths
  keep the last name written: see ``imports.canonical``);
* an argument record of a method (``.compile``): a call of that method with
  the keyword;
* ``reduce``/``unwrap``, which count only on a receiver known to be a
  strategy: text that can name a strategy at all (every way the analysis
  recognises one spells ``strategy``/``Strategy``, ``distribution`` or a
  getter's name), and a receiver the analysis could take for one. A plain
  dotted name (``tf.__internal__.decorator.unwrap``) cannot be one if no part
  is named like a strategy and its first name is bound only by imports (or not
  at all): its value is then a module, a class or nothing;
* ``initialize``, which counts only on the iterator of an iterator factory,
  a method record of its own.

First the *code* must write the names a finding needs, as whole words
(:func:`code_words`: the text without its comments and plain string literals,
so docstrings full of ``tf.keras.layers`` examples do not count; identifiers
are written literally, so this is exact), a symbol's with the words of its
path; then Python's own tree must have the node. On tf_keras 2.21 the first
test leaves 21 files of 586, the tree 10 (docs/migration.md).

The words of a symbol's path are written wherever it is reached: the analysis
gives a node a module path only from an import (its path as written) and then
attribute by attribute (``Imported.child`` keeps the name written; ``canonical``
only drops compat hops). So each path that ends at a symbol has an *origin*: an
import naming it, or an attribute ``W.name`` whose owner ``W`` has the path
above it. An owner that is a bare name has such a path only if an import
binding that name ends in the word above (or an assignment binds it: anything
then), since a parameter holds a strategy, ``self`` or nothing; ``self.x``'s
value (a class attribute) has its own origin where it was assigned.
"""

import ast
import dataclasses
import re
import sys
from typing import Dict, FrozenSet, Optional, Set

from tpu_compat.migrate import _rules, imports

__all__ = ["code_text", "code_words", "may_have_findings", "text_names_a_rule",
           "tree_may_have_findings", "words_name_a_rule"]


def _derive():
    members = (set(_rules.METHOD_RULES) | set(_rules.ATTRIBUTE_RULES)) - _rules.KNOWN_RECEIVER_ONLY
    receiver_only = set(_rules.KNOWN_RECEIVER_ONLY)
    if _rules.ITERATOR_FACTORIES <= members:
        # initialize() needs an iterator, and only a factory (looked for anyway) makes one.
        receiver_only.discard(_rules.ITERATOR_INITIALIZE.name)
    symbol_paths = set(_rules.SYMBOL_RULES)
    method_keywords = {}
    for keyword, records in _rules.ARGUMENT_RULES.items():
        for record in records:
            for symbol in record.symbols:
                if symbol.startswith("."):
                    method_keywords.setdefault(keyword, set()).add(symbol[1:])
                else:
                    symbol_paths.add(imports.module_path(symbol))
    parents, middles = {}, {}
    for path in symbol_paths:
        parts = path.split(".")
        parents.setdefault(parts[-1], set()).add(parts[-2] if len(parts) > 1 else None)
        middles.setdefault(parts[-1], set()).add(
            (parts[-2] if len(parts) > 1 else None, tuple(parts[1:-1])))
    return (frozenset(members), frozenset(receiver_only),
            {name: frozenset(above) for name, above in parents.items()},
            {k: frozenset(v) for k, v in method_keywords.items()},
            {name: frozenset(words) for name, words in middles.items()})


# Method and attribute names that make a file a candidate by themselves.
MEMBERS: FrozenSet[str]
# Method names that count only on a strategy receiver (reduce, unwrap).
RECEIVER_ONLY: FrozenSet[str]
# Last name of each symbol a finding can be about -> the names just above it
# in its paths (None: a one-part path): TPUStrategy -> {"experimental"}.
SYMBOL_PARENTS: Dict[str, FrozenSet[Optional[str]]]
# keyword -> the methods whose calls it is legacy on.
METHOD_KEYWORDS: Dict[str, FrozenSet[str]]
# Last name of each symbol -> (its parent, the words between the root and the
# last name) for each of its paths: tensorflow.python.keras.layers ->
# {("keras", ("python", "keras"))}. Any spelling of
# the path writes them (an import names them; an alias is bound by such an
# import), so a file that writes none of them cannot name the symbol: modern
# tf.keras.layers is not TPC020's tensorflow.python.keras.layers.
SYMBOL_MIDDLE_WORDS: Dict[str, FrozenSet[tuple]]
MEMBERS, RECEIVER_ONLY, SYMBOL_PARENTS, METHOD_KEYWORDS, SYMBOL_MIDDLE_WORDS = _derive()
# Modules every import of which is a finding (the table's import hooks):
# an import at or below one is a finding, so the code writes each of their words.
IMPORT_PREFIXES = tuple(sorted(_rules.IMPORT_PREFIX_RULES))
_IMPORT_PREFIX_WORDS = tuple(frozenset(prefix.split(".")) for prefix in IMPORT_PREFIXES)

# Every way the analysis recognises a strategy spells one of these: its
# STRATEGY_* patterns all contain "trategy" (tests/test_migrate_prefilter.py).
# A string annotation can name a strategy class, so these are looked for in
# the whole text, strings included.
STRATEGY_WORDS = ("trategy",) + tuple(sorted(_rules.STRATEGY_PARAMETER_NAMES)) + tuple(
    sorted(_rules.STRATEGY_GETTERS))

# Names that make a file a candidate by themselves.
_ALONE = MEMBERS | frozenset(METHOD_KEYWORDS)
# Every word the first test can need, each matched as a whole identifier.
_WORDS = (_ALONE | RECEIVER_ONLY | frozenset(SYMBOL_MIDDLE_WORDS)
          | frozenset(word for words in _IMPORT_PREFIX_WORDS for word in words)
          | frozenset(word for paths in SYMBOL_MIDDLE_WORDS.values()
                      for _, middle in paths for word in middle))
_WORD = re.compile(r"\w+")

# Comments and string literals, left to right, as Python's tokenizer reads them
# (the text is valid Python when this matters: a file that is not is reported
# whatever this says). An f-string (group 1) is kept whole, as its braces hold
# code; a prefix counts only as a whole word (`if"x"` is the keyword and a string).
_STRING_BODY = "|".join((
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""',
    r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''",
    # A backslash continues a one-line string over any line ending, CRLF too.
    r'"[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"',
    r"'[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'",
))
_NOT_CODE = re.compile(r"(?<!\w)((?:[fF][rR]?|[rR][fF])(?:" + _STRING_BODY + r"))"
                       r"|#[^\r\n]*|(?:" + _STRING_BODY + ")", re.DOTALL)
_F_STRING_START = re.compile(r"(?<!\w)(?:[fF][rR]?|[rR][fF])['\"]")
# From Python 3.12 an f-string may nest its own quotes (PEP 701), which the
# expressions above cannot follow: such text is taken whole.
_NESTING_F_STRINGS = sys.version_info >= (3, 12)


def code_text(text: str) -> str:
    """``text`` without its comments and plain (not f-) string literals, each
    replaced by a space: what remains holds every identifier of the code."""
    if _NESTING_F_STRINGS and _F_STRING_START.search(text):
        return text
    return _NOT_CODE.sub(r"\1 ", text)


def code_words(text: str) -> FrozenSet[str]:
    """The words the first test needs that the code of ``text`` writes."""
    return _WORDS.intersection(_WORD.findall(code_text(text)))


def _symbols_written(words):
    """Symbol last name -> the parents of those of its paths whose middle words
    the code all writes (only symbols it writes, with such a path)."""
    symbols = {}
    for name in words.intersection(SYMBOL_MIDDLE_WORDS):
        parents = frozenset(parent for parent, middle in SYMBOL_MIDDLE_WORDS[name]
                            if words.issuperset(middle))
        if parents:
            symbols[name] = parents
    return symbols


def _names_a_strategy_method(text, words):
    return not RECEIVER_ONLY.isdisjoint(words) and any(word in text for word in STRATEGY_WORDS)


def words_name_a_rule(text: str, words: FrozenSet[str]) -> bool:
    """The first test: the code (its ``code_words``) writes what a finding needs."""
    return (not _ALONE.isdisjoint(words)
            or any(prefix <= words for prefix in _IMPORT_PREFIX_WORDS)
            or _names_a_strategy_method(text, words)
            or bool(_symbols_written(words)))


def text_names_a_rule(text: str) -> bool:
    """The first test on ``text``: whether its code writes what a finding needs."""
    return words_name_a_rule(text, code_words(text))


def _bound_names(node):
    """Names ``node`` binds other than by import (an over-approximation)."""
    if isinstance(node, ast.Name):
        return (node.id,) if not isinstance(node.ctx, ast.Load) else ()
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return (node.name,) if node.name else ()
    if isinstance(node, ast.MatchMapping):
        return (node.rest,) if node.rest else ()
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return tuple(node.names)
    return ()


def _may_be_strategy(receiver, bound):
    """False only if the analysis surely types ``receiver`` as no strategy."""
    parts = []
    while isinstance(receiver, ast.Attribute):
        parts.append(receiver.attr)
        receiver = receiver.value
    if not isinstance(receiver, ast.Name) or receiver.id in bound:
        return True
    parts.append(receiver.id)
    return any(_rules.STRATEGY_NAME.fullmatch(part) for part in parts)


def _reduce_without_axis(call):
    """Python's-tree twin of analysis._reduce_without_axis, looser (any keywords count)."""
    keywords = [k.arg for k in call.keywords]
    return ("axis" not in keywords and None not in keywords
            and not any(isinstance(a, ast.Starred) for a in call.args)
            and len(call.args) + len(keywords) == 2)


def _import_names_symbol(dotted, relative, symbols):
    """Whether an import of ``dotted`` may bind a symbol's path (or, as libcst
    sees ``import a.b`` as attributes, name a member)."""
    if not relative and any(dotted == prefix or dotted.startswith(prefix + ".")
                            for prefix in IMPORT_PREFIXES):
        return True
    parts = dotted.split(".")
    for index, name in enumerate(parts):
        if name in MEMBERS or name in RECEIVER_ONLY:
            return True
        above = symbols.get(name)
        if above is not None and (relative or (parts[index - 1] if index else None) in above):
            return True
    return False


# canonical() drops compat hops (tensorflow.compat.v1.contrib is
# tensorflow.contrib), and the implicit `tf` is a one-part path (None): where a
# symbol's name or the word above it is one of these, the word an import ends
# in need not be the one above the name, so a bare-name owner is not checked.
_UNCHECKED_PARENTS = frozenset({None, imports.TENSORFLOW, "compat", "v1", "v2", "contrib"})


@dataclasses.dataclass
class _Bindings:
    """What may give a name or a class attribute a module path (the analysis
    follows only these): ``imported``: name -> the words its imports end in;
    ``assigned``: names an assignment binds to what may be a module (an
    attribute, or a name imported, so assigned or the implicit ``tf``; not a
    parameter); ``stored``: attributes so assigned through a name
    (``self.exp = tf.x``). Complete after :meth:`resolve`."""
    imported: Dict[str, set] = dataclasses.field(default_factory=dict)
    assigned: Set[str] = dataclasses.field(default_factory=set)
    stored: Set[str] = dataclasses.field(default_factory=set)
    assignments: list = dataclasses.field(default_factory=list)

    def add_import(self, node):
        # The last word of ``import a.b as c`` and ``from a import b``; every
        # part of ``import a.b`` (libcst resolves a.b.x by the longest prefix).
        for alias in node.names:
            if alias.asname or isinstance(node, ast.ImportFrom):
                words = (alias.name.rsplit(".", 1)[-1],)
            else:
                words = alias.name.split(".")
            bound = alias.asname or alias.name.split(".", 1)[0]
            self.imported.setdefault(bound, set()).update(words)

    def add_assignment(self, targets, value):
        # analysis._Collector._bind_target: a value is kept for a name or a
        # name's attribute; only a name or an attribute has a module path.
        if isinstance(value, (ast.Name, ast.Attribute)):
            self.assignments.append((targets, value))

    def _may_be_module(self, value):
        return (not isinstance(value, ast.Name) or value.id in self.imported
                or value.id in self.assigned or value.id == "tf")

    def resolve(self):
        pending = self.assignments
        while True:  # a = b; b = tf.x: until no assignment adds a name
            left = []
            for targets, value in pending:
                if not self._may_be_module(value):
                    left.append((targets, value))
                    continue
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.assigned.add(target.id)
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                        self.stored.add(target.attr)
            if len(left) == len(pending):
                return self
            pending = left


def _may_name_symbol(owner, name, bound, parents, bindings):
    """Whether ``owner.name`` may be where a symbol's path is reached.

    The analysis gives an attribute a module path only through its owner's:
    an imported module's child keeps the name written, so ``X.TPUStrategy`` is
    legacy only if X's path ends in "experimental". X may be a name bound by
    an import ending so or by an assignment (a parameter holds no module),
    ``....experimental``, or a chain through a class attribute (``self.exp``,
    whose first name a parameter binds, an attribute some assignment stores a
    name or attribute in); a chain whose first name only imports bind ends in
    what is written; a call or subscript never has a module path.
    """
    if isinstance(owner, ast.Name):
        return (owner.id in bindings.assigned
                or not parents.isdisjoint(bindings.imported.get(owner.id, ()))
                or not _UNCHECKED_PARENTS.isdisjoint(parents) or name in _UNCHECKED_PARENTS)
    if not isinstance(owner, ast.Attribute):
        return False
    if owner.attr in parents:
        return True
    last = owner.attr
    while isinstance(owner, ast.Attribute):
        owner = owner.value
    return isinstance(owner, ast.Name) and owner.id in bound and last in bindings.stored


def _tree_may_have_findings(tree, strategy_text, symbols):
    receivers, symbol_owners, bound, bindings = [], [], set(), _Bindings()
    reduce_name = _rules.REDUCE_WITHOUT_AXIS.name
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Attribute:
            attr = node.attr
            if attr in MEMBERS:
                return True
            if attr in symbols:
                symbol_owners.append((node.value, attr))
            if attr in RECEIVER_ONLY and attr != reduce_name:
                receivers.append(node.value)
        elif kind is ast.Call:
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr == reduce_name and _reduce_without_axis(node):
                    receivers.append(func.value)
                for keyword in node.keywords:
                    if func.attr in METHOD_KEYWORDS.get(keyword.arg, ()):
                        return True
        elif kind is ast.Import:
            if any(_import_names_symbol(alias.name, False, symbols) for alias in node.names):
                return True
            bindings.add_import(node)
        elif kind is ast.ImportFrom:
            module = node.module or ""
            relative = node.level > 0 or not module
            if any(_import_names_symbol(f"{module}.{alias.name}" if module else alias.name,
                                        relative, symbols) for alias in node.names):
                return True
            bindings.add_import(node)
        else:
            bound.update(_bound_names(node))
            if kind is ast.Assign:
                bindings.add_assignment(node.targets, node.value)
            elif kind is ast.AnnAssign or kind is ast.NamedExpr:
                bindings.add_assignment((node.target,), node.value)
    # Bindings are known only after the whole tree.
    bindings.resolve()
    if any(_may_name_symbol(owner, name, bound, symbols[name], bindings)
           for owner, name in symbol_owners):
        return True
    return strategy_text and any(_may_be_strategy(receiver, bound) for receiver in receivers)


def tree_may_have_findings(text: str, tree: ast.AST, words: FrozenSet[str]) -> bool:
    """The second test, on Python's tree of ``text`` whose ``code_words`` are ``words``."""
    return _tree_may_have_findings(tree, _names_a_strategy_method(text, words),
                                   _symbols_written(words))


def may_have_findings(text: str, tree: Optional[ast.AST] = None) -> bool:
    """Whether ``text`` (whose Python tree is ``tree``, if already parsed) can hold
    a finding. Raises SyntaxError only when ``tree`` is None, the code names a
    rule and ``text`` does not parse."""
    words = code_words(text)
    if not words_name_a_rule(text, words):
        return False
    if tree is None:
        tree = ast.parse(text)
    return tree_may_have_findings(text, tree, words)
