"""TF 1.x's infeed/outfeed pattern on the emulated TPU (issue 22 item 3).

Whole programs written as the AI Platform TPU template
(cloudml-samples tpu/templates/tpu_rewrite/trainer_infeed_outfeed.py) and the
TPU fundamentals codelab (training-data-analyst quests/tpu/tpu_fundamentals.ipynb)
wrote them, run under `tpu-compat run --tf1`, their weights checked against a
numpy reference of the same training; and the feeds' checks and blocking.
"""

import textwrap

import numpy as np
import pytest

from conftest import check_ok, parse_numbers, run_cli, run_scenario

pytestmark = pytest.mark.requires_tf

FEATURES = 5


def _reference_weights(steps, batch_size):
    """The scenario's make_data and training, in numpy (float64): plain GD on the
    mean squared error over the global batch (CrossShardOptimizer, MEAN)."""
    rng = np.random.RandomState(7)
    x = rng.rand(steps, batch_size, FEATURES).astype(np.float32)
    y = (x @ rng.rand(FEATURES).astype(np.float32) + 0.5).astype(np.float32)
    w, b = np.zeros(FEATURES), 0.0
    for i in range(steps):
        error = x[i].astype(np.float64) @ w + b - y[i]
        w = w - 0.1 * 2.0 * x[i].T.astype(np.float64) @ error / batch_size
        b = b - 0.1 * 2.0 * error.sum() / batch_size
    return np.append(w, b)


def _weights(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("weights:")][-1]
    return np.array([float(v) for v in line.split(":", 1)[1].split()])


@pytest.mark.whole_program(ci_replicas=8)
@pytest.mark.parametrize("feed", ["threads", "per_step"])
@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_infeed_outfeed_program_matches_numpy(replicas, feed, tmp_path):
    steps, batch_size = 12, 16
    result = check_ok(run_scenario(
        "infeed_outfeed_program.py", replicas, "--model-dir", str(tmp_path),
        "--num-shards", str(replicas), "--max-steps", str(steps),
        "--batch-size", str(batch_size), "--feed", feed,
        tf1=True, env={"COLAB_TPU_ADDR": "10.0.0.2:8470"}))
    np.testing.assert_allclose(_weights(result.stdout),
                               _reference_weights(steps, batch_size), rtol=1e-5)
    numbers = parse_numbers(result.stdout)
    assert numbers["outfeeds"] == steps  # one outfeed tuple per core per step
    assert numbers["global_step"] == steps  # one increment per step, not per core
    assert (tmp_path / f"model.ckpt-{steps}.index").exists()
    # The program's own tf.contrib spellings warn at its lines.
    for rule in ("TPC140", "TPC142", "TPC144", "TPC146"):
        assert rule in result.stderr
    assert ("TPC148" in result.stderr) == (feed == "threads")


def test_scan_reports_the_feed_names():
    result = run_cli("scan", "tests/scenarios/infeed_outfeed_program.py")
    assert result.returncode == 1, result.stderr  # findings
    for rule in ("TPC140", "TPC142", "TPC144", "TPC146", "TPC148"):
        assert rule in result.stdout


