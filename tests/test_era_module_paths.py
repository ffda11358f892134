"""Issue #34 item 4: the era's deep module paths (docs/contrib_survey.md counts them).

tests/scenarios/era_module_paths.py is the TPU reference trainers' resume loop:
``from tensorflow.python.estimator import estimator`` for
``_load_global_step_from_checkpoint_dir``, ``from
tensorflow.contrib.tpu.python.tpu import async_checkpoint`` for its checkpoint
hook, ``ModeKeys``/``RunConfig`` from their TF 1.x modules. Before these were
served, the program stopped at its imports (``No module named
'tensorflow.python.estimator'``).
"""

import pytest

from conftest import check_ok, parse_numbers, run_scenario

pytestmark = [pytest.mark.requires_tf]


def test_reference_trainer_resume_loop_runs_on_8_cores(tmp_path):
    numbers = parse_numbers(check_ok(run_scenario(
        "era_module_paths.py", 8, "--model_dir", str(tmp_path),
        env={"TPU_COMPAT_WARNINGS": "ignore"}, tf1=True)).stdout)
    assert numbers["run_config_is_estimators"] == 1
    assert numbers["step_before"] == 0
    assert numbers["step_after_loop"] == 4  # the last of the loop's reads: 2, then 4
    # The hook saved at steps 2 and 4 (the Estimator's own saves land on the same ones).
    assert numbers["checkpoints"] >= 2
