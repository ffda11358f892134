"""Keras under the TPU adapters: what each era's Keras did with a TPU strategy.

Legacy TPU programs often never call ``run``: they build a Keras model in
``strategy.scope()`` and call ``compile``/``fit``. ``install()`` makes three
generations of that code run unchanged (see docs/keras.md for the semantics):

* **TF 1.15, graph mode** (``disable_v2_behavior``; tf_keras's v1 ``Model``):
  TF 1.15 trained a TPU model with ``experimental_tpu_fit_loop``, N =
  ``steps_per_run`` steps per ``Session.run``. tf_keras picks that loop by
  class name (``TPUStrategy*``), which the emulated TPU deliberately does not
  have: every other TPU-named path needs the TPU runtime. So on the emulated
  TPU, ``fit`` with ``steps_per_run > 1`` is sent to tf_keras's own TF 1.15
  loop here, with one change: its step function assumes one replica program
  (``tpu.replicate``), where the emulated TPU has one value per replica, so
  the emulated step function reduces each output across replicas (loss SUM,
  metrics MEAN: what TF 1.15 did across cores). ``evaluate``/``predict`` ran
  one step per host call in TF 1.15 and keep the Mirrored loops, which do too.
* **TF 1.15 code in eager mode, and TF 2.x** (tf_keras's v2 ``Model``): a model
  whose strategy is an adapter with ``extended.steps_per_run = N > 1`` and no
  ``steps_per_execution`` of its own is compiled with ``steps_per_execution=N``;
  ``compile(experimental_steps_per_execution=N)`` (TF 2.2-2.3) means
  ``steps_per_execution=N`` with a TPC016 warning.
* **Keras 3** (``TF_USE_LEGACY_KERAS=0``): same TPC016 translation; on the
  emulated TPU, what Keras 3 cannot do (TF 1.x graph mode; multi-step
  execution under a MirroredStrategy, which fails inside the graph with
  INVALID_ARGUMENT) is refused at ``compile`` with one
  :class:`Keras3LimitationError` naming ``TF_USE_LEGACY_KERAS=1``.

Patches are applied to whichever Keras packages are imported when
``install()`` runs, and by the import router to the ones imported later; every
patch is recorded in the installation's changes, so ``uninstall()`` restores Keras.
"""

import functools
import importlib.util
import inspect
import sys

import tensorflow as tf

from tpu_compat.runtime import hooks
from tpu_compat.runtime.adapter import CompatStrategyMixin

__all__ = ["Keras3LimitationError", "route_keras", "LEGACY_KERAS_ADVICE"]

LEGACY_KERAS_ADVICE = (
    "Legacy TPU code was written for Keras 2: set TF_USE_LEGACY_KERAS=1 before "
    "TensorFlow is imported (`tpu-compat run` does so when tf-keras is "
    "installed; pip install tf-keras)")

_MISSING = object()


class Keras3LimitationError(RuntimeError):
    """Keras 3 cannot run this legacy Keras program on the emulated TPU."""


# -- which strategies ----------------------------------------------------------

def _adapter_steps_per_run(strategy):
    """``extended.steps_per_run`` of a tpu_compat adapter; 1 for anything else."""
    if not isinstance(strategy, CompatStrategyMixin):
        return 1
    return getattr(strategy.extended, "steps_per_run", 1) or 1


def _is_emulated_adapter(strategy):
    return (isinstance(strategy, CompatStrategyMixin)
            and strategy.tpu_compat_backend.emulated)


def _is_emulated_v1_adapter(strategy):
    from tpu_compat.runtime import strategy_v1  # pylint: disable=import-outside-toplevel
    return (isinstance(strategy, strategy_v1.CompatTPUStrategyV1)
            and strategy.tpu_compat_backend.emulated)


def _graph_mode():
    return not tf.compat.v1.executing_eagerly_outside_functions()


# -- compile: steps_per_execution ---------------------------------------------

def _positional_index(function, parameter):
    """Index of ``parameter`` among ``function``'s arguments after ``self``."""
    names = list(inspect.signature(function).parameters)
    return names.index(parameter) - 1


