"""The era's TensorFlow version checks through distutils (gone in Python 3.12)."""
import distutils
from distutils.version import LooseVersion  # expect: TPC201

import tensorflow as tf

if distutils.version.LooseVersion(tf.__version__) < '1.14':  # expect: TPC201
    raise Exception('This notebook is compatible with TensorFlow 1.14 or higher.')
TF2 = LooseVersion(tf.__version__) >= LooseVersion('2.0')
STRICT = distutils.version.StrictVersion(tf.version.VERSION) > '2.0'  # expect: TPC201
