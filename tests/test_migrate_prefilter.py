"""The scan prefilter never drops a file the full analysis would report on.

``_prefilter.may_have_findings`` decides which files reach libcst. It may let
through files without findings (they only cost time) but must never reject
one with a finding: each check here runs the full analysis
(``analysis.analyze``, which the prefilter does not guard) beside it.
"""

import ast
import glob
import importlib.metadata
import importlib.util
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_compat.migrate import _prefilter, _rules, analysis, scan, sources

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
CORPUS_FILES = sorted(glob.glob(os.path.join(HERE, "migrate_corpus", "*", "*.py"))
                      + glob.glob(os.path.join(REPO_ROOT, "examples", "**", "*.py"),
                                  recursive=True))


def analysed(text):
    """Rules the full analysis reports on ``text``, prefilter or not."""
    with scan.deep_recursion():
        return sorted(f.rule for f in analysis.analyze(text).findings)


def admitted(text):
    return _prefilter.may_have_findings(text, scan.parse(text))


def test_strategy_words_cover_every_way_the_analysis_names_a_strategy():
    """A receiver is a strategy only by a name, annotation, class or getter the
    analysis matches with these; each must contain one of STRATEGY_WORDS."""
    for pattern in (_rules.STRATEGY_NAME, _rules.STRATEGY_CLASS, _rules.STRATEGY_CONSTRUCTOR):
        assert "trategy" in pattern.pattern
    for name in _rules.STRATEGY_PARAMETER_NAMES | _rules.STRATEGY_GETTERS:
        assert any(word in name for word in _prefilter.STRATEGY_WORDS)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_every_corpus_file_with_findings_is_admitted(path):
    text = sources.read_source(path).text
    if analysed(text):
        assert admitted(text)


