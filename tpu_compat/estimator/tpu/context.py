"""Batch sizes, replica counts and the ``TPUContext`` a TPUEstimator hands to user code.

TF 1.15 computed ``params['batch_size']`` from the global batch size, the
mode, where the computation runs (CPU or TPU) and the input pipeline mode;
programs derive their tensor shapes from it, so these rules are kept exactly
(``tpu_context.py`` of tensorflow_estimator r1.15):

=====================  ======================  ======================
where / input mode     ``input_fn`` batch      ``model_fn`` batch
=====================  ======================  ======================
CPU (use_tpu=False,    global                  global
eval_on_tpu=False,
export)
BROADCAST              global                  global
PER_SHARD_V1 (train)   global // replicas      global // replicas
PER_HOST_V2            global // replicas      global // replicas
PER_HOST_V1            global // hosts         global // replicas
=====================  ======================  ======================

On a pod slice (several hosts: an emulated pod, ``TPU_COMPAT_NUM_HOSTS``)
``hosts`` is the number of hosts, as tpu_context.py read it from the TPU
system metadata; the replicas are numbered host by host.
"""

import contextlib

from tpu_compat.estimator._spec import ModeKeys
from tpu_compat.estimator.tpu.config import InputPipelineConfig

__all__ = ["HOST_DEVICE", "InternalContext", "TPUContext"]

# The CPU of the host this process drives: the only host of a one-host TPU,
# and worker 0 of a pod, whose master service runs the Estimator's sessions.
HOST_DEVICE = "/device:CPU:0"


class InternalContext:
    """The TPU facts of one TPUEstimator, and of the mode it is running."""

    def __init__(self, config, train_batch_size, eval_batch_size, predict_batch_size,
                 use_tpu, eval_on_tpu, num_replicas_fn, host_devices_fn=None):
        self.config = config
        self.train_batch_size = train_batch_size
        self.eval_batch_size = eval_batch_size
        self.predict_batch_size = predict_batch_size
        self.use_tpu = use_tpu
        self.eval_on_tpu = eval_on_tpu
        self._num_replicas_fn = num_replicas_fn
        # One host CPU device per host, in task order.
        self._host_devices_fn = host_devices_fn or (lambda: (HOST_DEVICE,))
        self._mode = None
        self.is_export_mode = False

    @contextlib.contextmanager
    def with_mode(self, mode, is_export_mode=False):
        saved = self._mode, self.is_export_mode
        self._mode, self.is_export_mode = mode, is_export_mode
        try:
            yield self
        finally:
            self._mode, self.is_export_mode = saved

    @property
    def mode(self):
        if self._mode is None:
            raise RuntimeError("internal error: TPU context used outside a mode")
        return self._mode

    # -- the TPU system ------------------------------------------------------------
    @property
    def num_replicas(self):
        return self._num_replicas_fn()

    @property
    def host_devices(self):
        """The CPU device of each host, in task order (where its input_fn runs)."""
        return tuple(self._host_devices_fn())

    @property
    def num_hosts(self):
        return len(self.host_devices)

    @property
    def num_of_replicas_per_host(self):
        return self.num_replicas // self.num_hosts

    def host_of_replica(self, replica_id):
        """The host that feeds ``replica_id`` (replicas are numbered host by host)."""
        return replica_id // self.num_of_replicas_per_host

    @property
    def input_mode(self):
        return self.config.tpu_config.per_host_input_for_training

    # -- where the current mode runs -----------------------------------------------
    def is_running_on_cpu(self):
        if not self.use_tpu or self.is_export_mode:
            return True
        return self.mode == ModeKeys.EVAL and not self.eval_on_tpu

    def is_input_sharded_per_core(self):
        return (self.mode == ModeKeys.TRAIN
                and self.input_mode == InputPipelineConfig.PER_SHARD_V1)

    def is_input_per_host_with_iterators(self):
        return self.input_mode == InputPipelineConfig.PER_HOST_V2

    def is_input_slice_broadcast_to_all_cores(self):
        return (self.mode != ModeKeys.TRAIN
                and self.config.tpu_config.eval_training_input_configuration
                == InputPipelineConfig.SLICED)

    def is_input_broadcast_with_iterators(self):
        return (self.input_mode == InputPipelineConfig.BROADCAST
                or self.is_input_slice_broadcast_to_all_cores())

    # -- batch sizes -----------------------------------------------------------------
    @property
    def global_batch_size(self):
        return {ModeKeys.TRAIN: self.train_batch_size,
                ModeKeys.EVAL: self.eval_batch_size,
                ModeKeys.PREDICT: self.predict_batch_size}[self.mode]

    @property
    def batch_size_for_input_fn(self):
        batch = self.global_batch_size
        if batch is None or self.is_running_on_cpu() or (
                self.is_input_broadcast_with_iterators()):
            return batch
        if self.is_input_sharded_per_core() or self.is_input_per_host_with_iterators():
            return batch // self.num_replicas
        return batch // self.num_hosts

    @property
    def batch_size_for_model_fn(self):
        batch = self.global_batch_size
        if batch is None or self.is_running_on_cpu() or (
                self.is_input_broadcast_with_iterators()
                and not self.is_input_slice_broadcast_to_all_cores()):
            return batch
        return batch // self.num_replicas

    def validate(self):
        """The TF 1.15 checks of a TPU run, with the argument each one is about."""
        if self.is_running_on_cpu():
            return
        tpu_config = self.config.tpu_config
        replicas = self.num_replicas
        if tpu_config.num_shards and tpu_config.num_shards != replicas:
            raise ValueError(
                f"TPUConfig.num_shards={tpu_config.num_shards} does not match the TPU, "
                f"which has {replicas} replicas; leave num_shards as None (TF 1.15 "
                f"ignored it unless it was wrong)")
        if tpu_config.num_cores_per_replica not in (None, 1):
            raise ValueError(
                f"TPUConfig.num_cores_per_replica={tpu_config.num_cores_per_replica}: "
                f"model parallelism is not supported by tpu_compat's TPUEstimator; "
                f"leave it as None")
        argument = {ModeKeys.TRAIN: "train_batch_size",
                    ModeKeys.EVAL: "eval_batch_size",
                    ModeKeys.PREDICT: "predict_batch_size"}[self.mode]
        batch = self.global_batch_size
        verb = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "evaluate",
                ModeKeys.PREDICT: "predict"}[self.mode]
        if batch is None:
            raise ValueError(f"TPUEstimator: {argument} must be set to {verb} on "
                             f"the TPU (it cannot be None when use_tpu=True)")
        if batch % replicas and not self.is_input_broadcast_with_iterators():
            raise ValueError(
                f"TPUEstimator: {argument}={batch} is not divisible by the number of "
                f"TPU replicas ({replicas}); each replica gets {argument} / {replicas} "
                f"examples per step, so use a multiple of {replicas}")