def _steps_per_execution_arguments(strategy, args, kwargs, index,
                                   translate_steps_per_run):
    """``kwargs`` with TF 2.2's name and TF 1.15's ``steps_per_run`` translated.

    Returns ``(kwargs, origin)``: origin says where a ``steps_per_execution``
    not written by the user came from (for error messages), or None.
    """
    kwargs = dict(kwargs)
    given = len(args) > index or kwargs.get("steps_per_execution") is not None
    legacy = kwargs.pop("experimental_steps_per_execution", _MISSING)
    if legacy is not _MISSING:
        # TPC016 warns through its hook on compile (legacy_api, hooks).
        if not given:
            kwargs["steps_per_execution"] = legacy
            return kwargs, "experimental_steps_per_execution"
    if not given and translate_steps_per_run:
        steps_per_run = _adapter_steps_per_run(strategy)
        if steps_per_run > 1:
            kwargs["steps_per_execution"] = steps_per_run
            return kwargs, "the strategy's steps_per_run"
    return kwargs, None


def _tf_keras_compile(original):
    index = _positional_index(original, "steps_per_execution")

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # pylint: disable=redefined-builtin
        kwargs, _ = _steps_per_execution_arguments(
            self.distribute_strategy, args, kwargs, index,
            translate_steps_per_run=True)
        return original(self, *args, **kwargs)

    compile.__tpu_compat_added__ = True
    return compile


_KERAS3_MULTI_STEP = (
    "Keras 3's multi-step loop can fail inside the graph under a "
    "MirroredStrategy, which is what emulates the TPU (INVALID_ARGUMENT: You "
    "must feed a value for placeholder tensor)")


def _keras3_refusal(strategy, steps_per_execution, origin):
    """Why Keras 3 cannot run this program on the emulated TPU, or None."""
    if not _is_emulated_adapter(strategy):
        return None
    if _graph_mode():
        return ("Keras 3 has no TF 1.x graph mode (the program disabled eager "
                "execution or v2 behavior)")
    steps_per_run = _adapter_steps_per_run(strategy)
    if steps_per_run > 1:
        return (f"the strategy's steps_per_run={steps_per_run} asks for several "
                f"steps per host call, and {_KERAS3_MULTI_STEP}")
    if isinstance(steps_per_execution, int) and steps_per_execution > 1:
        source = f" (from {origin})" if origin else ""
        return (f"steps_per_execution={steps_per_execution}{source} asks for "
                f"several steps per host call, and {_KERAS3_MULTI_STEP}")
    return None


def _keras3_compile(original):
    index = _positional_index(original, "steps_per_execution")

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # pylint: disable=redefined-builtin
        strategy = getattr(self, "distribute_strategy", None)
        if strategy is None:
            strategy = tf.distribute.get_strategy()
        kwargs, origin = _steps_per_execution_arguments(
            strategy, args, kwargs, index, translate_steps_per_run=False)
        steps = args[index] if len(args) > index else kwargs.get(
            "steps_per_execution", 1)
        reason = _keras3_refusal(strategy, steps, origin)
        if reason is not None:
            raise Keras3LimitationError(
                f"Keras 3 cannot run this model on the emulated TPU: {reason}. "
                f"{LEGACY_KERAS_ADVICE}.")
        return original(self, *args, **kwargs)

    compile.__tpu_compat_added__ = True
    return compile


# -- graph mode: TF 1.15's multi-step fit loop on the emulated TPU ------------

def _multi_step_fit_loop(original, distributed_module, training_utils_v1):
    """``training_arrays_v1.fit_loop`` that runs TF 1.15's TPU loop when asked.

    tf_keras sends a distributed graph-mode ``fit`` here when it does not see
    a TPU; for the emulated TPU with ``steps_per_run > 1`` that is the wrong
    loop (one ``Session.run`` per step).
    """
    signature = inspect.signature(original)

    @functools.wraps(original)
    def fit_loop(model, inputs, *args, **kwargs):
        strategy = getattr(model, "_distribution_strategy", None)
        if (strategy is None or not _is_emulated_v1_adapter(strategy)
                or strategy.extended.steps_per_run <= 1 or not _graph_mode()
                or not isinstance(inputs, tf.data.Dataset)):
            return original(model, inputs, *args, **kwargs)
        arguments = signature.bind(model, inputs, *args, **kwargs)
        arguments.apply_defaults()
        given = arguments.arguments
        epochs = given["epochs"]
        # The checks tf_keras makes before its TPU loop (the loop needs a
        # step count to split into host calls).
        steps_per_epoch = training_utils_v1.infer_steps_for_dataset(
            model, inputs, given["steps_per_epoch"], epochs,
            steps_name="steps_per_epoch")
        if steps_per_epoch is None:
            raise ValueError(
                "Number of steps could not be inferred from the data, "
                "please pass the steps_per_epoch argument.")
        return distributed_module.experimental_tpu_fit_loop(
            model, inputs, epochs=epochs, verbose=given["verbose"],
            callbacks=given["callbacks"], initial_epoch=given["initial_epoch"],
            steps_per_epoch=steps_per_epoch, val_dataset=given["val_inputs"],
            validation_steps=given["validation_steps"],
            validation_freq=given["validation_freq"])

    fit_loop.__tpu_compat_added__ = True
    return fit_loop


