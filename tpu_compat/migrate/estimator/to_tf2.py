"""``tpu-compat upgrade --estimator-to-tf2``: a TPUEstimator program's names
pointed at the TF 2 driver written beside it (``tpu_estimator_tf2.py``, the
source of :mod:`tpu_compat.migrate.estimator.estimator_tf2`).

``model_fn`` and ``input_fn`` stay as written; only the estimator's own names
change, each to the driver's class with the same interface:

======================================================  ==============================
the program's name (``tf`` any alias of tensorflow,      becomes
tensorflow.compat.v1 or tf.contrib)
======================================================  ==============================
``tf.estimator.tpu.TPUEstimator``                        ``tpu_estimator_tf2.TPUStrategyEstimator``
``tf.estimator.tpu.{TPUEstimatorSpec, RunConfig,         ``tpu_estimator_tf2.<same name>``
TPUConfig, InputPipelineConfig}``, ``tf.estimator.ModeKeys``
``tf.tpu.CrossShardOptimizer``                           ``tpu_estimator_tf2.CrossReplicaOptimizer``
``tf.contrib.layers.layer_norm``                         ``tpu_estimator_tf2.layer_norm``
``tf.estimator.export.{ServingInputReceiver,             ``tpu_estimator_tf2.<same name>``
PredictOutput}``
======================================================  ==============================

A file that builds no TPUEstimator is left alone, unless the same upgrade holds
one that does (``helper``: it is a module of that program, as BERT's
optimization.py). ``--from-tf1``: a TF 1.x program's ``import tensorflow as tf``
becomes compat.v1 (:func:`tf1_imports`).

What the driver does not run the TPUEstimator way gets a ``# TODO(tpu_compat)``
line naming it and why (the driver also refuses it at run time, by name):
session hooks and ``from ... import`` of the estimator names (an export output
other than ``PredictOutput`` keeps the ordinary upgrade's TODO). ``tf.compat.v1.train.init_from_checkpoint``
(a ``scaffold_fn``'s warm start) becomes the driver's, which applies it before
the first step when ``model_dir`` holds no checkpoint.
"""

import dataclasses
import os
import re
from typing import List

import libcst as cst
from libcst import metadata

from tpu_compat.migrate import scan, sources, upgrade
from tpu_compat.migrate.analysis import dotted as _dotted, names_resolved, qualified_names
from tpu_compat.migrate.estimator import contrib_tf2, keras_tf2
from tpu_compat.migrate.rewrites._keras_tpu_parts import is_import

__all__ = ["DRIVER_MODULE", "Migrated", "driver_source", "migrate_text", "upgrade_bytes",
           "upgrade_file"]

DRIVER_MODULE = "tpu_estimator_tf2"
_TODO = "# TODO(tpu_compat): "

_PREFIXES = ("tensorflow.estimator.tpu.", "tensorflow.compat.v1.estimator.tpu.",
             "tensorflow.contrib.tpu.")
_TPU_NAMES = {"TPUEstimator": ("TPUStrategyEstimator", "TPC070"),
              "TPUEstimatorSpec": ("TPUEstimatorSpec", "TPC071"),
              "RunConfig": ("RunConfig", "TPC072"),
              "TPUConfig": ("TPUConfig", "TPC073"),
              "InputPipelineConfig": ("InputPipelineConfig", "TPC074")}
