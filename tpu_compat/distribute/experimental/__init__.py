"""Mirrors ``tf.distribute.experimental``.

``TPUStrategy`` here means what it meant to the program's era: TF 1.15's class
in graph mode or with ``steps_per_run``, TF 2.0-2.3's otherwise.
"""
from tpu_compat.runtime.strategy_by_era import TPUStrategy

__all__ = ["TPUStrategy"]
