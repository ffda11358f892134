"""mixed_bfloat16 Keras fit on the emulated TPU: TF 2.3's spelling vs tf_keras's modern one.

Two models, identical but for how the bfloat16 policy was set when they were
built, trained by fit() on the same emulated TPU strategy in one process:

  (a) TF 2.1-2.3: tf.keras.mixed_precision.experimental.set_policy(
      Policy('mixed_bfloat16'))  (tpu_compat's keras/era.py)
  (b) modern tf_keras: tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')

A 64-256-256-8 MLP (relu, float32 softmax output), SGD, global batch 256.
Each repeat times one fit of --steps steps per variant (first to last step:
see bench_keras_fit.timed_epoch), the variants interleaved; the median
samples/second and the ratio (a)/(b) are reported (target: at least 0.95).
Not a test: the machine is noisy.

usage: python benchmarks/bench_mixed_precision_fit.py [--replicas 8] [--steps 300] [--repeats 5]
                                                     [--json PATH]
"""
import argparse
import json
import os
import statistics

import _results
from bench_keras_fit import timed_epoch

FEATURES, HIDDEN, CLASSES = 64, 256, 8


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    _results.add_json_argument(parser)
    return parser.parse_args()


def main():
    args = parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # what tpu-compat run chooses
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tpu_compat  # pylint: disable=import-outside-toplevel
    tpu_compat.install(num_replicas=args.replicas)
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    strategy = tf.distribute.experimental.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    global_batch = 32 * args.replicas
    rng = np.random.RandomState(0)
    x = rng.randn(global_batch * 16, FEATURES).astype(np.float32)
    y = rng.randint(0, CLASSES, global_batch * 16).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        global_batch, drop_remainder=True)

    def build(set_policy):
        set_policy()
        with strategy.scope():
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(HIDDEN, activation="relu", input_shape=(FEATURES,)),
                tf.keras.layers.Dense(HIDDEN, activation="relu"),
                tf.keras.layers.Dense(CLASSES),
                tf.keras.layers.Activation("softmax", dtype="float32"),
            ])
            model.compile(tf.keras.optimizers.SGD(0.01), "sparse_categorical_crossentropy")
        assert model.layers[0].compute_dtype == "bfloat16"
        tf.keras.mixed_precision.set_global_policy("float32")
        model.fit(dataset, epochs=1, steps_per_epoch=20, verbose=0)  # warm up
        return model

    experimental = tf.keras.mixed_precision.experimental
    models = {
        "a": build(lambda: experimental.set_policy(experimental.Policy("mixed_bfloat16"))),
        "b": build(lambda: tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")),
    }
    rates = {variant: [] for variant in models}
    for _ in range(args.repeats):
        for variant, model in models.items():
            wall_per_step, _ = timed_epoch(tf, model, dataset, args.steps)
            rates[variant].append(global_batch / wall_per_step)
    median = {variant: statistics.median(values) for variant, values in rates.items()}
    print(f"replicas: {args.replicas}, MLP {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES}, "
          f"mixed_bfloat16, global batch {global_batch}, {args.steps} steps per timed "
          f"fit, {args.repeats} interleaved repeats (median)")
    print(f"(a) experimental.set_policy(Policy('mixed_bfloat16')): {median['a']:.0f} samples/s")
    print(f"(b) set_global_policy('mixed_bfloat16'):               {median['b']:.0f} samples/s")
    print(f"(a)/(b): {median['a'] / median['b']:.3f}   (target >= 0.95)")
    print("RAW " + json.dumps(rates))
    every_run = rates["a"] + rates["b"]
    _results.write(args.json, {
        "a_samples_per_s": median["a"], "b_samples_per_s": median["b"],
        "ratio_a_b": median["a"] / median["b"], "slowest_run_samples_per_s": min(every_run),
        "fastest_run_samples_per_s": max(every_run),
    }, [_results.goal("(a)/(b) samples/s", median["a"] / median["b"], ">=", 0.95)])


if __name__ == "__main__":
    main()
