"""Which TensorFlow is installed, whether tpu_compat was proven on it, and how to fix it.

tpu_compat installs no TensorFlow of its own (TF comes as ``tensorflow``,
``tensorflow-cpu``, ``tensorflow-tpu`` on TPU VMs, ``tf-nightly`` or a local
build, and pip cannot tell they are one package). So the commands that need
TensorFlow check for it here and say, in one line, what to install; ``doctor``
uses the same facts to spot broken mixes. Nothing here imports TensorFlow.
"""

import importlib.metadata
import importlib.util
import sys
import warnings

from packaging.version import InvalidVersion, Version

# Per Python, the TensorFlow minors scripts/tf_version_matrix.py proved
# (docs/tf_versions.md, its claims()); setup.cfg's python_requires and its
# `tensorflow` and `keras2` extras (with python_version markers where the
# ranges differ) say the same; tests/test_tf_versions.py keeps them in agreement.
PROVEN_TF_RANGES = {"3.10": ("2.15", "2.21"), "3.11": ("2.15", "2.21"), "3.12": ("2.16", "2.21"), "3.13": ("2.20", "2.21")}

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _python_key(minor):
    return tuple(int(part) for part in minor.split("."))


# This interpreter's range; on a Python no cell proved, the nearest proven
# Python's (for the messages; is_proven() is then False for every version).
PROVEN_TF_RANGE = PROVEN_TF_RANGES.get(PYTHON) or PROVEN_TF_RANGES[min(
    PROVEN_TF_RANGES, key=lambda minor: abs(_python_key(minor)[1] - sys.version_info[1]))]

# Distributions that each install the `tensorflow` package directory. Two of
# them in one environment overwrite each other's files.
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu", "tensorflow-gpu",
                    "tensorflow-intel", "tensorflow-macos", "tf-nightly",
                    "tf-nightly-cpu", "tf-nightly-tpu")

DOCS = "docs/install.md"


def _next_minor(minor):
    major, number = minor.split(".")
    return f"{major}.{int(number) + 1}"


def pip_requirement(distribution):
    """``tensorflow>=2.16,<2.22``: DISTRIBUTION over the proven range."""
    low, high = PROVEN_TF_RANGE
    return f"{distribution}>={low},<{_next_minor(high)}"


# One line, for `run`, `doctor` and the pytest plugin.
MISSING_TENSORFLOW = (
    f"TensorFlow is not installed; add it with: pip install "
    f"'{pip_requirement('tensorflow')}' '{pip_requirement('tf-keras')}' "
    f"(TPU VMs and tensorflow-cpu: see {DOCS})")


# TF 1.x-2.15's wheels required tensorboard, so every program of the era had
# tf.summary's writers (the TPU trainers' host_call summaries, Keras's
# TensorBoard callback); TF 2.21's wheel does not, and they die with
# TensorFlow's TBNotInstalledError. Not an extra of ours: TensorFlow comes as
# tensorflow, tensorflow-cpu or tensorflow-tpu, which no extra can name for
# all (docs/install.md), so the failure names the one-line fix instead.
MISSING_TENSORBOARD = (
    "tpu-compat: TensorBoard is not installed (TensorFlow's wheels up to 2.15 brought it, "
    "2.21's does not) and tf.summary needs it; add it with: pip install tensorboard")


