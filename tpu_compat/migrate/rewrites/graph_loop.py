"""``graph_loop``: TF 1.15's graph-mode input loop in its TF 2.21 graph-mode form.

In a module that runs a graph (it disables eager execution or names a
``tf.Session``), keeping the program's structure, session loop and numbers:

* ``it = strategy.make_dataset_iterator(ds)`` (TPC009) ->
  ``it = strategy.experimental_distribute_dataset(ds).make_initializable_iterator()``;
* ``strategy.experimental_run(fn, it)`` (TPC011) ->
  ``strategy.run(fn, args=(it.get_next(),))``: TF 1.15's ``experimental_run``
  called ``fn`` on each replica with the iterator's next element
  (tensorflow/python/distribute/distribute_lib.py, r1.15, ``StrategyV1.experimental_run``
  and ``_call_for_each_replica``), which is ``run``'s ``args=(next element,)``;
* ``sess.run(it.initialize())`` (TPC018) -> ``sess.run(it.initializer)``: the
  same initializer ops, grouped (TF 1.15's own deprecation says to use it);
* ``strategy.extended.call_for_each_replica(fn, args, kwargs)`` (TPC019) ->
  ``strategy.run(fn, args, kwargs)``: the same parameters, and in a graph
  both call ``fn`` once per replica in the strategy's replica context (r1.15
  distribute_lib.py ``StrategyExtendedV1.call_for_each_replica``; TF 2.21's
  ``run`` of a strategy in graph mode is that call, autograph-converted);
* ``strategy.extended.experimental_run_steps_on_iterator(...)`` (TPC012) ->
  a helper written into the module (``_steps_loop``).

Not in a graph program (eager code has no initializable iterator), or with
arguments this cannot place, the TODO stays.
"""

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate.rewrites import _steps_loop
from tpu_compat.migrate.rewrites._edit import Edit, arguments_by_name

__all__ = ["KIND", "plan"]

KIND = legacy_api.REWRITE_GRAPH_LOOP
_STEPS_ON_ITERATOR = "TPC012"


def plan(planner, finding, rewrite):
    del rewrite
    site = finding.site
    if not site.graph:
        return "not a graph program (no tf.Session, eager not disabled): use the TF 2 loop"
    call = site.call
    if call is None or site.starred or call.func is not site.node:
        return "a reference, not a call"
    name = finding.record.name
    if name == "make_dataset_iterator":
        return _plan_iterator(planner, finding, call)
    if name == "experimental_run":
        return _plan_run(planner, finding, call)
    if name == "experimental_run_steps_on_iterator":
        return _steps_loop.plan(planner, finding, KIND)
    if name == "call_for_each_replica":
        return _plan_call_for_each_replica(planner, finding, call)
    if call.args:
        return "initialize() with arguments"
    planner.edit(finding, Edit(call, cst.Call, _initializer, KIND))
    return None


def _only(call, names):
    """The call's arguments by parameter ``names``, all of them, or None."""
    placed = arguments_by_name(call, names)
    return placed if placed is not None and set(placed) == set(names) else None


def _plan_iterator(planner, finding, call):
    # TF 1.15: make_dataset_iterator(self, dataset).
    if _only(call, ("dataset",)) is None:
        return "only make_dataset_iterator(dataset) is rewritten"
    planner.edit(finding, Edit(call, cst.Call, _iterator, KIND))
    return None


def _plan_run(planner, finding, call):
    # TF 1.15: experimental_run(self, fn, input_iterator=None).
    placed = _only(call, ("fn", "input_iterator"))
    if placed is None:
        return "only experimental_run(fn, iterator) is rewritten"
    if not finding.site.receiver_pure:
        return "the receiver is an expression whose evaluation would move"
    planner.edit(finding, Edit(call, cst.Call, _run, KIND))
    return None


def _plan_call_for_each_replica(planner, finding, call):
    # TF 1.15: call_for_each_replica(self, fn, args=(), kwargs=None), run's first three.
    if arguments_by_name(call, ("fn", "args", "kwargs")) is None:
        return "only call_for_each_replica(fn, args, kwargs) is rewritten"
    receiver = finding.site.node.value
    if not (isinstance(receiver, cst.Attribute) and receiver.attr.value == "extended"
            and finding.site.receiver_pure):
        return "the receiver is not `<strategy>.extended`"
    if any(f.rule == _STEPS_ON_ITERATOR and _steps_loop.problem(planner, f)
           for f in planner.findings):
        # A step function of TF 1.15's TPU loop ran inside tpu.replicate, where
        # call_for_each_replica only entered the replica context: `run` would
        # replicate again. Only with the loop rewritten is `fn` cross-replica.
        return "the module's experimental_run_steps_on_iterator keeps its TODO"
    planner.edit(finding, Edit(finding.site.node, cst.Attribute, _strategy_run, KIND))
    return None


def _strategy_run(original, updated):
    """``S.extended.call_for_each_replica`` -> ``S.run``."""
    del original
    return cst.Attribute(updated.value.value, cst.Name("run"))


def _iterator(original, updated):
    del original
    distributed = updated.with_changes(
        func=updated.func.with_changes(attr=cst.Name("experimental_distribute_dataset")),
        args=[arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
              for arg in updated.args])
    return cst.Call(cst.Attribute(distributed, cst.Name("make_initializable_iterator")),
                    lpar=updated.lpar, rpar=updated.rpar)


def _run(original, updated):
    """``strategy.experimental_run(fn, it)`` -> ``strategy.run(fn, args=(it.get_next(),))``."""
    del original
    fn = next(arg.value for index, arg in enumerate(updated.args)
              if (arg.keyword is None and index == 0)
              or (arg.keyword is not None and arg.keyword.value == "fn"))
    iterator = next(arg.value for arg in updated.args if arg.value is not fn)
    element = cst.Call(cst.Attribute(iterator, cst.Name("get_next")))
    args = cst.Tuple([cst.Element(element, comma=cst.Comma())])
    return updated.with_changes(
        func=updated.func.with_changes(attr=cst.Name("run")),
        args=[cst.Arg(fn, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
              cst.Arg(args, keyword=cst.Name("args"),
                      equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                            cst.SimpleWhitespace("")))])


def _initializer(original, updated):
    del original
    return cst.Attribute(updated.func.value, cst.Name("initializer"),
                         lpar=updated.lpar, rpar=updated.rpar)
