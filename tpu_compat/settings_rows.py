"""The settings table's rows: every value a user can set, one :class:`Setting` each.

Data, and the few helpers the rows' parsers, defaults and texts use. Each row
holds the environment variable, the ``tpu-compat`` flag and the pytest option
that set it, its parser (:mod:`tpu_compat._config`), and its default for each
entry point (:mod:`tpu_compat.settings_schema` says what each field means).
:mod:`tpu_compat.settings` walks them (resolve, read, export, the flags) and
re-exports them: ``settings.ROWS`` is this table. A new setting is one row here.

Nothing here imports TensorFlow.
"""

from tpu_compat import _config
from tpu_compat.settings_schema import (
    LIBRARY, MIGRATE, PYTEST, REGRESS, RUN, Computed, Setting)

__all__ = ["DEFAULT_EMULATED_REPLICAS", "ROWS", "tf_keras_installed"]

# A v2-8 / v3-8 slice has 8 cores: what the emulated TPU has unless told.
DEFAULT_EMULATED_REPLICAS = 8


def _choices(allowed):
    def parse(name, value):
        return _config.choice(name, value, allowed)
    return parse


def tf_keras_installed():
    """Whether tf-keras (Keras 2, what legacy code expects) can be imported."""
    import importlib.util  # pylint: disable=import-outside-toplevel
    return importlib.util.find_spec("tf_keras") is not None


# Keras 3 (TF 2.21's default tf.keras) with steps_per_execution under
# MirroredStrategy fails with INVALID_ARGUMENT; legacy code expects Keras 2,
# which tf-keras is. Without tf-keras, TensorFlow's own default stays.
_LEGACY_KERAS_FOR_RUN = Computed(lambda: "1" if tf_keras_installed() else None,
                                 "1 when tf-keras is installed")


def _replicas_text(value):
    return (f"as many as the backend has: {DEFAULT_EMULATED_REPLICAS} emulated cores, "
            f"every GPU or TPU core" if value is None else str(value))


def _unset_as(text):
    return lambda value: text if value is None else str(value)


