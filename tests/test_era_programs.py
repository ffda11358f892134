"""Whole TF 1.15-2.3 programs: the Keras surface next to the strategy, the TPU
host, and device names of absent hardware (keras/era.py,
keras/imports.py, runtime/devices.py).

Each scenario runs once per replica count (1, 2, 8) under ``tpu-compat run``
and compares with the same program on one device in the same process; the
in-process tests check that ``uninstall()`` undoes every change.
"""

import builtins
import sys
import warnings

import numpy as np
import pytest

import tpu_compat
from conftest import check_ok, lazy_runs, parse_numbers, run_scenario, warned_source_lines

pytestmark = pytest.mark.requires_tf

RTOL = 1e-5
# The emulated TPU reduces in float32 exactly like one device, but the
# bfloat16 matmuls of each replica see a slice of the batch: their rounding
# differs from one device's at bfloat16 precision (8 bits of mantissa).
BFLOAT16_RTOL = 1e-2
REPLICAS = (1, 2, 8)
# A scenario that hangs (the stock-TF failure of item 6) must fail, not stall CI.
TIMEOUT = 300


def _numbers(name, replicas, tf1=False):
    run = run_scenario(name, replicas, tf1=tf1, env={"TPU_COMPAT_WARNINGS": "ignore"})
    return parse_numbers(check_ok(run).stdout)


@pytest.fixture(scope="module")
def keras_runs():
    return lazy_runs(lambda n: _numbers("era_tf2_keras.py", n))


@pytest.fixture(scope="module")
def host_runs():
    return lazy_runs(lambda n: _numbers("era_host_devices.py", n))


@pytest.fixture(scope="module")
def graph_runs():
    return lazy_runs(lambda n: _numbers("era_tf115_graph_keras_loop.py", n, tf1=True))


def _same(numbers, got, want, keys, rtol=RTOL):
    for key in keys:
        assert numbers[f"{got}_{key}"] == pytest.approx(
            numbers[f"{want}_{key}"], rel=rtol, abs=1e-6), (got, want, key)


# -- items 1-3: tensorflow.python.keras, mixed_precision.experimental, keras.experimental

@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_tf2_keras_program_matches_one_device(keras_runs, replicas):
    numbers = keras_runs[replicas]
    assert numbers["replicas"] == replicas
    keys = ["loss_0", "loss_1", "weight_sum"]
    # A model built from tensorflow.python.keras imports, fit under the strategy.
    _same(numbers, "f32_tpu", "f32_one", keys)
    assert numbers["f32_one_loss_1"] < numbers["f32_one_loss_0"]  # it trained
    # set_policy(Policy('mixed_bfloat16')): bfloat16 compute, float32 variables.
    for flag in ("bf16_global_is_given", "bf16_loss_scale_is_none",
                 "bf16_compute_is_bfloat16", "bf16_variables_are_float32",
                 "bf16_layer_policy_mixed", "bf16_hidden_output_is_bfloat16"):
        assert numbers[flag] == 1, flag
    # The legacy spelling is tf_keras's policy: the modern spelling's fit, exactly.
    _same(numbers, "bf16_tpu", "bf16_modern_tpu", keys, rtol=1e-7)
    _same(numbers, "bf16_tpu", "bf16_one", keys, rtol=BFLOAT16_RTOL)
    # bfloat16 really computed: not the float32 numbers.
    assert numbers["bf16_tpu_loss_0"] != numbers["f32_tpu_loss_0"]
    # export_saved_model -> load_from_saved_model keeps predictions and policy.
    assert numbers["saved_max_abs_diff"] == 0
    assert numbers["saved_policy_mixed"] == 1


def test_tf23_loss_scale_optimizer_schedules_and_missing_names(keras_runs):
    numbers = keras_runs[8]
    assert numbers["lso_dynamic"] == 1 and numbers["lso_dynamic_initial"] == 2 ** 15
    assert numbers["lso_fixed"] == 128 and numbers["lso_fixed_dynamic"] == 0
    assert numbers["schedule_diff"] == 0
    assert numbers["peephole_error"] == 1


