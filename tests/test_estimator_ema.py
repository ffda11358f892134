"""Issue #34 item 6: evaluating with exponential moving averages on the emulated TPU.

tests/scenarios/ema_eval_tf1.py is the TF 1.15 image-model trainers' pattern:
``ema.apply`` after each training step, and at evaluation a ``scaffold_fn``
building ``tf.train.Saver(ema.variables_to_restore(ema_vars))``. Before the fix
its Saver restored none of the 8 cores' copies (``Variables not initialized``).
One 8-core run and one ``use_tpu=False`` run (the one-device reference).
"""

import pytest

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = [pytest.mark.requires_tf]

PROGRAM = "ema_eval_tf1.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ema")
    env = {"TPU_COMPAT_WARNINGS": "ignore"}
    return {name: parse_numbers(check_ok(run_scenario(
        PROGRAM, 8, *flags, "--model_dir", str(base / name), env=env, tf1=True)).stdout)
        for name, flags in (("tpu", ["--use_tpu"]), ("cpu", []))}


def test_eval_on_8_cores_uses_the_moving_averages(runs):
    tpu = runs["tpu"]
    assert tpu["eval_mean_prediction"] == pytest.approx(tpu["EMA_mean_prediction"], rel=1e-5)
    assert tpu["eval_mean_prediction"] != pytest.approx(tpu["RAW_mean_prediction"], rel=1e-4)
    # TF 1.15 reported the first core's loss at evaluation.
    assert tpu["eval_loss"] == pytest.approx(tpu["EMA_first_core_loss"], rel=1e-5)


def test_the_moving_averages_equal_one_device(runs):
    tpu, cpu = runs["tpu"], runs["cpu"]
    assert cpu["eval_loss"] == pytest.approx(cpu["EMA_loss"], rel=1e-5)
    for key in ("EMA_loss", "EMA_mean_prediction", "RAW_loss", "eval_mean_prediction"):
        assert tpu[key] == pytest.approx(cpu[key], rel=1e-5), key
