"""What docs/pods.md says about an emulated pod slice, checked on one.

Run as the chief of a 2-host x 4-core pod (tests/test_pod_docs.py starts the
workers by hand with TF_CONFIG, as docs/pods.md's two-machine recipe does, and
runs this under `tpu-compat run` with TF_CONFIG naming it the chief). Written
as a TF 2.x program of the era (Colab-style resolver bring-up) with a TF 1.15
section; prints `KEY: number` lines, one per documented fact.

usage: pod_docs.py MODEL_DIR
"""
import glob
import json
import os
import sys

import tensorflow as tf

from tpu_compat.pod import session as pod_session

MODEL_DIR = sys.argv[1]
HOSTS, REPLICAS = 2, 8


def report(key, value):
    print(f"{key}: {float(value)}", flush=True)


def task_of(device):
    return int(device.split("/task:")[1].split("/")[0])


resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
v1_strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=10)

pod = pod_session.current_pod()
report("POD_SPAWNED", pod.spawned)  # False: the workers came from TF_CONFIG
report("WORKER_ADDRESSES_FROM_TF_CONFIG",
       list(pod.addresses) == json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"])

# -- counts ----------------------------------------------------------------------
report("NUM_REPLICAS_IN_SYNC", strategy.num_replicas_in_sync)
report("NUM_HOSTS", strategy.extended.num_hosts)
report("NUM_REPLICAS_PER_HOST", strategy.extended.num_replicas_per_host)
report("V1_NUM_HOSTS", v1_strategy.extended.num_hosts)
report("V1_NUM_REPLICAS_PER_HOST", v1_strategy.extended.num_replicas_per_host)
report("REPLICA_TASKS_IN_HOST_ORDER",
       [task_of(d) for d in strategy.extended.worker_devices] == [0] * 4 + [1] * 4)

# -- the resolver ---------------------------------------------------------------------
report("CLUSTER_SPEC_WORKERS", len(resolver.cluster_spec().as_dict()["worker"]))
report("MASTER_IS_WORKER0", resolver.master() == "grpc://" + pod.addresses[0])
report("NUM_ACCELERATORS_PER_HOST", resolver.num_accelerators()["TPU"])
metadata = resolver.get_tpu_system_metadata()
report("METADATA_NUM_HOSTS", metadata.num_hosts)
report("METADATA_CORES_PER_HOST", metadata.num_of_cores_per_host)

# -- TF 1.x sessions: resolver.master() is worker 0's master service --------------
with tf.Graph().as_default():
    product = tf.constant(2.0) * 3.0
    with tf.compat.v1.Session(resolver.master()) as session:
        report("SESSION_RESULT", session.run(product))
        session_devices = [d.name for d in session.list_devices()]
report("SESSION_SEES_HOST1_CORES",
       sum(1 for d in session_devices if "/task:1/device:CPU:" in d))

# A TF 1.x pod program places a host's input ops with the host's job name.
try:
    with tf.device("/job:worker/replica:0/task:1/device:CPU:0"):
        report("DEVICE_SCOPE_HOST1", task_of(tf.constant(1.0).device) == 1)
except ValueError as error:  # reported, so that the other checks still run
    print(f"DEVICE_ERROR {type(error).__name__}: {error}", flush=True)
    report("DEVICE_SCOPE_HOST1", False)

# -- input pipelines: one per host ------------------------------------------------------
contexts = []


def dataset_fn(context):
    contexts.append((context.num_input_pipelines, context.input_pipeline_id,
                     task_of(tf.constant(0).device)))
    batch = context.get_per_replica_batch_size(REPLICAS)
    return tf.data.Dataset.from_tensors(
        tf.cast(context.input_pipeline_id, tf.float32)).repeat().batch(batch)


per_replica = next(iter(strategy.experimental_distribute_datasets_from_function(dataset_fn)))
values = [float(v[0]) for v in strategy.experimental_local_results(per_replica)]
report("DFF_CALLS", len(contexts))
report("DFF_CONTEXTS_OK", sorted(c[:2] for c in contexts) == [(HOSTS, 0), (HOSTS, 1)])
report("DFF_BUILT_ON_OWN_HOST", all(c[1] == c[2] for c in contexts))
report("DFF_REPLICA_READS_OWN_HOST", values == [0.0] * 4 + [1.0] * 4)

del contexts[:]
input_fn_iterator = v1_strategy.make_input_fn_iterator(dataset_fn)
v1_values = [float(v[0]) for v in
             v1_strategy.experimental_local_results(input_fn_iterator.get_next())]
report("INPUT_FN_CALLS", len(contexts))
report("INPUT_FN_CONTEXTS_OK", sorted(c[:2] for c in contexts) == [(HOSTS, 0), (HOSTS, 1)])
report("INPUT_FN_REPLICA_READS_OWN_HOST", v1_values == [0.0] * 4 + [1.0] * 4)

# experimental_distribute_dataset (TF 2) and make_dataset_iterator (TF 1.15):
# a global batch of 8 is split in order, one element per replica, as on one host.
def first_two_batches(distributed_values):
    return [[int(v[0]) for v in strategy.experimental_local_results(distributed_values())]
            for _ in range(2)]


EXPECTED_SPLIT = [list(range(8)), list(range(8, 16))]
v1_iterator = v1_strategy.make_dataset_iterator(tf.data.Dataset.range(16).batch(8))
v1_split = first_two_batches(v1_iterator.get_next)
print(f"MDI_SPLIT {v1_split}", flush=True)
report("MDI_SPLIT_AS_ONE_HOST", v1_split == EXPECTED_SPLIT)
try:
    split = iter(strategy.experimental_distribute_dataset(tf.data.Dataset.range(16).batch(8)))
    report("EDD_SPLIT_AS_ONE_HOST", first_two_batches(lambda: next(split)) == EXPECTED_SPLIT)
except tf.errors.OpError as error:  # reported, so that the other checks still run
    print(f"EDD_ERROR {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
    report("EDD_SPLIT_AS_ONE_HOST", False)

# -- steps_per_run: one traced loop per host call ------------------------------------------
traces = []
with v1_strategy.scope():
    weights = tf.Variable(tf.zeros([4, 2]))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)


def replica_step(inputs):
    traces.append(1)  # Python runs only while tracing
    optimizer.apply_gradients([(tf.ones([4, 2]) * (1.0 + inputs[0, 0]), weights)])
    return inputs[0, 0]


def step_fn(context, inputs):
    context.set_last_step_output(
        "seen", v1_strategy.experimental_run_v2(replica_step, args=(inputs,)),
        reduce_op=tf.distribute.ReduceOp.SUM)
    return tf.no_op()


steps_iterator = v1_strategy.make_dataset_iterator(
    tf.data.Dataset.from_tensors(tf.zeros([1])).repeat().batch(REPLICAS))
traces_per_call = []
for _ in range(2):
    v1_strategy.extended.experimental_run_steps_on_iterator(
        step_fn, steps_iterator, iterations=10, initial_loop_values={"seen": 0.0})
    traces_per_call.append(len(traces))
report("SPR_TRACED_IN_FIRST_CALL", traces_per_call[0] > 0)
report("SPR_SECOND_CALL_RUNS_NO_PYTHON", traces_per_call[1] == traces_per_call[0])
# 20 steps, each the SUM over 8 replicas of a gradient of ones, learning rate 0.5.
report("SPR_WEIGHT", float(v1_strategy.experimental_local_results(weights)[0][0, 0]))

# -- variables identical on every host --------------------------------------------------------
components = [c.numpy() for c in v1_strategy.experimental_local_results(weights)]
report("VAR_COMPONENTS", len(components))
report("VAR_HOSTS", len({task_of(c.device)
                          for c in v1_strategy.experimental_local_results(weights)}))
report("VAR_MAX_DIFF", max(abs(c - components[0]).max() for c in components))

# -- Keras steps_per_execution: one traced multi-step function -----------------------------------
import tf_keras  # noqa: E402  (the tf.keras of tpu-compat run: Keras 2)

keras_traces = []


class Counting(tf_keras.layers.Layer):
    def call(self, x):
        keras_traces.append(1)
        return x


with strategy.scope():
    model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(4,)), Counting()])
    model.compile(tf_keras.optimizers.SGD(0.1), "mse", steps_per_execution=5)
