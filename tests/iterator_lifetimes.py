"""Eager tf.data iterators die in the test that made them, while young (issue 32).

Why: destroying an eager iterator over a dataset with tf.data's autotuning on
(its default) waits for the iterator's autotune model thread
(``RootDataset::Iterator`` dtor -> ``UnboundedThreadPool::LogicalThreadWrapper``
dtor, py-spy). On TF 2.21 that thread does not wake promptly for it, though
the dtor cancels it: measured, the wait ends with the thread's current sleep,
which doubles from 10 ms up to 60 s (``kOptimizationPeriodMaxMs`` in
tensorflow/core/framework/model.h). Deleting such an iterator 75 s after its
first element took 6.9-7.1 s, 10 s after it 10.2 s, at other ages nothing.

An iterator freed by reference counting dies when its test drops it, young.
One kept in a reference cycle dies whenever a later generation-2 collection
runs, minutes later, in another test, which then waits up to a minute doing
nothing: a full lane-1 run lost 122 s that way inside one pure-Python test
(test_legacy_table.py::test_every_hook_target_is_instrumented). Found: a
``tf.function`` closing over a distributed iterator (test_tpu_semantics.py),
whose graph, a cycle, captures the 8 device iterators' resource handles.

So the suite watches the eager iterators each test makes (``OwnedIterator``,
which distributed and multi-device iterators build theirs from) and their
resource handles, through weak references taken at construction; after a test
that leaves one alive, only then, it collects garbage once: the cyclic ones
die young, in the test that made them, and the tests that made none pay
nothing (a ``gc.collect()`` after every test would cost more than the stalls).
The autotuning itself stays on: the tests run what users run.
"""

import functools
import gc
import time
import weakref

__all__ = ["IteratorWatch", "WATCH", "LongCollections", "LONG_COLLECTIONS"]


class IteratorWatch:
    """Weak references to the eager iterators made since the last ``release``,
    and to their resource handles."""

    def __init__(self):
        self._born = []
        self._hooked = False

    def hook(self):
        """Watches ``OwnedIterator`` construction from now on (once per process).

        Only a weak reference is kept: the iterator's life and behaviour are
        the user's, unchanged.
        """
        if self._hooked:
            return
        # pylint: disable-next=import-outside-toplevel
        from tensorflow.python.data.ops import iterator_ops
        construct = iterator_ops.OwnedIterator.__init__
        born = self._born

        @functools.wraps(construct)
        def __init__(iterator, *args, **kwargs):
            construct(iterator, *args, **kwargs)
            born.append(weakref.ref(iterator))
            # The wait happens when the eager resource handle dies
            # (EagerTensor_dealloc -> ~IteratorResource), which a cycle can
            # keep after the iterator object is gone (a function's inputs).
            handle = getattr(iterator, "_iterator_resource", None)
            if type(handle).__name__ == "EagerTensor":
                born.append(weakref.ref(handle))

        iterator_ops.OwnedIterator.__init__ = __init__
        self._hooked = True

    def alive(self):
        """The watched iterators still alive."""
        return [iterator for iterator in (ref() for ref in self._born) if iterator is not None]

    def release(self):
        """Ends the watch of the iterators made so far; collects garbage once if
        any is still alive (the cyclic ones die now). Returns how many of them
        something still holds after that (a fixture, a cache)."""
        born = self._born[:]
        del self._born[:]
        if all(ref() is None for ref in born):
            return 0
        gc.collect()
        return sum(ref() is not None for ref in born)


class LongCollections:
    """The longest generation-2 garbage collection since the last ``take``:
    ``(wall seconds, seconds of the collecting thread's CPU)``; a wait shows as
    wall time without CPU.

    A ``gc.callbacks`` entry: it returns at once for the frequent young
    collections (about 2 us per collection), so it costs nothing a test would
    notice. Lets the suite name the test in which a collection waited, should
    an iterator escape the watch (one made before the tpu8 fixture's hook, or
    a new kind).
    """

    def __init__(self):
        self._started = None
        self.longest = (0.0, 0.0)

    def __call__(self, phase, info):
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = (time.perf_counter(), time.thread_time())
        elif self._started is not None:
            wall = time.perf_counter() - self._started[0]
            if wall > self.longest[0]:
                self.longest = (wall, time.thread_time() - self._started[1])
            self._started = None

    def take(self):
        longest, self.longest = self.longest, (0.0, 0.0)
        return longest


# The suite's one watch (tests/conftest.py hooks it in the tpu8 fixture and
# releases it after every test).
WATCH = IteratorWatch()
LONG_COLLECTIONS = LongCollections()
