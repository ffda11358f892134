"""The registry of patches: what install() changes, in a declared order, and why that order.

:data:`PATCHES` lists every change ``install()`` makes, one row each, in the
order it makes them. A row that must come after another names it in
``after``, with the reason; :func:`check_order` (run when this module loads,
and by the tests) refuses a table whose order breaks one, and each row names its
``targets``, what it replaces: two rows on one target must be ordered by
``after`` (:mod:`~tpu_compat.patching.rows`). ``install()`` walks
the rows, applying each row's payload (what it installs, named as data:
:class:`~tpu_compat.patching.rows.Call`, :class:`~tpu_compat.patching.rows.Wrap`)
with the one installer, ``Patch.apply``; each change is recorded in the installation's
:class:`~tpu_compat.patching.changes.Changes`, and ``uninstall()`` undoes
them last first (the one undo rule).

A row applies once per installation, when the ``install()`` call enables it
(``option``: a keyword of :func:`install`), except the warning policy, which
every call applies on top of the previous one (``each_call``).
"""

import contextlib
import threading

from tpu_compat import settings
from tpu_compat.patching import rows as rows_lib
from tpu_compat.patching.changes import Changes
from tpu_compat.patching.import_router import ImportRouter
# The row's shape (Patch: importable from here, as before) and its payloads.
from tpu_compat.patching.rows import Call, Installation, Patch, Ref, Wrap

__all__ = ["PATCHES", "InstallHandle", "Patch", "apply_alone", "check_order", "install",
           "is_installed", "uninstall"]


# What the rows below replace (rows.target_name names them; tests/test_patch_rows.py
# installs with a recording Changes and checks every attribute a row replaces is
# one of its targets). runtime/empty_batches.CONVOLUTIONS, fidelity/numerics.ROWS
# and runtime/hooks.targets() hold the same names: they import TensorFlow or the
# legacy table, this module does neither.
_EMPTY_BATCH_TARGETS = tuple(f"gen_nn_ops:{n}" for n in ("conv2d", "conv3d", "depthwise_conv2d_native"))
_NUMERICS_TARGETS = tuple(
    [f"gen_math_ops:{name}" for name in ("mat_mul", "sparse_mat_mul", "batch_mat_mul",
                                         "batch_mat_mul_v2", "batch_mat_mul_v3")]
    + ["gen_linalg_ops:einsum"]
    + [f"gen_nn_ops:{name}" for name in (
        "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "conv3d",
        "conv3d_backprop_input_v2", "conv3d_backprop_filter_v2", "depthwise_conv2d_native",
        "depthwise_conv2d_native_backprop_input", "depthwise_conv2d_native_backprop_filter",
        "conv")])
# Every copy of each API module (tf, tf.compat.v1, tf.compat.v2, ...) is one name.
_API_ROUTE_TARGETS = (
    ("tf:device", "tf.config:experimental_connect_to_cluster",
     "tf.config:experimental_connect_to_host", "tf.config:list_logical_devices",
     "tf.config:list_physical_devices", "tf.config.experimental:list_logical_devices",
     "tf.config.experimental:list_physical_devices", "tf.distribute:TPUStrategy",
     "tf.distribute.experimental:TPUStrategy",
     "tf.distribute.cluster_resolver:TPUClusterResolver",
     "tf.tpu.experimental:initialize_tpu_system", "tf.tpu.experimental:shutdown_tpu_system")
    # lowlevel.ROUTED_NAMES: tf.compat.v1.tpu's names
    + tuple(f"tf.tpu:{name}" for name in (
        "CrossShardOptimizer", "batch_parallel", "bfloat16_scope", "core",
        "cross_replica_sum", "initialize_system", "outside_compilation", "replicate",
        "rewrite", "shard", "shutdown_system")))
_REMOVED_METHOD_TARGETS = (
    "distribute_lib:Strategy.experimental_make_numpy_dataset", "distribute_lib:Strategy.reduce",
    "distribute_lib:StrategyBase.experimental_distribute_dataset",
    "distribute_lib:StrategyBase.experimental_run_v2")
_STRATEGY_DEVICE_TARGETS = (
    "mirrored_strategy:MirroredStrategy.__init__", "mirrored_strategy:MirroredStrategyV1.__init__",
    "one_device_strategy:OneDeviceStrategy.__init__",
    "one_device_strategy:OneDeviceStrategyV1.__init__")
