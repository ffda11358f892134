"""TF 1.15's pod session idiom on the emulated pod.

The Cloud TPU reference models of TF 1.13-1.15 (and TPUEstimator's own
``tpu_config``) copied the resolver's cluster into the session config before
opening a session on the pod's master::

    session_config.cluster_def.CopyFrom(resolver.cluster_spec().as_cluster_def())
    tf.Session(resolver.master(), config=session_config)

A session whose config carries a ``cluster_def`` makes the master create a new
worker session on every task from that ``ServerDef``; TensorFlow's session
manager refuses one that names the job and task index a server booted with
("The ClusterSpec names the job and task index to be the same names that were
provided when the server booted"). A Cloud TPU pod's hosts booted their servers
as ``/job:tpu_worker`` (the devices a session on a Cloud TPU lists, as in
tensorflow/tensorflow's tensorflow/python/distribute/cluster_resolver/tpu/
tpu_cluster_resolver_test.py, testGetDeviceDictAndCoresWithTPUs) while the
resolver's cluster names ``worker``, so the copy was a different cluster and was
accepted. The emulated pod's workers boot as ``worker`` (``pod/worker.py``), the
very cluster the resolver reports; a ``cluster_def`` naming exactly that cluster
adds nothing to a session on its master, so it is dropped from the session's
config, leaving the program's ConfigProto untouched. Any other cluster_def is
passed on as given.

The Colab TPU notebooks of TF 1.13-1.15 opened their session on the TPU host
itself, ``tf.Session('grpc://' + os.environ['COLAB_TPU_ADDR'])`` (tensorflow/tpu's
tools/colab notebooks of 2019, e.g. regression_sine_data_with_keras.ipynb, list
the TPU's devices that way). On the emulated TPU (no pod) that host is this
process, as ``resolver.master()`` says (``''``); the address is the placeholder
``tpu-compat run`` puts in ``COLAB_TPU_ADDR`` (``.invalid``, never resolved) or an
address an emulated resolver was given, so dialing it would wait forever. Such a
session becomes a local one.

A local session of the emulated TPU places only the subgraphs it runs
(``placing_run_subgraphs``). Why: a TF 1.x graph program that keeps building ops between ``Session.run`` calls
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
``MakeForPrunedGraph``). Graph optimization then sees the pruned subgraph rather than
the whole graph, so a float result can differ in its last bit from a session placing
the whole graph (the Iris Colab's numbers moved by at most 6e-8, its emulated and
one-device runs still agreeing at rtol 1e-5).

Scope: local sessions (an empty target, the emulated TPU's included, see ``emulated_tpu_target``) of an
emulated backend, where placement only chooses among this process's CPU devices. A
session on a pod's or a real TPU's master keeps the program's config. The program's
ConfigProto is never modified: the session gets a copy.

The one visible difference: an op no run ever reaches is no longer placed, so a device
it could not be placed on fails the run that reaches it, not the first run of the
session (tests/test_session_placement.py).
"""

import os

import tensorflow as tf

from tpu_compat._tf_internals import client_session as session_lib
from tpu_compat._tf_internals import eager_context
from tpu_compat.pod import session as pod_session
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import resolver as resolver_lib

__all__ = ["emulated_tpu_target", "placing_run_subgraphs", "route_pod_sessions",
           "without_booted_cluster"]


def _target_address(target):
    target = target.decode() if isinstance(target, bytes) else (target or "")
    return target[len("grpc://"):] if target.startswith("grpc://") else target


def without_booted_cluster(target, config):
    """``config`` without a ``cluster_def`` naming the emulated pod as its workers
    booted, when ``target`` is one of them; else ``config`` itself."""
    pod = pod_session.current_pod()
    if pod is None or config is None or not config.HasField("cluster_def"):
        return config
    if _target_address(target) not in pod.addresses:
        return config
    jobs = {job.name: [job.tasks[index] for index in sorted(job.tasks)]
            for job in config.cluster_def.job}
    if jobs != {"worker": list(pod.addresses)}:
        return config
    copy = type(config)()
    copy.CopyFrom(config)
    copy.ClearField("cluster_def")
    return copy


def emulated_tpu_target(target):
    """``''`` (a local session) when ``target`` is the emulated TPU's worker address
    with no pod running; else ``target`` itself."""
    address = _target_address(target)
    if not address or pod_session.current_pod() is not None:
        return target
    if not backend_lib.get_backend().emulated:
        return target
    # Read at each session: the placeholder is set when the run starts, and a
    # resolver records its address when the program builds it.
    emulated = {resolver_lib.EMULATED_WORKER_ADDRESS, *resolver_lib.emulated_addresses()}
    colab = os.environ.get("COLAB_TPU_ADDR")
    if colab:
        emulated.add(colab)
    return "" if address in emulated else target


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


def route_pod_sessions(changes):
    """``tf.compat.v1.Session`` (and InteractiveSession, through BaseSession)
    accepts the pod's own cluster_def on the emulated pod, and a session on the
    emulated TPU's worker address is a local one, which places only the subgraphs
    it runs (placing_run_subgraphs)."""
    original = session_lib.BaseSession.__init__

    def __init__(self, target="", graph=None, config=None):
        local_target = emulated_tpu_target(target)
        config = without_booted_cluster(target, config)
        # A local session of the emulated TPU places only what it runs
        # (graph extensions cost the whole graph otherwise).
        original(self, local_target, graph,
                 placing_run_subgraphs(local_target, config))

    __init__.__wrapped__ = original
    changes.replace(session_lib.BaseSession, "__init__", __init__)
