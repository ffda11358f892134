"""The table of legacy TPU-strategy APIs: one record per legacy symbol or method.

This table is the single source of truth for everything that talks about a
legacy API:

* the runtime warnings: each record's :class:`Hook` names the code points
    where a use of the API can be seen at run time, and
    :mod:`tpu_compat.runtime.hooks` makes those code points warn (with the
    message :func:`tpu_compat.deprecation.warn_legacy` formats),
* ``tpu-compat matrix`` and the generated ``docs/compatibility.md``,
* the scanner's rules and the upgrader's rewrites (``tpu_compat.migrate``).

The table lives in two modules: :mod:`tpu_compat.legacy.schema` (what a record,
a hook and a rewrite are) and :mod:`tpu_compat.legacy.records` (the records).
This module is the table's one public name: it re-exports both, so code and
users keep writing ``legacy_api.get("TPC001")`` or ``legacy_api.RECORDS``.

Nothing here imports anything heavy; :func:`present_in_installed` imports
TensorFlow only when called.
"""

from tpu_compat.legacy.records import RECORDS, by_name, get
from tpu_compat.legacy.schema import (ERAS, HOOK_ARGUMENT, HOOK_ARGUMENT_OMITTED,
                                      HOOK_ATTRIBUTE, HOOK_CALL, HOOK_IMPORT, HOOK_KINDS,
                                      HOOK_NOT_OBSERVABLE, KIND_ARGUMENT, KIND_ATTRIBUTE,
                                      KIND_METHOD, KIND_SYMBOL, REWRITE_ADD_KEYWORD,
                                      REWRITE_KINDS, REWRITE_RENAME_KEYWORD,
                                      REWRITE_RENAME_METHOD, REWRITE_REPLACE_CALL,
                                      REWRITE_REPLACE_MODULE, REWRITE_REPLACE_SYMBOL, Hook,
                                      LegacyAPI, Rewrite, add_keyword, calls, imports,
                                      not_observable, omits, passes, present_in_installed,
                                      reads, rename_keyword, rename_method, replace_call,
                                      replace_module, replace_symbol)
# Issue 35's TPUStrategy-era rewrite kinds.
from tpu_compat.legacy.schema import (REWRITE_CALL_TO_METHOD, REWRITE_DROP_IMPORT,
                                      REWRITE_GRAPH_LOOP, REWRITE_KERAS_TPU_SCOPE,
                                      REWRITE_TF2_STRATEGY, REWRITE_VERSION_COMPARE,
                                      call_to_method, drop_import, graph_loop, keras_tpu_scope,
                                      tf2_strategy, version_compare)

# What `from tpu_compat.legacy_api import *` gave before the table was split
# (the other names above are importable by name, as they were).
__all__ = ["Hook", "LegacyAPI", "RECORDS", "Rewrite", "REWRITE_KINDS", "get", "by_name",
           "present_in_installed", "calls", "passes", "omits", "reads", "imports",
           "not_observable"]