# The legacy table's hooks on TensorFlow's classes (runtime/hooks.targets()).
_TENSORFLOW_HOOK_TARGETS = (
    tuple(f"distribute_lib:{path}" for path in (
        "StrategyBase.experimental_distribute_datasets_from_function", "StrategyBase.unwrap",
        "StrategyV1.experimental_make_numpy_dataset", "StrategyV1.make_dataset_iterator",
        "StrategyV1.make_input_fn_iterator", "StrategyV1.experimental_run",
        "StrategyExtendedV1.experimental_run_steps_on_iterator",
        "StrategyExtendedV1.call_for_each_replica"))
    + ("tpu_strategy:TPUExtended.steps_per_run", "tpu_strategy:TPUStrategyV1.steps_per_run",
       "input_lib:DistributedIteratorV1.initialize"))
# The router's one wrapper of __import__ serves every redirect row (REDIRECTS).
_IMPORT = "builtins:__import__"

PATCHES = (
    Patch("warning policy", Call("tpu_compat.deprecation:apply_policy", gets=("policy",),
                                 undo="returned"),
          "warnings.filters for TPUCompatDeprecationWarning (deprecation.apply_policy)",
          each_call=True,
          targets=("warnings:filters",)),
    Patch("autograph rule",
          Call("tpu_compat.runtime.autograph_rules:exclude", gets=(), undo="returned"),
          "autograph's CONVERSION_RULES: do not convert tpu_compat (runtime/autograph_rules)",
          targets=("config:CONVERSION_RULES",)),
    Patch("API routes", Call("tpu_compat.patching.namespaces:route_namespaces"),
          "every TensorFlow API module: TPUStrategy*, TPUClusterResolver, the TPU "
          "system calls, tf.compat.v1.tpu, device names -> adapters (namespaces.routes)",
          targets=_API_ROUTE_TARGETS),
    Patch("removed methods", Call("tpu_compat.runtime.native_methods:add_removed_methods"),
          "TensorFlow's own strategies get the methods TF 2.4 removed "
          "(runtime/native_methods)",
          targets=_REMOVED_METHOD_TARGETS),
    Patch("strategy devices", Call("tpu_compat.runtime.devices:route_strategy_devices"),
          "Mirrored/OneDevice strategies' device arguments resolved on the emulated TPU "
          "(runtime/devices)",
          targets=_STRATEGY_DEVICE_TARGETS),
    Patch("replica all-reduce", Call("tpu_compat.lowlevel.replica_all_reduce:patch_all_reduce"),
          "ReplicaContext.all_reduce on the emulated TPU: its gradient without "
          "custom_gradient's walk through every replica's graph (lowlevel/replica_all_reduce)",
          targets=("distribute_lib:ReplicaContextBase.all_reduce",)),
    Patch("replica collections", Call("tpu_compat.lowlevel.replica_collections:patch_collections"),
          "each emulated replica reads only its own entries of the losses and update-ops "
          "collections, as the one replica a TPU program built (lowlevel/replica_collections)",
          targets=("ops:Graph.add_to_collection", "ops:Graph.get_collection")),
    Patch("xla replica id",
          Wrap("tensorflow.compiler.tf2xla.python.xla", "replica_id",
               "tpu_compat.lowlevel.xla_replica_id:emulated_replica_id"),
          "xla.replica_id() in an emulated replica is its number, as XLA set it on a TPU "
          "(lowlevel/xla_replica_id)"),
    Patch("replica variable names",
          Call("tpu_compat.lowlevel.replica_variable_names:patch_variable_op"),
          "in an emulated replica a mirrored variable's op.name is the variable's "
          "(lowlevel/replica_variable_names)",
          targets=("values:DistributedVariable.op",)),
    Patch("empty batches", Call("tpu_compat.runtime.empty_batches:guard_empty_batches"),
          "with oneDNN on, the emulated replicas' convolutions give an empty batch "
          "a TPU core's result (runtime/empty_batches)",
          targets=_EMPTY_BATCH_TARGETS),
    Patch("device input", Call("tpu_compat.runtime.device_input:quiet_device_pipelines"),
          "per-device input pipelines on the emulated TPU run without tf.data "
          "autotuning, so destroying their iterators does not stall (runtime/device_input)",
          targets=("multi_device_iterator_ops:_create_device_dataset",)),
    Patch("protobuf text",
          Call("tpu_compat.runtime.protobuf_text:write_graph_without_float_format"),
          "TF 2.14-2.20's write_graph (graph.pbtxt of every Estimator train) works with "
          "protobuf 7, which removed the float_format it passes (runtime/protobuf_text)",
          targets=("graph_io:text_format",)),
    Patch("numerics",
          # fidelity/ sits below runtime/: the emulated TPU's class is handed down here.
          Call("tpu_compat.fidelity.numerics:install",
               args=(Ref("tpu_compat.runtime.emulated:EmulatedTPUExtended"),)),
          "--numerics tpu: the gen_*_ops functions of float32 matmuls, einsums and "
          "convolutions round their operands in replica steps (fidelity/numerics)",
          targets=_NUMERICS_TARGETS,
          after={"empty batches": "both wrap gen_nn_ops' convolutions: the rounding sits "
                                  "outside the empty-batch guard, so the guard pads the "
                                  "rounded operands (the order the ops run in on a TPU "
                                  "does not matter: padding rows are zeros)"}),
    Patch("pod sessions", Call("tpu_compat.runtime.pod_sessions:route_pod_sessions"),
          "tf.compat.v1.Session on the emulated pod's master accepts the pod's own "
          "cluster_def, as a Cloud TPU pod's did (runtime/pod_sessions); a local "
          "session of the emulated TPU places only the subgraphs it runs "
          "(runtime/pod_sessions)",
          targets=("session:BaseSession.__init__",)),
    Patch("tensorflow hooks",
          Call("tpu_compat.runtime.hooks:instrument_library", args=("tensorflow",)),
          "the table's hooks on TensorFlow's own classes (runtime/hooks, legacy_api)",
          after={"strategy devices": "the hooks wrap the routed __init__ and so see "
                                     "the user's call, not tpu_compat's"},
          targets=_TENSORFLOW_HOOK_TARGETS),
    Patch("keras", Call("tpu_compat.keras.routes:route_keras", gets=("changes", "router")),
          "tf_keras and Keras 3 under the adapters, now or when first imported "
          "(keras/routes: compile, fit loops, metric variables, era names, their hooks)",
          # its inner rows' targets (keras/routes.py's tables) are all below these
          targets=("tf_keras", "keras", "tf.keras", "sys:meta_path",
                   "sys.modules:tensorflow.keras")),
    Patch("import redirects", Call("tpu_compat.patching.import_router:redirect_enabled",
                                   gets=("router",)),
          "the program's tensorflow.python.keras and tensorflow.contrib imports, and "
          "tf.contrib on compat.v1 (import_router.REDIRECTS)",
          targets=(_IMPORT, "tf:contrib")),
    Patch("estimator",
          Call("tpu_compat.patching.namespaces:route_estimator", gets=("changes", "router")),
          "tf.estimator / tf.compat.v1.estimator(.tpu) on the API roots and in "
          "sys.modules (namespaces.route_estimator)",
          targets=("tf:estimator", "sys.modules:tensorflow.estimator",
                   "sys.modules:tensorflow.compat.v1.estimator",
                   "sys.modules:tensorflow.compat.v2.estimator")),
    Patch("tf1", Call("tpu_compat.patching.import_router:redirect_enabled", gets=("router",),
                      args=("tf1_imports",)),
          "--tf1: TF 1.x behaviour, and the program's `import tensorflow` is "
          "tf.compat.v1 (import_router.tf1_import_route)",
          after={"estimator": "every other row is made as a plain install() makes "
                              "it, with TF 2 behaviour on: the runner did this last",
                 "import redirects": "its redirect nests outside theirs "
                                     "(import_router.REDIRECTS)"},
          option="tf1_imports",
          targets=(_IMPORT,)),
)


