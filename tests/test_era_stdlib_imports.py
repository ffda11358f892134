"""Issue #34 (field runner): the Colabs' ``distutils.version.LooseVersion`` check runs unchanged.

tensorflow/tpu's Fashion-MNIST Colabs (and many copies) check the TensorFlow
version with ``import distutils`` then ``distutils.version.LooseVersion(...)``:
the era's Pythons had ``distutils.version`` imported by then. Under TF 2.21 on
Python 3.11 the check died with ``AttributeError: module 'distutils' has no
attribute 'version'`` (docs/field.md, colab-fashion-mnist and -tf2).
"""

import pytest

from conftest import check_ok, parse_numbers, run_scenario
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
