"""``tf.estimator.WarmStartSettings`` and how an Estimator reads ``warm_start_from``.

Apart from ``estimator.py`` because it is a public name of its own and a value
check, not part of the train/evaluate/predict flow. ``estimator.py`` re-exports
it, and TPC087's hook target names it there (``estimator:WarmStartSettings.__new__``).
"""

import collections
import os

__all__ = ["WarmStartSettings", "warm_start_settings"]


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """``tf.estimator.WarmStartSettings``: initialize variables from a checkpoint."""

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("WarmStartSettings: ckpt_to_initialize_from must be a "
                             "checkpoint path or directory")
        return super().__new__(cls, os.fspath(ckpt_to_initialize_from),
                               vars_to_warm_start, var_name_to_vocab_info or {},
                               var_name_to_prev_var_name or {})


def warm_start_settings(warm_start_from):
    """The Estimator's ``warm_start_from`` as WarmStartSettings (a path means all variables)."""
    if warm_start_from is None or isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        return WarmStartSettings(os.fsdecode(warm_start_from))
    raise ValueError(f"warm_start_from must be a checkpoint path or a "
                     f"WarmStartSettings, given: {warm_start_from!r}")
