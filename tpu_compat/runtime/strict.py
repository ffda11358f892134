"""Strict mode: modern calls follow TF 2.21's ``TPUStrategy`` rules, errors included.

The adapters restore TF 1.15/2.0 conveniences (an eager ``run`` of a plain
Python function is traced, a partial global batch is split the TF 2.0 way,
...). That is right for legacy programs, but it lets a *migrated* program pass
on the emulated TPU and then fail on a real TPU under TF 2.21. In strict mode:

* legacy entry points (``experimental_run_v2``, ``experimental_run``,
  ``reduce`` without ``axis``, ...) keep their era's semantics;
* modern calls (``run``, ``experimental_distribute_dataset``,
  ``distribute_datasets_from_function``, ...) get no leniency, and on the
  emulated TPU they make the checks TF 2.21's ``TPUStrategy`` makes on a TPU
  and ``MirroredStrategy`` does not, with TensorFlow's own messages (most of
  them raised by TensorFlow's own check functions, called here).

Switch (``TPU_COMPAT_STRICT`` or ``tpu-compat run --strict``): ``on``, ``off``
or ``auto`` (the default): strict exactly when a legacy-API warning would be
raised as an error, i.e. under ``--warnings=error``/``TPU_COMPAT_WARNINGS=error``,
``install(warnings="error")`` or a ``-W error`` filter covering
``TPUCompatDeprecationWarning``. ``tpu-compat verify`` runs the migrated
script with ``--strict on``. The mode is read at each call, so it follows
the warning filters as they change (e.g. inside ``warnings.catch_warnings``).
"""

import warnings

import tensorflow as tf

from tpu_compat import settings
from tpu_compat._tf_internals import distribute_lib, distribute_utils, tpu_strategy
from tpu_compat.deprecation import TPUCompatDeprecationWarning

__all__ = [
    "check_dataset_spec",
    "check_distribute_dataset_options",
    "check_datasets_from_function_options",
    "enabled",
    "prepare_run",
]


def _legacy_warnings_are_errors():
    """Whether a TPUCompatDeprecationWarning would be raised right now.

    The first filter that applies to every such warning (no message or module
    pattern, no line number) decides, as in ``warnings.warn``.
    """
    for action, message, category, module, lineno in warnings.filters:
        if not issubclass(TPUCompatDeprecationWarning, category):
            continue
        if message is not None or module is not None or lineno:
            continue  # applies to some call sites only: cannot decide for all
        return action == "error"
    return False


def enabled():
    """True when modern calls must follow TF 2.21's TPUStrategy rules."""
    choice = settings.read("strict")
    if choice != "auto":
        return choice == "on"
    return (settings.read("warnings") == "error"
            or _legacy_warnings_are_errors())


# -- run --------------------------------------------------------------------

def _check_input_ranks(args, kwargs, options):
    """TPUStrategy pads dynamic batch sizes, which needs every input's rank."""
    if not options.experimental_enable_dynamic_batch_size:
        return
    replica_inputs = [distribute_utils.select_replica(0, args),
                      distribute_utils.select_replica(0, kwargs)]
    for value in tf.nest.flatten(replica_inputs):
        if tf.is_tensor(value) and value.shape.rank is None:
            # TensorFlow's words (TPUExtended.tpu_run).
            raise ValueError(
                "input tensor {} to TPUStrategy.run() has unknown rank, "
                "which is not allowed".format(value))


def prepare_run(fn, args, kwargs, options):
    """What TF 2.21's ``TPUStrategy.run`` checks and rewrites before replicating.

    Raises ``NotImplementedError`` for a plain Python ``fn`` in pure eager
    mode and ``ValueError`` for unsupported ways of passing variables
    (TensorFlow's own checks), or for an input of unknown rank. Returns
    ``(fn, args, kwargs, options)`` as TensorFlow would pass them on.
    """
    tpu_strategy.validate_run_function(fn)
    fn, args, kwargs = tpu_strategy._maybe_partial_apply_variables(  # pylint: disable=protected-access
        fn, args, kwargs)
    options = options or distribute_lib.RunOptions()
    _check_input_ranks(args, kwargs, options)
    return fn, args, kwargs, options


# -- input ------------------------------------------------------------------

def _per_replica_mode(options):
    return bool(options) and (options.experimental_replication_mode
                              == distribute_lib.InputReplicationMode.PER_REPLICA)


def check_distribute_dataset_options(options):
    """``experimental_distribute_dataset``: TPUExtended's refusal, its message."""
    if _per_replica_mode(options):
        raise NotImplementedError(
            "InputReplicationMode.PER_REPLICA "
            "is only supported in "
            "`experimental_distribute_datasets_from_function`.")


def check_datasets_from_function_options(options):
    """``distribute_datasets_from_function``: PER_REPLICA is Mirrored-only."""
    if _per_replica_mode(options):
        raise NotImplementedError(
            "InputReplicationMode.PER_REPLICA "
            "is only supported in "
            " `experimental_distribute_datasets_from_function` "
            "of tf.distribute.MirroredStrategy")


def check_dataset_spec(element_spec, options):
    """Sparse or ragged elements cannot be prefetched to TPU devices."""
    if options is None or options.experimental_fetch_to_device:
        # TensorFlow's own check; it does not use its `self`.
        tpu_strategy.TPUExtended._check_spec(None, element_spec)  # pylint: disable=protected-access
