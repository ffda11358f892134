"""scan and upgrade cost grows linearly with a file's findings (issue 23, item 4).

Counted, not timed: the Python calls made for a file with n findings and for
one with 2n. Per-finding work that walks every other use of a name, or every
assignment of the module, makes the count grow by more than 2.1 times
(2.18 to 2.27 at 50 findings before issue 23; 1.98 now).
"""

import cProfile
import pstats

import pytest

from tpu_compat.migrate import scan, upgrade


def legacy_file(findings):
    lines = ["import tensorflow as tf", "strategy = tf.distribute.MirroredStrategy()"]
    lines += [f'x{i} = strategy.reduce("SUM", v{i})' for i in range(findings)]
    return ("\n".join(lines) + "\n").encode()


def calls(function, *args):
    """How many Python calls ``function(*args)`` makes (cProfile counts them)."""
    profile = cProfile.Profile()
    profile.runcall(function, *args)
    return pstats.Stats(profile).total_calls


@pytest.mark.parametrize("run", [scan.scan_bytes, upgrade.upgrade_bytes],
                         ids=["scan", "upgrade"])
def test_twice_the_findings_costs_about_twice_the_work(run):
    run("warm.py", legacy_file(5))  # imports and first-use caches
    small = calls(run, "f.py", legacy_file(50))
    large = calls(run, "f.py", legacy_file(100))
    assert large / small < 2.1, (small, large)
