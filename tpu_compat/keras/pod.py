"""Keras ``predict`` on an emulated pod slice: rows in the order a TPU pod gives them.

A distributed dataset on a TPU pod hands out each global batch in (replica,
host) order, and ``experimental_local_results`` lists the replicas in (host,
replica) order; the emulated pod's input does the same (runtime/emulated.py,
one input worker per host). Keras puts ``predict``'s rows back in order for a
TPU strategy on more than one host: ``_is_tpu_multi_host`` selects
``_tpu_multi_host_concat``, and it also makes a dataset's auto-shard policy
DATA (tensorflow/python/keras/engine/training.py at r2.2 and r2.3, kept in
tf_keras 2.21's tf_keras/src/engine/training.py). Keras recognises a TPU
strategy by its class name (``TPUStrategy*``), which the emulated TPU
deliberately does not carry (keras/routes.py says why), so without this
change a 2-host ``predict`` returned its rows interleaved across hosts.
"""

from tpu_compat.runtime.emulated import EmulatedTPUExtended

__all__ = ["emulated_pods_are_tpu_pods"]


def _emulated_pod(strategy):
    extended = getattr(strategy, "extended", None)
    return isinstance(extended, EmulatedTPUExtended) and extended.num_hosts > 1


def emulated_pods_are_tpu_pods(is_tpu_multi_host):
    """Wraps tf_keras's ``_is_tpu_multi_host`` to answer yes for an emulated pod too."""
    def is_tpu_or_emulated_multi_host(strategy):
        return is_tpu_multi_host(strategy) or _emulated_pod(strategy)

    is_tpu_or_emulated_multi_host.__wrapped__ = is_tpu_multi_host
    return is_tpu_or_emulated_multi_host
