"""The runtime half of tpu_compat: backends, adapters and routed TPU calls.

Every module in this package imports TensorFlow; ``import tpu_compat`` does not
import this package. Importing it changes nothing in TensorFlow: what
``install()`` changes it records and ``uninstall()`` restores (see
:mod:`tpu_compat.patching` and :mod:`tpu_compat.runtime.autograph_rules`).
"""
