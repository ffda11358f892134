"""``tpu-compat upgrade``'s rewrites: one module per ``rewrite=`` kind of the table.

Each module holds one kind's ``KIND`` (the table's name for it, from
:mod:`tpu_compat.legacy_api`), its ``plan(planner, finding, rewrite)`` and the
edits it plans: a plan either calls ``planner.edit(finding, Edit(...))`` and
returns None, or returns why the finding needs a person (a TODO's detail, or
``(detail, note)`` when the note goes into the TODO comment). The planner
(``migrate/upgrade.py``) offers ``edit``, ``edit_of(site)`` and
``blocked(call)``.

A new rewrite kind is a ``REWRITE_*`` name and builder in
``tpu_compat/legacy/schema.py`` and a module here, added to ``KINDS``;
tests/test_migrate_upgrade.py checks that the two lists agree.
"""

from tpu_compat.migrate.rewrites import (add_keyword, rename_keyword, rename_method,
                                         replace_call, replace_module, replace_symbol)
# Issue 35's TPUStrategy-era kinds.
from tpu_compat.migrate.rewrites import (call_to_method, drop_import, graph_loop, keras_tpu_scope,
                                         tf2_strategy)
# The era's non-TensorFlow APIs (distutils' version classes).
from tpu_compat.migrate.rewrites import version_compare
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["Edit", "KINDS", "plan"]

# The table's rewrite kind -> the module that plans and edits it.
KINDS = {module.KIND: module for module in (rename_method, add_keyword, replace_call,
                                             replace_symbol, rename_keyword,
                                             replace_module)}
KINDS.update({module.KIND: module for module in (drop_import, tf2_strategy, call_to_method,
                                                  graph_loop, version_compare, keras_tpu_scope)})


def plan(planner, finding):
    """Plans ``finding``'s rewrite as its record says; None or why a person is needed."""
    rewrite = finding.record.rewrite
    return KINDS[rewrite.kind].plan(planner, finding, rewrite)