ROWS = (
    Setting(
        "backend", "TPU_COMPAT_BACKEND", _choices(("auto", "tpu", "gpu", "cpu")),
        {RUN: "auto", REGRESS: "cpu", PYTEST: "auto", LIBRARY: "auto"},
        values="`auto`, `tpu`, `gpu`, `cpu`",
        meaning="hardware behind the strategies; `auto` uses a TPU if TensorFlow lists "
                "local TPU devices or `TPU_NAME` is set, else GPUs, else CPU emulation, "
                "and never touches the network (but to check, with `TPU_NAME` set, that "
                "its TPU answers: `TPU_COMPAT_TPU_TIMEOUT`); `regress` and `verify` run on the "
                "CPU emulation whatever accelerators the machine has, so golden files "
                "check anywhere",
        summary="hardware", flag="--backend", flag_entries=(RUN, REGRESS),
        choices=("auto", "tpu", "gpu", "cpu"), pytest_option="--tpu", pytest_const="tpu",
        pytest_summary="test on a real TPU (the one TPU_NAME names, or the local TPU VM); "
                       "also implied by TPU_NAME"),
    Setting(
        "num_replicas", "TPU_COMPAT_NUM_REPLICAS", _config.replica_count,
        {RUN: None, REGRESS: DEFAULT_EMULATED_REPLICAS, PYTEST: DEFAULT_EMULATED_REPLICAS,
         LIBRARY: None},
        values=f"int, 1 to {_config.MAX_REPLICAS}", meaning="emulated TPU cores",
        summary="emulated TPU cores", flag="--replicas", flag_entries=(RUN, REGRESS),
        metavar="N", pytest_option="--tpu-compat-replicas", show=_replicas_text,
        pytest_summary="cores of the emulated TPU this process tests on; tests marked "
                       "tpu_replicas with other counts run in child processes"),
    Setting(
        "num_hosts", "TPU_COMPAT_NUM_HOSTS", _config.positive_int,
        {RUN: None, PYTEST: None, LIBRARY: None},
        values="positive int",
        meaning="emulate a TPU pod slice of H hosts, each a TensorFlow worker process "
                "with N/H of the cores ([pod slices](docs/pods.md)); the pytest "
                "plugin's marker takes `hosts=H`",
        summary="emulate a TPU pod slice of H hosts (docs/pods.md), each a "
                "TensorFlow worker process with N/H of the cores",
        flag="--hosts", flag_entries=(RUN,), metavar="H", show=_unset_as("1")),
    Setting(
        "warnings", "TPU_COMPAT_WARNINGS", _choices(("once", "always", "error", "ignore")),
        {RUN: None, PYTEST: None, LIBRARY: None},
        values="`once`, `always`, `error`, `ignore`",
        meaning="policy for `TPUCompatDeprecationWarning` and `TPUSemanticsWarning` "
                "(`--fidelity tpu`'s lint); `error` makes CI fail on any legacy API",
        summary="legacy-API warning policy", flag="--warnings", flag_entries=(RUN,),
        choices=("once", "always", "error", "ignore"),
        pytest_option="--tpu-compat-warnings", show=_unset_as("once"),
        pytest_summary="policy for TPUCompatDeprecationWarning in tests: once, always, "
                       "error (every legacy-API use fails its test), ignore"),
    Setting(
        "strict", "TPU_COMPAT_STRICT", _choices(("auto", "on", "off")),
        {RUN: "auto", LIBRARY: "auto"},
        values="`auto`, `on`, `off`",
        meaning="modern calls (`run`, `experimental_distribute_dataset`, ...) follow "
                "TF 2.21's `TPUStrategy` rules, errors included, while legacy entry "
                "points keep their era's semantics; `auto` is `on` exactly when "
                "legacy-API warnings are errors; `verify` runs the migrated script "
                "with `on` ([strict mode](docs/emulated_tpu.md#strict-mode-tf-221s-rules))",
        summary="modern calls follow TF 2.21's TPUStrategy rules, errors included; "
                "auto: on when --warnings=error",
        flag="--strict", flag_entries=(RUN,), choices=("auto", "on", "off")),
    Setting(
        "fidelity", "TPU_COMPAT_FIDELITY", _choices(("cpu", "tpu")),
        # `tpu-compat run`, regress and the tests answer "does this work on a
        # TPU": nothing legitimate broke when the whole test suite, every
        # scenario and example ran under tpu (docs/emulated_tpu.md). A
        # program that installs the shim itself keeps what its CPU runs.
        {RUN: "tpu", REGRESS: "tpu", PYTEST: "tpu", LIBRARY: "cpu"},
        values="`cpu`, `tpu`",
        meaning="`tpu`: each replica step is checked at trace time as TF 2.21's TPU "
                "compiler would (XLA kernel registry, no string/complex128 tensors); an "
                "op a TPU cannot compile raises `TPUCompilationError` naming the op and "
                "your line; with soft device placement on while the step is traced "
                "(eager TF 2.x code, or set explicitly; off inside `tf.function` and in "
                "TF 1.x mode) TF 2.21 moves such ops to the TPU host itself, so nothing "
                "is reported ([fidelity](docs/emulated_tpu.md#fidelity-would-a-tpu-"
                "compile-this-step)); ops a TPU computes differently (seeded random ops, "
                "float64, integer division by a divisor that can be 0) warn "
                "(`TPUSemanticsWarning`, [lint](docs/emulated_tpu.md#the-tpu-semantics-lint))",
        summary="tpu: check every replica step at trace time as TF 2.21's TPU "
                "compiler would",
        flag="--fidelity", flag_entries=(RUN, REGRESS), choices=("cpu", "tpu"),
        metavar=None, pytest_option="--tpu-compat-fidelity",
        pytest_summary="how faithfully the emulated TPU models a TPU's compiler: tpu "
                       "(each replica step checked as TF's TPU compiler would) or cpu",
        exported_by=(RUN, PYTEST)),
    Setting(
        "numerics", "TPU_COMPAT_NUMERICS", _choices(("exact", "tpu")),
        {RUN: "exact", REGRESS: "exact", PYTEST: "exact", LIBRARY: "exact"},
        values="`exact`, `tpu`",
        meaning="`tpu`: in each replica step of the emulated TPU, float32 matmuls, "
                "einsums and convolutions (and their gradients) round their operands "
                "to bfloat16 and sum in float32, as a TPU's default precision does, "
                "unless the program turned TensorFloat-32 off; `exact`: CPU float32 "
                "([numerics](docs/emulated_tpu.md#numerics))",
        summary="tpu: round float32 matmul/conv operands in replica steps to bfloat16 "
                "as a TPU does",
        flag="--numerics", flag_entries=(RUN, REGRESS), choices=("exact", "tpu"),
        pytest_option="--tpu-compat-numerics",
        pytest_summary="the emulated TPU's matmul and convolution precision: tpu (float32 "
                       "operands rounded to bfloat16 in replica steps, as a TPU does) or "
                       "exact"),
    Setting(
        "numerics_ops", "TPU_COMPAT_NUMERICS_OPS", _config.step_and_file,
        {RUN: None, LIBRARY: None},
        values=f"`STEP:FILE`, STEP from 1 to {_config.MAX_STEP}",
        meaning="with `--numerics tpu`: record each rounded op that replica 0 runs in "
                "its STEP-th replica step (its op, your line, how far its rounding moves "
                "its output) and write them to FILE (JSON) at exit; `numerics-diff "
                "--ops-at-step` sets it ([numerics](docs/emulated_tpu.md#numerics))",
        show=_unset_as("not recorded")),
    Setting(
        "seed", "TPU_COMPAT_SEED", _config.seed,
        # regress, verify and numerics-diff seed each script with their --seed
        # (default 0, --no-seed: none) and ignore the variable, which they set
        # for each script process.
        {RUN: None, REGRESS: 0},
        values=f"int, 0 to {_config.MAX_SEED} (2**32 - 1)",
        meaning="seed Python, NumPy and TensorFlow RNGs before the script runs "
                "(`regress` and `verify` set it for each script from their `--seed`)",
        summary="seed Python, NumPy and TensorFlow RNGs before each script run (a "
                "script's own seeding wins)",
        flag="--seed", flag_entries=(REGRESS,), metavar="N", show=_unset_as("unseeded"),
        unset_flag="--no-seed", unset_summary="leave the RNGs unseeded",
        variable_ignored_by=(REGRESS,)),
    Setting(
        "tf1", "TPU_COMPAT_TF1", _config.switch,
        {RUN: False},
        values="`1` / `0` (also `true`/`false`, `yes`/`no`, `on`/`off`)",
        meaning="`import tensorflow` in the program yields `tf.compat.v1` with v2 behaviour "
                "disabled, as in TF 1.x (`regress` runs a script so when its sidecar "
                "says `tf1 = true`)",
        summary="`import tensorflow` yields tf.compat.v1 with v2 behaviour disabled "
                "(TF 1.x programs)",
        flag="--tf1", flag_entries=(RUN,), flag_const="1",
        show=lambda value: "1" if value else "0"),
    Setting(
        "pod_timeout", "TPU_COMPAT_POD_TIMEOUT", _config.positive_seconds,
        {RUN: 60.0, LIBRARY: 60.0},
        values=f"seconds, above 0, at most {_config.MAX_SECONDS:g}",
        meaning="how long a pod worker may take to come up (and, with `TF_CONFIG`, "
                "to answer) ([pod slices](docs/pods.md))",
        show=lambda value: f"{value:g}"),
    Setting(
        "pod_port", "TPU_COMPAT_POD_PORT", _config.port_number,
        {RUN: None, LIBRARY: None},
        values="port, 1 to 65535",
        meaning="first loopback port of the pod workers `--hosts` starts, one per host "
                "([pod slices](docs/pods.md))",
        show=_unset_as("free ports")),
    Setting(
        "pod_logs", "TPU_COMPAT_POD_LOGS", _config.directory,
        {RUN: None, LIBRARY: None},
        values="a directory",
        meaning="keep the pod workers' logs there (`worker<T>-<chief pid>.log`, and the "
                "chief's TensorFlow log after a pod fault); unset, no log outlives the run "
                "([pod slices](docs/pods.md#faults))",
        show=_unset_as("not kept")),
    Setting(
        "tpu_timeout", "TPU_COMPAT_TPU_TIMEOUT", _config.positive_seconds,
        {RUN: 30.0, PYTEST: 30.0, LIBRARY: 30.0},
        values=f"seconds, above 0, at most {_config.MAX_SECONDS:g}",
        meaning="how long the TPU that `TPU_NAME` names may take to answer before the "
                "program starts (a `grpc://` address: its gRPC server; a name: the GCE "
                "metadata server TensorFlow looks it up with); then one error naming "
                "`TPU_NAME`, exit code 2",
        show=lambda value: f"{value:g}"),
    Setting(
        "legacy_keras", "TF_USE_LEGACY_KERAS", _config.any_text,
        {RUN: _LEGACY_KERAS_FOR_RUN, LIBRARY: None},
        values="`1` / `0` (TensorFlow reads `1`, `true`, `True` as yes)",
        meaning="`tpu-compat run` sets `1` (tf-keras, the Keras 2 legacy code expects) "
                "unless you set it",
        show=_unset_as("unset (Keras 3)"), exported_by=(RUN,), blank_is_unset=False),
    # TensorFlow reads it once, at import. Its oneDNN Conv2D/Conv3D/DepthwiseConv2dNative
    # kernels give an empty batch the input's channels ((0,16,16,3) for 8 filters), and a
    # partial last batch split over the emulated cores gives some core an empty batch
    # (TF's input_lib hands such a replica a batch of 0, _dummy_tensor_fn in r2.3's
    # tensorflow/python/distribute/input_lib.py); a TPU core (XLA) gives (0,16,16,8).
    Setting(
        "onednn", "TF_ENABLE_ONEDNN_OPTS", _config.any_text,
        {RUN: "0", LIBRARY: None},
        values="`0` / `1`",
        meaning="`tpu-compat run` sets `0` unless you set it: TensorFlow's oneDNN "
                "convolutions give an emulated core's empty batch the wrong shape "
                "([emulated TPU](docs/emulated_tpu.md#empty-replica-batches))",
        show=_unset_as("unset (TensorFlow's default)"), exported_by=(RUN,),
        blank_is_unset=False),
    # libcst's parse and analysis cost about 13 CPU s and 400 MB per MB of
    # source (a 5 MB file: 131 s and 2.1 GB for upgrade's two passes).
    Setting(
        "max_file_bytes", "TPU_COMPAT_MAX_FILE_BYTES", _config.positive_int,
        {MIGRATE: 1_000_000},
        values="positive number of bytes",
        meaning="`scan` and `upgrade` report and skip a file larger than this that may "
                "hold a legacy API ([migration](docs/migration.md#what-upgrade-never-does))",
        summary="skip (and report) a file larger than this that may hold a legacy API",
        flag="--max-file-bytes", flag_entries=(MIGRATE,), metavar="N"),
)
