"""tf.contrib for TF 1.12-1.14 TPU programs (tpu_compat.contrib), in process."""

import builtins
import importlib
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf

import tpu_compat
from tpu_compat import TPUCompatDeprecationWarning, legacy_api
import tpu_compat.contrib as contrib_lib
from tpu_compat.contrib import _hparams, _layers
from tpu_compat import lowlevel
from tpu_compat.runtime import resolver, strategy_v1

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def installed(tpu8):
    del tpu8
    tpu_compat.uninstall()
    with tpu_compat.install():
        yield
    tpu_compat.uninstall()


def test_contrib_names_resolve_and_warn_with_their_record(installed):
    import tensorflow.compat.v1 as tf1
    expected = {
        ("tpu", "replicate"): lowlevel.replicate,
        ("tpu", "CrossShardOptimizer"): lowlevel.CrossShardOptimizer,
        ("distribute", "TPUStrategy"): strategy_v1.CompatTPUStrategyV1,
        ("cluster_resolver", "TPUClusterResolver"): resolver.TPUClusterResolver,
        ("data", "map_and_batch"): tf.data.experimental.map_and_batch,
    }
    for (module, name), value in expected.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TPUCompatDeprecationWarning)
            assert getattr(getattr(tf1.contrib, module), name) is value
        (warning,) = [w for w in caught if w.category is TPUCompatDeprecationWarning]
        assert warning.filename == __file__
        record = legacy_api.get(str(warning.message)[-7:-1])
        assert f"tf.contrib.{module}.{name}" in record.api


def test_import_spellings_of_the_era(installed):
    from tensorflow.contrib import tpu as contrib_tpu
    from tensorflow.contrib import distribute as contrib_distribute
    from tensorflow.contrib import cluster_resolver
    from tensorflow.contrib.tpu import CrossShardOptimizer
    import tensorflow.contrib.data as contrib_data
    import tensorflow.contrib.layers
    assert contrib_tpu.shard is lowlevel.shard
    assert contrib_distribute.TPUStrategy is strategy_v1.CompatTPUStrategyV1
    assert cluster_resolver.TPUClusterResolver is resolver.TPUClusterResolver
    assert CrossShardOptimizer is lowlevel.CrossShardOptimizer
    assert contrib_data.__name__ == "tensorflow.contrib.data"
    assert tensorflow.contrib.layers.layer_norm is _layers.layer_norm
    assert tensorflow.constant is tf.constant  # the rest of tensorflow is untouched


def test_anything_else_gets_one_clear_error(installed):
    import tensorflow.compat.v1 as tf1
    with pytest.raises(AttributeError, match=r"tf\.contrib\.slim is not provided"):
        tf1.contrib.slim  # pylint: disable=pointless-statement
    with pytest.raises(ImportError, match=r"tf\.contrib\.slim is not provided"):
        from tensorflow.contrib import slim  # noqa: F401
    with pytest.raises(ImportError, match=r"tf\.contrib\.tpu\.AsyncCheckpointSaverHook is not"):
        from tensorflow.contrib.tpu import AsyncCheckpointSaverHook  # noqa: F401
    with pytest.raises(ImportError, match=r"tf\.contrib\.tpu\.python\.tpu is not"):
        import tensorflow.contrib.tpu.python.tpu  # noqa: F401


def test_libraries_and_tf2_namespace_are_unaffected(installed):
    assert not hasattr(tf, "contrib")  # libraries tell TF 1 from TF 2 by it
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tensorflow.contrib")  # not in sys.modules
    library_globals = {"__name__": "some_library",
                       "__file__": os.path.join(os.path.dirname(tf.__file__), "x.py")}
    with pytest.raises(ModuleNotFoundError):
        builtins.__import__("tensorflow.contrib", library_globals, None, ("tpu",), 0)


def test_uninstall_removes_contrib(tpu8):
    del tpu8
    import tensorflow.compat.v1 as tf1
    tpu_compat.uninstall()
    original_import = builtins.__import__
    with tpu_compat.install():
        assert hasattr(tf1, "contrib")
    assert not hasattr(tf1, "contrib")
    assert builtins.__import__ is original_import


def test_layer_norm_restores_a_tf1_checkpoint(tpu8, tmp_path):
    """Pretrained BERT/ALBERT checkpoints name the variables LayerNorm/beta, /gamma."""
    del tpu8
    v1 = tf.compat.v1
    inputs = np.random.RandomState(0).randn(4, 6).astype(np.float32)
    beta = np.linspace(-1, 1, 6).astype(np.float32)
    gamma = np.linspace(0.5, 2, 6).astype(np.float32)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        with v1.variable_scope("bert/embeddings/LayerNorm"):
            v1.get_variable("beta", initializer=beta)
            v1.get_variable("gamma", initializer=gamma)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            v1.train.Saver().save(session, prefix)
    with tf.Graph().as_default():
        with v1.variable_scope("bert/embeddings"):
            outputs = _layers.layer_norm(tf.constant(inputs), begin_norm_axis=-1,
                                         begin_params_axis=-1)
        names = sorted(v.op.name for v in v1.global_variables())
        assert names == ["bert/embeddings/LayerNorm/beta", "bert/embeddings/LayerNorm/gamma"]
        assert len(v1.get_collection(v1.GraphKeys.MODEL_VARIABLES)) == 2
        with v1.Session() as session:
            v1.train.Saver().restore(session, prefix)
            result = session.run(outputs)
    mean = inputs.mean(axis=1, keepdims=True)
    variance = inputs.var(axis=1, keepdims=True)
    expected = (inputs - mean) / np.sqrt(variance + 1e-12) * gamma + beta
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_layer_norm_names_bad_arguments(tpu8):
    del tpu8
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="begin_norm_axis"):
            _layers.layer_norm(tf.ones([2, 3]), begin_norm_axis=5)


