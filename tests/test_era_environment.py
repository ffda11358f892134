"""Issue #34 (field runner): what the era's environment had, which TF 2.21's does not.

* tensorflow/tpu's Fashion-MNIST Colabs (and many copies) check the TensorFlow
  version with ``import distutils`` then ``distutils.version.LooseVersion(...)``:
  the era's Pythons had ``distutils.version`` imported by then. Under TF 2.21
  on Python 3.11 the check died with ``AttributeError: module 'distutils' has
  no attribute 'version'`` (docs/field.md, colab-fashion-mnist and -tf2).
* TensorBoard: TF's wheels up to 2.15 required it, 2.21's does not; a
  program's summaries die with TensorFlow's ``TBNotInstalledError``, and
  ``tpu-compat run`` then names the fix in one line.
"""

import importlib.util
import os

import pytest

from conftest import check_ok, parse_numbers, run_cli, run_scenario
from tpu_compat import tf_support
from tpu_compat.patching import distutils_imports


@pytest.mark.requires_tf
def test_the_colabs_distutils_version_check_runs_on_8_cores():
    result = check_ok(run_scenario("colab_version_check.py", 8))
    numbers = parse_numbers(result.stdout)
    assert numbers["version_check_passed"] == 1
    assert numbers["replicas"] == 8
    assert numbers["loss_finite"] == 1


def _route():
    return distutils_imports.import_route(changes=None)


def test_without_any_distutils_the_import_names_the_fix():
    # Python 3.12+ without setuptools: no distutils at all.
    def no_distutils(name, *args):
        raise ModuleNotFoundError(f"No module named {name!r}", name="distutils")

    with pytest.raises(ModuleNotFoundError) as raised:
        _route()(no_distutils, "distutils")
    assert raised.value.name == "distutils"
    assert "pip install setuptools" in str(raised.value) and "\n" not in str(raised.value)


def test_other_imports_pass_through_untouched():
    seen = []

    def next_import(name, *args):
        seen.append(name)
        if name == "distutils.missing":
            raise ModuleNotFoundError("No module named 'distutils.missing'", name="distutils.missing")
        return name

    assert _route()(next_import, "json") == "json"
    with pytest.raises(ModuleNotFoundError, match="distutils.missing"):
        _route()(next_import, "distutils.missing")  # only a missing distutils is ours to explain
    assert seen == ["json", "distutils.missing"]


@pytest.mark.requires_tf
@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is not None,
                    reason="TensorBoard is installed here: tf.summary works")
def test_a_summary_without_tensorboard_names_the_fix(tmp_path):
    program = tmp_path / "summaries.py"
    program.write_text(
        "import tensorflow as tf\n"
        "writer = tf.summary.create_file_writer(%r)\n"
        "with writer.as_default():\n"
        "    tf.summary.scalar('loss', 0.5, step=1)\n" % str(tmp_path / "logs"))
    result = run_cli("run", "--replicas", "8", str(program))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.rstrip().splitlines()
    assert lines[-1] == tf_support.MISSING_TENSORBOARD
    assert lines[-2].startswith("tensorflow.python.summary.tb_summary.TBNotInstalledError: ")
    assert any(os.fspath(program) in line for line in lines)  # the program's traceback, first


def test_the_tensorboard_hint_finds_the_error_behind_another():
    class TBNotInstalledError(Exception):
        pass

    try:
        try:
            raise TBNotInstalledError("tf.summary.scalar")
        except TBNotInstalledError as cause:
            raise RuntimeError("host call failed") from cause
    except RuntimeError as error:
        assert tf_support.missing_package_hint(error) == tf_support.MISSING_TENSORBOARD
    assert tf_support.missing_package_hint(ValueError("x")) is None
