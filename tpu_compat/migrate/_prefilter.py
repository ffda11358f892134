"""Which files can hold a finding: a cheap test that never says no wrongly.

Scan and upgrade send a file to the libcst analysis only if this says it may
hold a finding; on tf_keras that is 9 files of 586 (see docs/performance.md).
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

First the text must contain one of the names (identifiers are written
literally, so this is exact and costs microseconds); then Python's own tree,
which the syntax check has already built, must have the node.
"""

import ast
import re
from typing import Dict, FrozenSet, Optional

from tpu_compat.migrate import _rules, imports

__all__ = ["may_have_findings", "text_names_a_rule"]


def _last(path):
    return path.rsplit(".", 1)[-1]


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
NAMES = MEMBERS | frozenset(SYMBOL_PARENTS)
# Modules every import of which is a finding (the table's import hooks):
# their last names make a file a candidate, an import at or below one a finding.
IMPORT_PREFIXES = tuple(sorted(_rules.IMPORT_PREFIX_RULES))
NAMES = NAMES | frozenset(_last(prefix) for prefix in IMPORT_PREFIXES)

# Every way the analysis recognises a strategy spells one of these: its
# STRATEGY_* patterns all contain "trategy" (tests/test_migrate_prefilter.py).
STRATEGY_WORDS = ("trategy",) + tuple(sorted(_rules.STRATEGY_PARAMETER_NAMES)) + tuple(
    sorted(_rules.STRATEGY_GETTERS))

_TEXT_NAMES = tuple(sorted(NAMES | set(METHOD_KEYWORDS)))
# reduce/unwrap as whole identifiers (not tf.reduce_sum): an identifier ends
# where word characters do. Each pattern starts with its name, which lets the
# regex engine skip ahead to it; the character before is checked by hand.
_RECEIVER_ONLY_ENDS = tuple(re.compile(re.escape(name) + r"\b") for name in sorted(RECEIVER_ONLY))
_WORD_CHARACTER = re.compile(r"\w")


def _mentions_receiver_only(text):
    for pattern in _RECEIVER_ONLY_ENDS:
        for match in pattern.finditer(text):
            start = match.start()
            if start == 0 or not _WORD_CHARACTER.match(text, start - 1):
                return True
    return False


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


def _symbols_written(text):
    """Symbol last name -> the parents of those of its paths whose middle words
    ``text`` all writes (only names written in ``text``, with such a path)."""
    def written(word):
        return re.search(rf"\b{re.escape(word)}\b", text) is not None
    symbols = {}
    for name, paths in SYMBOL_MIDDLE_WORDS.items():
        if name in text:
            parents = frozenset(parent for parent, words in paths
                                if all(written(w) for w in words))
            if parents:
                symbols[name] = parents
    return symbols


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


def _may_name_symbol(owner, name, bound, parents):
    """Whether ``owner.name`` may resolve to a symbol's path.

    The analysis gives an attribute a module path only through its owner's:
    an imported module's child keeps the name written, so ``X.TPUStrategy`` is
    legacy only if X's path ends in "experimental". X may be a name (any alias),
    ``....experimental``, or a chain through a class attribute (``self.exp``,
    whose first name a parameter binds); a chain whose first name only imports
    bind ends in what is written; a call or subscript never has a module path.
    """
    if isinstance(owner, ast.Name):
        return True
    if not isinstance(owner, ast.Attribute):
        return False
    if owner.attr in parents:
        return True
    while isinstance(owner, ast.Attribute):
        owner = owner.value
    return isinstance(owner, ast.Name) and owner.id in bound


def _tree_may_have_findings(tree, strategy_text, symbols):
    receivers, symbol_owners, bound = [], [], set()
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
        elif kind is ast.ImportFrom:
            module = node.module or ""
            relative = node.level > 0 or not module
            if any(_import_names_symbol(f"{module}.{alias.name}" if module else alias.name,
                                        relative, symbols) for alias in node.names):
                return True
        else:
            bound.update(_bound_names(node))
    # Bindings are known only after the whole tree.
    if any(_may_name_symbol(owner, name, bound, symbols[name])
           for owner, name in symbol_owners):
        return True
    return strategy_text and any(_may_be_strategy(receiver, bound) for receiver in receivers)


def _names_a_strategy_method(text):
    return any(word in text for word in STRATEGY_WORDS) and _mentions_receiver_only(text)


def text_names_a_rule(text: str) -> bool:
    """The first, textual test: a name some finding needs is written in ``text``."""
    return _names_a_strategy_method(text) or any(name in text for name in _TEXT_NAMES)


def may_have_findings(text: str, tree: Optional[ast.AST] = None) -> bool:
    """Whether ``text`` (whose Python tree is ``tree``, if already parsed) can hold
    a finding. Raises SyntaxError only when ``tree`` is None and ``text`` does
    not parse."""
    strategy_text = _names_a_strategy_method(text)
    if not strategy_text and not any(name in text for name in _TEXT_NAMES):
        return False
    if tree is None:
        tree = ast.parse(text)
    return _tree_may_have_findings(tree, strategy_text, _symbols_written(text))
