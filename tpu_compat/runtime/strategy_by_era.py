"""``tf.distribute.experimental.TPUStrategy``: one name, two classes by era.

In TF 1.15 the name meant the v1 class ``(tpu_cluster_resolver, steps_per_run,
device_assignment)`` run in graph mode; in TF 2.0-2.3 the experimental v2
class ``(tpu_cluster_resolver, device_assignment)``. This module picks the v1
adapter when the program runs in graph mode (eager execution disabled) or
when the arguments say v1 (``tpu_compat.tpu_strategy_args``, the predicate the
scanner uses too: ``steps_per_run=``, an int second argument, three positional
arguments), and the v2 adapter otherwise. ``isinstance`` against its
``TPUStrategy`` accepts both.
"""

import numbers

import tensorflow as tf

from tpu_compat import tpu_strategy_args
from tpu_compat.runtime import hooks, strategy_v1, strategy_v2

__all__ = ["TPUStrategy", "pick_class", "legacy_arguments"]


def pick_class(args, kwargs):
    """The adapter class a ``tf.distribute.experimental.TPUStrategy(...)`` call means."""
    wants_v1 = (
        tpu_strategy_args.experimental_tpu_strategy_class(_kinds(args), kwargs)
        == tpu_strategy_args.V1
        or not tf.compat.v1.executing_eagerly_outside_functions())
    return (strategy_v1.CompatTPUStrategyV1 if wants_v1
            else strategy_v2.CompatExperimentalTPUStrategy)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _kinds(args):
    """What the shared predicate needs to know of each positional argument."""
    return [tpu_strategy_args.INTEGER if _is_int(arg) else tpu_strategy_args.OTHER
            for arg in args]


def legacy_arguments(cls, *args, **kwargs):
    """The arguments a ``tf.distribute.experimental.TPUStrategy(...)`` call passed,
    by their legacy names (what the table's TPC006/TPC007 hooks look for).

    The positional ``steps_per_run`` is where the shared predicate
    (``tpu_strategy_args``) puts it; every other positional argument after the
    resolver is a ``device_assignment``.
    """
    del cls
    names = dict.fromkeys(kwargs)
    if args:
        names["tpu_cluster_resolver"] = None
    steps_index = tpu_strategy_args.steps_argument_index(_kinds(args), kwargs)
    for index in range(1, len(args)):
        names["steps_per_run" if index == steps_index else "device_assignment"] = None
    return tuple(names)


class _ByEraMeta(type):

    def __call__(cls, *args, **kwargs):
        target = pick_class(args, kwargs)
        if target is strategy_v1.CompatTPUStrategyV1 and len(args) == 2 and not (
                _is_int(args[1])):
            # TF 2.x positional (resolver, device_assignment) in a graph-mode
            # program: the v1 class takes device_assignment third.
            args, kwargs = args[:1], dict(kwargs, device_assignment=args[1])
        return target(*args, **kwargs)

    __call__.__tpu_compat_arguments__ = legacy_arguments

    def __instancecheck__(cls, instance):
        return isinstance(instance, (strategy_v1.CompatTPUStrategyV1,
                                     strategy_v2.CompatExperimentalTPUStrategy))

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, (strategy_v1.CompatTPUStrategyV1,
                                     strategy_v2.CompatExperimentalTPUStrategy))


class TPUStrategy(metaclass=_ByEraMeta):
    """TPU strategy, TF 1.15 meaning in graph mode or with ``steps_per_run``,
    TF 2.0-2.3 meaning otherwise (see module docstring)."""


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
