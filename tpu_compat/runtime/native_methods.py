"""Removed legacy methods, given back to TensorFlow's own strategies.

Legacy TPU programs fall back to ``MirroredStrategy``, ``OneDeviceStrategy``
or ``tf.distribute.get_strategy()`` when they find no TPU, and then call the
TF 2.0-2.3 methods on them. ``tpu_compat.install()`` adds these functions to
``tf.distribute.Strategy``/``StrategyBase`` (recording them, so that
``uninstall()`` removes them again). Each warns through its legacy-API
record's hook (:mod:`tpu_compat.runtime.hooks`).
"""

import tensorflow as tf

from tpu_compat._tf_internals import distribute_lib
from tpu_compat.runtime import hooks
from tpu_compat.runtime.adapter import MISSING, global_batch_size

__all__ = ["add_removed_methods"]


def _mark(function):
    function.__tpu_compat_added__ = True  # legacy_api.present_in_installed skips it
    return function


def _as_args(args):
    if args is None:
        return ()
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


@_mark
def experimental_run_v2(self, fn, args=(), kwargs=None):
    """TF 2.0-2.3 name of ``run`` (removed in TF 2.4)."""
    return self.run(fn, args=_as_args(args), kwargs=kwargs)


@_mark
def reduce(self, reduce_op, value, axis=MISSING):
    """``Strategy.reduce``; a legacy call without ``axis`` means ``axis=None``."""
    if axis is MISSING:
        axis = None
    return distribute_lib.StrategyBase.reduce(self, reduce_op, value, axis)


@_mark
def experimental_make_numpy_dataset(self, numpy_input):
    """Removed in TF 2.4: ``tf.data.Dataset.from_tensor_slices(numpy_input)``."""
    del self
    return tf.data.Dataset.from_tensor_slices(numpy_input)


def _clear_error_for_unbatched(native_distribute):
    @_mark
    def experimental_distribute_dataset(self, dataset, options=None):
        """``Strategy.experimental_distribute_dataset`` with TF 1.x's clear error
        for an unbatched dataset on several replicas."""
        if tf.executing_eagerly():
            global_batch_size(dataset, self.num_replicas_in_sync)
        return native_distribute(self, dataset, options)
    experimental_distribute_dataset.__wrapped__ = native_distribute
    return experimental_distribute_dataset


def add_removed_methods(state):
    """Adds the methods through ``state`` (the installation's ``Changes``)."""
    base, v2 = distribute_lib.StrategyBase, distribute_lib.Strategy
    state.add(base, "experimental_run_v2", experimental_run_v2)
    state.add(v2, "reduce", reduce)
    state.add(v2, "experimental_make_numpy_dataset", experimental_make_numpy_dataset)
    state.add(base, "experimental_distribute_dataset",
              _clear_error_for_unbatched(base.experimental_distribute_dataset))


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