def test_import_statements_reach_the_era_names():
    # TF 2.16+ loads `tensorflow.keras.X` named in an import statement as a
    # second copy of tf_keras's API module; keras/submodule_imports.py
    # serves the patched one under that name, as TF 2.1-2.3 had one module.
    numbers = parse_numbers(check_ok(run_scenario("keras_era_imports.py", 8)).stdout)
    for flag in ("from_import_is_the_attribute", "names_are_the_attributes",
                 "module_import_is_the_attribute", "keras_experimental_names",
                 "one_mixed_precision_module", "policy_in_force",
                 "names_served_before_uninstall", "names_gone_after_uninstall",
                 "stock_copy_is_another_module", "copy_gets_the_names",
                 "copy_names_gone_after_uninstall"):
        assert numbers[flag] == 1, flag


def test_kaggle_flowers_custom_loop_runs_unchanged(tmp_path):
    """The Kaggle TPU notebooks' program: TPU detection with a fallback, mixed
    precision by ``from tensorflow.keras.mixed_precision import experimental``,
    XLA switched on, TFRecords read out of order, and STEPS_PER_TPU_CALL steps of
    ``experimental_run_v2`` per ``tf.function`` call."""
    run = check_ok(run_scenario("kaggle_flowers_ctl.py", 8, "--data_dir", str(tmp_path / "data")))
    numbers = parse_numbers(run.stdout)
    assert numbers["replicas"] == 8
    # 192 images in global batches of 4 x 8: 6 steps an epoch, 3 per host call.
    assert numbers["steps_per_epoch"] == 6
    assert numbers["host_calls"] == 6 and numbers["optimizer_iterations"] == 18
    # mixed_bfloat16 in force; the float32 softmax layer the notebooks ended with.
    assert numbers["compute_is_bfloat16"] == 1
    assert numbers["variables_are_float32"] == 1 and numbers["output_is_float32"] == 1
    # The learning rate the loop assigned after the third epoch: 0.002 * 8 * 0.8 ** 3.
    assert numbers["learning_rate"] == pytest.approx(0.016 * 0.8 ** 3, rel=1e-6)
    for epoch in range(3):
        assert 0 < numbers[f"epoch_{epoch}_loss"] < 10
        assert 0 <= numbers[f"epoch_{epoch}_accuracy"] <= 1
        assert 0 <= numbers[f"epoch_{epoch}_val_accuracy"] <= 1
    warned = warned_source_lines(run.stderr, "kaggle_flowers_ctl.py")
    assert warned["TPC005"] == ["strategy = tf.distribute.experimental.TPUStrategy(tpu)"]
    assert warned["TPC022"] == ["mixed_precision.set_policy(policy)"]
    assert len(warned["TPC001"]) == 2
    assert all("strategy.experimental_run_v2(" in line for line in warned["TPC001"])


# -- item 4: TF 1.15 graph-mode Keras in a custom loop under the compat.v1 strategy

@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_tf115_graph_keras_loop_matches_one_device(graph_runs, replicas):
    numbers = graph_runs[replicas]
    assert numbers["replicas"] == replicas
    keys = [f"{kind}_{step}" for kind in ("loss", "accuracy", "mean_loss")
            for step in range(5)] + ["weight_sum"]
    for init in ("init", "keras"):  # initializers, or tf.keras.backend.get_session()
        _same(numbers, f"{init}_tpu", f"{init}_one", keys)
        # local_variables_initializer() resets Keras metrics, as TF 1.x metrics.
        assert numbers[f"{init}_tpu_reset_mean_loss"] == 0
    assert numbers["init_one_loss_4"] < numbers["init_one_loss_0"]  # it trained


# -- items 5-7: the TPU host, TPU devices, device lists naming absent GPUs -----------

@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_host_input_pipeline_and_tpu_devices(host_runs, replicas):
    numbers = host_runs[replicas]
    assert numbers["replicas"] == replicas and numbers["job_is_worker"] == 1
    keys = [f"loss_{i}" for i in range(4)] + [f"w_{i}" for i in range(3)]
    _same(numbers, "host", "one", keys)
    _same(numbers, "host_short", "one", keys)
    assert numbers["tpu_logical"] == replicas and numbers["tpu_physical"] == replicas
    assert numbers["tpu_last_on_core"] == 1 and numbers["tpu_first_on_core"] == 1


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("replicas", REPLICAS)
def test_mirrored_strategy_on_absent_gpus(host_runs, replicas):
    numbers = host_runs[replicas]
    if replicas == 1:
        # Two named GPUs, one emulated device: a clear error at construction.
        assert numbers["gpu_mirrored_error_names_replicas"] == 1
    else:
        assert numbers["gpu_mirrored_replicas"] == 2
        assert numbers["gpu_mirrored_distinct_devices"] == 2
        _same(numbers, "gpu", "one", [f"loss_{i}" for i in range(4)]
              + [f"w_{i}" for i in range(3)])
    assert numbers["gpu_one_device_replicas"] == 1