class TPUContext:
    """``params['context']``: the TPU configuration, as ``input_fn``/``model_fn`` see it."""

    def __init__(self, internal_ctx, input_device=None, invocation_index=None,
                 call_from_input_fn=True, host_id=None):
        self._internal_ctx = internal_ctx
        self._input_device = input_device
        self._invocation_index = invocation_index
        self._call_from_input_fn = call_from_input_fn
        self._host_id = host_id

    def current_input_fn_deployment(self):
        """``(host device, invocation index, total invocations, replicas fed)``."""
        if not self._call_from_input_fn:
            raise RuntimeError("TPUContext.current_input_fn_deployment() may only be "
                               "called from input_fn, not from model_fn")
        ctx = self._internal_ctx
        if ctx.is_input_sharded_per_core():
            total, consumed = ctx.num_replicas, 1
        elif ctx.is_input_broadcast_with_iterators():
            total, consumed = 1, ctx.num_replicas
        else:
            total, consumed = ctx.num_hosts, ctx.num_of_replicas_per_host
        return self._input_device, self._invocation_index, total, consumed

    @property
    def num_replicas(self):
        return self._internal_ctx.num_replicas

    @property
    def num_hosts(self):
        return self._internal_ctx.num_hosts

    @property
    def current_host(self):
        # tpu_context.py answers with the invocation index: the host for
        # per-host input, the core for per-core input.
        return self._invocation_index

    @property
    def num_of_replicas_per_host(self):
        return self._internal_ctx.num_of_replicas_per_host

    @property
    def device_assignment(self):
        return None

    def device_for_replica(self, replica_id):
        """``(host CPU device, ordinal on that host)`` of ``replica_id``."""
        ctx = self._internal_ctx
        if not 0 <= replica_id < ctx.num_replicas:
            raise ValueError(f"device_for_replica: replica_id must be in [0, "
                             f"{ctx.num_replicas}), given: {replica_id!r}")
        host = ctx.host_of_replica(replica_id)
        return ctx.host_devices[host], replica_id % ctx.num_of_replicas_per_host

    @property
    def tpu_host_placement_function(self):
        """A function of ``host_id`` giving that host's CPU device (as in TF 1.15)."""
        ctx = self._internal_ctx

        def placement_function(host_id):
            if not 0 <= host_id < ctx.num_hosts:
                raise ValueError(f"tpu_host_placement_function: host_id must be in "
                                 f"[0, {ctx.num_hosts}), given: {host_id!r}")
            return ctx.host_devices[host_id]
        return placement_function
