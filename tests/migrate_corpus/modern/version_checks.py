"""The same version checks through packaging (a TensorFlow dependency)."""
import packaging.version

import tensorflow as tf

if packaging.version.parse(tf.__version__) < packaging.version.parse('1.14'):
    raise Exception('This notebook is compatible with TensorFlow 1.14 or higher.')
TF2 = packaging.version.parse(tf.__version__) >= packaging.version.parse('2.0')
STRICT = packaging.version.parse(tf.version.VERSION) > packaging.version.parse('2.0')