def test_xavier_initializer_is_glorot_uniform_for_the_same_seed(tpu8):
    del tpu8
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        contrib, glorot, normal = session.run([
            _layers.xavier_initializer(seed=3)([5, 7]),
            tf.compat.v1.glorot_uniform_initializer(seed=3)([5, 7]),
            _layers.xavier_initializer(uniform=False, seed=3)([200, 300])])
    np.testing.assert_array_equal(contrib, glorot)
    assert abs(normal.std() - np.sqrt(1.3 / 250) * 0.8796) < 0.002  # truncated at 2 sd
    with pytest.raises(TypeError, match="dtype must be a floating point type"):
        _layers.xavier_initializer(dtype=tf.int32)


def test_hparams_parse_types_and_json():
    hparams = _hparams.HParams(learning_rate=0.1, layers=[64, 32], name="bert",
                               use_tpu=False, steps=10)
    hparams.parse("learning_rate=2,layers=[8,4,2],use_tpu=true,name=albert")
    assert hparams.values() == {"learning_rate": 2.0, "layers": [8, 4, 2],
                                "name": "albert", "use_tpu": True, "steps": 10}
    assert isinstance(hparams.learning_rate, float)
    with pytest.raises(ValueError, match="unknown hparam 'depth'"):
        hparams.parse("depth=3")
    with pytest.raises(ValueError, match="hparam 'steps' has type int"):
        hparams.set_hparam("steps", 2.5)
    again = _hparams.HParams(learning_rate=0.0, layers=[0], name="", use_tpu=False, steps=0)
    again.parse_json(hparams.to_json())
    assert again.values() == hparams.values()
    hparams.add_hparam("dropout", 0.1)
    assert "dropout" in hparams and hparams.get("missing", 3) == 3


def _contrib_names():
    """``(module, name, rule)`` of every record whose hook reads a contrib name."""
    names = []
    for record in legacy_api.RECORDS:
        for target in record.hook.targets:
            module, _, path = target.partition(":")
            if module == "tpu_compat.contrib":
                submodule_class, name = path.split(".")
                names.append((getattr(contrib_lib, submodule_class).SHORT_NAME, name,
                              record.rule))
    return names


CONTRIB_NAMES = _contrib_names()


@pytest.mark.parametrize("module,name,rule", CONTRIB_NAMES,
                         ids=[rule for _, _, rule in CONTRIB_NAMES])
def test_every_contrib_name_warns_with_its_record(installed, module, name, rule):
    import tensorflow.compat.v1 as tf1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TPUCompatDeprecationWarning)
        value = getattr(getattr(tf1.contrib, module), name)
    assert value is not None
    assert [str(w.message) for w in caught if w.category is TPUCompatDeprecationWarning] == [
        legacy_api.get(rule).warning_message()]
    assert f"tf.contrib.{module}.{name}" in legacy_api.get(rule).api


def test_contrib_covers_its_rule_range():
    assert sorted(rule for _, _, rule in CONTRIB_NAMES) == [
        f"TPC{n:03d}" for n in range(51, 70)] + [
        "TPC160", "TPC161"]  # the TF 1.9-1.13 Keras TPU API (runtime/keras_tpu_model.py)
    # ... and every name a contrib submodule serves has its record's hook.
    served = sorted((cls.SHORT_NAME, name) for cls in contrib_lib._MODULES.values()  # pylint: disable=protected-access
                    for name in contrib_lib.served_names(cls))
    assert served == sorted((module, name) for module, name, _ in CONTRIB_NAMES)


@pytest.mark.parametrize("rule,call", [
    ("TPC040", lambda: lowlevel.replicate(lambda: tf.constant(1.0))),
    ("TPC041", lambda: lowlevel.rewrite(lambda: tf.constant(1.0))),
    ("TPC044", lambda: lowlevel.shard(lambda x: x, [tf.ones([8])], num_shards=8)),
    ("TPC045", lambda: lowlevel.batch_parallel(lambda x: x, [tf.ones([8])], num_shards=8)),
    ("TPC046", lambda: lowlevel.outside_compilation(tf.identity, 1.0)),
    ("TPC047", lambda: lowlevel.core(0)),
    ("TPC048", lambda: lowlevel.bfloat16_scope().__enter__()),
    ("TPC049", lambda: lowlevel.initialize_system()),
    ("TPC050", lambda: lowlevel.shutdown_system()),
    ("TPC043", lambda: lowlevel.CrossShardOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1))),
    ("TPC042", lambda: lowlevel.rewrite(
        lambda: lowlevel.cross_replica_sum(tf.constant(1.0)))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_low_level_call_warns_with_its_record(tpu8, rule, call):
    del tpu8
    with tf.Graph().as_default(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TPUCompatDeprecationWarning)
        call()
    assert legacy_api.get(rule).warning_message() in [
        str(w.message) for w in caught if w.category is TPUCompatDeprecationWarning]
