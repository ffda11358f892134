"""The graph each Estimator call builds, and the program's control-flow era.

Every ``train``/``evaluate``/``predict``/export call of an Estimator (and of a
TPUEstimator) builds its own ``tf.Graph`` with v1 control flow, as TF 1.15's
Estimator did; code that decides era behaviour (``estimator/tpu/replica_step.py``)
asks :func:`program_control_flow_v2` what the *program* had before that graph
switched it off. Both live here so the flag has one owner.
"""

import contextlib
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import control_flow_util

__all__ = ["estimator_graph", "program_control_flow_v2"]

@contextlib.contextmanager
def estimator_graph(seed=None):
    """A new graph built as TF 1.15's Estimator built it: v1 control flow, and
    the graph-level random seed ``seed`` (RunConfig's tf_random_seed) if set.

    TF 2.21 builds ``tf.while_loop`` as a functional While (control flow v2)
    in graphs made from a TF 2 program, and v1 loops under
    ``disable_v2_behavior()``. The TPU training loop (and TF 1.x model_fns)
    were written for v1 loops; in a functional loop the mirrored slot
    variables an optimizer creates lose their replica devices. Only the
    choice made while building this graph changes; the flag is restored.
    """
    saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
    try:
        with tf.Graph().as_default() as graph:
            _PROGRAM_CONTROL_FLOW_V2[graph] = saved
            if seed is not None:
                tf.compat.v1.set_random_seed(seed)
            yield graph
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved


# graph -> whether the program had control flow v2 on when the graph was made.
_PROGRAM_CONTROL_FLOW_V2 = weakref.WeakKeyDictionary()


def program_control_flow_v2(graph=None):
    """Whether the program building ``graph`` runs with control flow v2.

    TF's own estimator decided era behaviour by this flag (a TF 2.x program
    has it on, a TF 1.x or ``disable_v2_behavior()`` program off), so
    tpu_compat does too. Estimator graphs are built with it off (see
    :func:`estimator_graph`); this is the program's value, from before.
    """
    graph = graph or tf.compat.v1.get_default_graph()
    if graph in _PROGRAM_CONTROL_FLOW_V2:
        return _PROGRAM_CONTROL_FLOW_V2[graph]
    return control_flow_util.ENABLE_CONTROL_FLOW_V2