keras_data = tf.data.Dataset.from_tensors(
    (tf.ones([4]), tf.ones([1]))).repeat(160).batch(REPLICAS, drop_remainder=True)
try:
    model.fit(keras_data, epochs=1, verbose=0)
    after_first = len(keras_traces)
    model.fit(keras_data, epochs=1, verbose=0)
    report("KERAS_SECOND_FIT_RUNS_NO_PYTHON", len(keras_traces) == after_first)
    kernels = [k.numpy() for k in strategy.experimental_local_results(model.layers[0].kernel)]
    report("KERAS_KERNEL_MAX_DIFF", max(abs(k - kernels[0]).max() for k in kernels))
except tf.errors.OpError as error:  # reported, so that the other checks still run
    print(f"KERAS_ERROR {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
    report("KERAS_SECOND_FIT_RUNS_NO_PYTHON", False)

# -- reductions: on one device, over gRPC (no collectives) --------------------------------
report("REDUCTION_TO_ONE_DEVICE", isinstance(
    strategy.extended._get_cross_device_ops(tf.constant(1.0)),  # pylint: disable=protected-access
    tf.distribute.ReductionToOneDevice))
report("REDUCE_SUM", strategy.reduce("SUM", strategy.run(
    lambda: tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)),
    axis=None))