def missing_package_hint(error):
    """The one-line fix for ``error`` (or an exception it was raised from), or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if type(error).__name__ == "TBNotInstalledError":
            return MISSING_TENSORBOARD
        error = error.__cause__ or error.__context__
    return None


def missing_package_note(error):
    """:func:`missing_package_hint` as a line to print after the traceback, or ""."""
    hint = missing_package_hint(error)
    return f"{hint}\n" if hint else ""


class TensorFlowMissing(Exception):
    """A command that needs TensorFlow ran where none is installed."""

    def __init__(self):
        super().__init__(MISSING_TENSORFLOW)


def tensorflow_importable():
    """Whether ``import tensorflow`` can find a package (without importing it)."""
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def require_tensorflow():
    """Raises :class:`TensorFlowMissing` unless TensorFlow can be imported."""
    if not tensorflow_importable():
        raise TensorFlowMissing()


def installed_tf_distributions():
    """``{distribution: version}`` of every installed TensorFlow distribution."""
    found = {}
    for name in TF_DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def minor_of(version):
    """``(2, 21)`` for ``2.21.0``, ``2.21.0rc1`` or ``2.22.0-dev20250101``; None if unparsable."""
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    return tuple(release[:2]) if len(release) >= 2 else None


def is_proven(version):
    """Whether this Python was proven and TensorFlow VERSION's minor lies in
    :data:`PROVEN_TF_RANGE` (this Python's)."""
    if PYTHON not in PROVEN_TF_RANGES:
        return False
    minor = minor_of(version)
    low, high = (minor_of(v) for v in PROVEN_TF_RANGE)
    return minor is not None and low <= minor <= high


class UntestedTensorFlowWarning(UserWarning):
    """The installed TensorFlow is outside the range tpu_compat was proven on."""


_warned_versions = set()


def warn_if_unproven(version, stacklevel=3):
    """Warns once per process when TensorFlow VERSION was not proven."""
    if is_proven(version) or version in _warned_versions:
        return
    _warned_versions.add(version)
    if PYTHON not in PROVEN_TF_RANGES:
        warnings.warn(
            f"tpu_compat was tested on Python {', '.join(sorted(PROVEN_TF_RANGES, key=_python_key))} "
            f"(docs/tf_versions.md); Python {PYTHON} was not, and TensorFlow {version} "
            f"on it may not work", UntestedTensorFlowWarning, stacklevel=stacklevel)
        return
    low, high = PROVEN_TF_RANGE
    warnings.warn(
        f"tpu_compat was tested with TensorFlow {low} to {high} on Python {PYTHON} "
        f"(docs/tf_versions.md); TensorFlow {version} is outside that range and "
        f"may not work", UntestedTensorFlowWarning, stacklevel=stacklevel)


def mix_problems():
    """Lines describing a broken TensorFlow/tf-keras mix, each with its fix."""
    problems = []
    tensorflows = installed_tf_distributions()
    if len(tensorflows) > 1:
        listed = ", ".join(f"{name} {version}" for name, version in sorted(tensorflows.items()))
        keep = _distribution_to_keep(tensorflows)
        # Uninstalling one deletes files the other installed too, so remove
        # all, then reinstall the one to keep; tf-keras (whose metadata asks
        # for `tensorflow`) goes back with --no-deps.
        fix = (f"pip uninstall -y {' '.join(sorted(tensorflows))} && "
               f"pip install '{keep}=={tensorflows[keep]}'")
        if _tf_keras_version() and keep != "tensorflow":
            minor = minor_of(tensorflows[keep])
            fix += (f" && pip install 'tf-keras=={minor[0]}.{minor[1]}.*' --no-deps"
                    if minor else " && pip install tf-keras --no-deps")
        problems.append(
            f"{len(tensorflows)} TensorFlow distributions are installed ({listed}) "
            f"and overwrite each other's files in tensorflow/; keep {keep}: {fix}")
    tf_keras = _tf_keras_version()
    if tf_keras and len(tensorflows) == 1:
        (name, version), = tensorflows.items()
        tf_minor, keras_minor = minor_of(version), minor_of(tf_keras)
        if tf_minor and keras_minor and tf_minor != keras_minor:
            wanted = f"{tf_minor[0]}.{tf_minor[1]}"
            no_deps = "" if name == "tensorflow" else " --no-deps"
            problems.append(
                f"tf-keras {tf_keras} does not match {name} {version} (tf-keras "
                f"X.Y works only with TensorFlow X.Y): "
                f"pip install 'tf-keras=={wanted}.*'{no_deps}")
    return problems


def tf_keras_install_command():
    """The pip command that adds the tf-keras matching the installed TensorFlow.

    tf-keras's metadata requires the ``tensorflow`` distribution: with any
    other (``tensorflow-cpu``, ``tensorflow-tpu``) it must be --no-deps, or
    pip installs ``tensorflow`` over it.
    """
    tensorflows = installed_tf_distributions()
    if len(tensorflows) != 1:
        return "pip install tf-keras --no-deps (after fixing the TensorFlow install)"
    (name, version), = tensorflows.items()
    minor = minor_of(version)
    spec = f"'tf-keras=={minor[0]}.{minor[1]}.*'" if minor else "tf-keras"
    return f"pip install {spec}" + ("" if name == "tensorflow" else " --no-deps")


def _tf_keras_version():
    try:
        return importlib.metadata.version("tf-keras")
    except importlib.metadata.PackageNotFoundError:
        return None


def _distribution_to_keep(tensorflows):
    """The TF distribution a mix most likely meant: the TPU one, then the CPU one."""
    for name in ("tensorflow-tpu", "tf-nightly-tpu", "tensorflow-cpu", "tensorflow"):
        if name in tensorflows:
            return name
    return sorted(tensorflows)[0]
