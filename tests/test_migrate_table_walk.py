"""Every row of the legacy table, under every way a program binds `tf`
(issue #35): upgrade either rewrites the use or leaves a TODO above it, never
neither, and a rewrite only spells names that exist in TF 2.21 for what `tf`
is bound to there (under `import tensorflow.compat.v1 as tf`,
`tf.distribute.TPUStrategy` would be an AttributeError).

One generated snippet per (row, spelling, binding); the scan and upgrade are
in-process and cheap. The name check imports TensorFlow once.
"""

import ast
import functools
import json
import os
import subprocess
import sys

import pytest
from migrate_check import upgraded

from tpu_compat import legacy_api
from tpu_compat.migrate import imports, scan, upgrade

BINDINGS = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")
# A binding that may be either module (the era's try/except import).
EITHER = "either"
EITHER_HEADER = ("try:\n    import tensorflow.compat.v1 as tf\n"
                 "except ImportError:\n    import tensorflow as tf\n")


def _written(path, binding, through_v2=True):
    """``path`` (a module path) as code under ``import <binding> as tf``, or None.
    ``through_v2``: also TF 2 names spelled through a compat.v2 ``tf``."""
    if path.startswith(binding + "."):
        return "tf" + path[len(binding):]
    if binding == "tensorflow.compat.v1" and path.startswith("tensorflow.contrib."):
        return "tf" + path[len("tensorflow"):]   # compat.v1 mirrors TF 1.x, contrib too
    if binding != "tensorflow" and path.startswith("tensorflow.compat."):
        return "tf" + path[len("tensorflow"):]   # tf.compat.v1.compat.v1 is compat.v1
    if (through_v2 and binding == "tensorflow.compat.v2" and path.startswith("tensorflow.")
            and not path.startswith("tensorflow.contrib.")):
        return "tf" + path[len("tensorflow"):]   # TF 2's tf.compat.v2.X is X (SimCLR's tf2)
    return None


def _snippets(record):
    """``(id, source)`` pairs that use ``record``'s API once each."""
    if record.kind == legacy_api.KIND_SYMBOL:
        for symbol in record.symbols:
            path = imports.module_path(symbol)
            if record.rewrite is not None and record.rewrite.kind == legacy_api.REWRITE_VERSION_COMPARE:
                # distutils' version classes: on TF's version, and on another's.
                module, name = path.rsplit(".", 1)
                yield (f"{symbol}:tf", f"import {module.split('.')[0]}\nimport tensorflow as tf\n"
                                       f"ok = {path}(tf.__version__) < '1.14'\n")
                yield (f"{symbol}:import-{module}", f"import {module}\nimport tensorflow as tf\n"
                                                   f"ok = {path}(tf.__version__) >= '2.0'\n")
                yield (f"{symbol}:np", f"import {module.split('.')[0]}\nimport numpy as np\n"
                                       f"ok = {path}(np.__version__) < '1.14'\n")
                yield f"from {module}", f"from {module} import {name}\n"
                continue
            if not path.startswith("tensorflow"):
                continue
            if record.hook.kind == legacy_api.HOOK_IMPORT or not path.startswith("tensorflow."):
                yield f"import {path}", f"import {path}\n"
                module, name = path.rsplit(".", 1)
                yield f"from {module}", f"from {module} import {name}\n"
                continue
            for binding in BINDINGS:
                written = _written(path, binding)
                if written is not None:
                    yield (f"{binding}:{symbol}",
                           f"import {binding} as tf\nx = {written}(a)\n")
            if path.startswith("tensorflow.contrib."):
                yield f"{EITHER}:{symbol}", EITHER_HEADER + f"x = {_written(path, 'tensorflow')}(a)\n"
        if not record.symbols:  # the import rules: a module import is the use
            for target in record.hook.targets:
                yield f"import {target}", f"import {target}.x\n"
    elif record.kind == legacy_api.KIND_METHOD:
        receiver = "estimator" if record.rule == "TPC083" else (
            "tpu_model" if record.rule == "TPC162" else "strategy")
        if record.rule == "TPC018":
            yield "iterator", ("it = strategy.make_dataset_iterator(ds)\n"
                               f"it.{record.name}()\n")
        else:
            yield receiver, f"{receiver}.{record.name}(a, b)\n"
    elif record.kind == legacy_api.KIND_ATTRIBUTE:
        yield "strategy", f"n = strategy.{record.name}\n"
    elif record.kind == legacy_api.KIND_ARGUMENT:
        for symbol in record.symbols:
            if symbol.startswith("."):
                yield symbol, f"model{symbol}(opt, {record.name}=8)\n"
                continue
            path = imports.module_path(symbol)
            for binding in BINDINGS:
                # A TF 2 callee's arguments are matched through a compat.v2 `tf` too.
                written = _written(path, binding)
                if written is not None:
                    yield (f"{binding}:{symbol}",
                           f"import {binding} as tf\nx = {written}(r, {record.name}=8)\n")


CASES = [(record, case_id, source) for record in legacy_api.RECORDS
         for case_id, source in _snippets(record)]


def test_every_row_has_a_case():
    assert {record.rule for record, _, _ in CASES} == {r.rule for r in legacy_api.RECORDS}


