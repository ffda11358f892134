"""install()/uninstall(): every TensorFlow namespace routed, and restored exactly."""

import importlib
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

import fork_server
import tf_state
import tpu_compat
from tpu_compat import _process, routing
from conftest import check_ok, REPO_ROOT, run_cli, SCENARIOS, subprocess_env

pytestmark = pytest.mark.requires_tf


@pytest.fixture
def uninstalled(tpu8):
    tpu_compat.uninstall()
    yield
    tpu_compat.uninstall()


@pytest.fixture
def pristine(uninstalled):
    """Not installed, Keras imported (so install() patches it now), and autograph
    without tpu_compat's rule: an adapter built directly in an earlier test
    adds it for good, and then install() would have nothing to add."""
    import tf_keras  # noqa: F401  pylint: disable=unused-import
    from keras.src.trainers import trainer  # noqa: F401  pylint: disable=unused-import
    # install() gives tf_keras's API modules the TF 2.0-2.3 names (keras/era.py);
    # importing them loads modules (tf_keras's v1 layers) an uninstall cannot unload.
    from tpu_compat.keras import era
    for root in era._API_ROOTS:  # pylint: disable=protected-access
        importlib.import_module(root + ".mixed_precision")
        importlib.import_module(root + ".experimental")
    from tensorflow.python.autograph.core import config as autograph_config
    rules = autograph_config.CONVERSION_RULES
    autograph_config.CONVERSION_RULES = tuple(
        rule for rule in rules if getattr(rule, "_prefix", None) != "tpu_compat")
    yield
    autograph_config.CONVERSION_RULES = rules


def test_install_routes_every_namespace(uninstalled):
    import tensorflow as tf
    import tensorflow.compat.v1 as tf1
    import tensorflow.compat.v2 as tf2
    from tpu_compat.runtime import resolver, strategy_by_era, strategy_v1, strategy_v2
    with tpu_compat.install():
        assert tf.distribute.TPUStrategy is strategy_v2.CompatTPUStrategy
        assert tf.distribute.experimental.TPUStrategy is strategy_by_era.TPUStrategy
        assert tf1.distribute.experimental.TPUStrategy is strategy_v1.CompatTPUStrategyV1
        assert tf2.distribute.experimental.TPUStrategy is strategy_v2.CompatExperimentalTPUStrategy
        assert tf2.distribute.TPUStrategy is strategy_v2.CompatTPUStrategy
        from tensorflow.distribute.experimental import TPUStrategy
        assert TPUStrategy is strategy_by_era.TPUStrategy
        for namespace in (tf, tf1, tf2):
            assert (namespace.distribute.cluster_resolver.TPUClusterResolver
                    is resolver.TPUClusterResolver)
            assert namespace.tpu.experimental.initialize_tpu_system is resolver.initialize_tpu_system
            assert namespace.config.experimental_connect_to_cluster is resolver.connect_to_cluster
        assert tf.tpu.experimental.shutdown_tpu_system is resolver.shutdown_tpu_system
        from tpu_compat import lowlevel
        for name in lowlevel.ROUTED_NAMES:  # incl. initialize/shutdown_system
            assert getattr(tf1.tpu, name) is getattr(lowlevel, name), name
        assert hasattr(tf.distribute.MirroredStrategy, "experimental_run_v2")


def _changed(before, after):
    return "\n".join(tf_state.differences(before, after))


def test_uninstall_restores_tensorflow_exactly(pristine):
    before = tf_state.snapshot()
    tpu_compat.install(warnings="error")
    changed = _changed(before, tf_state.snapshot())
    # The snapshot sees every kind of change install() makes...
    for expected in ("'tensorflow._api.v2.distribute'): ['TPUStrategy']",
                     "'StrategyBase'): ['experimental_distribute_dataset', "
                     "'experimental_distribute_datasets_from_function', "
                     "'experimental_run_v2', 'unwrap']",
                     "'tf_keras.src.engine.training', 'Model'): ['compile']",
                     "'keras.src.trainers.trainer', 'Trainer'): ['compile']",
                     "'tf_keras.src.engine.training_arrays_v1'): ['fit_loop']",
                     "DoNotConvert rule for tpu_compat",
                     "added [(",  # to warnings.filters:
                     "('error', None, <class 'tpu_compat.deprecation.TPUCompat"):
        assert expected in changed
    tpu_compat.uninstall()
    # ... and uninstall() undoes all of them.
    assert _changed(before, tf_state.snapshot()) == ""


