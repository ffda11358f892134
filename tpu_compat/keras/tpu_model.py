"""The TF 1.9-1.13 Keras TPU API: ``keras_to_tpu_model`` and ``TPUDistributionStrategy``.

Google's Keras-on-TPU path before ``tf.distribute`` (``tf.contrib.tpu``):

    strategy = tf.contrib.tpu.TPUDistributionStrategy(
        tf.contrib.cluster_resolver.TPUClusterResolver(tpu=...))
    tpu_model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=strategy)
    tpu_model.fit(input_fn, steps_per_epoch=N, epochs=E)   # or fit(x, y, batch_size=G)
    tpu_model.save_weights(path)                           # copies the TPU weights back

Era source followed throughout: tensorflow/tensorflow r1.12/r1.13
``tensorflow/contrib/tpu/python/tpu/keras_support.py`` (``tpu_model``, exported as
``tf.contrib.tpu.keras_to_tpu_model``; ``TPUDistributionStrategy``; ``KerasTPUModel``;
``TPUNumpyInfeedManager``; ``TPUDatasetInfeedManager``). There the returned model
cloned the Keras model once per input shape inside ``tpu.split_compile_and_replicate``
over the cores, fed each core its slice through the infeed, and averaged the
gradients across cores (``CrossShardOptimizer`` / ``KerasCrossShardOptimizer``, with
outputs concatenated across cores since r1.12, so the loss is the global batch's mean).

Here the returned model's TPU copy is a tf_keras model built and compiled in the
scope of the emulated (or real) TPU strategy (the TF 1.15 adapter,
:class:`~tpu_compat.runtime.strategy_v1.CompatTPUStrategyV1`), so the replicas are
real: each replica runs its slice of the global batch, and the summed, replica-scaled
gradients are those of the global batch's mean loss, as the era's cross-shard
averaging gave. The era's input rules are kept:

* ``fit(x, y, batch_size=G)``: ``G`` is the GLOBAL batch, split into ``G // cores``
  per core; a batch that does not divide is refused (keras_support.py's
  ``TPUNumpyInfeedManager._split_tensors`` asserted ``batch_size % num_towers == 0``).
* ``fit(input_fn, steps_per_epoch=N)``: ``input_fn()`` returns a dataset of fixed-shape
  ``(x, y)`` batches; each step every core pulls its OWN batch from it (keras_support.py's
  ``TPUDatasetInfeedManager`` calls ``get_next()`` once per core), so the global batch
  is the dataset's batch times the cores. A ``Dataset`` passed directly, a missing
  ``steps_per_epoch``, a ``y``, or a dataset without static shapes is refused with the
  era's messages (``_verify_dataset_shape``).
* The model's weights live on the TPU copy; ``sync_to_cpu`` / ``get_weights`` /
  ``save_weights`` / ``save`` copy them back to the CPU model (a clone of the model
  given to ``keras_to_tpu_model``, as r1.12's ``tpu_model`` cloned it), and
  ``set_weights`` / ``load_weights`` go to both.

This module is the strategy, the model and ``keras_to_tpu_model``; the input rules
above are :mod:`~tpu_compat.keras.tpu_inputs`, and what the two copies
take from the user's model (compile arguments, optimizer, metrics) is
:mod:`~tpu_compat.keras.tpu_clone`.
"""

import contextlib
import logging

import tensorflow as tf

from tpu_compat.runtime import backend as backend_lib
from tpu_compat.runtime import hooks
from tpu_compat.runtime import resolver as resolver_lib
from tpu_compat.keras.tpu_clone import (
    clone_metrics, clone_optimizer, compile_arguments, program_keras)
from tpu_compat.keras.tpu_inputs import (
    KERAS_FIT_BATCH_SIZE, check_numpy_batches, even_per_core_batch, first_array,
    global_batches, per_core_batch, validate_shapes)
from tpu_compat.keras.compile import KERAS_SUPPORT_MARK
from tpu_compat.keras.tpu_specialize import SpecializedModels

__all__ = ["KerasTPUModel", "TPUDistributionStrategy", "keras_to_tpu_model", "tpu_model"]

_LOG = logging.getLogger("tpu_compat")