# -- in process: mapping rules, errors, and exact uninstall ------------------------------

def test_device_names_resolve_onto_the_emulated_tpu(tpu8):
    del tpu8
    import tensorflow as tf
    from tpu_compat.runtime import devices
    with tpu_compat.install(warnings="always"):
        assert devices.resolve("/job:worker")[0] == "/job:localhost/replica:0/task:0"
        assert devices.resolve("/job:worker/replica:0/task:0/device:CPU:0")[0] == (
            "/job:localhost/replica:0/task:0/device:CPU:0")
        assert devices.resolve("/TPU:7")[0] == "/job:localhost/replica:0/task:0/device:CPU:7"
        assert devices.resolve("/gpu:3") == ("/device:CPU:3", True)
        assert devices.resolve("/cpu:0") == ("/cpu:0", False)
        with pytest.raises(devices.DeviceMappingError, match="names TPU core 8, but the "
                           "emulated TPU has 8 device"):
            devices.resolve("/device:TPU:8")
        with pytest.raises(devices.DeviceMappingError, match=r"has 1 host\(s\)"):
            devices.resolve("/job:worker/task:1")
        with pytest.raises(devices.DeviceMappingError, match="both resolve to"):
            tf.distribute.MirroredStrategy(["/gpu:0", "/cpu:0"])
        with pytest.warns(devices.TPUCompatDeviceWarning, match="names a GPU"):
            with tf.device("/gpu:1"):
                assert (tf.constant(1.0) + 1).device.endswith("CPU:1")
        with pytest.raises(devices.DeviceMappingError, match="job_name='chief'"):
            tf.config.experimental_connect_to_host("", job_name="chief")


def test_uninstall_undoes_every_change(tpu8):
    del tpu8
    import tensorflow as tf
    import tf_keras
    from tensorflow.python.distribute import mirrored_strategy
    from tf_keras.src.metrics import base_metric
    before = (builtins.__import__, tf.device, tf.compat.v1.device,
              tf.config.list_logical_devices, tf.config.list_physical_devices,
              tf.config.experimental_connect_to_host,
              vars(mirrored_strategy.MirroredStrategy)["__init__"],
              vars(base_metric.Metric)["add_weight"],
              set(vars(tf_keras.experimental)), set(vars(tf_keras.mixed_precision)),
              {name: id(module) for name, module in sys.modules.items()
               if name.startswith("tensorflow.keras")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tpu_compat.install():
            assert builtins.__import__ is not before[0]
            assert tf_keras.mixed_precision.experimental.set_policy
            assert len(tf.config.list_logical_devices("TPU")) == 8
            namespace = {"__name__": "__main__"}
            exec("from tensorflow.python.keras.layers import BatchNormalization",  # pylint: disable=exec-used
                 namespace)
            assert namespace["BatchNormalization"] is tf_keras.layers.BatchNormalization
    after = (builtins.__import__, tf.device, tf.compat.v1.device,
             tf.config.list_logical_devices, tf.config.list_physical_devices,
             tf.config.experimental_connect_to_host,
             vars(mirrored_strategy.MirroredStrategy)["__init__"],
             vars(base_metric.Metric)["add_weight"],
             set(vars(tf_keras.experimental)), set(vars(tf_keras.mixed_precision)),
             {name: id(module) for name, module in sys.modules.items()
              if name.startswith("tensorflow.keras")})
    assert after == before
    assert tf.config.list_logical_devices("TPU") == []
    # TensorFlow's own imports of tensorflow.python.keras were never redirected.
    assert sys.modules["tensorflow.python.keras"].__file__.startswith(
        tf.__file__.rsplit("/", 1)[0])


def test_library_code_keeps_tensorflow_python_keras(tpu8):
    del tpu8
    with tpu_compat.install(warnings="ignore"):
        library = {"__name__": "somelib.module",
                   "__file__": np.__file__}  # a file under site-packages
        exec("from tensorflow.python.keras import layers", library)  # pylint: disable=exec-used
        assert library["layers"].__name__ == "tensorflow.python.keras.layers"
        program = {"__name__": "__main__"}
        exec("from tensorflow.python.keras import layers", program)  # pylint: disable=exec-used
        assert program["layers"].BatchNormalization.__module__.startswith("tf_keras.")
