"""A local graph Session on the emulated TPU places the subgraphs it runs, not the whole graph.

Why: a TF 1.x graph program that keeps building ops between ``Session.run`` calls
(every graph-mode Keras ``fit``/``evaluate``/``predict`` does: tf_keras makes a new
iterator, a new numpy-input variable and, each validation epoch, a new execution
function, TF 1.15's keras did the same) makes the session extend its graph before the
next run. TensorFlow's DirectSession (tensorflow/core/common_runtime/direct_session.cc,
``Extend``; graph_execution_state.cc, ``GraphExecutionState::Extend`` and
``MakeForBaseGraph``) then rebuilds and re-places the WHOLE graph, every time: on the
emulated TPU's 8 devices, with thousands of per-replica ops, that was 30-40 % of the
CPU of such a program (the Iris Colab's keras_to_tpu_model at 8 cores: 90 extensions,
14 s of 56 s). With ``GraphOptions.place_pruned_graph`` an extension only appends the
new nodes, and each distinct run places just the subgraph it prunes to, stateful ops
(variables, iterators) keeping the device they were first placed on
(``DirectSession::CreateGraphs`` hands ``stateful_placements_`` to
``MakeForPrunedGraph``), so every op runs where it ran before.

Scope: local sessions (an empty target, the emulated TPU's, see pod_sessions.py) of an
emulated backend, where placement only chooses among this process's CPU devices. A
session on a pod's or a real TPU's master keeps the program's config. The program's
ConfigProto is never modified: the session gets a copy.

The one visible difference: an op no run ever reaches is no longer placed, so a device
it could not be placed on fails the run that reaches it, not the first run of the
session (tests/test_session_placement.py).
"""

import tensorflow as tf

from tpu_compat._tf_internals import eager_context
from tpu_compat.runtime import backend as backend_lib

__all__ = ["placing_run_subgraphs"]


def placing_run_subgraphs(target, config):
    """``config`` (a ConfigProto or None) for a session on ``target``: a copy with
    ``graph_options.place_pruned_graph`` on for a local session of the emulated
    backend; else ``config`` itself."""
    backend = backend_lib.current_backend()
    if backend is None or not backend.emulated or target:
        return config
    if config is not None and config.graph_options.place_pruned_graph:
        return config
    copy = tf.compat.v1.ConfigProto()
    # A session given no config takes the context's (BaseSession.__init__), which
    # carries the emulated devices; an empty ConfigProto would see only CPU:0.
    copy.CopyFrom(config if config is not None else eager_context.context().config)
    copy.graph_options.place_pruned_graph = True
    return copy