class TPUDistributionStrategy:
    """``tf.contrib.tpu.TPUDistributionStrategy(tpu_cluster_resolver=None, using_single_core=False)``.

    keras_support.py: no resolver means ``TPUClusterResolver('')``; ``using_single_core``
    forces one core (no replication); otherwise every core of the TPU is used.
    """

    def __init__(self, tpu_cluster_resolver=None, using_single_core=False):
        if not isinstance(using_single_core, bool):
            raise TypeError(
                f"TPUDistributionStrategy: using_single_core must be True or False, "
                f"got {using_single_core!r}")
        if tpu_cluster_resolver is None:
            tpu_cluster_resolver = resolver_lib.TPUClusterResolver("")
        elif not hasattr(tpu_cluster_resolver, "cluster_spec"):
            raise TypeError(
                f"TPUDistributionStrategy: tpu_cluster_resolver must be a "
                f"TPUClusterResolver or None, got {type(tpu_cluster_resolver).__name__}")
        self._tpu_cluster_resolver = tpu_cluster_resolver
        self._using_single_core = using_single_core
        self._distributions = {}

    @property
    def num_cores(self):
        """The cores a (non-stateful) model is replicated over."""
        if self._using_single_core:
            return 1
        return backend_lib.get_backend().num_replicas

    def _distribution(self, num_cores):
        """The TF 1.15 TPU strategy over ``num_cores`` cores (built once per count)."""
        if num_cores not in self._distributions:
            from tpu_compat.runtime import strategy_v1  # pylint: disable=import-outside-toplevel
            assignment = None
            if num_cores != backend_lib.get_backend().num_replicas:
                topology = resolver_lib.emulated_topology_for(
                    backend_lib.get_backend().num_replicas)
                assignment = tf.tpu.experimental.DeviceAssignment.build(
                    topology, num_replicas=num_cores)
            distribution = strategy_v1.CompatTPUStrategyV1(
                self._tpu_cluster_resolver, device_assignment=assignment)
            # TF 1.13 ran these models through keras_support's own per-shape TPU
            # functions, not TF 1.15's fit loop (keras/graph_mode reads the mark).
            setattr(distribution, KERAS_SUPPORT_MARK, True)
            self._distributions[num_cores] = distribution
        return self._distributions[num_cores]

    def _cores_for_model(self, cpu_model):
        # keras_support.py's _make_assignment_for_model: a stateful model is not
        # replicated ("Degrading to a single core").
        cores = self.num_cores
        if cores > 1 and cpu_model.stateful:
            _LOG.warning("Model replication does not currently support stateful "
                         "models.  Degrading to a single core.")
            cores = 1
        return cores



def _refuse_dataset(method):
    raise ValueError(
        "Taking a Dataset directly is not yet supported. Please wrap your dataset "
        f"construction code in a function and pass that to {method} instead.")


def _era_input(x, y, steps, steps_name, method):
    """``x`` as fit and evaluate of TF 1.13's keras_support.py checked it: a
    Dataset refused, an input_fn only with its steps and without ``y``."""
    if isinstance(x, tf.data.Dataset):
        _refuse_dataset(method)
    if callable(x):
        if steps is None:
            raise ValueError("When using tf.data as input to a model, you should "
                             f"specify the {steps_name} argument.")
        if y is not None:
            raise ValueError("When using tf.data as input to a model, y must be None")
    return x

