"""tf.contrib modules of a TPUEstimator program that have a TF 2 form under the
driver (``--estimator-to-tf2``); the ordinary upgrade leaves each a TPC100 TODO, and a
strict run stops at the import.

* ``from tensorflow.contrib import summary``, used in ``host_call`` (the TPU trainers
  of TF 1.13, tensorflow/tpu's resnet_main.py at ed449e1): TF 1.15's contrib.summary
  re-exported summary_ops_v2, whose ``create_file_writer``, ``scalar`` and
  ``histogram`` TF 2 has as ``tf.summary`` with the same positional arguments, and
  whose ``always_record_summaries()`` is ``record_if(True)`` and ``all_summary_ops()``
  ``tf.compat.v1.summary.all_v2_summary_ops()`` (the driver's ``all_summary_ops``). The driver runs
  ``host_call`` eagerly-traced in TF 2, where those work; tensorflow/tpu made this
  same change to resnet_main.py in 2020 (``tf2.summary``, ``record_if(True)``).
  Rewritten only when every use is one of those (no ``family``, contrib's third
  positional argument, which TF 2's functions do not have).
* a contrib import in a ``try`` with ``except ImportError`` (a path the program
  itself marks "not supported in TensorFlow 2.x"): ``raise ImportError(...)``, as TF 2
  raises there, so the program's handler runs (:class:`ContribForTF2`).
* ``from tensorflow.contrib.tpu.python.tpu import async_checkpoint`` and
  ``from tensorflow.contrib.training.python.training import evaluation``: their
  names (AsyncCheckpointSaverHook, checkpoints_iterator) are the driver's, as are
  AutoAugment's ``contrib.image`` transform/rotate/translate and
  ``contrib.training.HParams`` (keyword values read as attributes)
  (to_tf2's renames); :class:`DropServedImports` then removes an import none of
  whose names is still used.
"""

from typing import List, Tuple

import libcst as cst
from libcst import metadata

from tpu_compat.migrate.analysis import dotted as _dotted, qualified_names

__all__ = ["DropServedImports", "RENAMES", "SERVED_MODULES", "ContribForTF2"]

_CONTRIB_SUMMARY = "tensorflow.contrib.summary"
# contrib.summary's names with a TF 2 form (the same name in tf.summary, but
# always_record_summaries and all_summary_ops: ContribForTF2.leave_Call): the most
# positional arguments whose meaning is the same (None: all).
_SAME_IN_TF2 = {"create_file_writer": None, "scalar": 2, "histogram": 2,
                "always_record_summaries": 0, "all_summary_ops": 0}
_ALL_SUMMARY_OPS = ("--estimator-to-tf2: contrib.summary.all_summary_ops() is "
                    "tf.compat.v1.summary.all_v2_summary_ops() (the driver's all_summary_ops)")
_SUMMARY_IMPORT = ("--estimator-to-tf2: contrib.summary is tf.compat.v2.summary "
                   "(host_call runs in TF 2 under the driver)")
_ALWAYS_RECORD = "--estimator-to-tf2: contrib.summary.always_record_summaries() is record_if(True)"

# The names to_tf2 points at the driver: AsyncCheckpointSaverHook sets the driver's
# checkpoint saving; checkpoints_iterator is TF 1.15 core's.
RENAMES = {
    "tensorflow.contrib.tpu.python.tpu.async_checkpoint.AsyncCheckpointSaverHook": (
        "AsyncCheckpointSaverHook", "TPC100"),
    "tensorflow.contrib.training.python.training.evaluation.checkpoints_iterator": (
        "checkpoints_iterator", "TPC111"),
    "tensorflow.contrib.training.checkpoints_iterator": ("checkpoints_iterator", "TPC111"),
    # AutoAugment's (autoaugment.py of the TPU trainers): its image ops and HParams
    **{f"tensorflow.contrib.image.{name}": (f"image_{name}", "TPC100")
       for name in ("transform", "rotate", "translate")},
    "tensorflow.contrib.training.HParams": ("HParams", "TPC068"),
}
_GUARDED_IMPORT = ("--estimator-to-tf2: a tensorflow.contrib import under `except ImportError` "
                   "raises the ImportError TF 2 raises (the program's own handler runs)")