def _split_features_and_targets(model, inputs):
    """``(inputs, targets)`` of a dataset element, as tf_keras's TPU step reads it."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
        inputs, targets = inputs
    else:
        targets = None
    if isinstance(inputs, dict):
        inputs = [inputs[name] for name in model._feed_input_names]  # pylint: disable=protected-access
    return inputs, targets


def _emulated_train_step_fn(original, distributed_module, distributed_utils,
                            backend):
    """tf_keras's TPU ``_make_train_step_fn``, for one program per replica.

    On a TPU the step function is traced once inside ``tpu.replicate``:
    ``call_for_each_replica`` returns this replica's outputs, one per label.
    The emulated TPU calls it once for all replicas, so it gets a PerReplica
    per output and reduces it the way TF 1.15 reduced across TPU cores.
    """

    @functools.wraps(original)
    def make_train_step_fn(model, mode, strategy, output_labels):
        if not _is_emulated_v1_adapter(strategy):
            return original(model, mode, strategy, output_labels)

        def step_fn(ctx, inputs):
            inputs, targets = _split_features_and_targets(model, inputs)
            distributed_module._build_model(  # pylint: disable=protected-access
                strategy, model, mode, inputs, targets)
            grouped = strategy.extended.call_for_each_replica(
                distributed_module._per_replica_execution_function,  # pylint: disable=protected-access
                args=(distributed_utils.get_distributed_model(model, mode), mode))
            grouped_outputs = grouped[1]
            all_inputs, all_outputs, all_updates, all_session_args = (
                distributed_utils.unwrap_values(strategy, *grouped))
            combined_fn = backend.function(
                all_inputs, all_outputs, updates=all_updates,
                name=f"distributed_{mode}_function", **all_session_args)
            for label, per_replica in zip(output_labels, grouped_outputs):
                reduce_op = (tf.distribute.ReduceOp.SUM if label == "loss"
                             else tf.distribute.ReduceOp.MEAN)
                ctx.set_last_step_output(label, per_replica, reduce_op)
            return combined_fn.updates_op

        return step_fn

    make_train_step_fn.__tpu_compat_added__ = True
    return make_train_step_fn


def _emulated_validation_loop(original, arrays_module):
    """Validation inside TF 1.15's fit loop: the Mirrored test loop when emulated.

    TF 1.15's TPU test loop also ran one step per host call; its step function
    needs ``tpu.replicate``'s single replica program.
    """

    @functools.wraps(original)
    def experimental_tpu_test_loop(model, dataset, verbose=0, steps=None,
                                   callbacks=None):
        if not _is_emulated_v1_adapter(model._distribution_strategy):  # pylint: disable=protected-access
            return original(model, dataset, verbose=verbose, steps=steps,
                            callbacks=callbacks)
        return arrays_module.test_loop(model, inputs=dataset, verbose=verbose,
                                       steps=steps, callbacks=callbacks)

    experimental_tpu_test_loop.__tpu_compat_added__ = True
    return experimental_tpu_test_loop


# -- TF 1.x graph mode: Keras metric state is a local variable -----------------

def _metric_variables_are_local(original):
    """``Metric.add_weight`` whose variable ``local_variables_initializer`` sees.

    tf_keras creates metric variables with ``collections=[]``: in no graph
    collection, so neither ``tf.global_variables_initializer()`` nor
    ``tf.local_variables_initializer()`` initializes them, and the first
    ``sess.run`` of a TF 1.x program that updates a Keras metric inside
    ``experimental_run`` fails with ``Resource .../total_1 does not exist``
    (``total_1``: the copy on the second replica). Only Keras's own session
    (``tf.keras.backend.get_session()``) knew to initialize them. TF 1.x kept
    metric state in ``LOCAL_VARIABLES`` (``tf.compat.v1.metrics``), which is
    what ``local_variables_initializer`` is for, so in graph mode the metric's
    variable (the distributed one under a strategy, whose initializer covers
    every replica's copy) is added there.
    """

    @functools.wraps(original)
    def add_weight(self, *args, **kwargs):
        variable = original(self, *args, **kwargs)
        if _graph_mode() and not tf.inside_function():
            graph = getattr(variable, "graph", None) or tf.compat.v1.get_default_graph()
            local = graph.get_collection_ref(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
            if not any(v is variable for v in local):
                local.append(variable)
        return variable

    add_weight.__tpu_compat_added__ = True
    return add_weight


def _pod_session(original, backend):
    """TF 1.15 Keras ran a TPU model's graph in a session on the TPU master.

    ``configure_and_create_distributed_session`` made ``Session(target=
    resolver.master())`` for a TPU strategy, a branch it picks by class name,
    which the emulated TPU does not have; its other branch makes a local
    session. On one host that is the same thing, but on an emulated pod the
    variables live on the hosts' worker processes, which only a session on
    the pod's master (worker 0, as on a TPU pod) can reach.
    """

    @functools.wraps(original)
    def configure_and_create_distributed_session(distribution_strategy):
        from tpu_compat.pod import session as pod_session  # pylint: disable=import-outside-toplevel
        pod = pod_session.current_pod()
        if pod is None or not _is_emulated_adapter(distribution_strategy):
            return original(distribution_strategy)
        session_config = backend.get_default_session_config()
        existing = getattr(backend._SESSION, "session", None)  # pylint: disable=protected-access
        if existing is not None and existing._config:  # pylint: disable=protected-access
            session_config.MergeFrom(existing._config)  # pylint: disable=protected-access
        session_config.CopyFrom(distribution_strategy.update_config_proto(session_config))
        backend.set_session(tf.compat.v1.Session(config=session_config, target=pod.master))
        return None

    configure_and_create_distributed_session.__tpu_compat_added__ = True
    return configure_and_create_distributed_session


# -- applying the patches -----------------------------------------------------

def _patch_tf_keras(state, package):
    del package  # tf_keras/__init__ has imported the engine modules below
    # pylint: disable=import-outside-toplevel
    from tf_keras.src import backend
    from tf_keras.src.distribute import distributed_training_utils_v1
    from tf_keras.src.engine import training
    from tf_keras.src.engine import training_arrays_v1
    from tf_keras.src.engine import training_distributed_v1
    from tf_keras.src.engine import training_utils_v1
    from tf_keras.src.metrics import base_metric

    from tpu_compat.runtime import keras_era
    state.add(training.Model, "compile",
              _tf_keras_compile(training.Model.compile))
    state.add(base_metric.Metric, "add_weight",
              _metric_variables_are_local(base_metric.Metric.add_weight))
    keras_era.patch_tf_keras(state)
    hooks.instrument_library(state, "tf_keras")  # outermost: sees the user's call
    state.replace(training_arrays_v1, "fit_loop", _multi_step_fit_loop(
        training_arrays_v1.fit_loop, training_distributed_v1,
        training_utils_v1))
    state.replace(training_distributed_v1, "_make_train_step_fn",
                  _emulated_train_step_fn(
                      training_distributed_v1._make_train_step_fn,  # pylint: disable=protected-access
                      training_distributed_v1, distributed_training_utils_v1,
                      backend))
    state.replace(backend, "configure_and_create_distributed_session", _pod_session(
        backend.configure_and_create_distributed_session, backend))
    state.replace(training_distributed_v1, "experimental_tpu_test_loop",
                  _emulated_validation_loop(
                      training_distributed_v1.experimental_tpu_test_loop,
                      training_arrays_v1))


def _is_keras3(package):
    """Whether the ``keras`` PACKAGE is Keras 3 (a feature check, not a version compare).

    TF 2.16 made ``keras`` Keras 3, whose trainer lives in
    ``keras.src.trainers``. TF 2.15 and older depend on Keras 2 under the same
    name (``keras.src.engine``, tf_keras's code): nothing of Keras 3's to
    patch there. TF 2.15 already honours ``TF_USE_LEGACY_KERAS=1`` (set by
    ``tpu-compat run`` when tf-keras is installed), so its ``tf.keras`` is
    tf_keras and gets tf_keras's patches.
    """
    return importlib.util.find_spec(f"{package.__name__}.src.trainers") is not None


def _patch_keras3(state, package):
    if not _is_keras3(package):
        return
    from keras.src.trainers import trainer  # pylint: disable=import-outside-toplevel
    state.add(trainer.Trainer, "compile", _keras3_compile(trainer.Trainer.compile))
    hooks.instrument_library(state, "keras")  # outermost: sees the user's call


_PATCHES = {"tf_keras": _patch_tf_keras, "keras": _patch_keras3}


def route_keras(state, router):
    """Patches tf_keras and Keras 3 now, or when first imported, through ``state``.

    ``state`` is the installation's ``Changes``; a package not imported yet is
    patched on load by ``router``, the installation's import router
    (:mod:`tpu_compat.patching.import_router`).
    """
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(state, sys.modules[name])
        else:
            router.patch_on_load(name, functools.partial(patch, state))
