"""What migrated code meets on stock TF 2.21 without tpu_compat (issue 35, item 6).

The migrated DenseNet distributed example, run with `--num_gpu=2` on a machine
with no GPU, printed "Training..." and sat idle. The cause is TensorFlow, not
the migration and not tpu_compat: a MirroredStrategy given GPU device names
that do not exist places its replicas on the CPU (soft placement) but keeps
the cross-device ops it picks for GPUs (collective all-reduce), whose first
all-reduce never completes on the CPU. Passing
``cross_device_ops=tf.distribute.ReductionToOneDevice()`` (or naming devices
that exist) finishes. docs/migration.md states this; these tests hold it.
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.requires_tf

PROGRAM = """
import sys
import numpy as np
import tensorflow as tf
assert not any(name.startswith("tpu_compat") for name in sys.modules), "tpu_compat imported"
assert not tf.config.list_physical_devices("GPU"), "this check needs a machine with no GPU"
cross_device_ops = tf.distribute.ReductionToOneDevice() if sys.argv[1] == "one" else None
strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"],
                                          cross_device_ops=cross_device_ops)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile("sgd", "mse")
x = np.ones((64, 4), np.float32)
history = model.fit(x, np.ones((64, 1), np.float32), batch_size=16, epochs=1, verbose=0)
print("LOSS:", history.history["loss"][-1])
"""


def _run(kind, timeout):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-c", PROGRAM, kind], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd="/")


@pytest.mark.slow
def test_absent_gpus_with_default_cross_device_ops_hang_on_stock_tf():
    with pytest.raises(subprocess.TimeoutExpired):
        _run("default", timeout=90)


@pytest.mark.slow
def test_absent_gpus_with_reduction_to_one_device_finish_on_stock_tf():
    done = _run("one", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOSS:" in done.stdout