def check_order(patches=PATCHES):
    """Raises ValueError when ``patches`` (default: :data:`PATCHES`) break a declared
    order, or two of them replace one target without one (:func:`rows.check_order`)."""
    rows_lib.check_order(patches)


check_order()


def apply_alone(name, changes):
    """Applies the row ``name`` of :data:`PATCHES` alone, recorded in ``changes``.

    What ``install()`` does for that row, without the others: the pytest
    plugin's fixtures make their replica steps round as ``install()``'s do
    (row "numerics") without routing TensorFlow's names. Only rows that need
    neither the import router nor an ``install()`` argument can stand alone.
    """
    rows = {row.name: row for row in PATCHES}
    if name not in rows:
        raise ValueError(f"{name!r} is not a row of the registry; rows: {sorted(rows)}")
    row = rows[name]
    if row.option is not None or row.each_call or {"router", "policy"} & set(row.gets):
        raise ValueError(f"patch {name!r} cannot be applied outside install()")
    row.apply(Installation(changes))


# -- install() / uninstall() ---------------------------------------------------------

_lock = threading.RLock()
_installed = None  # (Changes, ImportRouter, names of the rows applied) while installed


class InstallHandle(contextlib.AbstractContextManager):
    """Returned by :func:`install`; ``with install(): ...`` uninstalls on exit."""

    def __init__(self, backend):
        self.backend = backend

    def uninstall(self):
        uninstall()

    def __exit__(self, *exc_info):
        uninstall()
        return False


