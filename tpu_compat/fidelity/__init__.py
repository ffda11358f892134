"""Trace-time fidelity of a replica step: what a TPU compiler would do with it.

:mod:`.compile_checks` (``--fidelity tpu``: would XLA compile the step),
:mod:`.compile_time_constants` (the inputs XLA must fold to constants),
:mod:`.tpu_semantics` (ops a TPU computes differently: warnings),
:mod:`.numerics` (``--numerics tpu``: bfloat16 operands of dots and
convolutions) and :mod:`.numerics_ops` (``numerics-diff --ops-at-step``).

This package sits below :mod:`tpu_compat.runtime`: the emulated TPU calls it
when it traces a replica step, and nothing here imports ``runtime/`` or
``keras/``. Every module here imports TensorFlow; ``import tpu_compat`` imports
none of them.
"""