CHECKS = textwrap.dedent("""
    import numpy as np
    import tensorflow.compat.v1 as tf
    from tensorflow.contrib import tpu

    tf.disable_eager_execution()  # without --tf1: graph mode, control flow v2

    def error_of(build):
        try:
            build()
        except (ValueError, TypeError) as error:
            return str(error)
        return "no error"

    x = tf.zeros([4, 3])
    print("ORDINAL", error_of(lambda: tpu.infeed_enqueue_tuple([x], [(4, 3)], device_ordinal=5)))
    print("ENQSHAPE", error_of(lambda: tpu.infeed_enqueue_tuple([x], [(2, 3)], device_ordinal=0)))
    tpu.infeed_enqueue_tuple([x], [(4, 3)], device_ordinal=1)
    print("DEQSHAPE", error_of(lambda: tpu.batch_parallel(
        lambda: tpu.infeed_dequeue_tuple([tf.float32], [(2, 3)]), num_shards=2)))
    print("DEQDTYPE", error_of(lambda: tpu.batch_parallel(
        lambda: tpu.infeed_dequeue_tuple([tf.int32], [(4, 3)]), num_shards=2)))
    print("LOOPDTYPE", error_of(lambda: tpu.batch_parallel(
        lambda: tpu.repeat(2, lambda t: tf.cast(t, tf.int32), [tf.zeros([2])]), num_shards=2)))
    print("UINT8", error_of(lambda: tpu.batch_parallel(
        lambda: tpu.infeed_dequeue(tf.uint8, [2]), num_shards=2)))
    print("OUTSIDE", error_of(lambda: tpu.infeed_dequeue_tuple([tf.float32], [(4, 3)])))
    out = tpu.outfeed_dequeue_tuple([tf.float32], [()], device_ordinal=0)
    try:
        with tf.Session() as sess:  # nothing was sent: a bounded wait, as on a TPU
            sess.run(out, options=tf.RunOptions(timeout_in_ms=500))
        print("BLOCKED no")
    except tf.errors.DeadlineExceededError:
        print("BLOCKED yes")
    # infeed_dequeue / outfeed_enqueue (one-tensor forms) and a loop with inputs.
    with tf.Graph().as_default():
        enq = [tpu.infeed_enqueue(tf.fill([2], float(i + 1)), device_ordinal=i) for i in range(2)]
        deq = [tpu.outfeed_dequeue(tf.float32, [2], device_ordinal=i) for i in range(2)]
        def body(total):
            value = tpu.infeed_dequeue(tf.float32, [2])
            return total + value, tpu.outfeed_enqueue(value * 10.0)
        final = tpu.replicate(lambda: tpu.repeat(3, body, [tf.zeros([2])]), [[], []])
        counted = tpu.replicate(
            lambda i0: tpu.while_loop(lambda i, t: i < 4, lambda i, t: [i + 1, t + i],
                                      [i0, tf.constant(0)]), [[0], [2]])
        with tf.Session() as sess:
            for _ in range(3):
                sess.run(enq)
            totals = sess.run(final, options=tf.RunOptions(timeout_in_ms=20000))
            sent = sess.run(deq)
            loops = sess.run(counted)
        print("TOTALS", [t[0].tolist() for t in totals])
        print("WHILE", [[int(v) for v in r] for r in loops])
        print("SENT", [s.tolist() for s in sent])
""")


@pytest.mark.parametrize("tf1", [True, False], ids=["tf1", "control_flow_v2"])
def test_feeds_check_their_arguments_and_block(tf1, tmp_path):
    script = tmp_path / "checks.py"
    script.write_text(CHECKS)
    result = check_ok(run_cli("run", *(["--tf1"] if tf1 else []), "--replicas", "2",
                              str(script)))
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert "device_ordinal must be an int in [0, 2)" in lines["ORDINAL"]
    assert "inputs[0] has shape (4, 3) but shapes[0] is (2, 3)" in lines["ENQSHAPE"]
    assert "infeed_dequeue_tuple: shapes [[2, 3]]" in lines["DEQSHAPE"]
    assert "infeed_dequeue_tuple: dtypes ['int32']" in lines["DEQDTYPE"]
    assert "inside a replicated TPU computation" in lines["OUTSIDE"]
    assert "body: the loop carries ['int32', 'float32']" in lines["LOOPDTYPE"]
    assert "uint8 is not a supported TPU infeed type" in lines["UINT8"]
    assert lines["BLOCKED"] == "yes"
    assert lines["TOTALS"] == "[[3.0, 3.0], [6.0, 6.0]]"
    assert lines["SENT"] == "[[10.0, 10.0], [20.0, 20.0]]"
    # tpu.while_loop: replica 0 counts 0..3 (sum 6); the loop's trip count is
    # replica 0's, as one TPU program's is (replica 1 starts at 2: 2 + 3 + 4 + 5).
    assert lines["WHILE"] == "[[4, 6], [6, 14]]"