_TF2_IMPORT_ERROR = ("No module named 'tensorflow.contrib' ({module}: TF 2 has no tf.contrib; "
                     "upgrade --estimator-to-tf2)")

# contrib modules all of whose names a program uses are the driver's.
SERVED_MODULES = ("tensorflow.contrib.tpu.python.tpu.async_checkpoint",
                  "tensorflow.contrib.training.python.training.evaluation",
                  "tensorflow.contrib.image", "tensorflow.contrib.training")
_SERVED_IMPORT_REMOVED = ("# tpu_compat: `from {module} import {names}` removed "
                          "(upgrade --estimator-to-tf2): its names are tpu_estimator_tf2's")


class _SummaryUses(cst.CSTVisitor):
    """Whether every use of contrib.summary is one TF 2's tf.summary has unchanged."""

    METADATA_DEPENDENCIES = (metadata.QualifiedNameProvider,)

    def __init__(self):
        super().__init__()
        self.supported = True
        self._calls = set()      # the func nodes of checked calls

    def visit_ImportFrom(self, node):
        return False            # the import itself is not a use

    def visit_Call(self, node):
        for name in qualified_names(self, node.func):
            short = name[len(_CONTRIB_SUMMARY) + 1:] if name.startswith(
                _CONTRIB_SUMMARY + ".") else None
            if short in _SAME_IN_TF2:
                self._calls.add(node.func)
                positional = [a for a in node.args if a.keyword is None]
                limit = _SAME_IN_TF2[short]
                if any(a.keyword is not None and a.keyword.value == "family" for a in node.args) \
                        or (limit is not None and len(positional) > limit):
                    self.supported = False

    def visit_Attribute(self, node):
        if node in self._calls:
            return False        # a checked call's function: its `summary` is fine
        # a direct member (`summary.image`) outside a checked call; a deeper name
        # (`summary.create_file_writer(d).as_default`) is its call's, checked there
        if any(n.startswith(_CONTRIB_SUMMARY + ".") and "." not in n[len(_CONTRIB_SUMMARY) + 1:]
               for n in qualified_names(self, node)):
            self.supported = False
            return False
        return True

    def visit_Name(self, node):
        if _CONTRIB_SUMMARY in qualified_names(self, node):     # the module itself, passed on
            self.supported = False


