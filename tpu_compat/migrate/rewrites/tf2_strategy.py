"""``tf2_strategy``: the TF 1.15 ``TPUStrategy`` built for Keras becomes TF 2's.

``strategy = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=100)``
under ``import tensorflow.compat.v1 as tf`` (TPC017, with TPC007) ->
``strategy = tf.compat.v2.distribute.TPUStrategy(resolver)``, when the object is
used only for what Keras needs from it: ``strategy.scope()`` around the
model's construction and compile, and ``strategy.num_replicas_in_sync``.

Why that is the same program: Keras (``fit``/``evaluate``/``predict``) under
either class computes the same numbers on the same replicas; the TF 1.15
class's ``steps_per_run`` only set how many steps one host call ran (TF 1.15's
keras/engine/training_distributed.py, ``experimental_tpu_fit_loop``), not what
they computed. tf_keras' graph-mode Keras (``--tf1``, ``disable_v2_behavior``)
accepts TF 2's class and has no ``steps_per_execution``, so ``steps_per_run``
goes rather than becoming one. A TF 1.x graph program's loop on the object
(``make_dataset_iterator``, ``experimental_run``, ``reduce``) counts too once
``graph_loop`` rewrote all of it (the file is written only with all of it):
TF 2's class runs that graph-mode form with the same numbers, and so do the
step's ``experimental_run_v2`` (renamed ``run``) and the loop's
``iterations=strategy.steps_per_run`` (replaced by its value, _steps_loop)
when rewritten with it. Any other use (another ``extended`` or
``steps_per_run`` read, passing the strategy on) keeps the TODO.
"""

import functools

import libcst as cst

from tpu_compat import legacy_api
from tpu_compat.migrate import _rules, imports
from tpu_compat.migrate.rewrites._edit import Edit

__all__ = ["KIND", "plan", "KERAS_USES"]

KIND = legacy_api.REWRITE_TF2_STRATEGY

# What Keras programs do with their strategy, the same on both classes.
KERAS_USES = frozenset({("scope", True), ("num_replicas_in_sync", False)})
# TF 1.15's TPUStrategy(tpu_cluster_resolver=None, steps_per_run=None,
# device_assignment=None) (tensorflow/python/distribute/tpu_strategy.py, r1.15),
# and what each argument becomes in TF 2's TPUStrategy(tpu_cluster_resolver=None,
# experimental_device_assignment=None): None means it goes.
# The graph-mode loop of the TF 1.15 class, once graph_loop rewrote it: what
# the object is then used for, all of which TF 2's class has (in graph mode).
_GRAPH_LOOP_RULES = frozenset({"TPC009", "TPC011", "TPC012", "TPC018", "TPC019"})
# Uses that go with such a loop, rewritten with it or away: the step's
# experimental_run_v2 (TPC001, renamed `run`) and the strategy's steps_per_run
# read as the loop's `iterations` (TPC008, replaced by its value, _steps_loop).
_WITH_THE_LOOP_RULES = frozenset({"TPC001", "TPC008"})
_LOOP_USES = frozenset({("experimental_distribute_dataset", True), ("make_dataset_iterator", True),
                        ("experimental_run", True), ("run", True), ("reduce", True),
                        ("experimental_local_results", True), ("unwrap", True),
                        ("group", True), ("experimental_run_v2", True),
                        ("steps_per_run", False)})
# `strategy.extended` is read by the multi-step loop and call_for_each_replica
# (TPC012, TPC019), which graph_loop rewrites away, and as the loop's
# `extended.steps_per_run` (TPC008); any other read keeps the TODO.
_EXTENDED_RULES = frozenset({"TPC008", "TPC012", "TPC019"})
_V1 = "tensorflow.compat.v1"
_EXPERIMENTAL, _V1_CLASS = "TPC005", "TPC017"  # tf.distribute.experimental's and compat.v1's
_PARAMETERS = ("tpu_cluster_resolver", "steps_per_run", "device_assignment")
_NEW_KEYWORD = {"tpu_cluster_resolver": "tpu_cluster_resolver", "steps_per_run": None,
                "device_assignment": "experimental_device_assignment"}