_RENAMES = {prefix + name: target for prefix in _PREFIXES for name, target in _TPU_NAMES.items()}
_RENAMES.update({
    "tensorflow.estimator.ModeKeys": ("ModeKeys", "TPC078"),
    "tensorflow.compat.v1.estimator.ModeKeys": ("ModeKeys", "TPC078"),
    "tensorflow.tpu.CrossShardOptimizer": ("CrossReplicaOptimizer", "TPC043"),
    "tensorflow.compat.v1.tpu.CrossShardOptimizer": ("CrossReplicaOptimizer", "TPC043"),
    "tensorflow.contrib.tpu.CrossShardOptimizer": ("CrossReplicaOptimizer", "TPC054"),
    # The driver's has contrib's variable names (LayerNorm/beta, gamma): BERT's
    # checkpoints restore, where tf.keras.layers.LayerNormalization would not.
    "tensorflow.contrib.layers.layer_norm": ("layer_norm", "TPC067"),
    # TF's sets a graph initializer eager variables never run; the driver's applies
    # the warm start before the first step when model_dir holds no checkpoint.
    "tensorflow.train.init_from_checkpoint": ("init_from_checkpoint", "TPC070"),
    "tensorflow.compat.v1.train.init_from_checkpoint": ("init_from_checkpoint", "TPC070"),
})
# The driver's export writes Estimator's serving graph (placeholders, model_fn in PREDICT).
_RENAMES.update({f"tensorflow.{p}estimator.export.{name}": (name, rule)
                 for p in ("", "compat.v1.")
                 for name, rule in (("ServingInputReceiver", "TPC079"),
                                    ("PredictOutput", "TPC082"))})
# The driver runs a program's SessionRunHooks around each loop, as TPUEstimator did.
_RENAMES.update({f"tensorflow.{p}estimator.{name}": (name, "TPC086")
                 for p in ("", "compat.v1.") for name in ("SessionRunHook", "SessionRunArgs")})
# TF's custom getter (float32 variables read as bfloat16), written in the driver:
# the same numbers and checkpoint names, where Keras mixed precision would change both.
_RENAMES.update({f"tensorflow.{p}tpu.bfloat16_scope": ("bfloat16_scope", "TPC048")
                 for p in ("", "compat.v1.", "contrib.")})
# The replica context's all_reduce (group_assignment kept): the same sum.
_RENAMES.update({f"tensorflow.{p}tpu.cross_replica_sum": ("cross_replica_sum", "TPC042")
                 for p in ("", "compat.v1.", "contrib.")})
# The contrib names the driver serves (contrib_tf2), and model_fn's EstimatorSpec, which
# the driver takes where TPUEstimator did.
_RENAMES.update(contrib_tf2.RENAMES)
_RENAMES.update({f"tensorflow.{p}estimator.EstimatorSpec": ("EstimatorSpec", "TPC076")
                 for p in ("", "compat.v1.")})

# A program's switch to graph mode for the whole process. TPUEstimator built model_fn's
# graph itself; the driver traces it in a tf.function, and its loop, iterators and
# checkpoint reads need eager execution, which the switch turns off: it is removed.
_GRAPH_MODE_SWITCHES = {f"tensorflow.{p}{name}" for p in ("", "compat.v1.")
                        for name in ("disable_v2_behavior", "disable_eager_execution")}
_SWITCH_REMOVED = ("# tpu_compat: {call}() removed (upgrade --estimator-to-tf2): the TF 2 "
                   "driver runs model_fn in a tf.function, as TPUEstimator ran it in a graph")

# TPUEstimatorSpec arguments the driver does not run as TPUEstimator did, and why.
_SPEC_TODOS = {
    "prediction_hooks": "SessionRunHooks are not migrated: TF 2 makes no Session.run calls",
}


@dataclasses.dataclass
class Note:
    """One name rewritten or one TODO: ``line`` in the original text (1-based)."""
    line: int
    column: int
    rule: str
    todo: str = ""          # the TODO's reason, empty for a rewrite
    what: str = ""          # a rewrite's description, when not a name pointed at the driver


@dataclasses.dataclass
class Migrated:
    text: str
    notes: List[Note]

    @property
    def changed(self):
        return any(not note.todo for note in self.notes)


