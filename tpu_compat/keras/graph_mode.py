"""TF 1.15 graph-mode Keras on the emulated TPU (tf_keras's v1 ``Model``).

TF 1.15 trained a TPU model with ``experimental_tpu_fit_loop``, ``steps_per_run``
steps per ``Session.run``, and TF 2.0-2.3's graph-mode Keras did the same for
either TPUStrategy class; tf_keras picks that loop by class name
(``TPUStrategy*``), which the emulated TPU deliberately does not have. The
wrappers here send such a ``fit`` to that loop with a step function for one
program per replica, run its validation on the Mirrored test loop, put Keras
metric variables where ``local_variables_initializer`` finds them, and open
Keras's session on an emulated pod's master. :mod:`tpu_compat.keras.routes`
installs them; see docs/keras.md.
"""

import functools
import inspect

import tensorflow as tf

from tpu_compat.keras.compile import (
    KERAS_SUPPORT_MARK, graph_mode, is_emulated_adapter)

__all__ = ["emulated_train_step_fn", "emulated_validation_loop",
           "metric_variables_are_local", "multi_step_fit_loop", "pod_session",
           "split_features_and_targets"]


def multi_step_fit_loop(original, distributed_module, training_utils_v1):
    """``training_arrays_v1.fit_loop`` that runs TF 1.15's TPU loop on the emulated TPU.

    tf_keras sends a distributed graph-mode ``fit`` here when it does not see
    a TPU. For a TPU strategy TF 1.15 always took ``experimental_tpu_fit_loop``
    in graph mode, one step per host call included (TF r1.15
    tensorflow/python/keras/engine/training_distributed.py,
    ``DistributionSingleWorkerTrainingLoop.fit``: ``if
    dist_utils.is_tpu_strategy(...)`` and not executing eagerly). Its replica
    model is built on the iterator's static per-replica shapes; the Mirrored
    loop feeds placeholders of unknown batch, where an LSTM's gradient takes
    the dynamic-shape path a TPU would not compile (``--fidelity tpu``).

    The same holds for TF 2's class (``tf.compat.v2.distribute.TPUStrategy``,
    what ``tpu-compat upgrade`` makes of TF 1.15's) in graph mode: TF 2.0-2.3
    tested the class name the same way (r2.0/r2.1
    tensorflow/python/keras/engine/training_distributed.py, r2.2/r2.3
    training_distributed_v1.py, ``DistributionSingleWorkerTrainingLoop.fit``;
    tf_keras's training_distributed_v1.py keeps it), so every emulated TPU
    adapter takes it here.
    """
    signature = inspect.signature(original)

    @functools.wraps(original)
    def fit_loop(model, inputs, *args, **kwargs):
        strategy = getattr(model, "_distribution_strategy", None)
        if (strategy is None or not is_emulated_adapter(strategy)
                or not graph_mode()
                or not isinstance(inputs, tf.data.Dataset)
                or (strategy.extended.steps_per_run <= 1
                    and getattr(strategy, KERAS_SUPPORT_MARK, False))):
            # keras_to_tpu_model's strategy (TF 1.13): its static per-core shapes
            # come from keras/tpu_specialize over tf_keras's own loop.
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


