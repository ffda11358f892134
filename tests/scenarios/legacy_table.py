"""One snippet per use of each legacy API in the table, and the warnings it gave.

usage: tpu-compat run --replicas 2 legacy_table.py

Each snippet is a small piece of a legacy program: TF 2.0-2.3 code eagerly,
TF 1.15 code in a graph (``with tf.Graph().as_default()``: graph mode without
poisoning the process). A line that uses a legacy API ends with a comment
naming the rule(s) it must warn with, e.g. ``# TPC005 TPC007``; a line without
one must not warn (TensorFlow or tpu_compat using the API internally). Prints
one ``SNIPPET {json}`` line per snippet: the expected ``(rule, line)`` pairs and
every TPUCompatDeprecationWarning caught, with its file and line.
"""
import inspect
import json
import os
import re
import tempfile
import warnings

import numpy as np
import tensorflow as tf

from tpu_compat import TPUCompatDeprecationWarning

RESOLVER = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
TOPOLOGY = tf.tpu.experimental.initialize_tpu_system(RESOLVER)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    STRATEGY = tf.distribute.TPUStrategy(RESOLVER)
    V1_STRATEGY = tf.compat.v1.distribute.experimental.TPUStrategy(RESOLVER, steps_per_run=2)
SNIPPETS = []


def dataset(*unused_input_context):
    return tf.data.Dataset.range(8).map(lambda x: tf.cast(x, tf.float32)).batch(2)


def snippet(function):
    SNIPPETS.append(function)
    return function


def assignment():
    return tf.tpu.experimental.DeviceAssignment.build(TOPOLOGY, num_replicas=2)


# -- TF 2.0-2.3 programs, eagerly ----------------------------------------------

@snippet
def run_v2_on_the_adapter_and_a_native_fallback():
    STRATEGY.experimental_run_v2(lambda: tf.constant(1.0))  # TPC001
    tf.distribute.MirroredStrategy().experimental_run_v2(lambda: tf.constant(1.0))  # TPC001
    STRATEGY.run(lambda: tf.constant(1.0))


@snippet
def reduce_without_axis_eagerly_and_traced():
    values = STRATEGY.run(tf.function(lambda: tf.constant(1.0)))
    STRATEGY.reduce("SUM", values)  # TPC002
    STRATEGY.reduce("SUM", values, axis=None)
    STRATEGY.reduce("SUM", values, None)

    @tf.function
    def traced():
        per_replica = STRATEGY.run(lambda: tf.constant(2.0))
        return STRATEGY.reduce(tf.distribute.ReduceOp.SUM, per_replica)  # TPC002

    traced()


@snippet
def datasets_from_function_and_numpy_dataset():
    STRATEGY.experimental_distribute_datasets_from_function(dataset)  # TPC003
    STRATEGY.experimental_make_numpy_dataset(np.ones([4, 2], np.float32))  # TPC004
    STRATEGY.experimental_local_results(STRATEGY.unwrap(tf.constant(1.0)))  # TPC015


@snippet
def experimental_tpu_strategy_eagerly():
    tf.distribute.experimental.TPUStrategy(RESOLVER)  # TPC005
    tf.compat.v2.distribute.experimental.TPUStrategy(RESOLVER)  # TPC005
    tf.distribute.experimental.TPUStrategy(RESOLVER, device_assignment=assignment())  # TPC005 TPC006
    tf.distribute.experimental.TPUStrategy(RESOLVER, assignment())  # TPC005 TPC006
    tf.compat.v2.distribute.experimental.TPUStrategy(  # TPC005 TPC006
        RESOLVER, device_assignment=assignment())
    tf.distribute.TPUStrategy(RESOLVER, experimental_device_assignment=assignment())


@snippet
def steps_per_run_through_every_constructor():
    tf.distribute.experimental.TPUStrategy(RESOLVER, steps_per_run=2)  # TPC005 TPC007
    tf.distribute.experimental.TPUStrategy(RESOLVER, 2)  # TPC005 TPC007
    tf.compat.v1.distribute.experimental.TPUStrategy(RESOLVER, steps_per_run=2)  # TPC007 TPC017
    tf.compat.v1.distribute.experimental.TPUStrategy(RESOLVER, 2)  # TPC007 TPC017
    tf.compat.v1.distribute.experimental.TPUStrategy(RESOLVER)  # TPC017
    tf.compat.v1.distribute.experimental.TPUStrategy(  # TPC017
        RESOLVER, device_assignment=assignment())


