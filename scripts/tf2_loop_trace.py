"""Tracing time of a SimCLR-shaped TF 2 custom loop: emulated TPUStrategy vs native MirroredStrategy.

Issue #34 item 3: simclr-tf2 (google-research/simclr tf2/run.py) was killed while
tracing its 8-replica step. This is a smaller program of the same shape: a
TF 2 custom loop, ``strategy.run`` inside a ``tf.function`` over
``for _ in tf.range(2)`` whose body defines ``images, labels`` (so autograph
stages the body twice: once in a temporary graph to learn the undefined loop
variables, once in the loop), a residual conv net with batch norm, and a
LARS-like optimizer subclassing ``tf.keras.optimizers.Optimizer``
(``_set_hyper``, ``_create_slots``, ``_resource_apply_dense``).

  tpu     tpu_compat.install(); TPUClusterResolver + initialize_tpu_system +
          tf.distribute.TPUStrategy on the emulated TPU (the era's bring-up)
  native  no tpu_compat: MirroredStrategy over the same logical CPUs and
          tf_keras's legacy OptimizerV2 as the base class

usage: python scripts/tf2_loop_trace.py {tpu,native} REPLICAS BLOCKS
Prints one JSON line: setup, trace (get_concrete_function) and first_call seconds.
Each variant in its own process; not a test (the machine is noisy).
"""
import os, sys, time, json
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TPU_COMPAT_WARNINGS", "ignore")
if len(sys.argv) != 4 or sys.argv[1] not in ("tpu", "native"):
    sys.exit(__doc__)
variant, replicas, blocks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if variant == "tpu":
    import tpu_compat
    tpu_compat.install(num_replicas=replicas)
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
    Base = tf.keras.optimizers.Optimizer
else:
    from tpu_compat.runtime import backend
    devices = list(backend.get_backend(num_replicas=replicas).devices)
    import tensorflow as tf
    import tf_keras
    strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
    Base = tf_keras.optimizers.legacy.Optimizer
keras = tf.keras

class LARS(Base):
    def __init__(self, learning_rate, momentum=0.9, eeta=0.001, name="LARSOptimizer"):
        super().__init__(name)
        self._set_hyper("learning_rate", learning_rate)
        self.momentum, self.eeta = momentum, eeta
    def _create_slots(self, var_list):
        for v in var_list:
            self.add_slot(v, "Momentum")
    def _resource_apply_dense(self, grad, param, apply_state=None):
        var_device, var_dtype = param.device, param.dtype.base_dtype
        coefficients = ((apply_state or {}).get((var_device, var_dtype))
                        or self._fallback_apply_state(var_device, var_dtype))
        lr = coefficients["lr_t"]
        v = self.get_slot(param, "Momentum")
        w_norm, g_norm = tf.norm(param, ord=2), tf.norm(grad, ord=2)
        trust = tf.where(tf.greater(w_norm, 0), tf.where(tf.greater(g_norm, 0), self.eeta * w_norm / g_norm, 1.0), 1.0)
        next_v = self.momentum * v + lr * trust * grad
        return tf.group(param.assign(param - next_v), v.assign(next_v))
    def get_config(self):
        return {}

def make_model():
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    for _ in range(blocks):
        y = keras.layers.BatchNormalization()(x)
        y = keras.layers.ReLU()(y)
        y = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(y)
        y = keras.layers.BatchNormalization()(y)
        y = keras.layers.ReLU()(y)
        y = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(y)
        x = keras.layers.Add()([x, y])
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))

start = time.perf_counter()
with strategy.scope():
    model = make_model()
    optimizer = LARS(0.1)
n = 2 * replicas
images = tf.random.stateless_uniform([64, 32, 32, 3], [1, 2])
labels = tf.random.stateless_uniform([64], [3, 4], maxval=10, dtype=tf.int32)
ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(n, drop_remainder=True)
ds = strategy.experimental_distribute_dataset(ds)

def single_step(features, labels):
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
        loss = loss / strategy.num_replicas_in_sync
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

with strategy.scope():
    @tf.function
    def train_multiple_steps(iterator):
        for _ in tf.range(2):
            with tf.name_scope(""):
                images, labels = next(iterator)
                strategy.run(single_step, (images, labels))

iterator = iter(ds)
built = time.perf_counter()
train_multiple_steps.get_concrete_function(iterator)
traced = time.perf_counter()
train_multiple_steps(iterator)
first = time.perf_counter()
print(json.dumps({"variant": variant, "replicas": replicas, "blocks": blocks, "setup": built - start,
                  "trace": traced - built, "first_call": first - traced,
                  "step": int(optimizer.iterations.numpy()),
                  "w0": float(tf.reduce_sum(model.trainable_variables[0]).numpy())}))
sys.stdout.flush()
os._exit(0)
