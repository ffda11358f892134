"""A TF 2.2-era custom training loop on a TPU pod slice (issue 16).

Run unchanged on one host (`tpu-compat run --replicas 8`) and on an emulated
pod (TPU_COMPAT_NUM_HOSTS=2: 2 hosts x 4 cores); tests/test_pod_parity.py
compares the two runs with each other and with the single-device reference
this script also trains. It checks, in the order a pod program meets them:
the layout (replicas, hosts, the resolver's cluster), how
experimental_distribute_dataset splits global batches, how often and where
experimental_distribute_datasets_from_function calls dataset_fn, the
on-device training loop (N steps per host call), that every host holds the
same variables, and a tf.train.Checkpoint written once and restored on every
host.
"""
import os

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

import pod_report

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Where the checkpoint is written.")
flags.DEFINE_integer("steps_per_loop", 4, "Training steps per host call.")
flags.DEFINE_integer("loops", 3, "Host calls of the training loop.")

GLOBAL_BATCH = 32
LEARNING_RATE = 0.1


def make_data(steps):
    rng = np.random.RandomState(16)
    features = rng.randn(GLOBAL_BATCH * steps, 5).astype(np.float32)
    targets = (np.tanh(features.dot(rng.randn(5, 1))) + 0.1 * features[:, :1]).astype(np.float32)
    return features, targets


def build_model(seed):
    init = tf.keras.initializers.RandomNormal(stddev=0.5, seed=seed)
    return tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="tanh", input_shape=(5,), kernel_initializer=init),
        tf.keras.layers.Dense(1, kernel_initializer=init)])


