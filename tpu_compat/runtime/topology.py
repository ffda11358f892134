"""An emulated TPU topology that ``tf.tpu.experimental.DeviceAssignment`` accepts.

A real ``initialize_tpu_system`` returns a ``Topology`` describing the slice's
mesh ``[x, y, z, cores_per_chip]``. The emulated one is built from the core
count: two cores per chip (as on v2/v3) when the count is even, and the chips
laid out in the most cube-like ``x <= y <= z`` box. 8 cores give
``[1, 2, 2, 2]``, on which both documented model-parallel requests work
(``computation_shape=[1, 1, 1, 2]`` with 4 replicas, ``[1, 2, 2, 2]`` with 1),
and impossible requests fail with TensorFlow's own ``DeviceAssignment`` errors.
"""

import itertools

import numpy as np

from tpu_compat._tf_internals import topology_lib

__all__ = ["mesh_shape_for", "emulated_topology"]


def mesh_shape_for(num_cores):
    """The ``[x, y, z, cores_per_chip]`` mesh of an emulated slice."""
    cores_per_chip = 2 if num_cores % 2 == 0 else 1
    chips = num_cores // cores_per_chip
    best = None
    for x, y in itertools.product(range(1, chips + 1), repeat=2):
        if x > y or chips % (x * y):
            continue
        z = chips // (x * y)
        if y > z:
            continue
        spread = z - x  # smaller is more cube-like
        if best is None or spread < best[0]:
            best = (spread, [x, y, z])
    return best[1] + [cores_per_chip]


def emulated_topology(num_cores):
    """A single-host ``Topology`` of ``num_cores`` cores.

    Device ordinal ``i`` is core ``i % cores_per_chip`` of a chip enumerated
    x-fastest, so ``DeviceAssignment.tpu_ordinal`` maps straight onto the
    emulated device list.
    """
    x_size, y_size, z_size, cores = mesh_shape_for(num_cores)
    coordinates = []
    for ordinal in range(num_cores):
        core = ordinal % cores
        chip = ordinal // cores
        coordinates.append([chip % x_size, (chip // x_size) % y_size,
                            chip // (x_size * y_size), core])
    return topology_lib.Topology(
        mesh_shape=[x_size, y_size, z_size, cores],
        device_coordinates=np.asarray([coordinates], dtype=np.int32))
