"""The suite's eager iterators die in the test that made them (issue 32).

tests/iterator_lifetimes.py says why: an autotuned eager iterator destroyed
late, by a later test's garbage collection, waits up to a minute for its
autotune thread. These check that the suite's watch sees the iterators users
make (plain and distributed), frees the ones a reference cycle keeps, and that
the emulated TPU itself leaves none in a cycle.
"""

import gc
import time
import weakref

import pytest
import tensorflow as tf

import iterator_lifetimes
from tpu_compat.distribute import TPUStrategy
from tpu_compat.distribute.cluster_resolver import TPUClusterResolver

pytestmark = pytest.mark.requires_tf


def _autotuned_dataset():
    """The kind of pipeline whose iterator has an autotune thread (TF's defaults)."""
    return tf.data.Dataset.range(64).map(lambda x: x * 2,
                                         num_parallel_calls=tf.data.AUTOTUNE).batch(8)


@pytest.fixture
def collector_off():
    """No automatic collection may free a cycle before the test looks at it."""
    gc.disable()
    yield
    gc.enable()


def test_an_iterator_a_cycle_keeps_dies_at_the_release(tpu8, collector_off):
    del tpu8, collector_off
    iterator_lifetimes.WATCH.release()  # this test's own iterators only
    holder = {"iterator": iter(_autotuned_dataset())}
    holder["itself"] = holder  # a cycle, as a Keras model or a traceback makes
    next(holder["iterator"])
    cyclic = weakref.ref(holder["iterator"])
    held = iter(_autotuned_dataset())
    del holder
    assert cyclic() is not None  # only the collector can free it
    assert iterator_lifetimes.WATCH.release() == 2  # `held` and its resource handle
    assert cyclic() is None
    assert iterator_lifetimes.WATCH.release() == 0  # `held` is no longer watched
    del held


def test_the_emulated_tpus_distributed_iterator_is_freed_without_the_collector(
        tpu8, collector_off):
    """Nothing of tpu_compat's keeps a distributed iterator in a reference cycle:
    it dies when the user drops it, as on stock TensorFlow, and the watch sees
    the iterators it is made of."""
    del tpu8, collector_off
    iterator_lifetimes.WATCH.release()
    strategy = TPUStrategy(TPUClusterResolver(tpu=""))
    distributed = iter(strategy.experimental_distribute_dataset(_autotuned_dataset()))
    first = strategy.experimental_local_results(next(distributed))
    assert len(first) == 8 and [int(v[0]) for v in first] == [0, 2, 4, 6, 8, 10, 12, 14]
    parts = list(iterator_lifetimes.WATCH.alive())
    assert parts, "the watch saw none of the distributed iterator's iterators"
    whole = weakref.ref(distributed)
    del distributed, parts
    assert whole() is None
    assert iterator_lifetimes.WATCH.release() == 0


def test_only_generation_2_collections_are_timed_for_the_warning():
    clock = iterator_lifetimes.LongCollections()
    clock("start", {"generation": 2})
    clock("start", {"generation": 0})  # a young collection inside it: ignored
    clock("stop", {"generation": 0})
    time.sleep(0.05)
    clock("stop", {"generation": 2})
    timed = clock.longest
    clock("start", {"generation": 1})
    time.sleep(0.01)
    clock("stop", {"generation": 1})
    assert clock.longest == timed
    wall, cpu = clock.take()
    assert wall >= 0.05 and cpu < wall  # it slept: wall time, not CPU
    assert clock.take() == (0.0, 0.0)