@snippet
def steps_per_run_attribute():
    assert V1_STRATEGY.steps_per_run == 2  # TPC008
    assert V1_STRATEGY.extended.steps_per_run == 2  # TPC008


@snippet
def keras_compile_with_the_tf_2_2_argument():
    with STRATEGY.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
        model.compile("sgd", "mse", experimental_steps_per_execution=2)  # TPC016
        model.compile("sgd", "mse", steps_per_execution=2)


@snippet
def call_for_each_replica_eagerly():
    STRATEGY.extended.call_for_each_replica(lambda: tf.constant(1.0))  # TPC019


# -- TF 1.15 programs, in a graph --------------------------------------------------

@snippet
def tf115_graph_program():
    with tf.Graph().as_default():
        strategy = tf.distribute.experimental.TPUStrategy(RESOLVER, steps_per_run=2)  # TPC005 TPC007
        with strategy.scope():
            iterator = strategy.make_dataset_iterator(dataset())  # TPC009
            iterator.initialize()  # TPC018
            assert iterator.initializer is not None
            fn_iterator = strategy.make_input_fn_iterator(dataset)  # TPC010
            strategy.experimental_run(tf.reduce_sum, fn_iterator)  # TPC011

            def step_fn(ctx, inputs):
                ctx.set_last_step_output("sum", strategy.run(tf.reduce_sum, args=(inputs,)),
                                         reduce_op=tf.distribute.ReduceOp.SUM)
                return tf.no_op()

            strategy.extended.experimental_run_steps_on_iterator(  # TPC012
                step_fn, iterator, iterations=2, initial_loop_values={"sum": 0.0})
            strategy.extended.call_for_each_replica(lambda: tf.constant(1.0))  # TPC019
            strategy.run(lambda: tf.constant(1.0))
            strategy.experimental_initialize()  # TPC013
            strategy.experimental_finalize()  # TPC014
            strategy.experimental_make_numpy_dataset(  # TPC004
                np.ones([4, 2], np.float32), session=tf.compat.v1.Session())
        tf.distribute.experimental.TPUStrategy(RESOLVER, assignment())  # TPC005 TPC006


@snippet
def tf115_graph_native_fallback():
    with tf.Graph().as_default():
        strategy = tf.compat.v1.distribute.MirroredStrategy()
        with strategy.scope():
            iterator = strategy.make_dataset_iterator(dataset())  # TPC009
            iterator.initialize()  # TPC018
            strategy.experimental_run(tf.reduce_sum, iterator)  # TPC011
            strategy.extended.call_for_each_replica(lambda: tf.constant(1.0))  # TPC019


@snippet
def tf23_keras_surface():
    from tensorflow.python.keras import layers  # TPC020
    from tensorflow.python import keras  # TPC020
    assert keras.layers.Dense is layers.Dense
    policy = tf.keras.mixed_precision.experimental.Policy("mixed_bfloat16")  # TPC021
    tf.keras.mixed_precision.experimental.set_policy(policy)  # TPC022
    assert tf.keras.mixed_precision.experimental.global_policy() is policy  # TPC023
    layer = layers.Dense(1)
    assert tf.keras.mixed_precision.experimental.get_layer_policy(layer).name == (  # TPC025
        "mixed_bfloat16")
    tf.keras.mixed_precision.experimental.set_policy("float32")  # TPC022
    tf.keras.mixed_precision.experimental.LossScaleOptimizer(  # TPC024
        tf.keras.optimizers.SGD(0.1), "dynamic")
    tf.keras.experimental.CosineDecay(0.1, 100)  # TPC028
    tf.keras.experimental.CosineDecayRestarts(0.1, 100)  # TPC029
    tf.keras.experimental.LinearCosineDecay(0.1, 100)  # TPC030
    tf.keras.experimental.NoisyLinearCosineDecay(0.1, 100)  # TPC031
    try:
        tf.keras.experimental.PeepholeLSTMCell(4)  # TPC032
    except AttributeError:
        pass
    try:
        tf.keras.experimental.terminate_keras_multiprocessing_pools()  # TPC033
    except AttributeError:
        pass
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    path = os.path.join(tempfile.mkdtemp(), "saved_model")
    tf.keras.experimental.export_saved_model(model, path)  # TPC026
    tf.keras.experimental.load_from_saved_model(path)  # TPC027


@snippet
def tpu_host_connection():
    tf.config.experimental_connect_to_host(RESOLVER.master())  # TPC034
    tf.config.experimental_connect_to_cluster(RESOLVER)


