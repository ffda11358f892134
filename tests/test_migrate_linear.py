"""scan and upgrade cost grows linearly with a file's findings (issue 23, item 4).

Counted, not timed: the Python calls made for a file with n findings and for
one with 2n. Per-finding work that walks every other use of a name, or every
assignment of the module, makes the count grow by more than 2.1 times
(2.18 to 2.27 at 50 findings before issue 23; 1.98 now).
"""

import cProfile
import os
import pstats
import subprocess
import sys

import pytest


def legacy_file(findings):
    lines = ["import tensorflow as tf", "strategy = tf.distribute.MirroredStrategy()"]
    lines += [f'x{i} = strategy.reduce("SUM", v{i})' for i in range(findings)]
    return ("\n".join(lines) + "\n").encode()


def calls(function, *args):
    """How many Python calls ``function(*args)`` makes (cProfile counts them)."""
    profile = cProfile.Profile()
    profile.runcall(function, *args)
    return pstats.Stats(profile).total_calls


def _count(name):
    """In a fresh interpreter: how many calls ``name`` (scan_bytes or
    upgrade_bytes) makes on 50 and on 100 findings. Fresh, because the count
    is of the function alone: a test process that has run the rest of the
    suite can hold state (a profile hook, patched modules) that is not it; once
    such a worker spent minutes here."""
    # Imported here: the child imports this module, which then needs no conftest.
    from conftest import subprocess_env  # pylint: disable=import-outside-toplevel
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "import test_migrate_linear as t\n"
            "from tpu_compat.migrate import scan, upgrade\n"
            f"run = {{'scan': scan.scan_bytes, 'upgrade': upgrade.upgrade_bytes}}[{name!r}]\n"
            "run('warm.py', t.legacy_file(5))  # imports and first-use caches\n"
            "print(t.calls(run, 'f.py', t.legacy_file(50)), t.calls(run, 'f.py', t.legacy_file(100)))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(), timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    small, large = map(int, result.stdout.split())
    return small, large


@pytest.mark.parametrize("name", ["scan", "upgrade"])
def test_twice_the_findings_costs_about_twice_the_work(name):
    small, large = _count(name)
    assert large / small < 2.1, (small, large)