def driver_source() -> bytes:
    """The driver's bytes, as written beside a migrated program."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "estimator_tf2.py")
    with open(path, "rb") as stream:
        return stream.read()


class _Migrator(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (metadata.QualifiedNameProvider, metadata.PositionProvider)

    def __init__(self):
        super().__init__()
        self.notes: List[Note] = []
        self._statements = []        # [(statement node, [todo texts])], innermost last
        self._estimators = set()     # names assigned a TPUEstimator(...)
        self.switches: List[Note] = []    # graph-mode switches removed

    # -- where TODOs go ------------------------------------------------------------

    def _todo(self, node, rule, reason):
        position = self.get_metadata(metadata.PositionProvider, node)
        self.notes.append(Note(position.start.line, position.start.column + 1, rule, reason))
        if self._statements and f"{rule} {reason}" not in self._statements[-1][1]:
            self._statements[-1][1].append(f"{rule} {reason}")

    def _enter(self, node):
        self._statements.append((node, []))

    def _leave(self, updated):
        _, todos = self._statements.pop()
        if not todos:
            return updated
        existing = {line.comment.value for line in updated.leading_lines if line.comment}
        added = [cst.EmptyLine(comment=cst.Comment(_TODO + todo)) for todo in todos
                 if _TODO + todo not in existing]
        return updated.with_changes(leading_lines=[*updated.leading_lines, *added])

    def visit_SimpleStatementLine(self, node):
        self._enter(node)

    def leave_SimpleStatementLine(self, original, updated):
        switch = self._graph_mode_switch(original)
        if switch:
            position = self.get_metadata(metadata.PositionProvider, original)
            self.switches.append(Note(position.start.line, position.start.column + 1, "TPC070",
                                      what=f"--estimator-to-tf2: {switch}() removed"))
            self._statements.pop()
            comment = cst.EmptyLine(comment=cst.Comment(_SWITCH_REMOVED.format(call=switch)))
            return cst.SimpleStatementLine(body=[cst.Pass()],
                                           leading_lines=[*updated.leading_lines, comment])
        return self._leave(updated)

    def _graph_mode_switch(self, line):
        """The dotted call of ``line`` when it is only a graph-mode switch, else None."""
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
            return None
        call = line.body[0].value
        if not isinstance(call, cst.Call) or call.args:
            return None
        if qualified_names(self, call.func) & _GRAPH_MODE_SWITCHES:
            return _dotted(call.func)
        return None

    def visit_ClassDef(self, node):
        # A custom tf.compat.v1.train.Optimizer (BERT's AdamWeightDecayOptimizer)
        # needs no TODO: CrossReplicaOptimizer gives its apply_gradients the
        # replicas' summed gradients, as CrossShardOptimizer did.
        self._enter(node)

    def leave_ClassDef(self, original, updated):
        return self._leave(updated)

    def visit_FunctionDef(self, node):
        self._enter(node)

    def leave_FunctionDef(self, original, updated):
        return self._leave(updated)

    # -- names ---------------------------------------------------------------------

    def _target(self, node):
        for name in qualified_names(self, node):
            if name in _RENAMES:
                return _RENAMES[name]
        return None

    def leave_Attribute(self, original, updated):
        target = self._target(original)
        if target is None:
            return updated
        position = self.get_metadata(metadata.PositionProvider, original)
        self.notes.append(Note(position.start.line, position.start.column + 1, target[1]))
        return cst.Attribute(value=cst.Name(DRIVER_MODULE), attr=cst.Name(target[0]))

    def visit_ImportFrom(self, node):
        module = _dotted(node.module) if node.module is not None else ""
        if module and isinstance(node.names, (list, tuple)) and any(
                f"{module}.{alias.name.value}" in _RENAMES for alias in node.names
                if isinstance(alias.name, cst.Name)):
            self._todo(node, "TPC070", f"`from {module} import ...` is not migrated: "
                                       f"use {DRIVER_MODULE}.<name> for these names")

    def visit_Call(self, node):
        target = self._target(node.func)
        if target is not None and target[0] == "TPUEstimatorSpec":
            for argument in node.args:
                if argument.keyword is not None and argument.keyword.value in _SPEC_TODOS:
                    self._todo(argument, "TPC071", _SPEC_TODOS[argument.keyword.value])
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and (
                func.value.value in self._estimators):
            method = func.attr.value
            # train's and evaluate's hooks run around each Session.run the era made (the
            # driver's); saving listeners do not
            refused = {"train": ("saving_listeners",)}
            for argument in node.args:
                if argument.keyword is not None and argument.keyword.value in refused.get(
                        method, ()):
                    self._todo(node, "TPC086",
                               f"{method}({argument.keyword.value}=...) is not migrated: "
                               f"TF 2 makes no Session.run calls for hooks")

    def visit_Assign(self, node):
        value = node.value
        if isinstance(value, cst.Call) and (self._target(value.func) or ("",))[0] == (
                "TPUStrategyEstimator"):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._estimators.add(target.target.value)


class _AddImport(cst.CSTTransformer):
    """``import tpu_estimator_tf2`` after the module's last top-level import."""

    def leave_Module(self, original, updated):
        statement = cst.parse_statement(f"import {DRIVER_MODULE}\n")
        for item in updated.body:
            if isinstance(item, cst.SimpleStatementLine) and any(
                    isinstance(s, cst.Import) and any(
                        _dotted(alias.name) == DRIVER_MODULE for alias in s.names)
                    for s in item.body):
                return updated
        body = list(updated.body)
        index = 0
        for position, item in enumerate(body):
            if is_import(item):
                index = position + 1
        body.insert(index, statement)
        return updated.with_changes(body=body)


