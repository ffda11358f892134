"""Per-device input pipelines whose iterators close promptly.

In graph mode a distributed dataset is read through a ``MultiDeviceIterator``:
one iterator per replica device, over a pipeline of that device's own
(``_create_device_dataset`` in tensorflow/python/data/ops/
multi_device_iterator_ops.py: a generator fed from the multi-device buffer and a
prefetch of fixed size). With tf.data's autotuning on, its default, each of
those iterators starts a model thread (``RootDataset::Iterator::
EnsureModelThreadStarted``), and destroying the iterator waits for it.

On the emulated TPU that wait stalled programs at their end: closing a TF 1.x
session after a graph-mode Keras fit with validation on 8 emulated cores
(tests/scenarios/keras_tf115_graph.py) waited in the iterator's destructor
(gdb: ``DirectSession`` dtor -> ``IteratorResource`` dtor ->
``RootDataset::Iterator`` dtor -> ``UnboundedThreadPool::LogicalThreadWrapper``
dtor, while 48 model threads sat in ``Model::OptimizeLoop``). On a loaded
2-core machine two of three runs took 564 s and over 600 s; three runs with
this change took 54 to 101 s.

The same wait also stalled eager programs under load, when an iterator was
garbage-collected (scripts/run_benchmarks.py's runs of bench_numerics.py and
bench_fidelity.py, which build an iterator per fit). A per-device pipeline has
nothing to tune (its prefetch size is fixed), so on the emulated TPU these
pipelines run with autotuning off, in graph and eager mode alike; the user's
own dataset keeps its options and its autotuning. A real TPU is left as
TensorFlow makes it.
"""

from tpu_compat._tf_internals import multi_device_iterator_ops

__all__ = ["quiet_device_pipelines"]


def _autotune_off():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


def _emulated():
    from tpu_compat.runtime import backend  # pylint: disable=import-outside-toplevel
    chosen = backend.current_backend()
    return chosen is not None and chosen.emulated


def _without_autotune(create_device_dataset):
    def create_quiet_device_dataset(*args, **kwargs):
        dataset = create_device_dataset(*args, **kwargs)
        if not _emulated():
            return dataset
        return dataset.with_options(_autotune_off())

    create_quiet_device_dataset.__wrapped__ = create_device_dataset
    return create_quiet_device_dataset


def quiet_device_pipelines(changes):
    """Graph-mode per-device pipelines on the emulated TPU run without autotuning."""
    changes.replace(multi_device_iterator_ops, "_create_device_dataset",
                    _without_autotune(multi_device_iterator_ops._create_device_dataset))  # pylint: disable=protected-access
