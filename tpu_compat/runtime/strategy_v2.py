"""TF 2.x TPU strategies: ``tf.distribute.TPUStrategy`` and the experimental one.

``CompatTPUStrategy`` has the modern signature
``(tpu_cluster_resolver=None, experimental_device_assignment=None,
experimental_spmd_xla_partitioning=False)``; ``CompatExperimentalTPUStrategy``
the TF 2.0-2.3 ``tf.distribute.experimental.TPUStrategy`` one
``(tpu_cluster_resolver=None, device_assignment=None)``. Both carry the methods
TensorFlow later removed (``experimental_run_v2``, ``reduce`` without ``axis``,
``experimental_make_numpy_dataset``, ...), from
:class:`~tpu_compat.runtime.adapter.CompatStrategyMixin`.
"""

import numpy as np

from tpu_compat._tf_internals import distribute_lib, mirrored_strategy, tpu_strategy
from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import emulated
from tpu_compat.runtime import hooks
from tpu_compat.runtime.adapter import CompatStrategyMixin

__all__ = ["CompatTPUStrategy", "CompatExperimentalTPUStrategy"]


class CompatTPUStrategy(CompatStrategyMixin, distribute_lib.Strategy):
    """``tf.distribute.TPUStrategy`` on a real or an emulated TPU.

    On a real TPU this is TensorFlow's ``TPUStrategyV2``; elsewhere the
    emulated TPU (see :mod:`tpu_compat.runtime.backend`). Either way it also
    answers the TF 2.0-2.3 methods that current TensorFlow removed.
    """

    @staticmethod
    def _native_classes():
        return mirrored_strategy.MirroredStrategy, tpu_strategy.TPUStrategyV2

    def __init__(self, tpu_cluster_resolver=None,
                 experimental_device_assignment=None,
                 experimental_spmd_xla_partitioning=False):
        self._compat_init(tpu_cluster_resolver, experimental_device_assignment,
                          experimental_spmd_xla_partitioning,
                          "experimental_device_assignment")

    def _compat_init(self, tpu_cluster_resolver, device_assignment,
                     spmd_xla_partitioning, device_assignment_name):
        self._check_device_assignment(device_assignment, device_assignment_name)
        if not isinstance(spmd_xla_partitioning, bool):
            raise TypeError(
                f"experimental_spmd_xla_partitioning must be True or False, got "
                f"{spmd_xla_partitioning!r}")
        self._tpu_compat_backend = backend_lib.get_backend()
        resolver = self._resolve(tpu_cluster_resolver)
        if self._tpu_compat_backend.emulated:
            self._spmd_xla_partitioning = spmd_xla_partitioning
            extended = emulated.EmulatedTPUExtended(
                self, emulated.replica_devices(self._tpu_compat_backend,
                                               device_assignment),
                cluster_resolver=resolver, device_assignment=device_assignment)
            distribute_lib.Strategy.__init__(self, extended)
        else:
            self._tpu_compat_native.__init__(
                self, resolver,
                experimental_device_assignment=device_assignment,
                experimental_spmd_xla_partitioning=spmd_xla_partitioning)

    @property
    def cluster_resolver(self):
        return self.extended._tpu_cluster_resolver  # pylint: disable=protected-access

    # -- logical-device annotations -------------------------------------------
    # On a real TPU these are TensorFlow's (XLA sharding annotations). The
    # emulated TPU runs each replica on one device, so the annotation is the
    # identity, after the same validation TensorFlow documents.

    def _emulated_spmd_check(self):
        if getattr(self, "_spmd_xla_partitioning", False):
            raise ValueError(
                "Cannot assign a tensor to a logical device in SPMD mode. To "
                "disable SPMD, construct the TPUStrategy with "
                "`experimental_spmd_xla_partitioning=False`")

    def experimental_assign_to_logical_device(self, tensor, logical_device_id):
        if not self._tpu_compat_backend.emulated:
            return super().experimental_assign_to_logical_device(
                tensor, logical_device_id)
        self._emulated_spmd_check()
        per_replica = self._logical_devices_per_replica()
        if not 0 <= logical_device_id < per_replica:
            raise ValueError(
                f"`logical_device_id` must be in [0, {per_replica}): the device "
                f"assignment has {per_replica} logical device(s) per replica. "
                f"Received logical device id {logical_device_id}.")
        return tensor

    def experimental_split_to_logical_devices(self, tensor, partition_dimensions):
        if not self._tpu_compat_backend.emulated:
            return super().experimental_split_to_logical_devices(
                tensor, partition_dimensions)
        per_replica = self._logical_devices_per_replica()
        shape = tensor.shape
        if shape.rank is not None and shape.rank != len(partition_dimensions):
            raise ValueError(
                f"Length of `partition_dimensions` must equal the rank of "
                f"`tensor.shape` ({shape.rank}). Received "
                f"len(partition_dimensions)={len(partition_dimensions)}.")
        for index, (size, split) in enumerate(
                zip(shape.as_list() if shape.rank is not None else [],
                    partition_dimensions)):
            if size is not None and size % split:
                raise ValueError(
                    f"Tensor shape at `partition_dimensions[{index}]` must be "
                    f"divisible by the corresponding value of "
                    f"`partition_dimensions` ({split}). Received: {size}.")
        product = int(np.prod(partition_dimensions))
        if product != per_replica:
            raise ValueError(
                f"The product of `partition_dimensions` must equal the number of "
                f"logical devices per replica (={per_replica}). Received "
                f"`partition_dimensions`={list(partition_dimensions)}, whose "
                f"product is {product}.")
        return tensor

    def experimental_replicate_to_logical_devices(self, tensor):
        if not self._tpu_compat_backend.emulated:
            return super().experimental_replicate_to_logical_devices(tensor)
        return tensor


class CompatExperimentalTPUStrategy(CompatTPUStrategy):
    """TF 2.0-2.3 ``tf.distribute.experimental.TPUStrategy``.

    Same strategy as :class:`CompatTPUStrategy`; the argument is still called
    ``device_assignment``. Constructing it warns (TPC005: the experimental
    endpoint is deprecated; TPC006 with ``device_assignment``) through the
    table's hooks.
    """

    def __init__(self, tpu_cluster_resolver=None, device_assignment=None):
        self._compat_init(tpu_cluster_resolver, device_assignment, False,
                          "device_assignment")

hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