# A call of TPUEstimator, by any spelling: the cheap test of "this run upgrades a
# TPUEstimator program" (the renames themselves go by qualified names).
_CONSTRUCTS_ESTIMATOR = re.compile(rb"\bTPUEstimator\s*\(")


def constructs_tpu_estimator(raw: bytes) -> bool:
    return _CONSTRUCTS_ESTIMATOR.search(raw) is not None


def migrate_text(text: str, helper: bool = False) -> Migrated:
    """The program's text with its TPUEstimator names pointed at the driver and
    its TODO lines added; unchanged (no notes) when it uses no TPUEstimator.

    ``helper``: the file is a module of a TPUEstimator program (the same upgrade
    holds the file that builds the estimator), as BERT's optimization.py, which
    wraps the optimizer in CrossShardOptimizer for run_pretraining.py's model_fn:
    its names are pointed at the driver too."""
    # In-line rewrites (the lines stay where they were). The wrapper needs no copy of
    # this parse, and resolves names without its idle passes; a pass that notes no
    # rewrite leaves the same code, so the next reuses its wrapper and metadata.
    rewrites = (keras_tf2.KerasForTF2(), contrib_tf2.ContribForTF2())
    wrapper = names_resolved(cst.parse_module(text))
    for rewrite in rewrites:
        module = wrapper.visit(rewrite)
        if rewrite.notes:
            wrapper = metadata.MetadataWrapper(module)
    migrator = _Migrator()
    migrated = wrapper.visit(migrator)
    renamed = [note for note in migrator.notes if not note.todo]
    if not any(note.rule == "TPC070" for note in renamed) and not (
            helper and (renamed or rewrites[1].notes)):
        return Migrated(text, [])
    migrated = migrated.visit(contrib_tf2.DropServedImports())
    if f"{DRIVER_MODULE}." in migrated.code:     # not for a guarded import's rewrite alone
        migrated = migrated.visit(_AddImport())
    notes = [Note(line, column, rule, what=what)
             for rewrite in rewrites for line, column, rule, what in rewrite.notes]
    return Migrated(migrated.code, sorted(migrator.notes + migrator.switches + notes,
                                          key=lambda n: (n.line, n.column)))


# `import tensorflow as tf` as a whole statement line (a program of TF 1.x).
_TF1_IMPORT = re.compile(r"^([ \t]*)import tensorflow as (\w+)[ \t]*(#.*)?$", re.M)