# Sources the earlier regular-expression filter rejected although they hold a
# finding, and other shapes at the edge of each rule of the prefilter.
HELD = {
    "bound method, no call": "import tensorflow as tf\n"
                             "strategy = tf.distribute.get_strategy()\nfn = strategy.unwrap\n",
    "comment inside a from-import": "from tensorflow.distribute.experimental import (  # TPU\n"
                                    "    TPUStrategy,\n)\n",
    "line continuation after the dot": "def f(strategy):\n"
                                       "    return strategy.\\\n        reduce('SUM', 1)\n",
    "comment between dot and name": "def f(strategy):\n"
                                    "    return (strategy.  # why\n            unwrap(1))\n",
    "call result as receiver": "import tensorflow as tf\n"
                               "v = tf.distribute.get_strategy().reduce('SUM', 1)\n",
    "parameter named distribution": "def f(distribution):\n"
                                    "    return distribution.reduce('SUM', 1)\n",
    "annotated strategy": "import tensorflow as tf\n"
                          "def f(s: tf.distribute.Strategy):\n    return s.unwrap(1)\n",
    "getter result": "import tensorflow as tf\n"
                     "ctx = tf.distribute.get_replica_context()\n"
                     "s = tf.distribute.get_strategy()\nout = s.reduce('SUM', 1)\n",
    "import of the class by its full path": "import tensorflow.distribute.experimental.TPUStrategy"
                                            " as S\nstrategy = S(r, steps_per_run=2)\n",
    "module alias then the class": "from tensorflow.distribute import experimental as E\n"
                                   "strategy = E.TPUStrategy(r)\n",
    "compat alias": "import tensorflow.compat.v1 as tf\n"
                    "s = tf.distribute.experimental.TPUStrategy(r, 4)\n",
    "keyword on a method": "model.compile(loss='mse', experimental_steps_per_execution=2)\n",
    "iterator initialize": "it = strategy.make_dataset_iterator(ds)\nit.initialize()\n",
    "attribute record": "n = self.strategy.extended.steps_per_run\n",
    "legacy module kept on self": "import tensorflow as tf\nclass Runner:\n"
                                  "    def __init__(self):\n"
                                  "        self.exp = tf.distribute.experimental\n"
                                  "    def build(self, r):\n"
                                  "        return self.exp.TPUStrategy(r)\n",
    "strategy bound elsewhere (a notebook cell)": "out = strategy.reduce('SUM', 1)\n",
    "self attribute receiver": "class T:\n    def __init__(self, strategy):\n"
                               "        self.s = strategy\n"
                               "    def go(self):\n        return self.s.reduce('SUM', 1)\n",
    "name rebound from a module": "import tensorflow as tf\nimport functools as lib\n"
                                  "lib = tf.distribute.get_strategy()\nlib.unwrap(1)\n",
    # The code's words: what strings and comments hide, and what they must not.
    "inside an f-string": "import tensorflow as tf\n"
                          "msg = f\"{tf.distribute.experimental.TPUStrategy(r)}\"\n",
    "inside a raw f-string": "x = rf'{strategy.experimental_run_v2(fn)}'\n",
    "after an escaped quote": "model.compile(loss=\"a\\\"b\", experimental_steps_per_execution=2)\n",
    "after quotes in a triple-quoted string": "'''a \"\" ' b'''\n"
                                              "x = strategy.experimental_run_v2(fn)\n",
    "after a quote in a comment": "# don't\nx = strategy.experimental_run_v2(fn)\n",
    "keywords against strings": "x = \"a\"if strategy.experimental_run_v2(fn) else\"b\"\n",
    "annotation of a local (not compiled)": "import tensorflow as tf\ndef f():\n"
                                            "    s: tf.distribute.experimental.TPUStrategy = None\n"
                                            "    return s\n",
    # Owners of a symbol's name: a module reached through assignments.
    "module assigned to a name": "import tensorflow as tf\nexp = tf.distribute.experimental\n"
                                 "s = exp.TPUStrategy(r)\n",
    "alias of an alias": "from tensorflow.distribute import experimental as e\nf = e\n"
                         "s = f.TPUStrategy(r)\n",
    "module kept on self, then a chain": "import tensorflow as tf\nclass R:\n"
                                         "    def __init__(self):\n        self.k = tf.compat.v1\n"
                                         "    def g(self):\n"
                                         "        return self.k.distribute.experimental.TPUStrategy(r)\n",
    "imported module, then its child": "from tensorflow.python import keras as K\n"
                                       "layer = K.layers.Dense(1)\n",
}

# Sources with a legacy-looking name that the analysis does not report: the
# prefilter should spare libcst the work (not required, but it is the point).
SPARED = {
    "module's unwrap": "import tensorflow as tf\n# strategy notes\n"
                       "_, f = tf.__internal__.decorator.unwrap(fn)\n",
    "functools.reduce": "import functools\n# distribution of work\n"
                        "total = functools.reduce(add, xs)\n",
    "modern tf.keras.layers, not tensorflow.python.keras.layers":
        "import tensorflow as tf\nlayer = tf.keras.layers.Dense(1)\n",
    "modern tf.distribute.cluster_resolver, not tf.contrib's":
        "import tensorflow as tf\n"
        "r = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')\n",
    "today's TPUStrategy": "import tensorflow as tf\n"
                           "strategy = tf.distribute.TPUStrategy(resolver)\n",
    "from-import of today's class": "from tensorflow.distribute import TPUStrategy\n"
                                    "strategy = TPUStrategy(resolver)\n",
    "docstring only": '"""Use tf.distribute.experimental.TPUStrategy(r, steps_per_run=2)."""\n',
    "reduce with an axis": "def f(strategy):\n    return strategy.reduce('SUM', 1, axis=0)\n",
    "tf.reduce_sum": "import tensorflow as tf\nstrategy = None\ny = tf.reduce_sum(x)\n",
    "legacy APIs in strings and comments only":
        '"""strategy.experimental_run_v2(fn); tf.contrib.tpu.keras_to_tpu_model(m)."""\n'
        "import tensorflow as tf\n# TPUStrategy(r, steps_per_run=2).experimental_run_v2\n"
        "doc = 'tf.distribute.experimental.TPUStrategy(r)'\nx = tf.ones(1)\n",
    "keras in a longer name (tf_keras's own modules)":
        "from tf_keras.src import backend\nfrom tensorflow.python.util import nest\n"
        "x = backend.floatx()\n",
    "a parameter's attribute named like a legacy module":
        "import keras\nfrom tensorflow.python.framework import ops\n"
        "def count(model):\n    return len(model.layers)\n",
    "a class attribute holding a parameter":
        "import keras\nfrom tensorflow.python.framework import ops\nclass T:\n"
        "    def __init__(self, loss):\n        self.loss = loss\n"
        "    def m(self):\n        return self.loss.metrics\n",
}