@snippet
def tf114_contrib_names():
    from tensorflow.contrib.tpu import CrossShardOptimizer  # TPC054 TPC100
    from tensorflow.contrib import tpu as contrib_tpu  # TPC100
    import tensorflow.contrib.data as contrib_data  # TPC100
    contrib = tf.compat.v1.contrib
    assert CrossShardOptimizer is tf.compat.v1.tpu.CrossShardOptimizer
    served = [
        contrib_tpu.replicate,  # TPC051
        contrib_tpu.rewrite,  # TPC052
        contrib_tpu.cross_replica_sum,  # TPC053
        contrib_tpu.shard,  # TPC055
        contrib_tpu.batch_parallel,  # TPC056
        contrib_tpu.outside_compilation,  # TPC057
        contrib.tpu.core,  # TPC058
        contrib.tpu.bfloat16_scope,  # TPC059
        contrib.tpu.initialize_system,  # TPC060
        contrib.tpu.shutdown_system,  # TPC061
        contrib_data.parallel_interleave,  # TPC065
        contrib_data.shuffle_and_repeat,  # TPC066
        contrib.layers.layer_norm,  # TPC067
    ]
    assert all(served)
    contrib.distribute.TPUStrategy(RESOLVER, steps_per_run=2)  # TPC062 TPC007 TPC017
    contrib.cluster_resolver.TPUClusterResolver(tpu="")  # TPC063
    dataset().unbatch().apply(contrib_data.map_and_batch(lambda x: x * 2.0, 2))  # TPC064
    contrib.training.HParams(learning_rate=0.1, use_tpu=True)  # TPC068
    contrib.layers.xavier_initializer(seed=1)  # TPC069


@snippet
def tf114_contrib_surveyed_names():
    from tensorflow.contrib.tpu.python.tpu import tpu_config  # TPC100
    contrib = tf.compat.v1.contrib
    assert tpu_config.__name__.endswith("tpu_config")
    assert contrib.data.AUTOTUNE == -1  # TPC101
    dataset().apply(contrib.data.batch_and_drop_remainder(2))  # TPC102
    served = [
        contrib.data.make_csv_dataset,  # TPC103
        contrib.keras.layers.Dense,  # TPC104
        contrib.distribute.OneDeviceStrategy,  # TPC106
        contrib.cluster_resolver.TFConfigClusterResolver,  # TPC107
        contrib.tpu.Topology,  # TPC108
        contrib.training.checkpoints_iterator,  # TPC111
        contrib.framework.nest,  # TPC112
        contrib.framework.list_variables,  # TPC113
        contrib.framework.load_checkpoint,  # TPC114
        contrib.rnn.BasicLSTMCell,  # TPC115
        contrib.rnn.MultiRNNCell,  # TPC116
        contrib.rnn.static_rnn,  # TPC117
        contrib.summary.create_file_writer,  # TPC118
        contrib.summary.scalar,  # TPC119
        contrib.summary.always_record_summaries,  # TPC120
        contrib.summary.all_summary_ops,  # TPC121
        contrib.summary.record_summaries_every_n_global_steps,  # TPC122
        contrib.summary.never_record_summaries,  # TPC123
        contrib.summary.should_record_summaries,  # TPC124
        contrib.summary.histogram,  # TPC125
        contrib.summary.image,  # TPC126
        contrib.summary.flush,  # TPC127
        contrib.summary.initialize,  # TPC128
    ]
    assert all(served)
    contrib.distribute.initialize_tpu_system(RESOLVER)  # TPC105
    contrib.cloud.configure_gcs(None, block_cache=None)  # TPC109
    contrib.cloud.BlockCacheParams(max_bytes=1)  # TPC129
    contrib.layers.l2_regularizer(0.1)(tf.ones([2]))  # TPC110