def tf1_imports(text):
    """(text, [line numbers]): each ``import tensorflow as tf`` of a TF 1.x program
    (one ``tpu-compat run --tf1`` ran) made ``import tensorflow.compat.v1 as tf``,
    as tf_upgrade_v2 did. The driver needs TF 2 behaviour in the process, which
    ``--tf1`` turns off for the whole process; compat.v1 keeps the program's
    TF 1 names (tf.flags, tf.train.Optimizer, tf.get_variable) with it on."""
    lines = [text.count("\n", 0, m.start()) + 1 for m in _TF1_IMPORT.finditer(text)]
    return _TF1_IMPORT.sub(lambda m: f"{m.group(1)}import tensorflow.compat.v1 as {m.group(2)}"
                           + (f"  {m.group(3)}" if m.group(3) else ""), text), lines


# `x.shape[-1].value`, `x.get_shape()[1].value`: a TF 1 Dimension's value, which under
# TF 2 behaviour (the driver's) is the int (or None) the index already gives.
_DIMENSION_VALUE = re.compile(r"(\.(?:shape|get_shape\(\))\[[^\[\]\n]+\])\.value\b")


def dimension_values(text):
    """(text, [line numbers]): each ``.shape[i].value`` made ``.shape[i]`` (``--tf1``)."""
    lines = [text.count("\n", 0, m.start()) + 1 for m in _DIMENSION_VALUE.finditer(text)]
    return _DIMENSION_VALUE.sub(r"\1", text), lines


def upgrade_file(path, max_bytes=None, helper=False, tf1=False):
    """``upgrade.upgrade_file`` with the TPUEstimator migration first."""
    try:
        raw = sources.read_bytes(path)
    except sources.SourceError:
        return upgrade.upgrade_file(path, max_bytes)
    return (upgrade_bytes(path, raw, max_bytes, helper, tf1)
            or upgrade.upgrade_bytes(path, raw, max_bytes))


def upgrade_bytes(path, raw, max_bytes=None, helper=False, tf1=False):
    """--estimator-to-tf2 first (issue 36): the TPUEstimator names pointed at the
    TF 2 driver written beside the file, then the ordinary upgrade of the result.
    None when the file uses no TPUEstimator (nor, as a ``helper`` module of one,
    its names) and ``tf1`` changes no import, or cannot be read: the ordinary
    upgrade reports that. ``tf1``: :func:`tf1_imports` first."""
    try:
        source = sources.source_from_bytes(path, raw)
    except sources.SourceError:
        return None
    if source.notebook:
        return None
    try:
        migrated = migrate_text(source.text, helper)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    # After the renames, which go by the names the program's TF 1 import gave.
    text, imports = tf1_imports(migrated.text) if tf1 else (migrated.text, [])
    text, values = dimension_values(text) if tf1 else (text, [])
    if not migrated.changed and not imports and not values:
        return None
    outcomes = [upgrade.Outcome(scan.Finding(path, line, 1, "TPC070", scan.HIGH), upgrade.REWRITTEN,
                                f"--estimator-to-tf2 --from-tf1: {what}", "")
                for lines, what in ((imports, "import tensorflow.compat.v1 as tf"),
                                    (values, "a shape index is its int, no .value"))
                for line in lines]
    outcomes += [upgrade.Outcome(scan.Finding(path, note.line, note.column, note.rule, scan.HIGH),
                        upgrade.TODO if note.todo else upgrade.REWRITTEN,
                        note.todo or note.what or "--estimator-to-tf2: the TF 2 driver's name",
                        note.todo)
                 for note in migrated.notes]
    rest = upgrade.upgrade_bytes(path, text.encode(source.encoding), max_bytes)
    if rest.error is not None:
        return upgrade.FileUpgrade(path, raw, None, [], rest.error)
    companions = {DRIVER_MODULE + ".py": driver_source()} if migrated.changed else {}
    return upgrade.FileUpgrade(path, raw, rest.output, outcomes + rest.outcomes,
                               companions=companions)
