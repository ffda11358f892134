"""tf.contrib for TF 1.12-1.14 TPU programs (tpu_compat.contrib), in process."""

import builtins
import importlib
import os
import warnings

import pytest

import tpu_compat
from tpu_compat import TPUCompatDeprecationWarning, legacy_api
import tpu_compat.contrib as contrib_lib
from tpu_compat.contrib import _hparams
from conftest import TF_INSTALLED

if TF_INSTALLED:  # HParams and the rule range are tested without TensorFlow too
    import numpy as np
    import tensorflow as tf
    from tpu_compat.contrib import _layers
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


@pytest.mark.requires_tf
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


@pytest.mark.requires_tf
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


@pytest.mark.requires_tf
def test_anything_else_gets_one_clear_error(installed):
    import tensorflow.compat.v1 as tf1
    with pytest.raises(AttributeError, match=r"tf\.contrib\.learn is not provided"):
        tf1.contrib.learn  # pylint: disable=pointless-statement
    with pytest.raises(ImportError, match=r"tf\.contrib\.learn is not provided"):
        from tensorflow.contrib import learn  # noqa: F401
    with pytest.raises(AttributeError, match=r"tf\.contrib\.slim\.learning is not provided"):
        tf1.contrib.slim.learning  # pylint: disable=pointless-statement
    # slim's model zoo: left out on purpose, and the error says why and where it went.
    with pytest.raises(AttributeError, match=r"tf\.contrib\.slim\.nets is not provided: "
                                             r"slim's model zoo .*pip install tf-slim"):
        tf1.contrib.slim.nets  # pylint: disable=pointless-statement
    with pytest.raises(ImportError, match=r"tf\.contrib\.slim\.nets is not provided: "
                                          r"slim's model zoo .*InceptionV3"):
        from tensorflow.contrib.slim.nets import inception  # noqa: F401
    with pytest.raises(ImportError, match=r"tf\.contrib\.tpu\.AsyncCheckpointSaverHook is not"):
        from tensorflow.contrib.tpu import AsyncCheckpointSaverHook  # noqa: F401
    with pytest.raises(ImportError, match=r"tf\.contrib\.tpu\.python\.tpu\.session_support "
                                          r"is not"):
        import tensorflow.contrib.tpu.python.tpu.session_support  # noqa: F401
    with pytest.raises(ImportError, match=r"tf\.contrib\.tpu\.python\.tpu\.tpu_config\.nope is "):
        from tensorflow.contrib.tpu.python.tpu.tpu_config import nope  # noqa: F401


@pytest.mark.requires_tf
def test_libraries_and_tf2_namespace_are_unaffected(installed):
    assert not hasattr(tf, "contrib")  # libraries tell TF 1 from TF 2 by it
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tensorflow.contrib")  # not in sys.modules
    library_globals = {"__name__": "some_library",
                       "__file__": os.path.join(os.path.dirname(tf.__file__), "x.py")}
    with pytest.raises(ModuleNotFoundError):
        builtins.__import__("tensorflow.contrib", library_globals, None, ("tpu",), 0)


@pytest.mark.requires_tf
def test_uninstall_removes_contrib(tpu8):
    del tpu8
    import tensorflow.compat.v1 as tf1
    tpu_compat.uninstall()
    original_import = builtins.__import__
    with tpu_compat.install():
        assert hasattr(tf1, "contrib")
    assert not hasattr(tf1, "contrib")
    assert builtins.__import__ is original_import


@pytest.mark.requires_tf
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


@pytest.mark.requires_tf
def test_layer_norm_names_bad_arguments(tpu8):
    del tpu8
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="begin_norm_axis"):
            _layers.layer_norm(tf.ones([2, 3]), begin_norm_axis=5)


@pytest.mark.requires_tf
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


