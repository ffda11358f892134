"""Keras TPU programs of every era under the adapters (docs/keras.md).

Subprocess scenarios train each era's program on 1, 2 and 8 emulated cores
and the same model on one device in the same process; in-process tests check
the compile translation, the Keras 3 refusal and that uninstall() restores
Keras.
"""

import importlib.util
import json
import os
import sys
import warnings

import numpy as np
import pytest

import tpu_compat
from conftest import check_ok, parse_numbers, run_scenario

pytestmark = pytest.mark.requires_tf

RTOL = 1e-5
STEPS_PER_EPOCH, EPOCHS, STEPS_PER_RUN = 10, 2, 4
# 10 steps in host calls of at most 4: TF 1.15 ran 4, 4, then the remainder 2.
CHUNKS = [4, 4, 2]


def _keras3_installed():
    """Whether `keras` is Keras 3 (TF 2.16+); TF <= 2.15 ships Keras 2 under that name."""
    spec = importlib.util.find_spec("keras")
    return spec is not None and spec.origin is not None and os.path.isdir(
        os.path.join(os.path.dirname(spec.origin), "src", "trainers"))


KERAS3_INSTALLED = _keras3_installed()
requires_keras3 = pytest.mark.skipif(
    not KERAS3_INSTALLED, reason="Keras 3 is not installed (TF <= 2.15 ships Keras 2 as keras)")


def _result(run):
    line = next(l for l in check_ok(run).stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def _assert_close(got, want):
    for got_part, want_part in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(got_part), np.asarray(want_part),
                                   rtol=RTOL, atol=1e-6)


def _chunk_ends():
    """Global indices of the last step of every host call, all epochs."""
    ends, step = [], 0
    for _ in range(EPOCHS):
        for chunk in CHUNKS:
            step += chunk
            ends.append(step - 1)
    return ends


# -- TF 1.15, graph mode -------------------------------------------------------

# [1] keeps the claim in CI. (Its 8-core run also showed the session-close
# stall that runtime/device_input.py removes; test_device_input.py keeps
# that in CI.)
@pytest.mark.whole_program(ci_replicas=1)
@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_tf115_graph_fit_runs_steps_per_run_steps_per_host_call(replicas):
    result = _result(run_scenario("keras_tf115_graph.py", replicas, tf1=True,
                                  env={"TPU_COMPAT_WARNINGS": "ignore"}))
    assert result["replicas"] == replicas
    assert result["strategy_class"] == "CompatTPUStrategyV1OnMirroredStrategyV1"
    got, want = result["distributed"], result["reference"]

    # One batch-end callback per host call, as TF 1.15's TPU loop made them:
    # batch = first step of the call, num_steps = steps it ran; the optimizer's
    # step counter on the devices advanced by exactly that much.
    calls = got["calls"]
    assert [c["num_steps"] for c in calls] == CHUNKS * EPOCHS
    assert [c["batch"] for c in calls] == [0, 4, 8] * EPOCHS
    assert [c["iterations"] for c in calls] == [end + 1 for end in _chunk_ends()]
    # The reference ran one step per call: 20 calls, one per step.
    step_losses = [c["loss"] for c in want["calls"]]
    assert len(step_losses) == STEPS_PER_EPOCH * EPOCHS
    # Logged loss = the last step's loss of each host call.
    np.testing.assert_allclose([c["loss"] for c in calls],
                               [step_losses[end] for end in _chunk_ends()], rtol=RTOL)
    # TF 1.15's epoch loss: BaseLogger sums the logged (last-step) losses and
    # divides by the steps of the epoch.
    per_epoch = np.reshape([step_losses[end] for end in _chunk_ends()], (EPOCHS, -1))
    np.testing.assert_allclose(got["history"]["loss"],
                               per_epoch.sum(axis=1) / STEPS_PER_EPOCH, rtol=RTOL)
    for key in ("mean_absolute_error", "val_loss", "val_mean_absolute_error"):
        np.testing.assert_allclose(got["history"][key], want["history"][key], rtol=RTOL)

    assert want["history"]["loss"][1] < want["history"]["loss"][0]  # it trained
    _assert_close(got["weights"], want["weights"])
    _assert_close(got["numpy_weights"], want["numpy_weights"])
    np.testing.assert_allclose(got["evaluate"], want["evaluate"], rtol=RTOL)
    np.testing.assert_allclose(got["predict"], want["predict"], rtol=RTOL, atol=1e-6)
    for loaded in got["saved"].values():
        _assert_close(loaded, got["weights"])