def split_features_and_targets(model, inputs):
    """``(inputs, targets)`` of a dataset element, as tf_keras's TPU step reads it."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
        inputs, targets = inputs
    else:
        targets = None
    if isinstance(inputs, dict):
        inputs = [inputs[name] for name in model._feed_input_names]  # pylint: disable=protected-access
    return inputs, targets


def emulated_train_step_fn(original, distributed_module, distributed_utils,
                            backend):
    """tf_keras's TPU ``_make_train_step_fn``, for one program per replica.

    On a TPU the step function is traced once inside ``tpu.replicate``:
    ``call_for_each_replica`` returns this replica's outputs, one per label.
    The emulated TPU calls it once for all replicas, so it gets a PerReplica
    per output and reduces it the way TF 1.15 reduced across TPU cores.
    """

    @functools.wraps(original)
    def make_train_step_fn(model, mode, strategy, output_labels):
        if not is_emulated_adapter(strategy):
            return original(model, mode, strategy, output_labels)

        def step_fn(ctx, inputs):
            inputs, targets = split_features_and_targets(model, inputs)
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


def emulated_validation_loop(original, arrays_module):
    """Validation inside TF 1.15's fit loop: the Mirrored test loop when emulated.

    TF 1.15's TPU test loop also ran one step per host call; its step function
    needs ``tpu.replicate``'s single replica program.

    The fit loop calls this once per validated epoch with the same dataset.
    A new distributed iterator per call put another input pipeline (one
    MultiDeviceIterator per replica: some 350 ops for 8 replicas) into the
    session's graph every epoch, and every later ``Session.run`` paid for the
    bigger graph. The iterator and its feed are made once per (model,
    dataset) and re-initialized before each later pass, as tf_keras's own
    graph-mode ``fit`` validates (training_arrays_v1.model_iteration's
    ``val_iterator``); the pass reads the same elements from the start.
    """

    @functools.wraps(original)
    def experimental_tpu_test_loop(model, dataset, verbose=0, steps=None,
                                   callbacks=None):
        if not is_emulated_adapter(model._distribution_strategy):  # pylint: disable=protected-access
            return original(model, dataset, verbose=verbose, steps=steps,
                            callbacks=callbacks)
        feed, steps = _validation_feed(model, dataset, steps, arrays_module)
        return arrays_module.test_loop(
            model, inputs=feed, verbose=verbose, steps=steps, callbacks=callbacks,
            validation_in_fit=True, prepared_feed_values_from_dataset=True)

    experimental_tpu_test_loop.__tpu_compat_added__ = True
    return experimental_tpu_test_loop


_VALIDATION_FEED = "_tpu_compat_validation_feed"


def _validation_feed(model, dataset, steps, arrays_module):
    """``(feed values, steps)`` of ``dataset``'s validation pass: made at the first
    pass, its iterator re-initialized at each later one (same graph, same dataset)."""
    from tf_keras.src.engine import training_utils_v1  # pylint: disable=import-outside-toplevel
    from tf_keras.src.utils.mode_keys import ModeKeys  # pylint: disable=import-outside-toplevel
    strategy = model._distribution_strategy  # pylint: disable=protected-access
    graph = tf.compat.v1.get_default_graph()
    cached = getattr(model, _VALIDATION_FEED, None)
    if cached is not None and cached[0] is dataset and cached[1] is graph:
        _, _, iterator, feed, cached_steps = cached
        arrays_module._reinitialize_iterator(iterator, strategy)  # pylint: disable=protected-access
        return feed, (steps if steps is not None else cached_steps)
    if steps is None:
        steps = training_utils_v1.infer_steps_for_dataset(
            model, dataset, None, steps_name="validation_steps")
    iterator = arrays_module._get_iterator(dataset, strategy)  # pylint: disable=protected-access
    feed = arrays_module._prepare_feed_values(  # pylint: disable=protected-access
        model, iterator, None, None, ModeKeys.TEST)
    # The dataset is held with its feed, so its id cannot be reused by another.
    setattr(model, _VALIDATION_FEED, (dataset, graph, iterator, feed, steps))
    return feed, steps


# -- TF 1.x graph mode: Keras metric state is a local variable -----------------

def metric_variables_are_local(original):
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
        if graph_mode() and not tf.inside_function():
            graph = getattr(variable, "graph", None) or tf.compat.v1.get_default_graph()
            local = graph.get_collection_ref(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
            if not any(v is variable for v in local):
                local.append(variable)
        return variable

    add_weight.__tpu_compat_added__ = True
    return add_weight


def pod_session(original, backend):
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
        if pod is None or not is_emulated_adapter(distribution_strategy):
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
