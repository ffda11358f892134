"""Installing tpu_compat never replaces the user's TensorFlow.

The base install and the TF-neutral extras name no TensorFlow distribution;
the extras that do (``tensorflow``, ``keras2``) end with exactly one. The
dry-run check proves the same through pip's resolver, next to an installed
``tensorflow-cpu`` (scripts/check_install_plan.py says why a metadata-only
stand-in is as good as the real wheel there).
"""

import configparser
import importlib.util
import itertools
import os
import re

import pytest
from packaging.requirements import Requirement

from conftest import REPO_ROOT
from tpu_compat import tf_support

TF_NAMES = {name.lower() for name in tf_support.TF_DISTRIBUTIONS}


def _setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(REPO_ROOT, "setup.cfg"))
    return parser


def _requirements(text):
    return [Requirement(line) for line in text.strip().splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _extras():
    section = _setup_cfg()["options.extras_require"]
    return {name: _requirements(section[name]) for name in section}


def _tensorflows_after(requirements):
    """TF distributions a set of requirements ends with (tf-keras pulls `tensorflow`)."""
    names = {r.name.lower() for r in requirements}
    tensorflows = names & TF_NAMES
    if "tf-keras" in names:
        tensorflows.add("tensorflow")
    return tensorflows


@pytest.mark.tf_free
def test_base_install_requires_no_tensorflow():
    base = _requirements(_setup_cfg()["options"]["install_requires"])
    assert not _tensorflows_after(base), [str(r) for r in base]
    assert {r.name for r in base} == {"libcst", "packaging", "tomli"}


def test_the_license_is_one_spdx_field_without_a_classifier():
    # setuptools 77+ prints a 12-line deprecation warning on every install,
    # editable ones included, when a License classifier is present.
    metadata = _setup_cfg()["metadata"]
    assert metadata["license"] == "Apache-2.0"
    assert not [c for c in metadata["classifiers"].splitlines() if c.strip().startswith("License ::")]


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.12", "3.13"])
def test_base_install_brings_a_toml_reader_on_every_python(python):
    # regress/sidecar.py reads TOML with tomllib (Python 3.11+), else tomli:
    # the base install must bring tomli exactly where tomllib is missing.
    base = _requirements(_setup_cfg()["options"]["install_requires"])
    active = {r.name for r in base
              if r.marker is None or r.marker.evaluate({"python_version": python})}
    assert ("tomli" in active) is (python == "3.10"), (python, active)
    with open(os.path.join(REPO_ROOT, "tpu_compat", "regress", "sidecar.py"),
              encoding="utf-8") as stream:
        assert "import tomli as tomllib" in stream.read()


def test_every_combination_of_extras_ends_with_at_most_one_tensorflow():
    extras = _extras()
    assert {"tensorflow", "keras2", "tpu", "test"} <= set(extras)
    assert [str(r) for r in extras["tpu"]] == ["cloud-tpu-client>=0.10"]
    assert not _tensorflows_after(extras["test"] + extras["tpu"])
    for size in range(1, len(extras) + 1):
        for chosen in itertools.combinations(extras, size):
            requirements = [r for name in chosen for r in extras[name]]
            assert len(_tensorflows_after(requirements)) <= 1, chosen
    # keras2 names `tensorflow` itself, over the proven range, so the
    # resolver never takes one from tf-keras's unbounded metadata.
    assert _tensorflows_after(extras["keras2"]) == {"tensorflow"}


def test_declared_dependencies_are_used():
    # packaging compares versions (tf_support); absl-py is not declared because
    # nothing in tpu_compat imports it (TensorFlow brings it for legacy scripts).
    assert importlib.util.find_spec("packaging") is not None
    with open(os.path.join(REPO_ROOT, "tpu_compat", "tf_support.py"), encoding="utf-8") as f:
        assert "from packaging.version import" in f.read()


def test_readme_commands_and_ci_agree():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    commands = re.findall(r"```sh\n(.+?)\n```", readme)
    assert commands[:2] == [
        "pip install -e '.[tensorflow,keras2]' && "
        "TF_CPP_MIN_LOG_LEVEL=2 tpu-compat run examples/tf1_linear_regression.py",
        "pip install -e '.[tensorflow,keras2,test]' && "
        "TF_CPP_MIN_LOG_LEVEL=2 python -m pytest -n 2 -m \"not slow\"",
    ]
    with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
        assert commands[1] in f.read().splitlines()


def test_ci_runs_the_tf_free_and_python_3_12_lanes():
    """docs/install.md's account of .ci/run; the lanes themselves run in CI."""
    with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
        script = f.read()
    # TF-free: the base install and the test tools only, and the tests marked
    # as what a missing TensorFlow can break (requires_tf still skips among them).
    assert "pip install -q -e '.[test]'" in script
    assert '-m "tf_free and not slow"' in script
    # Python 3.12: the pyenv interpreter, the README's extras, python_requires obeyed.
    assert "/root/.pyenv/versions/3.12.1/bin/python" in script
    assert "pip install -q -e '.[tensorflow,keras2,test]'" in script
    assert "--ignore-requires-python" not in script
    lane = script[script.index("lane_python312() {"):]
    lane = lane[:lane.index("\n}\n")]
    # The tests marked `interpreter` (what a new Python can break), not lane 1's
    # files again; the era programs on 3.12 are the version matrix's
    # (docs/tf_versions.md), not CI's budget.
    assert '-m "interpreter and not slow"' in lane
    # No tests collected is a failure, not a pass.
    assert '"$code" -eq 5' in script
    # Lanes 2 and 3 run beside lane 1 at a lower priority, each in a copy of
    # the tree (docs/install.md): started before lane 1, finished after it.
    assert 'renice -n 10 -p "$BASHPID"' in script and 'copy_tree "$venv/src"' in script
    order = [script.index(line) for line in (
        "start_background_lane tf_free lane_tf_free\n",
        "start_background_lane python312 lane_python312\n",
        'run_lane "Python 3.11, the README\'s test command" lane_default\n',
        'finish_background_lane tf_free "Python 3.11 without TensorFlow"\n',
        'finish_background_lane python312 "Python 3.12: examples and warnings"\n')]
    assert order == sorted(order)


@pytest.mark.slow
def test_install_next_to_tensorflow_cpu_plans_no_second_tensorflow():
    # About 25 s: a venv, a stand-in wheel, and two pip dry runs.
    spec = importlib.util.spec_from_file_location(
        "check_install_plan", os.path.join(REPO_ROOT, "scripts", "check_install_plan.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = []
    assert module.check(log=lines.append) == []
    planned = lines[0]
    assert "libcst" in planned and "pytest" in planned and "cloud-tpu-client" in planned