# -- TF 1.15 (eager), TF 2.0/2.1, TF 2.2/2.3 -------------------------------------

# No count in CI: test_era_programs' TF 2.x Keras program keeps 8-core Keras
# parity there, and this file's in-process tests the eras' steps_per_run /
# experimental_steps_per_execution.
@pytest.mark.whole_program(ci_replicas=())
@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_eager_eras_match_one_device(replicas):
    result = _result(run_scenario("keras_eager_eras.py", replicas,
                                  env={"TPU_COMPAT_WARNINGS": "always"}))
    assert result["replicas"] == replicas
    assert result["keras"].startswith("tf_keras")  # tpu-compat run chose tf-keras
    reference = result["reference"]
    assert reference["steps_per_execution"] == 1
    reference_losses = [c["loss"] for c in reference["calls"]]
    assert reference["history"]["loss"][1] < reference["history"]["loss"][0]  # it trained

    multi_step_batches = [end % STEPS_PER_EPOCH for end in _chunk_ends()]
    for era, steps_per_execution in (("tf115", STEPS_PER_RUN), ("tf21", 1),
                                     ("tf23", STEPS_PER_RUN)):
        got = result[era]
        assert got["steps_per_execution"] == steps_per_execution, era
        if steps_per_execution == 1:
            assert len(got["calls"]) == STEPS_PER_EPOCH * EPOCHS
        else:
            # One train-batch-end per execution; tf_keras reports the index of
            # its last step, and the device counter moved by 4, 4, 2.
            assert [c["batch"] for c in got["calls"]] == multi_step_batches, era
            assert [c["iterations"] for c in got["calls"]] == [
                end + 1 for end in _chunk_ends()], era
            np.testing.assert_allclose([c["loss"] for c in got["calls"]],
                                       [reference_losses[e] for e in _chunk_ends()],
                                       rtol=RTOL)
        for key in ("loss", "mae"):
            np.testing.assert_allclose(got["history"][key], reference["history"][key],
                                       rtol=RTOL, err_msg=f"{era} {key}")
        _assert_close(got["weights"], reference["weights"])

    tf115 = result["tf115"]
    _assert_close(tf115["numpy_weights"], reference["numpy_weights"])
    np.testing.assert_allclose(tf115["evaluate"], reference["evaluate"], rtol=RTOL)
    np.testing.assert_allclose(tf115["predict"], reference["predict"], rtol=RTOL, atol=1e-6)
    for loaded in tf115["saved"].values():
        _assert_close(loaded, tf115["weights"])

    # TF 2.2's argument name warns once, at the program's compile line.
    (warning,) = result["tf23"]["warnings"]
    assert "[TPC016]" in warning["message"] and "steps_per_execution=N" in warning["message"]
    assert warning["file"] == "keras_eager_eras.py"

    # Keras 3, imported after install(), was patched by the import hook, and
    # uninstall() restored both Keras packages.
    assert result["keras_is_keras3"] is KERAS3_INSTALLED
    assert result["keras3_imported_before"] is False
    if KERAS3_INSTALLED:
        assert result["keras3_patched_on_import"] is True
        assert result["keras3_restored"] and result["tf_keras_restored"]
    else:  # TF <= 2.15's Keras 2 `keras`: nothing of Keras 3's to patch there
        assert result["keras2_left_alone"] and result["tf_keras_restored"]


# -- Keras 3 forced by the user ------------------------------------------------------