def make_step(model, optimizer, training_loss):
    def step_fn(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum(tf.square(model(x, training=True) - y), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        training_loss.update_state(loss)
    return step_fn


def report_split(strategy):
    """Which example ids each replica gets from experimental_distribute_dataset."""
    ids = tf.data.Dataset.range(2 * GLOBAL_BATCH).batch(GLOBAL_BATCH)
    split = []
    for batch in strategy.experimental_distribute_dataset(ids):
        per_replica = strategy.experimental_local_results(batch)
        split.append([[int(i) for i in value.numpy()] for value in per_replica])
        pod_report.emit("SPLIT_HOSTS", [pod_report.task_of(value.device) for value in per_replica])
    pod_report.emit("SPLIT", split)


def pinned_dataset_refused(strategy):
    """A single-host habit: dataset_fn pins its dataset to host 0's CPU.

    Fine on one host; on a pod every host would read host 0's dataset, which
    cannot be sent between hosts, so the emulated pod says so at once.
    """
    def pinned(ctx):
        with tf.device("/job:worker/replica:0/task:0/device:CPU:0"):
            return tf.data.Dataset.range(64).batch(ctx.get_per_replica_batch_size(GLOBAL_BATCH))
    try:
        strategy.experimental_distribute_datasets_from_function(pinned)
    except ValueError as error:
        return "remove the tf.device" in str(error)
    return False


def distributed_training(strategy, features, targets):
    input_fn_calls = []

    def dataset_fn(ctx):
        # The pod idiom: each host reads its shard of the examples and batches
        # them per replica; its replicas take consecutive per-replica batches.
        # Host h's shard is examples h, h+H, ...; its R replicas consume R*b
        # of them per step, so step s takes, over all H hosts, exactly the
        # examples s*G .. s*G+G-1 (H*R*b = G): every global batch holds the
        # same examples on 1 and on 2 hosts, which is what the single-device
        # reference (batch(G) in order) trains on. Only which replica holds
        # which example differs, and the loss sums over the global batch.
        per_replica = ctx.get_per_replica_batch_size(GLOBAL_BATCH)
        dataset = tf.data.Dataset.from_tensor_slices((features, targets)).shard(
            ctx.num_input_pipelines, ctx.input_pipeline_id).batch(per_replica, drop_remainder=True)
        input_fn_calls.append([ctx.num_input_pipelines, ctx.input_pipeline_id, per_replica,
                               pod_report.dataset_host(dataset)])
        return dataset.repeat()

    with strategy.scope():
        model = build_model(seed=1)
        optimizer = tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        training_loss = tf.keras.metrics.Sum()
    step_fn = make_step(model, optimizer, training_loss)
    traces = []

    def traced_step(inputs):
        traces.append(1)  # Python runs once per replica per trace, not per step
        step_fn(inputs)

    iterator = iter(strategy.experimental_distribute_datasets_from_function(dataset_fn))
    pod_report.emit("INPUT_FN_CALLS", input_fn_calls)

    @tf.function
    def train_loop(iterator, steps):
        for _ in tf.range(steps):
            strategy.experimental_run_v2(traced_step, args=(next(iterator),))

    losses = []
    for loop in range(FLAGS.loops):
        train_loop(iterator, tf.constant(FLAGS.steps_per_loop))
        if loop == 0:
            pod_report.emit("STEPS_AFTER_FIRST_HOST_CALL", int(optimizer.iterations.numpy()))
        losses.append(float(training_loss.result()))
    pod_report.emit("STEPS", int(optimizer.iterations.numpy()))
    pod_report.emit("HOST_CALLS", FLAGS.loops)
    pod_report.emit("STEP_TRACES", len(traces))
    return model, optimizer, losses


def reference_training(features, targets):
    model = build_model(seed=1)
    initial = model.get_weights()
    optimizer = tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE)
    training_loss = tf.keras.metrics.Sum()
    step = tf.function(make_step(model, optimizer, training_loss))
    batches = iter(tf.data.Dataset.from_tensor_slices((features, targets)).batch(GLOBAL_BATCH))
    losses = []
    for _ in range(FLAGS.loops):
        for _ in range(FLAGS.steps_per_loop):
            step(next(batches))
        losses.append(float(training_loss.result()))
    return model, losses, initial


def components(strategy, variables):
    return {v.name: [(c.device, c.numpy()) for c in strategy.experimental_local_results(v)]
            for v in variables}


def checkpoint_round_trip(strategy, model, optimizer, trained):
    """Saved once, restored into a fresh model on every host."""
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    path = checkpoint.save(os.path.join(FLAGS.model_dir, "ckpt"))
    written = []
    for root, _, files in os.walk(FLAGS.model_dir):
        written += [os.path.relpath(os.path.join(root, name), FLAGS.model_dir) for name in files]
    pod_report.emit("CHECKPOINT_FILES", sorted(written))
    # One data shard per process holding saved tensors: on a pod, host 0
    # holds them all (the variables' primary copies, and the save counter:
    # connect_to_cluster(resolver) made host 0 the default device, as on a
    # TPU pod), so one host writes the checkpoint.
    pod_report.emit("CHECKPOINT_DATA_SHARDS", sum(".data-" in name for name in written))
    pod_report.emit("SAVE_COUNTER_ON_CHIEF", int("/job:chief/" in checkpoint.save_counter.device))
    with strategy.scope():
        fresh = build_model(seed=99)  # other initial values: the restore must overwrite them
        fresh_optimizer = tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        fresh_optimizer.build(fresh.trainable_variables)  # the same variables as the saved one
    tf.train.Checkpoint(model=fresh, optimizer=fresh_optimizer).restore(
        path).assert_existing_objects_matched()
    variables = fresh.weights + [fresh_optimizer.iterations]
    restored = pod_report.components_report("RESTORED", components(strategy, variables))
    pod_report.emit("RESTORED_STEPS", int(fresh_optimizer.iterations.numpy()))
    absolute, _ = pod_report.max_differences(list(restored.values())[:len(trained)], trained)
    pod_report.emit("RESTORE_MAX_ABS_DIFF", absolute)


def main(_):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    pod_report.worker_pids()
    pod_report.pod_semantics(strategy, resolver)
    report_split(strategy)
    pod_report.emit("PINNED_DATASET_REFUSED", int(pinned_dataset_refused(strategy)))

    features, targets = make_data(FLAGS.loops * FLAGS.steps_per_loop)
    model, optimizer, losses = distributed_training(strategy, features, targets)
    trained = list(pod_report.components_report(
        "TRAINED", components(strategy, model.weights)).values())
    reference, reference_losses, initial = reference_training(features, targets)

    absolute, relative = pod_report.max_differences(trained, reference.get_weights())
    pod_report.emit("REFERENCE_MAX_ABS_DIFF", absolute)
    pod_report.emit("REFERENCE_MAX_REL_DIFF", relative)
    pod_report.emit("RESULT", {
        "losses": losses, "reference_losses": reference_losses,
        "weights": [w.tolist() for w in trained],
        "reference": [w.tolist() for w in reference.get_weights()],
        "initial": [w.tolist() for w in initial]})
    checkpoint_round_trip(strategy, model, optimizer, trained)


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