class KerasTPUModel:
    """The model ``keras_to_tpu_model`` returns (keras_support.py's ``KerasTPUModel``).

    Its TPU copy is a tf_keras model mirrored over the cores; any attribute not
    defined here (``layers``, ``summary``, ``metrics_names``, ``history``,
    ``reset_states``, ...) is the TPU copy's.
    """

    def __init__(self, cpu_model, strategy):
        self._cpu_model = cpu_model
        self._strategy = strategy
        self._num_cores = strategy._cores_for_model(cpu_model)  # pylint: disable=protected-access
        if cpu_model.stateful:
            # tf_keras refuses stateful RNNs under any tf.distribute strategy; the
            # era ran them on one core, which is one device here.
            self._distribution = None
        else:
            self._distribution = strategy._distribution(self._num_cores)  # pylint: disable=protected-access
        with self._scope():
            self._tpu_model = program_keras().models.clone_model(cpu_model)
        self._specialized = SpecializedModels(self._scope)
        self._tpu_model.set_weights(cpu_model.get_weights())
        if getattr(cpu_model, "optimizer", None) is not None:
            # keras_support.py: "If the input CPU model has already been compiled,
            # compile our TPU model immediately."
            self._compile_tpu_model(cpu_model.optimizer, **compile_arguments(cpu_model))

    def _scope(self):
        if self._distribution is None:
            return contextlib.nullcontext()
        return self._distribution.scope()

    # -- what the era's KerasTPUModel had -----------------------------------------

    @property
    def num_cores(self):
        """The cores this model is replicated over."""
        return self._num_cores

    @property
    def cpu_optimizer(self):
        return self._cpu_model.optimizer

    @property
    def optimizer(self):
        return self._tpu_model.optimizer

    def compile(self, optimizer, loss=None, metrics=None, loss_weights=None,
                sample_weight_mode=None, weighted_metrics=None, target_tensors=None,
                **kwargs):
        """Compiles the TPU model (and the CPU model, when it is not compiled yet)."""
        # keras_support.py's KerasTPUModel.compile refused these three.
        if sample_weight_mode:
            raise ValueError("sample_weight_mode not supported for TPU execution.")
        if weighted_metrics:
            raise ValueError("weighted_metrics not supported for TPU execution.")
        if target_tensors:
            raise ValueError("target_tensors is not supported for TPU execution.")
        if getattr(self._cpu_model, "optimizer", None) is None:
            self._cpu_model.compile(optimizer, loss, metrics=metrics,
                                    loss_weights=loss_weights, **kwargs)
        self._compile_tpu_model(optimizer, loss=loss, metrics=metrics,
                                loss_weights=loss_weights, **kwargs)

    def _compile_tpu_model(self, optimizer, loss=None, metrics=None, loss_weights=None,
                           **kwargs):
        weights = self._tpu_model.get_weights()
        self._specialized.clear()
        with self._scope():
            self._tpu_model.compile(clone_optimizer(optimizer), loss,
                                    metrics=clone_metrics(metrics),
                                    loss_weights=loss_weights, **kwargs)
        # Compiling under a strategy in graph mode opens a new Keras session.
        self._tpu_model.set_weights(weights)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0., validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None,
            validation_steps=None, **kwargs):
        """``fit(input_fn, steps_per_epoch=N)`` or ``fit(x, y, batch_size=GLOBAL)``."""
        kwargs.pop("_pipeline", None)  # keras_support.py's private switch
        cores = self._num_cores
        batches = []  # per-core batch sizes of the call's inputs (None: not one size)
        if isinstance(validation_data, tf.data.Dataset):
            _refuse_dataset("fit")
        if callable(_era_input(x, y, steps_per_epoch, "steps_per_epoch", "fit")):
            x = global_batches(x, cores, "x")
            batches.append(per_core_batch(x, cores))
            batch_size = None
        else:
            if batch_size is None and steps_per_epoch is None:
                batch_size = KERAS_FIT_BATCH_SIZE
            if validation_split and 0. < validation_split < 1. and validation_data is None:
                # keras_support.py's _prepare_validation_data: the last fraction of
                # the arrays, unshuffled.
                count = len(first_array(x))
                split_at = int(count * (1. - validation_split))
                slice_ = lambda data, start, stop: tf.nest.map_structure(  # noqa: E731
                    lambda a: a[start:stop], data)
                validation_data = (slice_(x, split_at, None), slice_(y, split_at, None))
                x, y = slice_(x, 0, split_at), slice_(y, 0, split_at)
                validation_split = 0.
            if batch_size is not None:
                check_numpy_batches(len(first_array(x)), batch_size, cores)
                batches.append(even_per_core_batch(len(first_array(x)), batch_size, cores))
        if callable(validation_data):
            if validation_steps is None:
                raise ValueError("When using tf.data as validation for a model, you "
                                 "should specify the validation_steps argument.")
            validation_data = global_batches(validation_data, cores, "validation_data")
            batches.append(per_core_batch(validation_data, cores))
        elif (validation_data is not None and batch_size is not None
              and not isinstance(validation_data, tf.data.Dataset)):
            check_numpy_batches(len(first_array(validation_data[0])), batch_size, cores,
                                 "batch_size (validation data)")
            batches.append(even_per_core_batch(len(first_array(validation_data[0])),
                                               batch_size, cores))
        model = self._model_for(batches)
        history = model.fit(
            x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
            callbacks=callbacks, validation_split=validation_split,
            validation_data=validation_data, shuffle=shuffle, class_weight=class_weight,
            sample_weight=sample_weight, initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch, validation_steps=validation_steps, **kwargs)
        self._tpu_model.history = history
        return history

    def _model_for(self, batches):
        """The TPU copy on static per-core batches when every input of the call gives
        the same per-core batch (tpu_specialize.py), else the copy itself."""
        if len(set(batches)) != 1:
            return self._tpu_model
        return self._specialized.for_batch(self._tpu_model, batches[0])

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, **kwargs):
        """``evaluate(input_fn, steps=N)`` or ``evaluate(x, y, batch_size=GLOBAL)``."""
        cores = self._num_cores
        batches = []
        if callable(_era_input(x, y, steps, "steps", "evaluate")):
            x = global_batches(x, cores, "x")
            batches.append(per_core_batch(x, cores))
        else:
            if batch_size is None and steps is None:
                batch_size = KERAS_FIT_BATCH_SIZE
            if batch_size is not None:
                check_numpy_batches(len(first_array(x)), batch_size, cores)
        model = self._model_for(batches)
        return model.evaluate(x, y, batch_size=batch_size, verbose=verbose,
                              sample_weight=sample_weight, steps=steps, **kwargs)

    def predict(self, x, batch_size=None, verbose=0, steps=None, **kwargs):
        """``predict`` of arrays in global batches that split across the cores."""
        cores = self._num_cores
        if batch_size is None and steps is None:
            batch_size = KERAS_FIT_BATCH_SIZE
        if batch_size is not None and not callable(x):
            check_numpy_batches(len(first_array(x)), batch_size, cores)
        return self._tpu_model.predict(x, batch_size=batch_size, verbose=verbose,
                                       steps=steps, **kwargs)

    def sync_to_cpu(self):
        """Copies the TPU weights to the CPU model and returns it."""
        self._cpu_model.set_weights(self._tpu_model.get_weights())
        return self._cpu_model

    def get_weights(self):
        return self.sync_to_cpu().get_weights()

    def set_weights(self, weights):
        self._cpu_model.set_weights(weights)
        self._tpu_model.set_weights(weights)

    def save_weights(self, *args, **kwargs):
        return self.sync_to_cpu().save_weights(*args, **kwargs)

    def save(self, *args, **kwargs):
        return self.sync_to_cpu().save(*args, **kwargs)

    def load_weights(self, filepath, by_name=False):
        """Loads into the CPU model, then the TPU copy gets those weights."""
        status = self._cpu_model.load_weights(filepath, by_name=by_name)
        self._tpu_model.set_weights(self._cpu_model.get_weights())
        return status

    def shutdown(self):
        """keras_support.py's shutdown: nothing to release on the emulated TPU."""
        _LOG.info("KerasTPUModel.shutdown: the TPU system stays up.")

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_tpu_model", "_cpu_model"):
            raise AttributeError(name)
        return getattr(self._tpu_model, name)

    def __repr__(self):
        return (f"<KerasTPUModel {self._tpu_model.name!r} on {self._num_cores} "
                f"core{'s' if self._num_cores != 1 else ''}>")