@requires_keras3
def test_keras3_gives_the_same_numbers_or_one_clear_error():
    result = _result(run_scenario("keras3_under_adapters.py", 4, "eager",
                                  env={"TF_USE_LEGACY_KERAS": "0",
                                       "TPU_COMPAT_WARNINGS": "always"}))
    assert result["keras"].startswith("keras.")  # Keras 3, not tf_keras
    for case in ("tf21", "experimental_steps_per_execution_1"):
        np.testing.assert_allclose(result[case]["loss"], result["reference"]["loss"],
                                   rtol=RTOL)
        _assert_close(result[case]["weights"], result["reference"]["weights"])
    assert result["tpc016_warnings"] == 2
    for case, mention in (("steps_per_execution_4", "steps_per_execution=4"),
                          ("experimental_steps_per_execution_4",
                           "steps_per_execution=4 (from experimental_steps_per_execution)"),
                          ("tf115_steps_per_run_4", "steps_per_run=4")):
        kind, message = result[case]["error"]
        assert kind == "Keras3LimitationError", (case, message)
        assert mention in message and "TF_USE_LEGACY_KERAS=1" in message
        assert message.startswith("Keras 3 cannot run this model on the emulated TPU")


@requires_keras3
def test_keras3_refuses_tf1_graph_mode_at_compile():
    result = _result(run_scenario("keras3_under_adapters.py", 2, "graph",
                                  env={"TF_USE_LEGACY_KERAS": "0"}))
    kind, message = result["tf115_graph"]["error"]
    assert kind == "Keras3LimitationError"
    assert "no TF 1.x graph mode" in message and "TF_USE_LEGACY_KERAS=1" in message


# -- in process: compile translation and reversibility --------------------------------

@pytest.fixture
def installed(tpu8):
    tpu_compat.uninstall()
    with tpu_compat.install(warnings="ignore"):
        yield
    tpu_compat.uninstall()


def _tf_keras_model(strategy, **compile_arguments):
    import tf_keras  # pylint: disable=import-outside-toplevel
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(3,))])
        model.compile("sgd", "mse", **compile_arguments)
    return model


def test_steps_per_run_becomes_steps_per_execution_unless_chosen(installed):
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    v1 = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=5)
    assert int(_tf_keras_model(v1).steps_per_execution.numpy()) == 5
    assert int(_tf_keras_model(v1, steps_per_execution=2).steps_per_execution.numpy()) == 2
    v1_single = tf.compat.v1.distribute.experimental.TPUStrategy(resolver)
    assert int(_tf_keras_model(v1_single).steps_per_execution.numpy()) == 1
    v2 = tf.distribute.experimental.TPUStrategy(resolver)
    assert int(_tf_keras_model(v2).steps_per_execution.numpy()) == 1
    assert int(_tf_keras_model(tf.distribute.get_strategy()).steps_per_execution.numpy()) == 1


def _traced_op_types(model):
    """For each trace of ``model``'s multi-step train function, its ops (type
    and device) and their counts over its graph and every function it calls
    (sorted)."""
    import collections  # pylint: disable=import-outside-toplevel
    traces = []
    for concrete in model.train_function._list_all_concrete_functions():  # pylint: disable=protected-access
        graph_def = concrete.graph.as_graph_def()
        nodes = list(graph_def.node)
        for function in graph_def.library.function:
            nodes += function.node_def
        traces.append(sorted(collections.Counter(
            (node.op, node.device) for node in nodes).items()))
    return sorted(traces)


def _host_calls_running_tpu_compat(model, dataset, steps):
    """Fits ``steps`` steps; returns (host calls, the names of tpu_compat's
    Python functions that ran after the first host call ended and until the
    last one did, and the train function's retraces in that window)."""
    import tf_keras  # pylint: disable=import-outside-toplevel
    package = os.path.dirname(tpu_compat.__file__) + os.sep
    ran, ends, traces = [], [], []

    def profile(frame, event, _):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            ran.append(frame.f_code.co_qualname)

    class Window(tf_keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):  # once per host call
            ends.append(batch)
            sys.setprofile(None)
            traces.append(self.model.train_function.experimental_get_tracing_count())
            if batch + 1 < steps:  # not the last host call: watch the next one
                sys.setprofile(profile)

    try:
        model.fit(dataset, epochs=1, steps_per_epoch=steps, callbacks=[Window()], verbose=0)
    finally:
        sys.setprofile(None)
    return len(ends), ran, traces[-1] - traces[0]


