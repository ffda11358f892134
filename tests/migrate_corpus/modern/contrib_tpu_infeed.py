"""The infeed/outfeed program of legacy/contrib_tpu_infeed.py, written for TF 2: the
dataset is distributed to the replicas and the steps loop inside one tf.function."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

features = tf.random.uniform([160, 5])
labels = tf.random.uniform([160])
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16, drop_remainder=True)
iterator = iter(strategy.experimental_distribute_dataset(dataset))


@tf.function
def train_loop(iterator):
    losses = tf.TensorArray(tf.float32, size=10)
    for i in tf.range(10):
        def step(x, y):
            return tf.reduce_mean(tf.square(x[:, 0] - y))
        per_replica = strategy.run(step, args=next(iterator))
        losses = losses.write(i, strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica,
                                                 axis=None))
    return losses.stack()


print(train_loop(iterator))
