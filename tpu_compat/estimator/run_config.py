"""``tf.estimator.RunConfig``: where and how often an Estimator saves, logs and seeds.

Only what a single-process program uses is meaningful here: ``model_dir``,
seeds, checkpoint and summary cadence, ``session_config``, logging, and the
distribution strategies of ``train_distribute``/``eval_distribute``. A
``TF_CONFIG`` naming a multi-worker cluster is refused with one clear error
(distributed Estimator training is out of scope, see docs/estimator.md),
unless it names this process the chief of an emulated TPU pod.
"""

import copy
import os

from tpu_compat.pod import config as pod_config
from tpu_compat.runtime import hooks as _table_hooks

__all__ = ["RunConfig", "TaskType"]

_USE_DEFAULT = object()
TF_CONFIG_VAR = pod_config.TF_CONFIG_VAR


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


_REPLACEABLE = frozenset({
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
    "device_fn", "protocol", "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def"})


def _non_negative(name, value, allow_none=True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"RunConfig: {name} must be a number >= 0"
                         f"{' or None' if allow_none else ''}, given: {value!r}")
    return value


def check_no_cluster(environ=None):
    """Raises if ``TF_CONFIG`` describes a multi-task cluster (out of scope).

    pod/config.py reads it; a chief's ``TF_CONFIG`` of an emulated pod is no
    Estimator cluster (its workers are the pod's hosts).
    """
    try:
        cluster = pod_config.estimator_cluster(environ)
    except ValueError as error:
        raise ValueError(f"{TF_CONFIG_VAR} is not valid JSON: {error}") from None
    if cluster is None:
        return {}
    jobs = cluster.jobs
    tasks = sum(jobs.values())
    if tasks > 1:
        raise ValueError(
            f"{TF_CONFIG_VAR} describes a cluster of {tasks} tasks "
            f"({', '.join(sorted(jobs))}); distributed Estimator training "
            f"(tf.estimator.train_and_evaluate across a cluster, parameter servers) "
            f"is not supported by tpu_compat. Unset {TF_CONFIG_VAR} to train in "
            f"this process, or migrate to tf.distribute (see docs/estimator.md).")
    return cluster.config


def _distribution(train_distribute, eval_distribute, experimental_distribute):
    """The training and evaluation strategies, as TF 1.15's RunConfig took them.

    ``experimental_distribute`` (``tf.contrib.distribute.DistributeConfig``)
    may name them instead of the arguments, not as well (tensorflow r1.15,
    tensorflow/python/distribute/estimator_training.py, ``init_run_config``);
    its ``remote_cluster`` (a multi-worker cluster) is out of scope.
    """
    from tpu_compat.estimator import distributed  # pylint: disable=import-outside-toplevel
    given = {"train_distribute": train_distribute, "eval_distribute": eval_distribute}
    if experimental_distribute is not None:
        for name in given:
            value = getattr(experimental_distribute, name, None)
            if value is None:
                continue
            if given[name] is not None:
                raise ValueError(f"RunConfig: either {name} or "
                                 f"experimental_distribute.{name} can be set, not both")
            given[name] = value
        if getattr(experimental_distribute, "remote_cluster", None):
            raise ValueError(
                "RunConfig: experimental_distribute.remote_cluster (distributed "
                "Estimator training across a cluster) is not supported by "
                "tpu_compat; leave it None to train in this process")
    return tuple(distributed.check_strategy(name, value) for name, value in given.items())


class RunConfig:
    """``tf.estimator.RunConfig`` (TF 1.15 signature).

    ``train_distribute``/``eval_distribute`` make ``Estimator.train``/
    ``evaluate`` replicate the model_fn over the strategy's replicas, as TF
    1.14/1.15 did (estimator/distributed.py).
    """

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200, checkpoint_save_graph_def=True):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("RunConfig: save_checkpoints_steps and "
                             "save_checkpoints_secs cannot both be set; choose one.")
        train_distribute, eval_distribute = _distribution(
            train_distribute, eval_distribute, experimental_distribute)
        check_no_cluster()
        self._model_dir = os.fspath(model_dir) if model_dir is not None else None
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = _non_negative("save_summary_steps", save_summary_steps)
        self._save_checkpoints_steps = _non_negative("save_checkpoints_steps",
                                                     save_checkpoints_steps)
        self._save_checkpoints_secs = _non_negative("save_checkpoints_secs",
                                                    save_checkpoints_secs)
        self._session_config = session_config
        self._keep_checkpoint_max = _non_negative("keep_checkpoint_max",
                                                  keep_checkpoint_max)
        self._keep_checkpoint_every_n_hours = _non_negative(
            "keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours)
        self._log_step_count_steps = _non_negative("log_step_count_steps",
                                                   log_step_count_steps)
        self._train_distribute = train_distribute
        self._eval_distribute = eval_distribute
        self._experimental_distribute = experimental_distribute
        self._device_fn = device_fn
        self._protocol = protocol
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def
        self._master = ""
        self._evaluation_master = ""

    # -- what the Estimator reads ----------------------------------------------
    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(
        lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    session_creation_timeout_secs = property(
        lambda self: self._session_creation_timeout_secs)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: self._evaluation_master)

    # A single-process program is its own chief with no cluster.
    cluster_spec = property(lambda self: None)
    task_type = property(lambda self: TaskType.WORKER)
    task_id = property(lambda self: 0)
    is_chief = property(lambda self: True)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    global_id_in_cluster = property(lambda self: 0)
    service = property(lambda self: None)

    def replace(self, **kwargs):
        """A copy with the given properties replaced (TF 1.15's allowed list)."""
        unknown = sorted(set(kwargs) - _REPLACEABLE)
        if unknown:
            raise ValueError(f"RunConfig.replace: {', '.join(unknown)} cannot be "
                             f"replaced; allowed: {', '.join(sorted(_REPLACEABLE))}")
        if ("save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs
                and kwargs["save_checkpoints_steps"] is not None
                and kwargs["save_checkpoints_secs"] is not None):
            raise ValueError("RunConfig: save_checkpoints_steps and "
                             "save_checkpoints_secs cannot both be set; choose one.")
        for name in ("train_distribute", "eval_distribute"):
            if name in kwargs:
                from tpu_compat.estimator import distributed  # pylint: disable=import-outside-toplevel
                distributed.check_strategy(name, kwargs[name])
        new = copy.copy(self)
        for name, value in kwargs.items():
            if name == "model_dir" and value is not None:
                value = os.fspath(value)
            setattr(new, "_" + name, value)
        # Setting one checkpoint cadence clears the other, as in TF 1.15.
        if kwargs.get("save_checkpoints_steps") is not None:
            new._save_checkpoints_secs = None  # pylint: disable=protected-access
        if kwargs.get("save_checkpoints_secs") is not None:
            new._save_checkpoints_steps = None  # pylint: disable=protected-access
        return new

    def __deepcopy__(self, memo):
        # Immutable apart from replace(), which copies; a TPU cluster resolver
        # inside (tpu.RunConfig(cluster=...)) must stay the same object.
        return copy.copy(self)

    def __repr__(self):
        fields = ", ".join(f"{k[1:]}={v!r}" for k, v in sorted(vars(self).items())
                           if not k.startswith("_tpu"))
        return f"RunConfig({fields})"


_table_hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
