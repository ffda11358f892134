"""The import statements TF 2.1-2.3 programs reached the Keras era's names with.

usage: tpu-compat run keras_era_imports.py

``from tensorflow.keras.mixed_precision import experimental`` (the Kaggle TPU
notebooks' spelling), ``from tensorflow.keras.mixed_precision.experimental
import Policy``, ``import tensorflow.keras.mixed_precision.experimental as ...``
and ``from tensorflow.keras.experimental import ...``: each must give the same
objects as the attribute spelling ``tf.keras.mixed_precision.experimental``,
and the attribute spelling must keep working after them; ``uninstall()``
takes them back. Prints ``KEY: 0/1``.
"""
import tensorflow as tf
from tensorflow.keras.mixed_precision import experimental as mixed_precision
from tensorflow.keras.mixed_precision.experimental import Policy, set_policy
import tensorflow.keras.mixed_precision.experimental as mp_module
from tensorflow.keras.experimental import CosineDecay, export_saved_model
import tensorflow.keras.mixed_precision

experimental = tf.keras.mixed_precision.experimental  # after the imports above
print("from_import_is_the_attribute: %d" % (mixed_precision is experimental))
print("names_are_the_attributes: %d" % (
    Policy is experimental.Policy and set_policy is experimental.set_policy))
print("module_import_is_the_attribute: %d" % (mp_module is experimental))
print("keras_experimental_names: %d" % (
    export_saved_model is tf.keras.experimental.export_saved_model
    and CosineDecay is tf.keras.experimental.CosineDecay))
print("one_mixed_precision_module: %d" % (
    tensorflow.keras.mixed_precision is tf.keras.mixed_precision))
set_policy(Policy("mixed_bfloat16"))
layer = tf.keras.layers.Dense(2)
layer.build([None, 3])
print("policy_in_force: %d" % (
    layer.compute_dtype == "bfloat16" and layer.kernel.dtype == tf.float32))

# uninstall() takes the names out of sys.modules again.
import sys  # noqa: E402
import tpu_compat  # noqa: E402

SERVED = ("tensorflow.keras.mixed_precision", "tensorflow.keras.mixed_precision.experimental",
          "tensorflow.keras.experimental")
print("names_served_before_uninstall: %d" % all(name in sys.modules for name in SERVED))
tpu_compat.uninstall()
print("names_gone_after_uninstall: %d" % (not any(name in sys.modules for name in SERVED)))

# A copy TensorFlow loaded while tpu_compat was not installed (a program that
# imports before install()) keeps its place and gets the names.
import tensorflow.keras.mixed_precision as stock_copy  # noqa: E402,F811

print("stock_copy_is_another_module: %d" % (
    stock_copy is not sys.modules["tf_keras.api._v2.keras.mixed_precision"]))
with tpu_compat.install():
    from tensorflow.keras.mixed_precision import experimental as again
    print("copy_gets_the_names: %d" % (
        again is experimental and sys.modules["tensorflow.keras.mixed_precision"] is stock_copy))
print("copy_names_gone_after_uninstall: %d" % (not hasattr(stock_copy, "experimental")))