@snippet
def tf115_slim_model():
    # A slim-style network (issue 34): each TF-Slim name read warns at its line.
    with tf.Graph().as_default():
        contrib = tf.compat.v1.contrib
        slim = contrib.slim
        framework = contrib.framework
        layers = contrib.layers
        images = tf.ones([2, 8, 8, 3])
        conv2d = layers.conv2d  # TPC187
        with framework.arg_scope([conv2d], padding="SAME"):  # TPC180
            net = conv2d(images, 4, 3)
        convolution2d = slim.convolution2d  # TPC188
        batch_norm = slim.batch_norm  # TPC186
        with slim.arg_scope([convolution2d], normalizer_fn=batch_norm):  # TPC180
            net = convolution2d(net, 4, 1, scope="c2")
        assert framework.has_arg_scope(conv2d)  # TPC182
        assert "padding" in slim.arg_scoped_arguments(conv2d)  # TPC183
        assert framework.current_arg_scope() == {}  # TPC184
        decorated = slim.add_arg_scope(lambda x, y=1: x + y)  # TPC181
        assert decorated(1) == 2
        net = slim.separable_conv2d(net, 4, 3)  # TPC194
        net = layers.separable_convolution2d(net, None, 3, scope="dw")  # TPC195
        net = slim.max_pool2d(net, 2)  # TPC192
        net = layers.avg_pool2d(net, 2, padding="SAME")  # TPC185
        net = slim.dropout(net, 0.5)  # TPC189
        net = slim.flatten(net)  # TPC190
        initializer = layers.variance_scaling_initializer()  # TPC198
        regularizer = slim.l2_regularizer(1e-4)  # TPC110
        fully_connected = slim.fully_connected  # TPC191
        net = fully_connected(net, 3, weights_initializer=initializer,
                              weights_regularizer=regularizer)
        batch_norm(net, updates_collections=None, scope="bn")
        slim.softmax(net)  # TPC196
        slim.repeat(net, 2, fully_connected, 3, scope="r")  # TPC193
        layers.stack(net, fully_connected, [3, 3], scope="s")  # TPC197
        slim.xavier_initializer()  # TPC069
        framework.variable("v", shape=[1])  # TPC199
        slim.model_variable("m", shape=[1])  # TPC200


@snippet
def tf113_keras_tpu_model():
    contrib = tf.compat.v1.contrib
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    strategy = contrib.tpu.TPUDistributionStrategy(RESOLVER)  # TPC161
    tpu_model = contrib.tpu.keras_to_tpu_model(model, strategy=strategy)  # TPC160
    tpu_model.sync_to_cpu()  # TPC162


@snippet
def tf115_low_level_tpu_graph():
    tpu = tf.compat.v1.tpu
    with tf.Graph().as_default():
        tpu.initialize_system()  # TPC049
        tpu.replicate(lambda x: x + 1.0, [[tf.constant(1.0)], [tf.constant(2.0)]])  # TPC040
        tpu.rewrite(lambda: tpu.cross_replica_sum(tf.constant(1.0)))  # TPC041 TPC042
        tpu.rewrite(lambda: tpu.outside_compilation(tf.identity, 1.0))  # TPC041 TPC046
        tpu.shard(lambda x: x * 2.0, [tf.ones([8])], num_shards=2)  # TPC044
        tpu.batch_parallel(lambda x: x * 2.0, [tf.ones([8])], num_shards=2)  # TPC045
        tpu.CrossShardOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))  # TPC043
        with tf.device(tpu.core(0)):  # TPC047
            tf.constant(1.0)
        with tpu.bfloat16_scope():  # TPC048
            tf.constant(1.0)
        tpu.shutdown_system()  # TPC050


@snippet
def tf1_infeed_outfeed_pattern():
    from tensorflow.contrib.tpu.ops.gen_tpu_ops import outfeed_dequeue_tuple  # TPC100 TPC146
    contrib = tf.compat.v1.contrib
    with tf.Graph().as_default():
        contrib.tpu.infeed_enqueue_tuple([tf.ones([2])], [(2,)], device_ordinal=0)  # TPC140
        contrib.tpu.infeed_enqueue(tf.ones([2]), device_ordinal=1)  # TPC141
        outfeed_dequeue_tuple([tf.float32], [(2,)], device_ordinal=0)
        contrib.tpu.outfeed_dequeue(tf.float32, (2,), device_ordinal=1)  # TPC147
        dequeue_tuple = contrib.tpu.infeed_dequeue_tuple  # TPC142
        dequeue = contrib.tpu.infeed_dequeue  # TPC143
        send_tuple = contrib.tpu.outfeed_enqueue_tuple  # TPC144
        send = contrib.tpu.outfeed_enqueue  # TPC145
        repeat = contrib.tpu.repeat  # TPC148
        while_loop = contrib.tpu.while_loop  # TPC149
        batch_parallel = tf.compat.v1.tpu.batch_parallel

        def step():
            x = dequeue_tuple([tf.float32], [(2,)])[0] + dequeue(tf.float32, (2,))
            return send_tuple([x]), send(x)

        batch_parallel(lambda: repeat(2, step), num_shards=2)  # TPC045
        batch_parallel(lambda: while_loop(lambda i: i < 2, lambda i: i + 1, [0]),  # TPC045
                       num_shards=2)


# -- tf.estimator and TPUEstimator programs (TPC070-TPC087) -----------------------
# tpu-compat run routes tf.estimator / tf.compat.v1.estimator (TF 2.16 removed
# them); the Estimator builds its own graphs in this eager process, and the
# TPUEstimatorSpec/ServingInputReceiver/PredictOutput snippets build theirs.