@functools.lru_cache(maxsize=None)
def _upgrade(source):
    after, outcomes = upgraded(source, "walk.py")
    return after, tuple(outcomes)


@pytest.mark.parametrize("record,case_id,source", CASES,
                         ids=[f"{r.rule}-{i}" for r, i, _ in CASES])
def test_every_row_is_rewritten_or_marked(record, case_id, source):
    after, outcomes = _upgrade(source)
    # upgrade's outcomes hold one per finding of scan's analysis (scan.analyze_text)
    # of the source: no second scan of it
    found = [o.finding for o in outcomes if o.finding.rule == record.rule]
    assert found, f"{record.rule} not found in {source!r}"
    actions = {o.action for o in outcomes if o.finding.rule == record.rule}
    assert actions <= {upgrade.REWRITTEN, upgrade.TODO}, (case_id, outcomes)
    # Whatever is still legacy in the result has its TODO line: a second run
    # finds only marked uses and changes nothing.
    again, outcomes_again = _upgrade(after)
    assert again == after
    assert all(o.action == upgrade.TODO for o in outcomes_again
               if o.finding.confidence == scan.HIGH), outcomes_again
    if upgrade.REWRITTEN in actions and upgrade.TODO not in actions:
        assert record.rule not in after, after


# Resolves ``[(binding, chain)]`` in a fresh TensorFlow with tf_keras as Keras
# (what docs/migration.md says migrated code runs with); prints the missing ones.
_RESOLVE = """
import importlib, json, sys
missing = []
for binding, chain in json.load(sys.stdin):
    if binding == "from":   # `from MODULE import NAME`: chain is "MODULE NAME"
        module, name = chain.split()
        if not hasattr(importlib.import_module(module), name):
            missing.append([binding, chain])
        continue
    value = importlib.import_module(binding)
    for attribute in chain.split(".")[1:]:
        if not hasattr(value, attribute):
            missing.append([binding, chain])
            break
        value = getattr(value, attribute)
print(json.dumps(missing))
"""


@pytest.fixture(scope="module")
def missing_names():
    """The ``(binding, tf.chain)`` pairs the rewrites below introduce that TF 2.21 lacks."""
    wanted = set()
    for _, case_id, source in REWRITTEN_CASES:
        after, _ = _upgrade(source)
        binding = case_id.split(":")[0]
        wanted |= {(binding, chain) for chain in _tf_chains(after) - _tf_chains(source)}
        wanted |= {("from", chain) for chain in _from_imports(after) - _from_imports(source)}
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", _RESOLVE], input=json.dumps(sorted(wanted)),
                          capture_output=True, text=True, env=env, timeout=300, check=True)
    return {tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])}


def _tf_chains(text):
    """Every dotted ``tf.x.y`` expression in ``text``, outermost only."""
    chains = set()

    class Visitor(ast.NodeVisitor):
        def visit_Attribute(self, node):
            parts = []
            inner = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "tf":
                chains.add(".".join(["tf", *reversed(parts)]))
                return
            self.generic_visit(node)

    Visitor().visit(ast.parse(text))
    return chains


def _from_imports(text):
    """``"MODULE NAME"`` for each name a ``from MODULE import NAME`` imports."""
    return {f"{node.module} {alias.name}" for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names}


REWRITTEN_CASES = [(r, i, s) for r, i, s in CASES
                   if r.rewrite is not None and (i.split(":")[0] in BINDINGS
                                                 or i.startswith("from "))]


@pytest.mark.requires_tf
@pytest.mark.parametrize("record,case_id,source", REWRITTEN_CASES,
                         ids=[f"{r.rule}-{i}" for r, i, _ in REWRITTEN_CASES])
def test_rewrites_name_what_tf_is_bound_to(record, case_id, source, missing_names):
    after, _ = _upgrade(source)
    for chain in _from_imports(after) - _from_imports(source):
        assert ("from", chain) not in missing_names, (
            f"{record.rule}: `from {chain.replace(' ', ' import ')}` fails in TF 2.21:\n{after}")
    binding = case_id.split(":")[0]
    for chain in _tf_chains(after) - _tf_chains(source):
        assert (binding, chain) not in missing_names, (
            f"{record.rule}: `{chain}` does not exist under `import {binding} as tf` "
            f"in TF 2.21:\n{after}")


def test_either_binding_is_never_rewritten():
    """try: import tensorflow.compat.v1 as tf / except: import tensorflow as tf:
    a use is found and marked, never rewritten through the ambiguous `tf`."""
    source = EITHER_HEADER + "s = tf.distribute.experimental.TPUStrategy(r)\n"
    after, outcomes = _upgrade(source)
    assert [o.action for o in outcomes] == [upgrade.TODO]
    assert after.count("# TODO(tpu_compat): TPC017") == 1
    # `tf = tf.compat.v1` rebinds the module alias: same rule.
    source = "import tensorflow as tf\ntf = tf.compat.v1\nd = tf.contrib.data.AUTOTUNE\n"
    after, outcomes = _upgrade(source)
    assert [o.action for o in outcomes] == [upgrade.TODO], outcomes
    assert "more than one module" in after