@pytest.mark.parametrize("step", ["warnings filters", "autograph rules"])
def test_the_exactness_check_fails_when_an_undo_step_is_skipped(pristine, monkeypatch,
                                                                step):
    """The snapshot can see both changes that used to escape it."""
    from tpu_compat import deprecation
    from tpu_compat.runtime import autograph_rules
    skipped = []
    if step == "warnings filters":
        real = deprecation.apply_policy

        def apply_policy(policy=None):
            skipped.append(real(policy))
            return lambda: None
        monkeypatch.setattr(deprecation, "apply_policy", apply_policy)
        expected = {"warnings.filters"}
    else:
        real = autograph_rules.exclude

        def exclude():
            skipped.append(real())
            return lambda: None
        monkeypatch.setattr(autograph_rules, "exclude", exclude)
        # CONVERSION_RULES is also an attribute of autograph's config module.
        expected = {"autograph CONVERSION_RULES",
                    "('module', 'tensorflow.python.autograph.core.config')"}
    before = tf_state.snapshot()
    tpu_compat.install(warnings="always")
    tpu_compat.uninstall()
    leftover = tf_state.differences(before, tf_state.snapshot())
    for undo in reversed(skipped):
        undo()
    assert {line.split(":")[0] for line in leftover} == expected
    assert _changed(before, tf_state.snapshot()) == ""


def test_importing_the_runtime_changes_nothing_and_install_is_exact_in_a_fresh_process():
    # In this process the runtime was imported long ago; a fresh one shows
    # what importing it (and the first install) does to a pristine TensorFlow.
    # Forked by the suite's fork server where there is one (issue 32's CI
    # budget: a TensorFlow import less): its processes have imported
    # TensorFlow and nothing of tpu_compat (tests/fork_server.py), in the
    # environment `tpu-compat run` imports it in, given here, so that a fresh
    # process where the server declines starts the same.
    code = textwrap.dedent("""
        import tensorflow, tf_keras
        # install() gives tf_keras's v1 and v2 API modules the TF 2.0-2.3 names
        # (keras/era.py); loading them is not a change uninstall() undoes.
        import tf_keras.api._v1.keras.mixed_precision, tf_keras.api._v1.keras.experimental
        import tf_keras.api._v2.keras.mixed_precision, tf_keras.api._v2.keras.experimental
        # The estimator layer (routed by install()) builds on TF's evaluation
        # helpers; loading that module is not a change either.
        import tensorflow.python.training.evaluation
        import tf_state
        # `import tpu_compat` itself only lifts Python's default ignore of
        # DeprecationWarning for its own category (tpu_compat.deprecation).
        import tpu_compat
        # The emulated TPU's logical devices are TensorFlow's once-per-process
        # configuration (and create its eager context): decided first.
        from tpu_compat.runtime import backend
        backend.get_backend()
        before = tf_state.snapshot()
        import tpu_compat.runtime.adapter, tpu_compat.runtime.strategy_by_era
        import tpu_compat.keras.routes, tpu_compat.runtime.native_methods, tpu_compat.distribute
        print("after import:", tf_state.differences(before, tf_state.snapshot()))
        tpu_compat.install(warnings="error")
        print("installed:", [line.split(":")[0] for line in
                             tf_state.differences(before, tf_state.snapshot())
                             if "autograph" in line or "warnings" in line])
        tpu_compat.uninstall()
        print("after uninstall:", tf_state.differences(before, tf_state.snapshot()))
    """)
    env = fork_server.server_environment(subprocess_env(
        PYTHONPATH=os.pathsep.join([REPO_ROOT, os.path.join(REPO_ROOT, "tests")]),
        TPU_COMPAT_NUM_REPLICAS=2))
    with _process.popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, env=env) as process:
        try:
            stdout, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "after import: []" in result.stdout
    # The rule is also an attribute of autograph's config module.
    assert ("installed: [\"('module', 'tensorflow.python.autograph.core.config')\", "
            "'autograph CONVERSION_RULES', 'warnings.filters']") in result.stdout
    assert "after uninstall: []" in result.stdout