def test_steps_per_run_fit_runs_the_native_multi_step_program(installed, tpu8):
    # Issue #32: fit with steps_per_run must cost what native
    # steps_per_execution costs. That claim, free of the machine's noise:
    # the program each host call runs is op for op and device for device the
    # one tf-keras builds under a native MirroredStrategy on the same devices
    # with the emulated TPU's cross-device ops (benchmarks/bench_keras_fit.py's
    # (a) and (b)), so the emulation adds nothing to the step; and between
    # host calls no Python of tpu_compat's runs (no wrapper, check or
    # conversion per N steps) and nothing retraces.
    import tensorflow as tf
    steps = 2
    dataset = tf.data.Dataset.from_tensor_slices(
        (np.ones((64, 3), np.float32), np.ones((64, 1), np.float32))).repeat().batch(
            16, drop_remainder=True)
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    emulated = _tf_keras_model(
        tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=steps))
    host_calls, ran, retraces = _host_calls_running_tpu_compat(emulated, dataset, 4 * steps)
    assert (host_calls, ran, retraces) == (4, [], 0)
    assert int(emulated.optimizer.iterations.numpy()) == 4 * steps
    native_strategy = tf.distribute.MirroredStrategy(
        list(tpu8.devices), cross_device_ops=tf.distribute.ReductionToOneDevice())
    assert type(native_strategy) is tf.distribute.MirroredStrategy  # not routed
    native = _tf_keras_model(native_strategy, steps_per_execution=steps)
    native.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
    assert int(native.optimizer.iterations.numpy()) == steps
    assert _traced_op_types(emulated) == _traced_op_types(native)

def test_experimental_steps_per_execution_warns_at_the_callers_line(installed):
    import tensorflow as tf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _tf_keras_model(tf.distribute.get_strategy(),
                                experimental_steps_per_execution=3)
    assert int(model.steps_per_execution.numpy()) == 3
    (warning,) = [w for w in caught if "TPC016" in str(w.message)]
    assert os.path.basename(warning.filename) == "test_keras.py"


@requires_keras3
def test_keras3_multi_step_under_the_emulated_tpu_is_refused_in_process(installed):
    import keras  # Keras 3, whatever tf.keras is in this process
    import tensorflow as tf
    from tpu_compat.keras.routes import Keras3LimitationError
    strategy = tf.distribute.experimental.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")  # one step per host call: fine
        with pytest.raises(Keras3LimitationError, match="TF_USE_LEGACY_KERAS=1"):
            model.compile("sgd", "mse", steps_per_execution=2)
    # A native MirroredStrategy is the user's own business.
    native = tf.distribute.MirroredStrategy(["/cpu:0"])
    with native.scope():
        keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]).compile(
            "sgd", "mse", steps_per_execution=2)


def test_uninstall_restores_keras_exactly(tpu8):
    import keras  # noqa: F401
    import tf_keras  # noqa: F401
    from tf_keras.src.engine import training, training_arrays_v1, training_distributed_v1
    tpu_compat.uninstall()
    owners = {"tf_keras Model": (training.Model, "compile"),
              "fit_loop": (training_arrays_v1, "fit_loop"),
              "train step": (training_distributed_v1, "_make_train_step_fn"),
              "test loop": (training_distributed_v1, "experimental_tpu_test_loop")}
    if KERAS3_INSTALLED:
        from keras.src.trainers import trainer
        owners["Keras 3 compile"] = (trainer.Trainer, "compile")
    before = {name: vars(owner)[attribute] for name, (owner, attribute) in owners.items()}
    hooks_before = list(sys.meta_path)
    tpu_compat.install()
    try:
        for name, (owner, attribute) in owners.items():
            assert vars(owner)[attribute] is not before[name], name
            assert getattr(vars(owner)[attribute], "__tpu_compat_added__", False), name
    finally:
        tpu_compat.uninstall()
    assert {name: vars(owner)[attribute]
            for name, (owner, attribute) in owners.items()} == before
    assert sys.meta_path == hooks_before