@pytest.mark.tf_free
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
    # TF 1.15: a hyperparameter whose value is None is added again with the new value's
    # type (AmoebaNet's _set_or_add_hparam, num_shards=None); one with a value is taken.
    hparams.add_hparam("num_shards", None)
    hparams.add_hparam("num_shards", 8)
    assert hparams.num_shards == 8
    hparams.set_hparam("num_shards", "4")
    assert hparams.num_shards == 4
    with pytest.raises(ValueError, match="hparam name 'dropout' is taken"):
        hparams.add_hparam("dropout", 0.2)
    with pytest.raises(ValueError, match="hparam name 'values' is taken"):
        hparams.add_hparam("values", 1)


def _contrib_names():
    """``(module, name, rule)`` of every record whose hook reads a contrib name."""
    names = []
    for record in legacy_api.RECORDS:
        for target in record.hook.targets:
            module, _, path = target.partition(":")
            if module == "tpu_compat.contrib":
                submodule_class, name = path.split(".")
                # _ContribModule: a name of tf.contrib itself (tf.contrib.keras).
                names.append((getattr(getattr(contrib_lib, submodule_class), "SHORT_NAME", ""),
                              name, record.rule))
    return names


CONTRIB_NAMES = _contrib_names()


@pytest.mark.requires_tf
@pytest.mark.parametrize("module,name,rule", CONTRIB_NAMES,
                         ids=[rule for _, _, rule in CONTRIB_NAMES])
def test_every_contrib_name_warns_with_its_record(installed, module, name, rule):
    import tensorflow.compat.v1 as tf1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TPUCompatDeprecationWarning)
        value = getattr(getattr(tf1.contrib, module) if module else tf1.contrib, name)
    assert value is not None
    assert [str(w.message) for w in caught if w.category is TPUCompatDeprecationWarning] == [
        legacy_api.get(rule).warning_message()]
    assert f"tf.contrib.{module + '.' if module else ''}{name}" in legacy_api.get(rule).api


@pytest.mark.tf_free
def test_contrib_covers_its_rule_range():
    assert sorted(set(rule for _, _, rule in CONTRIB_NAMES)) == [
        f"TPC{n:03d}" for n in [*range(51, 70), *range(101, 130), *range(140, 150),
                                160, 161,  # 160-161: keras/tpu_model.py
                                *range(180, 201)]]  # 180-200: TF-Slim (issue 34)
    # ... and every name a contrib submodule serves has its record's hook.
    classes = list(contrib_lib._MODULES.values()) + list(contrib_lib._DEEP_MODULES.values())  # pylint: disable=protected-access
    served = sorted([(cls.SHORT_NAME, name) for cls in classes
                     for name in contrib_lib.served_names(cls)]
                    + [("", name) for name in contrib_lib.served_names(
                        contrib_lib._ContribModule)])  # pylint: disable=protected-access
    assert served == sorted((module, name) for module, name, _ in CONTRIB_NAMES)


@pytest.mark.requires_tf
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


# --- the names the survey of TPU programs found (docs/contrib_survey.md) -----------------


def test_surveyed_data_rows_are_the_tf_2_21_objects(installed):
    import tensorflow.compat.v1 as tf1
    from tensorflow.python.distribute import one_device_strategy
    from tensorflow.python.ops import summary_ops_v2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        contrib = tf1.contrib
        assert contrib.data.AUTOTUNE == tf.data.AUTOTUNE == -1
        assert contrib.data.make_csv_dataset is tf1.data.experimental.make_csv_dataset
        assert contrib.keras is tf1.keras
        assert contrib.keras.layers.Dense is tf1.keras.layers.Dense
        assert contrib.distribute.OneDeviceStrategy is one_device_strategy.OneDeviceStrategyV1
        assert contrib.distribute.initialize_tpu_system is resolver.initialize_tpu_system
        assert (contrib.cluster_resolver.TFConfigClusterResolver
                is tf.distribute.cluster_resolver.TFConfigClusterResolver)
        assert contrib.tpu.Topology is tf.tpu.experimental.Topology
        assert contrib.training.checkpoints_iterator is tf.train.checkpoints_iterator
        assert contrib.framework.nest is tf.nest
        assert contrib.framework.list_variables is tf.train.list_variables
        assert contrib.framework.load_checkpoint is tf.train.load_checkpoint
        from tf_keras.src.layers.rnn import legacy_cells  # tf1.nn.rnn_cell under Keras 2
        assert contrib.rnn.BasicLSTMCell is legacy_cells.BasicLSTMCell
        assert contrib.rnn.MultiRNNCell is legacy_cells.MultiRNNCell
        assert contrib.rnn.static_rnn is tf1.nn.static_rnn
        # TF 1.15's contrib/summary/summary.py: all_summary_ops was all_v2_summary_ops.
        assert contrib.summary.all_summary_ops is tf1.summary.all_v2_summary_ops
        for name in ("create_file_writer", "scalar", "always_record_summaries", "histogram",
                     "image", "flush", "record_summaries_every_n_global_steps",
                     "never_record_summaries", "should_record_summaries", "initialize"):
            assert getattr(contrib.summary, name) is getattr(summary_ops_v2, name), name