def _estimator_input_fn(params=None):
    del params
    features = {"x": np.arange(8, dtype=np.float32).reshape(8, 1)}
    labels = np.ones([8, 1], np.float32)
    return tf.compat.v1.data.Dataset.from_tensor_slices((features, labels)).batch(4)


@snippet
def estimator_train_and_evaluate_then_export():
    tf1 = tf.compat.v1
    modes = tf1.estimator.ModeKeys  # TPC078
    stop_hook = tf1.estimator.StopAtStepHook(last_step=1)  # TPC086

    def model_fn(features, labels, mode):
        weight = tf1.get_variable("w", [1, 1], initializer=tf1.zeros_initializer())
        prediction = tf1.matmul(features["x"], weight)
        loss = tf1.losses.mean_squared_error(labels, prediction)
        train_op = tf1.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=tf1.train.get_global_step()) if mode == modes.TRAIN else None
        # model_fn runs twice (train, then evaluate): one warning per run.
        return tf1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)  # TPC076 TPC076

    config = tf1.estimator.RunConfig(model_dir=tempfile.mkdtemp())  # TPC077
    estimator = tf1.estimator.Estimator(model_fn, config=config)  # TPC075
    tf1.estimator.train_and_evaluate(  # TPC085
        estimator, tf1.estimator.TrainSpec(_estimator_input_fn, max_steps=1, hooks=[stop_hook]),
        tf1.estimator.EvalSpec(_estimator_input_fn, steps=1))
    tf1.estimator.WarmStartSettings(ckpt_to_initialize_from=config.model_dir)  # TPC087
    try:
        tf1.estimator.DNNClassifier(hidden_units=[4])  # TPC084
    except tf1.estimator.UnsupportedEstimatorAPIError:
        pass  # tpu_compat has no canned estimators: the call raises after warning
    untrained = tf1.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp())  # TPC075
    receiver_fn = tf1.estimator.export.build_raw_serving_input_receiver_fn(  # TPC080
        {"x": tf.zeros([1, 1])})
    try:
        untrained.export_savedmodel(tempfile.mkdtemp(), receiver_fn)  # TPC083
    except ValueError:
        pass  # nothing trained to export, as in TF 1.15: the warning comes first
    tf1.estimator.export.build_parsing_serving_input_receiver_fn(  # TPC081
        {"x": tf.io.FixedLenFeature([1], tf.float32)})


@snippet
def tpu_estimator_tf115_program():
    tf1 = tf.compat.v1
    per_host = tf1.estimator.tpu.InputPipelineConfig.PER_HOST_V2  # TPC074
    tpu_config = tf1.estimator.tpu.TPUConfig(  # TPC073
        iterations_per_loop=2, per_host_input_for_training=per_host)
    config = tf1.estimator.tpu.RunConfig(model_dir=tempfile.mkdtemp(), tpu_config=tpu_config)  # TPC072

    def model_fn(features, labels, mode, params):
        del labels, params
        return tf1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"y": features["x"]})

    tf1.estimator.tpu.TPUEstimator(  # TPC070
        model_fn=model_fn, config=config, train_batch_size=8, predict_batch_size=8)
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, [None, 1])
        tf1.estimator.tpu.TPUEstimatorSpec("infer", predictions={"y": x})  # TPC071
        tf1.estimator.export.ServingInputReceiver({"x": x}, {"x": x})  # TPC079
        tf1.estimator.export.PredictOutput({"y": x})  # TPC082


# -- running them ----------------------------------------------------------------

_MARK = re.compile(r"#\s*((?:TPC\d{3}\s*)+)$")


def expected_uses(function):
    lines, first = inspect.getsourcelines(function)
    uses = []
    for offset, line in enumerate(lines):
        match = _MARK.search(line.rstrip())
        if match:
            uses += [[rule, first + offset] for rule in match.group(1).split()]
    return sorted(uses)


def main():
    for function in SNIPPETS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("ignore")
            warnings.simplefilter("always", TPUCompatDeprecationWarning)
            function()
        got = [{"rule": re.search(r"\[(TPC\d{3})\]", str(w.message)).group(1),
                "file": w.filename, "line": w.lineno}
               for w in caught if issubclass(w.category, TPUCompatDeprecationWarning)]
        print("SNIPPET " + json.dumps({
            "name": function.__name__, "file": __file__,
            "expected": expected_uses(function), "warnings": got}), flush=True)


main()