@pytest.mark.parametrize("source", HELD.values(), ids=HELD.keys())
def test_sources_with_a_finding_are_admitted(source):
    assert analysed(source), "the example should hold a finding"
    assert admitted(source)


@pytest.mark.parametrize("source", SPARED.values(), ids=SPARED.keys())
def test_sources_without_findings_are_spared(source):
    assert analysed(source) == []
    assert not admitted(source)


# Fragments combined into programs that probe the prefilter's edges: names
# bound by imports or otherwise, strategy-like or not, dotted paths that are
# or are not legacy, text in strings and comments.
FRAGMENTS = [
    "import tensorflow as tf", "import tensorflow.compat.v1 as tf", "import functools",
    "from tensorflow.distribute import experimental", "from tensorflow import distribute as d",
    "from tensorflow.distribute.experimental import TPUStrategy",
    "from tensorflow.distribute import TPUStrategy",
    "s = tf.distribute.get_strategy()", "s = make()", "strategy = s", "mod = functools",
    "x = d.experimental.TPUStrategy(r, 2)", "x = d.TPUStrategy(r)",
    "class K:\n    def __init__(self):\n        self.m = d.experimental\n"
    "    def f(self):\n        return self.m.TPUStrategy(r)",
    "x = experimental.TPUStrategy(r, steps_per_run=1)", "x = TPUStrategy(r, device_assignment=a)",
    "y = s.reduce('SUM', v)", "y = strategy.reduce('SUM', v)", "y = mod.reduce(f, v)",
    "y = functools.reduce(f, v)", "y = s.unwrap(v)", "y = strategy.unwrap",
    "y = tf.__internal__.decorator.unwrap(v)", "y = self_strategy.extended.unwrap(v)",
    "z = tf.reduce_sum(v)", "# strategy.experimental_run_v2(fn)", "doc = 'TPUStrategy'",
    "model.compile(experimental_steps_per_execution=3)", "for strategy in items: pass",
    "def f(distribution): return distribution.reduce('SUM', 1)",
    "def g(strategy, fn): return strategy.experimental_run_v2(fn)",
    "class C:\n    def m(self):\n        return self.strategy.unwrap(1)",
    "e2 = d.experimental", "y = e2.TPUStrategy(r)", "k = K.m", "z = k.TPUStrategy(r)",
    "K = K(1)", "t = f'{strategy.experimental_run_v2(fn)}'", "q = '''a\"b''' # it's",
    "w = \"it's\"if s.unwrap(v) else'\"'",
]


@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6))
def test_generated_programs_with_findings_are_admitted(fragments):
    source = "\n".join(fragments) + "\n"
    if analysed(source):
        assert admitted(source)


def _tf_keras():
    spec = importlib.util.find_spec("tf_keras")
    return list(spec.submodule_search_locations)[0] if spec else None