def test_contrib_summary_in_graph_mode_writes_what_all_summary_ops_collects(installed, tmp_path):
    import tensorflow.compat.v1 as tf1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        summary = tf1.contrib.summary
        with tf.Graph().as_default():
            step = tf1.train.get_or_create_global_step()
            writer = summary.create_file_writer(str(tmp_path))
            with writer.as_default(), summary.always_record_summaries():
                summary.scalar("value", tf.constant(2.5), step=step)
                summary.histogram("h", tf.constant([1.0, 2.0]), step=step)
            with writer.as_default(), summary.never_record_summaries():
                summary.scalar("skipped", tf.constant(1.0), step=step)
            ops = summary.all_summary_ops()
            assert len(ops) == 3
            with tf1.Session() as session:
                session.run([tf1.global_variables_initializer(), writer.init()])
                session.run(ops)
                session.run(writer.flush())
    tags = [value.tag for path in tmp_path.glob("events.*")
            for event in tf1.train.summary_iterator(str(path)) for value in event.summary.value]
    assert sorted(tags) == ["h", "value"]


def test_l2_regularizer_is_half_keras_l2_as_in_contrib(installed):
    import tensorflow.compat.v1 as tf1
    weights = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        l2_regularizer = tf1.contrib.layers.l2_regularizer
    expected = 0.01 * (weights ** 2).sum() / 2
    eager = float(l2_regularizer(0.01)(tf.constant(weights)))
    assert eager == pytest.approx(expected, rel=1e-6)
    with tf.Graph().as_default():
        penalty = l2_regularizer(0.01, scope="reg")(tf.constant(weights))
        assert penalty.op.name == "reg"
        with tf1.Session() as session:
            assert session.run(penalty) == pytest.approx(expected, rel=1e-6)
        assert l2_regularizer(0.0)(tf.constant(weights)) is None
    with pytest.raises(ValueError, match="scale cannot be an integer"):
        l2_regularizer(1)
    with pytest.raises(ValueError, match="scale must be >= 0"):
        l2_regularizer(-0.5)


def test_batch_and_drop_remainder_gives_static_full_batches(installed):
    import tensorflow.compat.v1 as tf1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        transform = tf1.contrib.data.batch_and_drop_remainder(4)
    dataset = tf.data.Dataset.range(10).apply(transform)
    assert dataset.element_spec.shape.as_list() == [4]
    assert [batch.tolist() for batch in dataset.as_numpy_iterator()] == [
        [0, 1, 2, 3], [4, 5, 6, 7]]


def test_configure_gcs_checks_its_arguments_and_sends_nothing(installed):
    import tensorflow.compat.v1 as tf1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        cloud = tf1.contrib.cloud
    with tf.Graph().as_default(), tf1.Session() as session:
        with pytest.warns(UserWarning, match="configure_gcs: nothing is sent"):
            assert cloud.configure_gcs(session, credentials={"type": "authorized_user"},
                                       block_cache=cloud.BlockCacheParams(max_bytes=1)) is None
        with pytest.raises(ValueError, match="credentials must be a JSON string or a dict"):
            cloud.configure_gcs(session, credentials=3)
        with pytest.raises(ValueError, match="block_cache must be an instance of"):
            cloud.configure_gcs(session, block_cache={"max_bytes": 1})


