"""Which class a ``tf.distribute.experimental.TPUStrategy(...)`` call means, by its arguments.

In TF 1.15 the name was the v1 class ``(tpu_cluster_resolver, steps_per_run,
device_assignment)``; in TF 2.0-2.3 the v2 class ``(tpu_cluster_resolver,
device_assignment)``. The arguments alone often say which: ``steps_per_run=``,
an integer second argument or a third positional argument exist only in the
v1 signature. The run-time picker (``runtime/strategy_by_era.py``, which adds its
own graph-mode test) and the scanner (``migrate/analysis.py``, which sees source,
not values) both ask this one function, so they cannot disagree.

Imports nothing: the scanner must not load TensorFlow.
"""

from typing import Iterable, Optional, Sequence

__all__ = ["INTEGER", "OTHER", "UNKNOWN", "V1", "V2", "experimental_tpu_strategy_class"]

# What a caller knows about one positional argument.
INTEGER = "integer"  # an int (not a bool): steps_per_run
OTHER = "other"      # known not to be an int (a DeviceAssignment, None, ...)
UNKNOWN = "unknown"  # source whose value cannot be known without running it

# The answers.
V1 = "1.15"  # tf.compat.v1.distribute.experimental.TPUStrategy
V2 = "2.x"   # the TF 2.0-2.3 experimental TPUStrategy

STEPS_PER_RUN = "steps_per_run"


def experimental_tpu_strategy_class(positional: Sequence[str],
                                    keywords: Iterable[str]) -> Optional[str]:
    """V1, V2, or None when the arguments cannot tell.

    ``positional`` has one INTEGER/OTHER/UNKNOWN per positional argument (the
    resolver included); ``keywords`` the names of the keyword arguments.
    """
    if STEPS_PER_RUN in set(keywords) or len(positional) > 2:
        return V1
    if len(positional) == 2:
        if positional[1] == INTEGER:
            return V1
        if positional[1] == UNKNOWN:
            return None
    return V2


def steps_argument_index(positional: Sequence[str], keywords: Iterable[str]) -> Optional[int]:
    """Index of the positional ``steps_per_run`` of a V1 call, if it is passed positionally."""
    keywords = set(keywords)
    if (experimental_tpu_strategy_class(positional, keywords) == V1
            and STEPS_PER_RUN not in keywords and len(positional) > 1):
        return 1
    return None
