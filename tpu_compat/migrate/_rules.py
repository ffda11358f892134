"""The scanner's rules, indexed once from :mod:`tpu_compat.legacy_api`.

Everything a rule matches comes from a record (its ``name``, ``kind`` and
``symbols``); what is here on top is how to recognise the objects the rules
are about (strategies, their iterators) and the few conditions a record's
fields cannot say (``reduce`` without ``axis``, ``initialize`` on an iterator).
"""

import collections
import re

from tpu_compat import legacy_api
from tpu_compat.migrate import imports

METHOD_RULES = {r.name: r for r in legacy_api.RECORDS if r.kind == legacy_api.KIND_METHOD}
ATTRIBUTE_RULES = {r.name: r for r in legacy_api.RECORDS
                   if r.kind == legacy_api.KIND_ATTRIBUTE}
ARGUMENT_RULES = collections.defaultdict(list)
for _record in legacy_api.RECORDS:
    if _record.kind == legacy_api.KIND_ARGUMENT:
        ARGUMENT_RULES[_record.name].append(_record)
del _record
SYMBOL_RULES = {imports.module_path(symbol): r for r in legacy_api.RECORDS
                if r.kind == legacy_api.KIND_SYMBOL for symbol in r.symbols}
# Modules whose every import is legacy: the targets of the table's import
# hooks (TPC020 tensorflow.python.keras, TPC100 tensorflow.contrib). An
# import statement of one of them, or of a module below it, that no symbol
# rule names is reported with that record.
IMPORT_PREFIX_RULES = {target: r for r in legacy_api.RECORDS
                       if r.hook.kind == legacy_api.HOOK_IMPORT for target in r.hook.targets}


def import_rule(path):
    """The record an import of the dotted ``path`` is reported with, or None."""
    record = SYMBOL_RULES.get(path)
    if record is not None:
        return record
    for prefix, record in IMPORT_PREFIX_RULES.items():
        if path == prefix or path.startswith(prefix + "."):
            return record
    return None


# `reduce(op, value)` is legacy only without an axis (TPC002 is about the
# missing argument, not the method).
REDUCE_WITHOUT_AXIS = legacy_api.get("TPC002")
# `initialize()` is legacy only on the iterators these methods return.
ITERATOR_INITIALIZE = legacy_api.get("TPC018")
ITERATOR_FACTORIES = frozenset(legacy_api.get(rule).name for rule in ("TPC009", "TPC010"))
# Names that hold an input iterator by convention: iterator, train_iterator,
# self._eval_iterator, input_iter (TPC018 on a receiver not traced to a factory).
ITERATOR_NAME = re.compile(r"_*(?:\w+_)?iter(?:ator)?")
# Method names so common elsewhere (functools.reduce, inspect.unwrap, any
# object's initialize) that only a known strategy or iterator makes them ours.
KNOWN_RECEIVER_ONLY = frozenset(legacy_api.get(rule).name
                                 for rule in ("TPC002", "TPC015", "TPC018"))

# The last component of every legacy symbol path (candidates for symbol rules).
SYMBOL_LAST_NAMES = frozenset(path.rsplit(".", 1)[-1] for path in SYMBOL_RULES)
# TPC001, whose rename must keep `fn` valid under TF 2.21 (see upgrade).
RUN_V2 = legacy_api.get("TPC001")
# TPC007 also covers a positional steps_per_run: always for the TF 1.x class,
# and for the experimental name when tpu_compat.tpu_strategy_args says so.
STEPS_PER_RUN = legacy_api.get("TPC007")
STEPS_PER_RUN_READ = legacy_api.get("TPC008")
V1_TPU_STRATEGY = frozenset(imports.module_path(s) for s in legacy_api.get("TPC017").symbols)
STEPS_PER_RUN_CALLEES = V1_TPU_STRATEGY | frozenset(
    imports.module_path(s) for s in legacy_api.get("TPC005").symbols)
# tf.function, under each name TF 1.15-2.21 exports it.
TF_FUNCTION_PATHS = frozenset({"tensorflow.function", "tensorflow.compat.v1.function",
                               "tensorflow.compat.v2.function"})
# Calls that make a TF 1.x program run in graph mode.
GRAPH_MODE_SWITCHES = frozenset({"tensorflow.compat.v1.disable_eager_execution",
                                 "tensorflow.compat.v1.disable_v2_behavior"})

# Method names no other library uses: a call is the legacy API whatever the
# receiver (`estimator.export_savedmodel(...)`, `tpu_model.sync_to_cpu()`;
# estimators and Keras TPU models are not tracked like strategies).
DISTINCTIVE_METHODS = frozenset(legacy_api.get(rule).name for rule in ("TPC083", "TPC162"))


# Names that hold a strategy by convention: strategy, tpu_strategy,
# self._distribution_strategy, ...; `distribution` only as a parameter (it is
# also a common name for probability distributions).
STRATEGY_NAME = re.compile(r"_*(?:\w+_)?strategy")
STRATEGY_PARAMETER_NAMES = frozenset({"distribution"})
# Classes that annotate a strategy (or its .extended, which carries
# the legacy extended methods).
STRATEGY_CLASS = re.compile(r"\w*Strategy(?:Extended)?(?:V[12])?")
# Callables whose result is a strategy: any TensorFlow (or tpu_compat)
# *Strategy class, and the functions returning the current strategy.
STRATEGY_CONSTRUCTOR = re.compile(r"\w*Strategy(?:V[12])?")
STRATEGY_GETTERS = frozenset({"get_strategy", "get_cross_replica_context"})
STRATEGY_LIBRARIES = ("tensorflow", "tpu_compat")

