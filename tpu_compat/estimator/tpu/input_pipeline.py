"""TPUEstimator's input pipeline: ``input_fn`` called as TF 1.15 did, every replica fed.

What TF 1.15's TPUEstimator did with infeed queues is done here with host-side
equivalents: a dataset's ``get_next()`` runs inside the on-device loop, once
per replica-batch as the input mode says, on the CPU of the host whose
``input_fn`` made it (each host of a pod feeds its own replicas);
``input_fn``s that return tensors (not a dataset) are fed through a host FIFO
queue that ``session_hooks.InfeedHook`` fills with one element per step before
each loop, as TF's infeed thread did.
"""

import tensorflow as tf

from tpu_compat._tf_internals import ops as tf_ops

from tpu_compat.estimator import _inputs
from tpu_compat.estimator._spec import ModeKeys
from tpu_compat.estimator.tpu import context as context_lib

__all__ = ["InputPipeline", "QUEUE_CAPACITY"]

# Host queues (this infeed and the host-call outfeed) are drained after every
# loop; this only bounds a runaway loop.
QUEUE_CAPACITY = 1 << 30


class _HostInfeed:
    """A host FIFO queue fed from tensors an ``input_fn`` returned (TF's infeed)."""

    def __init__(self, flat_tensors):
        self.queue = tf.queue.FIFOQueue(
            QUEUE_CAPACITY, dtypes=[t.dtype for t in flat_tensors],
            shapes=[t.shape for t in flat_tensors], name="host_infeed")
        self.enqueue_op = self.queue.enqueue(flat_tensors)

    def dequeue(self):
        values = self.queue.dequeue()
        return values if isinstance(values, (list, tuple)) else [values]


def _static_batch_check(features, labels, what):
    for name, value in (("features", features), ("labels", labels)):
        for tensor in tf.nest.flatten(value):
            if isinstance(tensor, tf.Tensor) and not tensor.shape.is_fully_defined():
                raise ValueError(
                    f"input_fn: the {name} returned by input_fn must have static "
                    f"shapes on the TPU ({what}), but {tensor.name} has shape "
                    f"{tensor.shape}; batch with dataset.batch(params['batch_size'], "
                    f"drop_remainder=True)")


def _split(structure, count, batch_axis, what):
    """``structure``'s tensors split into ``count`` slices along their batch axis."""
    flat = tf.nest.flatten(structure)
    tensors = [t for t in flat if t is not None]  # labels may be None
    axes = list(batch_axis) if batch_axis is not None else [0] * len(tensors)
    if len(axes) != len(tensors):
        raise ValueError(f"TPUEstimator: batch_axis has {len(axes)} entries but "
                         f"input_fn returns {len(tensors)} tensors")
    axes = iter(axes)
    pieces = []
    for tensor in flat:
        if tensor is None:
            pieces.append([None] * count)
            continue
        axis = next(axes)
        size = tf.compat.dimension_value(tensor.shape[axis])
        if size is not None and size % count:
            raise ValueError(
                f"input_fn: the batch of {tensor.name} ({size}) does not split into "
                f"{count} replicas ({what})")
        pieces.append(tf.split(tensor, count, axis=axis))
    return [tf.nest.pack_sequence_as(structure, [p[i] for p in pieces])
            for i in range(count)]


def _on_host(device):
    """Places ops on a host's CPU by the backend's own device name.

    The names are the hosts the backend runs (``/job:worker/task:h`` on an
    emulated pod), so they are used as they are; ``tf.device`` maps the names
    a program writes (runtime/devices.py), which these are not.
    """
    return tf_ops.device(device)


class _Source:
    """What one ``input_fn`` call returned, and the host CPU it runs on."""

    def __init__(self, device, iterator=None, infeed=None, structure=None):
        self.device = device
        self.iterator = iterator
        self.infeed = infeed
        self.structure = structure


def _with_endless_padding(dataset, what):
    """``dataset``, then empty batches forever.

    On a pod each host predicts from its own ``input_fn``; one host's input
    may end before another's. TF 1.15 appended padded batches with stopping
    signals to each host's input (``_InputsWithStoppingSignals``); here a host
    whose input has ended feeds empty batches (padded to full ones, then
    dropped) until every host's input has ended.
    """
    def empty(spec):
        inner = spec.shape[1:]
        if not inner.is_fully_defined():
            raise ValueError(
                f"input_fn: TPUEstimator.predict on the TPU needs features with static "
                f"shapes apart from the batch dimension ({what}); a feature has shape "
                f"{spec.shape}")
        return tf.zeros([0] + inner.as_list(), spec.dtype)
    tail = tf.data.Dataset.from_tensors(
        tf.nest.map_structure(empty, dataset.element_spec)).repeat()
    return dataset.concatenate(tail)