@pytest.mark.slow  # scans all of tf_keras
@pytest.mark.skipif(_tf_keras() is None, reason="tf_keras is not installed")
def test_tf_keras_files_the_tree_check_rejects_have_no_findings():
    """Every tf_keras file whose code names a rule but whose Python tree the
    prefilter rejects (11 of the 21 it reads in tf_keras 2.21), analysed in full.
    (Files whose code names no rule at all are rejected by the first test: the
    examples above and the identifier tests below cover that one, and the slow
    test below analyses them all.)"""
    rejected = []
    for path in sources.discover([_tf_keras()]):
        text = sources.read_source(path).text
        if _prefilter.text_names_a_rule(text) and not admitted(text):
            rejected.append(path)
            assert analysed(text) == [], path
    assert len(rejected) >= 10  # the check did look at files


@pytest.mark.slow
@pytest.mark.skipif(_tf_keras() is None, reason="tf_keras is not installed")
def test_every_tf_keras_file_the_prefilter_rejects_has_no_findings():
    """All of tf_keras analysed in full (576 rejected files in 2.21): the first
    test's claim on a real tree, beyond the identifier tests kept in CI; and
    the number of files that reach libcst, as docs/migration.md gives it."""
    rejected, reaching = 0, 0
    for path in sources.discover([_tf_keras()]):
        text = sources.read_source(path).text
        if not admitted(text):
            rejected += 1
            assert analysed(text) == [], path
        else:
            reaching += 1
    assert rejected > 500
    if importlib.metadata.version("tf_keras") == "2.21.0":
        assert (reaching, reaching + rejected) == (10, 586)


def _identifiers(tree):
    """Every identifier Python's tree has (inside f-strings too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield from node.name.split(".")
            if node.asname:
                yield node.asname
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from node.module.split(".")
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg


def _keeps_every_identifier(text):
    words = set(re.findall(r"\w+", _prefilter.code_text(text)))
    missing = set(_identifiers(scan.parse(text))) - words
    assert not missing, missing


# Strings and comments in the shapes Python's tokenizer allows: prefixes in
# either case, quotes and escapes inside, keywords against them, f-strings
# holding code.
TRICKY = [
    "x = ['a' 'b', \"c\", r'\\\\', b\"\\\\\\\"\", u'x', Rb'y', bR\"z\"]  # it's\ny = x\n",
    "a = '''one ' two \" three\n four''' + \"\"\"5 '' \\\"\"\"\" \"\"\"6\"\"\"\nb = a\n",
    "c = 1 if\"x\"else 2\nd = [1]if c else[2]\ne = not'x'or c\n",
    "f = f'{c!r:>{d}} {e[\"k\"]}' F\"{ {1: 2}[1] }\" fR'{c}\\n' Rf\"{d}\"\n",
    "g = '#' + \"#'\"  # '#\"\nh = g\n",
    "i = ('a'  # c'\n     'b')\nj = i.\\\n    upper\n",
    "def k(self, n: 'Strategy') -> \"T\":\n    '''doc'''\n    return self.m(n=n)\n",
    # A one-line string continued by a backslash over a CRLF line ending.
    "m = 'a\\\r\nb' + n.upper() + 'c\\\r\nd'\r\no = m\r\n",
]


@pytest.mark.parametrize("source", TRICKY + [sources.read_source(p).text for p in CORPUS_FILES],
                         ids=[f"tricky{i}" for i in range(len(TRICKY))]
                         + [os.path.relpath(p, REPO_ROOT) for p in CORPUS_FILES])
def test_code_text_keeps_every_identifier(source):
    """The first test reads words from the code without strings and comments:
    every identifier of Python's tree must still be there."""
    _keeps_every_identifier(source)


def test_code_text_drops_strings_and_comments():
    code = _prefilter.code_text(TRICKY[0] + TRICKY[1] + TRICKY[4])
    assert not re.search(r"\b(?:it|one|two|three|four)\b", code)
    assert "#" not in code


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.sampled_from(TRICKY + [f + "\n" for f in FRAGMENTS]), min_size=1,
                max_size=8))
def test_generated_code_text_keeps_every_identifier(parts):
    _keeps_every_identifier("".join(parts))