def _catches_import_error(handler):
    """Whether ``except ...`` catches the ImportError of a missing module."""
    kind = handler.type
    kinds = [element.value for element in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    return kind is None or any(_dotted(k) in _IMPORT_ERRORS for k in kinds)


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _contrib_import(statement):
    """The contrib module a one-import line imports (not one the driver serves), or None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    node = statement.body[0]
    if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        module = _dotted(node.module)
        names = [_dotted(a.name) for a in node.names] if isinstance(node.names, (list, tuple)) \
            else []
    elif isinstance(node, cst.Import) and len(node.names) == 1:
        module, names = _dotted(node.names[0].name), []
    else:
        return None
    if module != "tensorflow.contrib" and not module.startswith("tensorflow.contrib."):
        return None
    if any(f"{module}.{name}" in SERVED_MODULES for name in names):
        return None
    return f"{module}.{names[0]}" if module == "tensorflow.contrib" and len(names) == 1 \
        else module


class ContribForTF2(cst.CSTTransformer):
    """The summary rewrite, and each contrib import a ``try`` guards with ``except
    ImportError`` made the ImportError TF 2 raises there (mnasnet_main.py's
    ``from tensorflow.contrib import quantize``, the trainers' ``contrib.cloud``
    BigtableClient: their handlers log "not supported in TensorFlow 2.x" and re-raise;
    under tpu_compat's run the import would succeed or stop a strict run instead).
    ``notes``: (line, column, rule, what), input positions (each rewrite stays on its
    line)."""

    METADATA_DEPENDENCIES = (metadata.QualifiedNameProvider, metadata.PositionProvider)

    def __init__(self):
        super().__init__()
        self.notes: List[Tuple[int, int, str, str]] = []
        self._rewrite = False

    def visit_Module(self, node):
        uses = _SummaryUses()
        metadata.MetadataWrapper(node, unsafe_skip_copy=True).visit(uses)
        self._rewrite = uses.supported

    def _note(self, node, rule, what):
        position = self.get_metadata(metadata.PositionProvider, node)
        self.notes.append((position.start.line, position.start.column + 1, rule, what))

    def leave_Try(self, original, updated):
        if not any(_catches_import_error(handler) for handler in original.handlers):
            return updated
        body = list(updated.body.body)
        for index, statement in enumerate(original.body.body):
            module = _contrib_import(statement)
            if module is None:
                continue
            self._note(statement, "TPC100", _GUARDED_IMPORT)
            body[index] = cst.parse_statement(
                f"raise ImportError({_TF2_IMPORT_ERROR.format(module=module)!r})\n").with_changes(
                    leading_lines=body[index].leading_lines)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def leave_ImportFrom(self, original, updated):
        module = _dotted(original.module) if original.module is not None else None
        if (not self._rewrite or module != "tensorflow.contrib"
                or not isinstance(original.names, (list, tuple))
                or [a.name.value for a in original.names if isinstance(a.name, cst.Name)]
                != ["summary"]):
            return updated
        self._note(original, "TPC100", _SUMMARY_IMPORT)
        return updated.with_changes(module=cst.parse_expression("tensorflow.compat.v2"))

    def leave_Call(self, original, updated):
        if not self._rewrite or not isinstance(updated.func, cst.Attribute):
            return updated
        names = qualified_names(self, original.func)
        if f"{_CONTRIB_SUMMARY}.always_record_summaries" in names:
            self._note(original, "TPC120", _ALWAYS_RECORD)
            return updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name("record_if")),
                args=[cst.Arg(cst.Name("True"))])
        if f"{_CONTRIB_SUMMARY}.all_summary_ops" in names:
            self._note(original, "TPC121", _ALL_SUMMARY_OPS)
            return updated.with_changes(func=cst.Attribute(
                value=cst.Name("tpu_estimator_tf2"), attr=cst.Name("all_summary_ops")))
        return updated


class DropServedImports(cst.CSTTransformer):
    """Removes ``from <served module> import x`` when ``x`` is no longer used (every
    use renamed to the driver's); the line becomes a comment and ``pass``, as the
    driver's other removals. ``removed``: the modules removed."""

    def __init__(self):
        super().__init__()
        self.removed: List[str] = []
        self._used = set()

    def visit_Module(self, node):
        used = set()

        class _Uses(cst.CSTVisitor):
            def visit_ImportFrom(self, node):
                return False

            def visit_Name(self, node):
                used.add(node.value)
        node.visit(_Uses())
        self._used = used

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        statement = updated.body[0]
        module = _dotted(statement.module) if statement.module is not None else None
        if module is None or not isinstance(statement.names, (list, tuple)) or any(
                f"{module}.{_dotted(alias.name)}" not in SERVED_MODULES
                for alias in statement.names):
            return updated
        bound = [(alias.asname.name if alias.asname else alias.name) for alias in statement.names]
        if not all(isinstance(b, cst.Name) for b in bound) or any(
                b.value in self._used for b in bound):
            return updated
        names = ", ".join(_dotted(alias.name) for alias in statement.names)
        self.removed.append(f"{module}.{names}")
        comment = cst.EmptyLine(comment=cst.Comment(
            _SERVED_IMPORT_REMOVED.format(module=module, names=names)))
        return cst.SimpleStatementLine(body=[cst.Pass()],
                                       leading_lines=[*updated.leading_lines, comment])
