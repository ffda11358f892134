"""Each emulated replica reads its own losses and update ops from the graph's collections.

On a TPU the replicated computation was built once: TF 1.15's
``tpu.replicate`` traced ``computation`` (TPUEstimator's ``model_fn``) a
single time and XLA ran that program on every core (TF r1.15
tensorflow/python/tpu/tpu.py, ``split_compile_and_replicate``: one call of
``computation`` inside one ``TPUReplicateContext``). So the losses a model_fn
added to ``GraphKeys.LOSSES`` (every ``tf.losses.*`` function does,
``tf.losses.add_loss`` too) and the update ops its batch norms added to
``GraphKeys.UPDATE_OPS`` were one replica's, and ``tf.losses.get_total_loss()``
was that replica's loss.

The emulated TPU builds every replica into one graph, one thread after
another (MirroredStrategy's ``call_for_each_replica``). Without this, replica
k's ``tf.losses.get_total_loss()`` summed the losses of replicas 0..k (SimCLR's
TF 1 ``model_fn`` does exactly that): each replica then differentiated the
other replicas' graphs too, its gradient was wrong, and replica k's train op
waited on the earlier replicas' update ops. Here an entry a replica adds to
one of :data:`PER_REPLICA` is recorded as that replica's, and a replica
reading that collection does not see the other replicas' entries; entries
added outside the replicas (before or after them) are seen by everyone, and
outside an emulated replica nothing changes.

``GraphKeys.MOVING_AVERAGE_VARIABLES`` too: ``ExponentialMovingAverage.apply``
adds each variable it averages to it (TF r1.15 and 2.21
tensorflow/python/training/moving_averages.py), and the era's trainers
average ``tf.trainable_variables() + tf.moving_average_variables()``
(tensorflow/tpu's mobilenet.py, inception_v3.py). On a TPU, built once, that
list held each variable once; without this, replica k read the variables
replicas 0..k-1 had added and averaged them again, one more ``merge_call``
per duplicate than replica 0, and MirroredStrategy stopped on the count
mismatch. A replica adding the very object another replica added (the same
mirrored variable) is recorded as its owner too, and the collection keeps
it once, as on a TPU.

``tf.layers`` (tf_keras's legacy layers, TF 1.x's ``tf.layers.batch_normalization``
and ``BatchNormalization``, the TPU "global batch norm" subclasses) add their
update ops not with ``add_to_collection`` but by appending to
``get_collection_ref``'s list (tf_keras/src/legacy_tf_layers/base.py
``_add_elements_to_collection``; TF r1.15 tensorflow/python/layers/base.py did
the same). Inside an emulated replica :func:`recorded_layer_collections` sends
the per-replica collections through ``add_to_collection``, so they are recorded
too: without it replica k's ``train_op`` waited on replicas 0..k's batch-norm
updates, and each of its gradient ops carried them all as control inputs (a
SimCLR ResNet-18 on 8 cores wrote a 927 MB graph.pbtxt).
"""

import functools
import threading
import weakref

import tensorflow as tf

from tpu_compat._tf_internals import ops

__all__ = ["PER_REPLICA", "patch_collections", "recorded_layer_collections"]

# The collections a model_fn fills per call. Not the variables' collections:
# replica 0 creates the variables and the other replicas reuse them.
PER_REPLICA = (ops.GraphKeys.LOSSES, ops.GraphKeys.UPDATE_OPS,
               ops.GraphKeys.MOVING_AVERAGE_VARIABLES)

# Per graph: {collection name: {id(entry): the replicas that added it}}. The
# collection holds each entry, so its id is not reused while it is recorded.
_owners = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _current_replica():
    """This thread's emulated replica id, or None outside an emulated replica."""
    from tpu_compat.lowlevel import cross_replica  # pylint: disable=import-outside-toplevel
    from tpu_compat._tf_internals import distribute_lib  # pylint: disable=import-outside-toplevel
    if not distribute_lib.has_strategy():
        return None
    context = cross_replica.emulated_replica_context()
    if context is None:
        return None
    replica = cross_replica._replica_number(context)  # pylint: disable=protected-access
    return None if replica < 0 else replica


def _recording_add(original):
    @functools.wraps(original)
    def add_to_collection(self, name, value):
        replica = _current_replica() if name in PER_REPLICA else None
        if replica is not None:
            with _lock:
                owners = _owners.setdefault(self, {}).setdefault(name, {})
                added_by = owners.setdefault(id(value), set())
                if added_by and replica not in added_by:
                    added_by.add(replica)  # another replica's very object: kept once
                    return
                added_by.add(replica)
        original(self, name, value)
    return add_to_collection


def _filtering_get(original):
    @functools.wraps(original)
    def get_collection(self, name, scope=None):
        entries = original(self, name, scope)
        if name not in PER_REPLICA:
            return entries
        owners = _owners.get(self, {}).get(name)
        if not owners:
            return entries
        replica = _current_replica()
        if replica is None:
            return entries
        return [e for e in entries if replica in owners.get(id(e), (replica,))]
    return get_collection


def patch_collections(changes):
    """Graph.add_to_collection records, Graph.get_collection filters (undone by uninstall)."""
    graph = ops.Graph
    changes.replace(graph, "add_to_collection", _recording_add(graph.add_to_collection))
    changes.replace(graph, "get_collection", _filtering_get(graph.get_collection))


def recorded_layer_collections(original):
    """tf.layers' ``_add_elements_to_collection``, recording what a replica adds to PER_REPLICA."""

    @functools.wraps(original)
    def _add_elements_to_collection(elements, collection_list):
        names = tf.nest.flatten(collection_list)
        ours = [name for name in names if name in PER_REPLICA]
        if not ours or tf.executing_eagerly() or _current_replica() is None:
            return original(elements, collection_list)
        others = [name for name in names if name not in PER_REPLICA]
        if others:
            original(elements, others)
        graph = ops.get_default_graph()
        for name in ours:
            # As the original, an element already there is not added again; "there"
            # is what this replica sees (another replica's very object is kept once
            # by the recording add_to_collection).
            present = {id(entry) for entry in graph.get_collection(name)}
            for element in tf.nest.flatten(elements):
                if id(element) not in present:
                    graph.add_to_collection(name, element)
                    present.add(id(element))
        return None

    return _add_elements_to_collection