class InputPipeline:
    """Calls ``input_fn`` as TF 1.15 did for the mode, and feeds every replica.

    As tpu_estimator.py's ``_InputPipeline``: ``input_fn`` is called once per
    core (PER_SHARD_V1, training), once on host 0 (BROADCAST, and SLICED
    evaluation), else once per host (PER_HOST_V1/V2), each call under its
    host's CPU device with a ``TPUContext`` whose
    ``current_input_fn_deployment()`` names that host and invocation; each
    host's input feeds that host's replicas (numbered host by host).
    ``next_per_replica()`` (called inside the loop body) returns one
    ``(features, labels)`` per replica for one step.
    """

    def __init__(self, ctx, input_fn, batch_axis, params, config):
        self._ctx = ctx
        self._batch_axis = batch_axis
        self.hooks = []
        self.infeed_ops = []
        self._sources = []
        self._real_counts = None  # predict: real examples of each source this step
        self._end_check = None    # predict: raises OutOfRange once all inputs ended
        self._per_core = ctx.is_input_sharded_per_core()
        self._per_host_v2 = ctx.is_input_per_host_with_iterators()
        self._broadcast = ctx.is_input_broadcast_with_iterators()
        self._sliced = ctx.is_input_slice_broadcast_to_all_cores()
        invocations = self._invocations()
        for index, host in invocations:
            device = ctx.host_devices[host]
            call_params = dict(params)
            call_params["batch_size"] = ctx.batch_size_for_input_fn
            call_params["context"] = context_lib.TPUContext(
                ctx, input_device=device, invocation_index=index, host_id=host)
            available = {"params": call_params, "mode": ctx.mode, "config": config}
            scope = "input_fn" if len(invocations) == 1 else f"input_fn_{index}"
            with _on_host(device), tf.name_scope(scope):
                result = _inputs.call_with_known_args(input_fn, available,
                                                      required=("params",))
                self._add_source(result, device)

    def _invocations(self):
        """``(invocation index, host)`` of each ``input_fn`` call."""
        ctx = self._ctx
        if self._per_core:
            return [(replica, ctx.host_of_replica(replica))
                    for replica in range(ctx.num_replicas)]
        if self._broadcast:
            return [(0, 0)]
        return [(host, host) for host in range(ctx.num_hosts)]

    @property
    def _predict_batch_per_source(self):
        """Predict: the examples one source feeds per step (padded to it)."""
        batch = self._ctx.predict_batch_size
        return batch if self._broadcast else batch // self._ctx.num_hosts

    def _add_source(self, result, device):
        mode = self._ctx.mode
        if _inputs.is_dataset(result):
            if self._per_core:
                raise TypeError(
                    "input_fn returned a Dataset, which the per-core input pipeline "
                    "(TPUConfig(per_host_input_for_training=False)) does not support "
                    "(as in TF 1.15); return (features, labels) tensors, or use "
                    "per_host_input_for_training=True or InputPipelineConfig."
                    "PER_HOST_V2")
            dataset = result
            if mode == ModeKeys.PREDICT:
                if self._per_host_v2:
                    # Predictions do not depend on how examples are grouped
                    # into steps; read whole host batches so that a partial
                    # last step pads once.
                    dataset = dataset.unbatch().batch(self._predict_batch_per_source)
                dataset = _with_endless_padding(dataset, f"mode {mode!r}")
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
            self.hooks.append(_inputs.DatasetInitializerHook(iterator))
            self._sources.append(_Source(device, iterator=iterator))
            return
        if mode == ModeKeys.PREDICT:
            raise TypeError("input_fn must return a Dataset for TPUEstimator.predict "
                            "on the TPU, not features and labels (as in TF 1.15)")
        if self._per_host_v2:
            raise TypeError("input_fn must return a Dataset with "
                            "InputPipelineConfig.PER_HOST_V2 (as in TF 1.15)")
        features, labels = _inputs.split_features_and_labels(result)
        _static_batch_check(features, labels, f"mode {mode!r}")
        structure = (features, labels)
        infeed = _HostInfeed([t for t in tf.nest.flatten(structure) if t is not None])
        self._sources.append(_Source(device, infeed=infeed, structure=structure))
        self.infeed_ops.append(infeed.enqueue_op)

    def _next_from(self, source):
        if source.iterator is not None:
            return _inputs.split_features_and_labels(source.iterator.get_next())
        values = iter(source.infeed.dequeue())
        # Labels may be None: only tensors went through the queue.
        return tf.nest.pack_sequence_as(
            source.structure, [None if t is None else next(values)
                               for t in tf.nest.flatten(source.structure)])

    def next_per_replica(self):
        ctx = self._ctx
        if ctx.mode == ModeKeys.PREDICT:
            return self._next_for_predict()
        what = f"mode {ctx.mode!r}"
        if self._per_core:
            batches = []
            for source in self._sources:
                with _on_host(source.device):
                    batches.append(self._next_from(source))
            return batches
        if self._broadcast:
            with _on_host(self._sources[0].device):
                features, labels = self._next_from(self._sources[0])
                _static_batch_check(features, labels, what)
                if self._sliced:
                    return _split((features, labels), ctx.num_replicas,
                                  self._batch_axis, what)
            return [(features, labels)] * ctx.num_replicas
        batches = []
        for source in self._sources:  # one per host, in host order
            with _on_host(source.device):
                batches += (self._host_v2_batches(source) if self._per_host_v2
                            else self._host_v1_batches(source, what))
        return batches

    def _host_v2_batches(self, source):
        """PER_HOST_V2: the host's replica ``i`` gets its dataset's ``i``-th batch."""
        batches, previous = [], []
        for _ in range(self._ctx.num_of_replicas_per_host):
            with tf.control_dependencies(previous):
                batch = self._next_from(source)
            previous = [t for t in tf.nest.flatten(batch) if t is not None]
            batches.append(batch)
        for batch in batches:
            _static_batch_check(*batch, "PER_HOST_V2")
        return batches

    def _host_v1_batches(self, source, what):
        """PER_HOST_V1: the host's batch split across the host's replicas."""
        features, labels = self._next_from(source)
        _static_batch_check(features, labels, what)
        return _split((features, labels), self._ctx.num_of_replicas_per_host,
                      self._batch_axis, what)

    def _next_for_predict(self):
        ctx = self._ctx
        batch = self._predict_batch_per_source
        padded, self._real_counts = [], []
        for source in self._sources:
            with _on_host(source.device):
                features, labels = self._next_from(source)
                real = tf.shape(tf.nest.flatten(features)[0])[0]
                padded.append(_pad_to_batch(features, labels, batch))
            self._real_counts.append(real)
        with _on_host(self._sources[0].device):
            self._end_check = _end_of_input_when_all_empty(self._real_counts)
        if self._broadcast:
            features, labels = padded[0]
            if self._sliced:
                return _split((features, labels), ctx.num_replicas, self._batch_axis,
                              "predict")
            return [(features, labels)] * ctx.num_replicas
        per_replica = []
        for (features, labels), source in zip(padded, self._sources):
            with _on_host(source.device):
                per_replica += _split((features, labels), ctx.num_of_replicas_per_host,
                                      self._batch_axis, "predict")
        return per_replica

    def real_predictions(self, per_replica_values):
        """The predictions of real examples, in input order (padding dropped).

        Raises OutOfRange (ending ``predict``) once every input has ended.
        """
        with tf.control_dependencies([self._end_check]):
            if self._broadcast and not self._sliced:
                # Every replica predicted the same batch; TF 1.15 took replica 0's.
                return tf.identity(per_replica_values[0][:self._real_counts[0]])
            if self._broadcast:
                return tf.concat(per_replica_values, axis=0)[:self._real_counts[0]]
            per_host = self._ctx.num_of_replicas_per_host
            pieces = []
            for host, real in enumerate(self._real_counts):
                values = per_replica_values[host * per_host:(host + 1) * per_host]
                pieces.append(tf.concat(values, axis=0)[:real])
            return tf.concat(pieces, axis=0)


def _end_of_input_when_all_empty(real_counts):
    """An op that raises OutOfRange (ends ``predict``) when no input has examples."""
    ended = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(0))
    return tf.compat.v1.cond(
        tf.add_n(real_counts) > 0, lambda: tf.constant(0, tf.int64), ended.get_next)


def _pad_to_batch(features, labels, batch):
    """Pads a partial last batch to ``batch`` examples (TF 1.15 did too)."""

    def pad(tensor):
        if tensor is None:
            return None
        missing = batch - tf.shape(tensor)[0]
        paddings = [[0, missing]] + [[0, 0]] * (tensor.shape.rank - 1)
        padded = tf.pad(tensor, paddings)
        padded.set_shape([batch] + tensor.shape.as_list()[1:])
        return padded

    return tf.nest.map_structure(pad, features), tf.nest.map_structure(pad, labels)
