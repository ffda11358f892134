"""Per-device input pipelines on the emulated TPU run without autotuning.

runtime/device_input.py says why: with tf.data autotuning on, each per-device
iterator of a MultiDeviceIterator starts a model thread, and destroying the
iterators (closing a session, or collecting an eager iterator) waited minutes
for those threads on a loaded machine.
"""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import dataset_options_pb2
from tensorflow.python.data.ops import multi_device_iterator_ops

from tpu_compat.patching.changes import Changes
from tpu_compat.runtime import device_input

pytestmark = pytest.mark.requires_tf


@pytest.fixture
def quiet_pipelines(tpu8):
    changes = Changes()
    device_input.quiet_device_pipelines(changes)
    yield tpu8
    changes.undo()


def _autotune_settings(graph):
    """The autotune.enabled of every OptionsDataset op of the graph."""
    found = []
    for op in graph.get_operations():
        if op.type == "OptionsDataset":
            options = dataset_options_pb2.Options.FromString(op.get_attr("serialized_options"))
            found.append(options.autotune_options.enabled
                         if options.autotune_options.HasField("enabled") else None)
    return found


def test_graph_mode_device_pipelines_have_autotune_off_and_still_deliver(quiet_pipelines):
    devices = list(quiet_pipelines.devices)
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.Dataset.range(4 * len(devices)).batch(2)
        iterator = multi_device_iterator_ops.MultiDeviceIterator(dataset, devices)
        elements = iterator.get_next()
        # One OptionsDataset per device pipeline turns autotuning off (the
        # MultiDeviceIterator's own, on the source dataset, leaves it unset).
        assert _autotune_settings(graph).count(False) == len(devices)
        with tf.compat.v1.Session() as session:
            session.run(iterator.initializer)
            got = session.run(elements)
    # Each device got its own batch, in order, through the quiet pipelines.
    np.testing.assert_array_equal(np.concatenate(got), np.arange(2 * len(devices)))


def test_eager_distributed_input_gets_quiet_pipelines_too(quiet_pipelines):
    made = []
    create = multi_device_iterator_ops._create_device_dataset  # pylint: disable=protected-access

    def recording(*args, **kwargs):
        made.append(create(*args, **kwargs))
        return made[-1]

    multi_device_iterator_ops._create_device_dataset = recording  # pylint: disable=protected-access
    try:
        iterator = multi_device_iterator_ops.OwnedMultiDeviceIterator(
            tf.data.Dataset.range(8).batch(2), list(quiet_pipelines.devices)[:2])
        got = [t.numpy() for t in iterator.get_next()]
    finally:
        multi_device_iterator_ops._create_device_dataset = create  # pylint: disable=protected-access
    assert len(made) == 2 and all(d.options().autotune.enabled is False for d in made)
    np.testing.assert_array_equal(np.concatenate(got), [0, 1, 2, 3])


def test_without_the_patch_tensorflow_keeps_its_own_pipelines(tpu8):
    graph = tf.Graph()
    with graph.as_default():
        multi_device_iterator_ops.MultiDeviceIterator(tf.data.Dataset.range(4),
                                                      list(tpu8.devices)[:2])
        assert False not in _autotune_settings(graph)