# -- fidelity tpu (tpu-compat run's default) checks a pod's replica steps too ----------------------
from tpu_compat.fidelity import compile_checks  # noqa: E402

report("FIDELITY_TPU", compile_checks.enabled())


@tf.function
def string_step():
    return strategy.run(lambda: tf.strings.length(tf.as_string(1.0)))


try:
    string_step()
    report("FIDELITY_CATCHES_ON_POD", False)
except compile_checks.TPUCompilationError:
    report("FIDELITY_CATCHES_ON_POD", True)

# -- checkpoints: written once, restored into every component ---------------------------------
checkpoint = tf.train.Checkpoint(weights=weights)
# The tensors are written by worker 0 (the variables' primary copies live
# there, and after connect_to_cluster(resolver) the save counter too, as on a
# TPU pod); the chief writes the `checkpoint` state file: a path only the
# chief sees does not get the tensors. (The test runs the workers in another
# directory, so a relative path names two places, as on two machines.)
os.makedirs("chief_only", exist_ok=True)
try:
    checkpoint.save(os.path.join("chief_only", "ckpt"))
    # Saved, but the tensors are on worker 0's side, not here.
    report("CKPT_WORKER0_WRITES", not glob.glob(os.path.join("chief_only", "ckpt-*.index")))
except tf.errors.NotFoundError as error:
    # chief_only exists here: the writer that cannot find it is worker 0.
    report("CKPT_WORKER0_WRITES", "chief_only" in str(error))
report("CKPT_CHIEF_WRITES_TENSORS", bool(tf.io.gfile.glob(os.path.join("chief_only", "*", "part-*"))))
path = checkpoint.save(os.path.join(MODEL_DIR, "ckpt"))
report("CKPT_DATA_SHARDS", len([f for f in os.listdir(MODEL_DIR) if ".data-" in f]))
report("CKPT_CHIEF_WRITES_STATE", os.path.exists(os.path.join(MODEL_DIR, "checkpoint")))
saved = components[0].copy()
with v1_strategy.scope():
    weights.assign(tf.zeros([4, 2]))
checkpoint.restore(path)
restored = [c.numpy() for c in v1_strategy.experimental_local_results(weights)]
report("CKPT_INDEX_FILES", len([f for f in os.listdir(MODEL_DIR) if f.endswith(".index")]))
report("CKPT_RESTORED_EVERYWHERE", all((r == saved).all() for r in restored))

# -- summaries: written once, from the host loop ------------------------------------------------
writer = tf.summary.create_file_writer(os.path.join(MODEL_DIR, "summaries"))


@tf.function
def summarized_steps():
    with writer.as_default():
        for step in tf.range(3, dtype=tf.int64):
            # What a TPU program does: reduce on device, write from the host.
            loss = strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None)
            tf.summary.write("loss", loss, step=step)


summarized_steps()
writer.flush()
# The writer lives on worker 0 (the default device after connect_to_cluster),
# whose ops run asynchronously to this process: wait for them before reading
# the file, as a TPU pod program must wait for its host.
from tensorflow.python.eager import context  # noqa: E402
context.async_wait()
events = tf.io.gfile.glob(os.path.join(MODEL_DIR, "summaries", "events.*"))
written = [float(tf.make_ndarray(value.tensor))
           for event_file in events
           for event in tf.compat.v1.train.summary_iterator(event_file)
           for value in event.summary.value if value.tag == "loss"]
report("SUMMARY_EVENT_FILES", len(events))
report("SUMMARY_VALUES", len(written))  # 3 steps, once each
report("SUMMARY_VALUE", written[0] if written else -1)  # 8 replicas' SUM
print("DONE: 1", flush=True)
