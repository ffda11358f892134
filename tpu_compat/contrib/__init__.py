"""``tensorflow.contrib`` for TF 1.12-1.14 TPU programs: the names with exact equivalents.

TensorFlow 2 has no ``tf.contrib``. TPU programs of that era spell the TPU
API (``tf.contrib.tpu``, ``tf.contrib.distribute.TPUStrategy``,
``tf.contrib.cluster_resolver``) and a few input and layer helpers through
it, and fail at the first import. This package gives them module objects
named ``tensorflow.contrib`` and ``tensorflow.contrib.<module>`` holding:

* ``tpu``: the low-level TPU API (:mod:`tpu_compat.lowlevel`), the TF 1.9-1.13
  Keras TPU API (``keras_to_tpu_model``, ``TPUDistributionStrategy``),
  and the TPUEstimator family from ``tpu_compat.estimator`` when present;
* ``distribute.TPUStrategy``: the compat.v1 TPUStrategy (``steps_per_run``);
* ``cluster_resolver.TPUClusterResolver``;
* ``data.map_and_batch`` / ``parallel_interleave`` / ``shuffle_and_repeat``:
  ``tf.data.experimental``'s, the same functions since TF 1.13;
* ``layers.layer_norm`` (contrib's variable names, so checkpoints load) and
  ``layers.xavier_initializer``;
* ``training.HParams``;
* TF-Slim (``slim``; ``framework.arg_scope`` / ``add_arg_scope`` / ``variable``;
  ``layers.conv2d``, ``batch_norm``, ...): tpu_compat's own implementation of
  TF 1.15's layers and argument scopes, with the era's defaults and variable
  names (:mod:`tpu_compat.contrib._slim`, :mod:`tpu_compat.contrib._arg_scope`);
* the names the survey of TPU programs found with an exact TF 2.21 equivalent
  (docs/contrib_survey.md): ``data.AUTOTUNE`` / ``make_csv_dataset``,
  ``summary.*`` (TF 1.15's re-export of ``summary_ops_v2``), ``keras`` (the
  program's compat.v1 ``tf.keras``), ``distribute.initialize_tpu_system`` /
  ``OneDeviceStrategy``, ``training.checkpoints_iterator``,
  ``framework.nest`` / ``list_variables`` / ``load_checkpoint``, ``rnn``'s
  core cells, ``cluster_resolver.TFConfigClusterResolver``, ``tpu.Topology``;
  and three with code (:mod:`tpu_compat.contrib._helpers`):
  ``data.batch_and_drop_remainder``, ``layers.l2_regularizer``,
  ``cloud.configure_gcs``;
* the deep TPU import paths of TF 1.15 (``tensorflow.contrib.tpu.python.tpu.
  tpu_config``, ...: :data:`DEEP_IMPORTS`), aliases of the names above.

Each submodule is an instance of its own class (:class:`ContribTPU`, ...)
whose names are properties; a record's ``reads`` hook names the property
(``tpu_compat.contrib:ContribTPU.replicate``), so reading a name warns once
per call site at the user's line (:mod:`tpu_compat.runtime.hooks`). Any other
``tf.contrib`` module or name raises one error that names it.

The package's modules, by job: :mod:`~tpu_compat.contrib.submodules` (what each
submodule serves: the table), :mod:`~tpu_compat.contrib.deep_imports` (the deep
import paths: data), :mod:`~tpu_compat.contrib.module_types` (the module objects,
their lookups and errors), :mod:`~tpu_compat.contrib.imports` (the import route).

The objects are not put in ``sys.modules``: the import router's contrib route
(:mod:`tpu_compat.contrib.imports`) serves them to the program's own code only,
so TensorFlow and other libraries that probe for ``tensorflow.contrib`` still
see TF 2's answer.
"""

from tpu_compat.contrib.deep_imports import DEEP_IMPORTS
from tpu_compat.contrib.module_types import (
    _DEEP_MODULES, _MODULES, ESTIMATOR_MODULE, ESTIMATOR_NAMES, ContribNotProvidedError,
    _ContribModule, contrib_module, deep_module, deep_paths, not_provided_message,
    served_names, submodule)
from tpu_compat.contrib.submodules import (
    ContribCloud, ContribClusterResolver, ContribData, ContribDistribute, ContribFramework,
    ContribGenTPUOps, ContribLayers, ContribRNN, ContribSlim, ContribSummary, ContribTPU,
    ContribTraining)
from tpu_compat.runtime import hooks

__all__ = ["ContribCloud", "ContribClusterResolver", "ContribData", "ContribDistribute",
           "ContribFramework", "ContribGenTPUOps", "ContribLayers", "ContribNotProvidedError",
           "ContribRNN", "ContribSlim", "ContribSummary", "ContribTPU", "ContribTraining", "DEEP_IMPORTS",
           "contrib_module", "deep_module", "deep_paths", "not_provided_message", "served_names",
           "submodule"]

# The table's reads() hooks name these classes here (tpu_compat.contrib:ContribTPU.replicate,
# tpu_compat.contrib:_ContribModule.keras): instrumenting this module wraps their properties.
hooks.instrument_module(__name__)  # the table's hooks on this module (legacy_api)