def keras_to_tpu_model(model, strategy=None):
    """``tf.contrib.tpu.keras_to_tpu_model(model, strategy=None)``: a :class:`KerasTPUModel`.

    keras_support.py's ``tpu_model``: validates the shapes, refuses a strategy that is
    not a ``TPUDistributionStrategy``, clones the model (weights and compile arguments
    included) as the CPU model, and returns the TPU model over it.
    """
    keras = program_keras()
    if not isinstance(model, keras.Model):
        raise TypeError(f"keras_to_tpu_model: model must be a tf.keras Model, got "
                        f"{type(model).__name__}")
    validate_shapes(model)
    if strategy is None:
        strategy = TPUDistributionStrategy()
    elif not isinstance(strategy, TPUDistributionStrategy):
        raise TypeError(f"`strategy` must have type `tf.contrib.tpu.TPUDistributionStrategy`. "
                        f"Got: {type(strategy)}")
    cpu_model = keras.models.clone_model(model)
    if getattr(model, "optimizer", None) is not None:
        arguments = compile_arguments(model)
        cpu_model.compile(clone_optimizer(model.optimizer), arguments["loss"],
                          metrics=clone_metrics(arguments["metrics"]),
                          loss_weights=arguments["loss_weights"])
    cpu_model.set_weights(model.get_weights())
    cpu_model.reset_states()
    return KerasTPUModel(cpu_model, strategy)


tpu_model = keras_to_tpu_model  # keras_support.tpu_model, the module's own name


hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