def test_deep_tpu_import_paths_are_the_served_names(installed):
    from tensorflow.contrib.tpu.python.tpu import tpu_optimizer, tpu_function
    from tensorflow.contrib.tpu.python.tpu.tpu import initialize_system
    from tensorflow.contrib.tpu.python.ops import tpu_ops
    from tensorflow.contrib.tpu.python.tpu.bfloat16 import bfloat16_scope
    from tensorflow.contrib.training.python.training import evaluation
    import tensorflow.contrib.tpu.python.tpu.tpu_config as tpu_config
    from tensorflow.python.tpu import tpu_function as tf_tpu_function
    assert tpu_optimizer.CrossShardOptimizer is lowlevel.CrossShardOptimizer
    assert tpu_function.get_tpu_context is tf_tpu_function.get_tpu_context
    assert initialize_system is lowlevel.initialize_system
    assert tpu_ops.cross_replica_sum is lowlevel.cross_replica_sum
    assert bfloat16_scope is lowlevel.bfloat16_scope
    assert evaluation.checkpoints_iterator is tf.train.checkpoints_iterator
    assert tpu_config.__name__ == "tensorflow.contrib.tpu.python.tpu.tpu_config"
    estimator_tpu = pytest.importorskip("tpu_compat.estimator.tpu")
    assert tpu_config.RunConfig is estimator_tpu.RunConfig
    from tensorflow.contrib.tpu.python.tpu.tpu_estimator import TPUEstimator
    assert TPUEstimator is estimator_tpu.TPUEstimator


def test_contrib_keras_imports_as_the_programs_keras(installed):
    import tensorflow.compat.v1 as tf1
    from tensorflow.contrib.keras import layers
    from tensorflow.contrib import keras
    assert keras is tf1.keras
    assert layers.Dense is tf1.keras.layers.Dense


def test_every_contrib_import_warns_at_its_line(installed):
    record = legacy_api.get("TPC100")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TPUCompatDeprecationWarning)
        line = __import__("inspect").currentframe().f_lineno + 1
        from tensorflow.contrib import distribute  # noqa: F401
    (warning,) = [w for w in caught if w.category is TPUCompatDeprecationWarning]
    assert str(warning.message) == record.warning_message()
    assert (warning.filename, warning.lineno) == (__file__, line)


def test_contrib_rnn_lstm_matches_numpy(installed):
    """TF 1.15's BasicLSTMCell: i, j, f, o = split(x.h @ kernel + bias), forget bias 1."""
    import tensorflow.compat.v1 as tf1
    rng = np.random.RandomState(2)
    inputs = rng.randn(3, 2, 4).astype(np.float32)  # time, batch, depth
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TPUCompatDeprecationWarning)
        rnn = tf1.contrib.rnn
        with tf.Graph().as_default():
            cell = rnn.MultiRNNCell([rnn.BasicLSTMCell(5)])
            outputs, _ = rnn.static_rnn(cell, list(tf.unstack(tf.constant(inputs))),
                                        dtype=tf.float32)
            (kernel, bias) = cell.weights
            with tf1.Session() as session:
                session.run(tf1.global_variables_initializer())
                result, kernel, bias = session.run([outputs[-1], kernel, bias])
    c = h = np.zeros((2, 5), np.float32)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))
    for x in inputs:
        i, j, f, o = np.split(np.concatenate([x, h], 1).dot(kernel) + bias, 4, axis=1)
        c = c * sigmoid(f + 1.0) + sigmoid(i) * np.tanh(j)
        h = np.tanh(c) * sigmoid(o)
    np.testing.assert_allclose(result, h, rtol=1e-5, atol=1e-6)