def plan(planner, finding, rewrite):
    site = finding.site
    call = site.call
    if site.kind != "symbol" or call is None or call.func is not site.node:
        return "a reference, not a construction (isinstance checks and aliases need review)"
    if site.result_uses is None:
        return "the strategy is not assigned to a name whose uses can be followed"
    other = sorted({use for use in site.result_uses if use not in KERAS_USES},
                   key=str)
    loop = [f for f in planner.findings if f.rule in _GRAPH_LOOP_RULES]
    if loop:
        loop += [f for f in planner.findings if f.rule in _WITH_THE_LOOP_RULES]
    if other and loop and all(planner.edit_of(f.site) is not None for f in loop):
        # The graph-mode loop was rewritten to what TF 2's class has.
        other = [use for use in other if use not in _LOOP_USES]
        if ("extended", False) in other and _extended_only_in(site, loop):
            other.remove(("extended", False))
    else:
        loop = []
    if other:
        used = ", ".join(f".{a}" if a else "passed or rebound" for a, _ in other)
        return (f"the strategy is used beyond Keras' scope() and num_replicas_in_sync "
                f"({used}): its training loop needs the TF 2 form first")
    arguments = _arguments(call)
    if arguments is None:
        return "arguments other than the resolver, steps_per_run and device_assignment"
    others = [f for f in planner.findings if f is not finding and f.site is not None
              and f.site.call is call]
    if any(f.rule != _rules.STEPS_PER_RUN.rule for f in others):
        return "other arguments of this call need a manual change first"
    target = imports.module_path(rewrite.to)
    root = site.written.split(".", 1)[0]
    visible = dict(site.visible)
    if site.root_path:
        visible[root] = site.root_path
    # The TF 1.15 class means a TF 1.x program, whose `import tensorflow` is
    # compat.v1 when it runs (`tpu-compat run --tf1`): spell the class as
    # `tf.compat.v2.distribute.TPUStrategy`, which both bindings have.
    visible = {name: _V1 if path == "tensorflow" else path for name, path in visible.items()}
    spelled = imports.spell(target, visible, prefer=(root,), through_v2=True)
    if spelled is None:
        return f"cannot name {imports.table_name(target)} from this module's imports"
    edit = Edit(call, cst.Call, functools.partial(_construct, spelled, arguments), KIND,
                requires=tuple(planner.edit_of(f.site).node for f in loop) or None)
    planner.edit(finding, edit)
    for steps in others:
        planner.cover(steps, edit, "steps_per_run dropped: TF 2's class computes the same without it")
    return None


def _extended_only_in(site, loop):
    """Whether every ``name.extended`` of the strategy's name is the receiver of
    one of the rewritten ``loop`` findings (so none is left on TF 2's class)."""
    name = site.statement.body[0].targets[0].target.value
    receivers = sum(1 for f in loop if f.rule in _EXTENDED_RULES
                    and isinstance(f.site.node.value, cst.Attribute)
                    and isinstance(f.site.node.value.value, cst.Name)
                    and f.site.node.value.value.value == name)
    return site.result_uses.count(("extended", False)) == receivers


def after_its_loop(finding):
    """Sort key: the TF 1.15 class's constructors (this kind's, and the
    experimental name given ``steps_per_run``) are planned after the other
    findings of the module (its graph-mode loop), arguments aside."""
    rewrite = finding.record.rewrite
    return bool(rewrite is not None and rewrite.kind == KIND) or finding.rule == _EXPERIMENTAL


def steps_only(planner, finding):
    """Whether ``finding``'s call has ``steps_per_run`` (TPC007) findings and no other."""
    others = [f for f in planner.findings if f is not finding and f.site is not None
              and f.site.call is finding.site.call]
    return bool(others) and all(f.rule == _rules.STEPS_PER_RUN.rule for f in others)


def plan_tf1_class(planner, finding):
    """Plans the experimental name called with ``steps_per_run`` (the TF 1.15
    class by its arguments) as this kind does the compat.v1 name."""
    return plan(planner, finding, legacy_api.get(_V1_CLASS).rewrite)


def _arguments(call):
    """``[(index of the call's arg, new keyword or "" to keep positional)]`` for
    the arguments TF 2's class keeps; None when one cannot be placed."""
    kept = []
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(_PARAMETERS):
                return None
            name, keyword = _PARAMETERS[index], ""
        else:
            name = keyword = arg.keyword.value
        if name not in _NEW_KEYWORD:
            return None
        new = _NEW_KEYWORD[name]
        if new is None:
            continue
        if keyword or index > 0:  # after a dropped positional, only keywords are safe
            keyword = new
        kept.append((index, keyword))
    return kept


def _construct(callee, arguments, original, updated):
    del original
    args = []
    for index, keyword in arguments:
        arg = updated.args[index]
        if keyword and (arg.keyword is None or arg.keyword.value != keyword):
            arg = arg.with_changes(keyword=cst.Name(keyword),
                                   equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                         cst.SimpleWhitespace("")))
        args.append(arg)
    if args:
        args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
    return updated.with_changes(func=cst.parse_expression(callee), args=args)
