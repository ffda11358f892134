"""The before/after checks the rewrite tests share (tests/test_migrate_*.py).

Each rewrite kind's test file lists its cases as data, ``(before, after)`` for
a rewrite and ``(before, rule, why)`` for a TODO; these functions make the
checks every such case needs, so a file says only what is particular to it.
Pure Python (libcst): no TensorFlow, so the TF-free lane runs them too.
"""

from tpu_compat.migrate import upgrade

__all__ = ["upgraded", "assert_rewritten", "assert_todo"]


def upgraded(source, path="snippet.py"):
    """``(text, outcomes)``: what ``tpu-compat upgrade`` makes of ``source`` (the
    text as it was when nothing changed), and its outcome for each finding."""
    result = upgrade.upgrade_bytes(path, source.encode("utf-8"))
    assert result.error is None, result.error
    return result.output.decode("utf-8"), result.outcomes


def assert_rewritten(before, after):
    """``before`` upgrades to exactly ``after`` with every finding rewritten, and
    ``after`` has nothing legacy left (a second run finds and changes nothing).
    Returns the outcomes."""
    out, outcomes = upgraded(before)
    assert out == after
    assert {o.action for o in outcomes} == {upgrade.REWRITTEN}, outcomes
    assert upgraded(out) == (out, [])
    return outcomes


def assert_todo(before, rule, why):
    """``before``'s ``rule`` findings all get a TODO, one of them saying ``why``;
    the file gets that rule's TODO line, and a second run changes nothing.
    Returns the upgraded text and all the outcomes."""
    out, outcomes = upgraded(before)
    mine = [o for o in outcomes if o.finding.rule == rule]
    assert mine and all(o.action == upgrade.TODO for o in mine), outcomes
    assert any(why in o.detail for o in mine), [o.detail for o in mine]
    assert f"# TODO(tpu_compat): {rule} " in out
    assert upgraded(out)[0] == out
    return out, outcomes
