"""Whether every TODO line upgrade would write is in the module already.

A second run of ``upgrade`` (its own second pass over a file it changed, or a
user re-running it on an upgraded tree) plans the same TODOs and no edit: the
lines are there, so the rewrite would give back the text unchanged. Telling
that from the statements' comments skips libcst's rebuild and code generation
of the whole module, about a third of a run's time on such files. The test is
the one ``upgrade._Rewriter`` applies before adding a line.
"""

__all__ = ["all_written"]


def all_written(module, todos, prefix):
    """Whether each of the ``todos`` (upgrade Outcomes) has its ``prefix + rule``
    comment line above its statement already (a first statement's above-lines
    are the module's header to libcst)."""
    first = module.body[0] if module.body else None
    for outcome in todos:
        statement = outcome.finding.site.statement
        if statement is None:
            return False
        lines = list(statement.leading_lines)
        if statement is first:
            lines += module.header
        marker = prefix + outcome.finding.rule
        if not any(line.comment is not None and (line.comment.value == marker or
                                                 line.comment.value.startswith(marker + " "))
                   for line in lines):
            return False
    return True