def install(backend=None, num_replicas=None, warnings=None, *, tf1_imports=False):
    """Routes TensorFlow's TPU names to tpu_compat; idempotent and thread-safe.

    Decides the backend (configuring the emulated TPU's logical devices, so
    call it before TensorFlow runs any op), then walks :data:`PATCHES`. Every
    change is recorded, so :func:`uninstall` restores exactly what was there.
    See :func:`tpu_compat.install`.

    Args:
      backend: ``auto``/``tpu``/``gpu``/``cpu``; default ``TPU_COMPAT_BACKEND``.
      num_replicas: emulated cores; default ``TPU_COMPAT_NUM_REPLICAS`` or 8.
      warnings: ``once``/``always``/``error``/``ignore``; default
        ``TPU_COMPAT_WARNINGS``.
      tf1_imports: ``tpu-compat run --tf1``: TF 1.x behaviour, and the
        program's ``import tensorflow`` is ``tf.compat.v1``.

    Returns:
      An :class:`InstallHandle`, usable as a context manager.
    """
    global _installed
    from tpu_compat.runtime import backend as backend_lib  # pylint: disable=import-outside-toplevel
    options = {"tf1_imports": bool(tf1_imports)}
    with _lock:
        # Validated (naming the argument or the variable) before anything changes.
        policy = warnings if warnings is not None else settings.read("warnings")
        # Starting an emulated pod is this explicit step, not the backend getter's.
        backend_lib.start_pod(backend=backend, num_replicas=num_replicas)
        chosen = backend_lib.get_backend(backend=backend, num_replicas=num_replicas)
        first = _installed is None
        if first:
            changes = Changes()
            _installed = (changes, ImportRouter(changes, _lock), set())
            _warn_if_tensorflow_unproven()
        changes, router, applied = _installed
        installation = Installation(changes, router, policy)
        try:
            for row in PATCHES:
                if row.each_call or (row.name not in applied
                                     and (row.option is None or options[row.option])):
                    row.apply(installation)
                    applied.add(row.name)
        except BaseException:
            if first:
                _installed = None
                changes.undo()
            raise
        return InstallHandle(chosen)


def _warn_if_tensorflow_unproven():
    """One warning per process on a TensorFlow outside the proven range."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tpu_compat import tf_support  # pylint: disable=import-outside-toplevel
    tf_support.warn_if_unproven(tf.version.VERSION)


def uninstall():
    """Restores everything :func:`install` changed; idempotent and thread-safe.

    TensorFlow's modules and classes, Keras, autograph's conversion rules,
    ``warnings.filters``, ``builtins.__import__`` and ``sys.meta_path`` are
    left as they were before the first ``install()``. The backend's device
    layout and ``--tf1``'s TF 1.x behaviour are not undone: TensorFlow fixes
    them once per process.
    """
    global _installed
    with _lock:
        if _installed is not None:
            changes = _installed[0]
            _installed = None
            changes.undo()


def is_installed():
    return _installed is not None