# -- doctor: which Keras -------------------------------------------------------

def test_doctor_reads_the_variable_as_tensorflow_does(monkeypatch):
    from tpu_compat.commands import doctor
    # As before TensorFlow is imported: the choice still follows the variable. (This
    # process may not have imported it yet, when nothing before this test did.)
    if "tensorflow" in sys.modules:
        monkeypatch.delattr(sys.modules["tensorflow"], "_tf_uses_legacy_keras", raising=False)
    assert doctor.keras_flavour({"TF_USE_LEGACY_KERAS": "1"})[0] == "tf-keras (Keras 2)"
    assert doctor.keras_flavour({"TF_USE_LEGACY_KERAS": "True"})[0] == "tf-keras (Keras 2)"
    flavour, why = doctor.keras_flavour({"TF_USE_LEGACY_KERAS": "TRUE"})
    assert flavour == "Keras 3" and "TensorFlow reads only true, True or 1 as yes" in why
    assert doctor.keras_flavour({})[0] == "Keras 3 (tpu-compat run switches to tf-keras)"


def test_doctor_reports_a_keras_choice_made_too_late(tpu8, monkeypatch):
    from tpu_compat.commands import doctor
    monkeypatch.setattr(sys.modules["tensorflow"], "_tf_uses_legacy_keras", False,
                        raising=False)
    facts, problems = doctor.diagnose(environ={})
    assert dict(facts)["tf.keras"] == (
        "Keras 3: TensorFlow is already imported in this process, which fixed tf.keras for it")
    assert any("set TF_USE_LEGACY_KERAS=1 before importing TensorFlow" in p for p in problems)
    _, problems = doctor.diagnose(environ={"TF_USE_LEGACY_KERAS": "1"})
    assert any("was set after TensorFlow was imported" in p for p in problems)
    _, problems = doctor.diagnose(environ={"TF_USE_LEGACY_KERAS": "0"})
    assert not any("TF_USE_LEGACY_KERAS" in p for p in problems)


def test_tf115_lstm_fit_one_step_per_call_compiles_on_static_core_batches():
    """TF 1.15 took its TPU loop for any TPU strategy in graph mode, steps_per_run=1
    included, and built each core's model on the iterator's static shape: the LSTM's
    gradient compiles (--fidelity tpu, run's default) and 8 cores equal one. TF 2's
    class in graph mode (on 2 cores) (`tf.compat.v2.distribute.TPUStrategy`, the upgraded
    template's) took the same loop in TF 2.0-2.3 (issue 35: it failed the
    fidelity check on the Mirrored loop's unknown batch)."""
    def run(replicas, *args):
        return parse_numbers(check_ok(run_scenario(
            "keras_tf115_lstm.py", replicas, *args, tf1=True,
            env={"TPU_COMPAT_WARNINGS": "ignore"})).stdout)

    runs = {n: run(n) for n in (1, 8)}
    # TF 2's class on 2 cores: the loop it takes does not depend on the core count
    # (the TF 1.15 class above makes the 8-core claim); 2 cores build a quarter of the graph.
    tf2_class = run(2, "tf2_class")
    assert runs[8]["core_batch"] == 2 and runs[1]["core_batch"] == 16
    assert tf2_class["core_batch"] == 8
    assert runs[8]["loss"] == pytest.approx(runs[1]["loss"], rel=1e-6)
    assert tf2_class["loss"] == pytest.approx(runs[1]["loss"], rel=1e-6)