def test_an_adapter_built_without_install_keeps_autograph_out_of_tpu_compat(pristine):
    from tpu_compat.runtime import autograph_rules
    import tensorflow as tf
    assert not autograph_rules.is_excluded()
    strategy = tpu_compat.distribute.TPUStrategy()
    assert autograph_rules.is_excluded()

    @tf.function
    def step():
        return strategy.experimental_run_v2(lambda: tf.constant(1.0))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step()
    # Converted by autograph, tpu_compat's own line would be blamed.
    assert [(w.filename, "[TPC001]" in str(w.message)) for w in caught] == [(__file__, True)]


def test_install_is_idempotent_and_a_context_manager(pristine):
    before = tf_state.snapshot()
    with tpu_compat.install() as handle:
        tpu_compat.install(warnings="always")
        assert routing.is_installed()
        assert handle.backend.num_replicas == 8
    assert not routing.is_installed()
    tpu_compat.uninstall()
    assert _changed(before, tf_state.snapshot()) == ""


def _run_under_each_policy(target, errors):
    """Runs ``target(policy)`` in one thread per warning policy; all must end cleanly."""
    threads = [threading.Thread(target=target, args=(policy,))
               for policy in ("once", "always", "error", "ignore", None, "once")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and not any(thread.is_alive() for thread in threads)


def test_concurrent_installs_install_once(pristine):
    """Threads racing into install() must not record each other's adapters as
    TensorFlow's originals: one uninstall() then restores everything."""
    before = tf_state.snapshot()
    barrier = threading.Barrier(6)
    errors = []

    def install(policy):
        try:
            barrier.wait(timeout=60)
            tpu_compat.install(warnings=policy)
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)

    _run_under_each_policy(install, errors)
    assert routing.is_installed()
    tpu_compat.uninstall()
    assert _changed(before, tf_state.snapshot()) == ""


def test_install_and_uninstall_churn_from_threads_ends_consistent(pristine):
    before = tf_state.snapshot()
    errors = []

    def churn(policy):
        try:
            for _ in range(20):
                tpu_compat.install(warnings=policy)
                tpu_compat.uninstall()
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)

    _run_under_each_policy(churn, errors)
    assert not routing.is_installed()
    assert _changed(before, tf_state.snapshot()) == ""


def test_router_picks_the_class_of_the_era(uninstalled):
    import tensorflow as tf
    from tpu_compat.runtime import strategy_v1, strategy_v2
    with tpu_compat.install():
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
        with pytest.warns(DeprecationWarning, match=r"\[TPC005\]"):
            tf2_style = tf.distribute.experimental.TPUStrategy(resolver)
        keyword = tf.distribute.experimental.TPUStrategy(resolver, steps_per_run=4)
        positional = tf.distribute.experimental.TPUStrategy(resolver, 4)
    assert isinstance(tf2_style, strategy_v2.CompatExperimentalTPUStrategy)
    assert isinstance(keyword, strategy_v1.CompatTPUStrategyV1)
    assert positional.extended.steps_per_run == 4
    from tpu_compat.distribute.experimental import TPUStrategy as Routed
    assert isinstance(tf2_style, Routed) and isinstance(keyword, Routed)
    assert isinstance(keyword, tf.distribute.Strategy) is False  # a compat.v1 strategy
    assert isinstance(keyword, tf.compat.v1.distribute.Strategy)


def test_graph_mode_program_gets_the_v1_class():
    result = check_ok(run_cli("run", "--replicas", "2", f"{SCENARIOS}/graph_router.py"))
    assert "class: CompatTPUStrategyV1OnMirroredStrategyV1" in result.stdout
    assert "steps_per_run: 1" in result.stdout


def test_compat_v1_is_reachable_by_attribute_access_without_importing_tensorflow():
    # As with tf.compat.v1 after `import tensorflow as tf`.
    code = ("import sys, tpu_compat\n"
            "namespaces = (tpu_compat.compat.v1, tpu_compat.compat.v2)\n"
            "print('tensorflow imported:', 'tensorflow' in sys.modules)\n"
            "print(tpu_compat.compat.v1.distribute.experimental.TPUStrategy.__name__)\n"
            "print(tpu_compat.compat.v2.distribute.experimental.TPUStrategy.__name__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(), cwd=REPO_ROOT, timeout=600)
    assert result.stdout.split("\n")[:3] == [
        "tensorflow imported: False", "CompatTPUStrategyV1",
        "CompatExperimentalTPUStrategy"], result.stderr
