"""Keras under the TPU adapters: what each era's Keras did with a TPU strategy.

:mod:`.routes` decides which patches go on tf_keras and Keras 3, and when
(``install()`` walks it); the modules beside it hold what the patches do, one
job each (docs/keras.md). This package sits above :mod:`tpu_compat.runtime`:
it imports the strategies and adapters, they never import it at import time.
Every module here imports TensorFlow; ``import tpu_compat`` imports none of them.
"""
