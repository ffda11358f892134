"""A ``scaffold_fn``'s ``tf.compat.v1.train.Saver`` over the emulated TPU's variables.

The image-model trainers of TF 1.15 (EfficientNet, ResNet, MnasNet main.py)
evaluate with exponential moving averages:
``scaffold_fn = lambda: Scaffold(saver=Saver(ema.variables_to_restore(ema_vars)))``,
a dict from checkpoint names (``w/ExponentialMovingAverage``) to the model's
variables. On a TPU those were the host's ordinary variables
(TF r1.15 tensorflow_estimator/python/estimator/tpu/tpu_estimator.py calls
``scaffold_fn`` on the host, after the TPU computation is built). On the
emulated TPU they are MirroredVariables, one copy per core, and TensorFlow's
``Saver`` turns a dict value that is not a resource variable into a tensor:
it restored into no copy at all (or failed with ``Not a variable``). While
``scaffold_fn`` runs, a DistributedVariable given to a Saver is saved and
restored as the variable itself, every copy, under the name the program gave.
"""

import contextlib

from tpu_compat._tf_internals import saveable_object_util, values_lib

__all__ = ["distributed_variables_restore_every_copy"]


@contextlib.contextmanager
def distributed_variables_restore_every_copy():
    """While active, Savers built take a DistributedVariable as one variable."""
    original = saveable_object_util.saveable_objects_for_op

    def saveable_objects_for_op(op, name):
        if isinstance(op, values_lib.DistributedVariable):
            # The variable's own checkpoint saveable (_MirroredSaveable for a
            # MirroredVariable: saves the primary, restores every copy), under
            # the program's name for it.
            factories = op._gather_saveables_for_checkpoint()  # pylint: disable=protected-access
            factory = next(iter(factories.values()))
            yield from original(factory(name) if callable(factory) else factory, name)
            return
        yield from original(op, name)

    saveable_object_util.saveable_objects_for_op = saveable_objects_for_op
    try:
        yield
    finally:
        saveable_object_util.saveable_objects_for_op = original
