"""Run a legacy script unchanged, as ``python SCRIPT`` would, with routing on.

The script runs in this process as ``__main__``: ``sys.argv``, ``sys.path[0]``,
``__file__``, its exit code and its traceback (user frames only) are what
``python SCRIPT ARGS`` gives. Before TensorFlow is imported the runner picks
the Keras the legacy code expects (tf-keras, via ``TF_USE_LEGACY_KERAS=1``,
unless the user chose), then decides the backend, installs the routing and,
when emulating, provides the environment that Colab-era bring-up code reads.
"""

import builtins
import importlib.util
import os
import sys
import traceback
import types

from tpu_compat import _config, _program_code

__all__ = ["RunError", "prepare_environment", "run_module", "run_script"]

LEGACY_KERAS_VAR = "TF_USE_LEGACY_KERAS"
# Colab TPU notebooks read this and dial grpc://$COLAB_TPU_ADDR. When
# emulating, a placeholder keeps `assert 'COLAB_TPU_ADDR' in os.environ` true:
# the emulated worker's address, which the routed resolver never dials.
COLAB_TPU_ADDR_VAR = "COLAB_TPU_ADDR"


class RunError(Exception):
    """The script or module to run cannot be found (a usage error)."""


def tf_keras_installed():
    return importlib.util.find_spec("tf_keras") is not None


def prepare_environment(backend=None, replicas=None, warnings=None, environ=None,
                        strict=None, fidelity=None, hosts=None):
    """Sets the environment the runner promises, before TensorFlow is imported.

    Returns the names of the variables it set (for ``doctor`` and tests).
    """
    environ = os.environ if environ is None else environ
    changed = []
    if hosts is not None:
        environ[_config.HOSTS_VAR] = str(_config.positive_int("--hosts", hosts))
        changed.append(_config.HOSTS_VAR)
    if backend is not None:
        environ[_config.BACKEND_VAR] = _config._choice(  # pylint: disable=protected-access
            "--backend", backend, _config.BACKENDS)
        changed.append(_config.BACKEND_VAR)
    if replicas is not None:
        environ[_config.REPLICAS_VAR] = str(_config.positive_int("--replicas", replicas))
        changed.append(_config.REPLICAS_VAR)
    if warnings is not None:
        environ[_config.WARNINGS_VAR] = _config._choice(  # pylint: disable=protected-access
            "--warnings", warnings, _config.WARNING_POLICIES)
        changed.append(_config.WARNINGS_VAR)
    if strict is not None:
        environ[_config.STRICT_VAR] = _config._choice(  # pylint: disable=protected-access
            "--strict", strict, _config.STRICT_CHOICES)
        changed.append(_config.STRICT_VAR)
    if fidelity is not None:
        environ[_config.FIDELITY_VAR] = _config._choice(  # pylint: disable=protected-access
            "--fidelity", fidelity, _config.FIDELITY_CHOICES)
        changed.append(_config.FIDELITY_VAR)
    elif not environ.get(_config.FIDELITY_VAR, "").strip():
        # `tpu-compat run` checks replica steps as a TPU compiles them unless the
        # user chose (the library's own default stays cpu): nothing legitimate
        # broke when the whole test suite, every scenario and example, ran under
        # tpu (docs/emulated_tpu.md).
        environ[_config.FIDELITY_VAR] = "tpu"
        changed.append(_config.FIDELITY_VAR)
    # Validate what the user set in the environment, naming the variable.
    _config.backend_choice(environ)
    _config.num_replicas(environ)
    _config.warning_policy(environ)
    _config.strict_choice(environ)
    _config.fidelity_choice(environ)
    _config.seed(environ)
    check_pod_settings(environ, hosts_flag=hosts is not None,
                       replicas_flag=replicas is not None)
    if LEGACY_KERAS_VAR not in environ and tf_keras_installed():
        # Keras 3 (TF 2.21's default tf.keras) with steps_per_execution under
        # MirroredStrategy fails with INVALID_ARGUMENT; legacy code expects
        # Keras 2, which tf-keras is.
        environ[LEGACY_KERAS_VAR] = "1"
        changed.append(LEGACY_KERAS_VAR)
    return changed


def check_pod_settings(environ, hosts_flag=False, replicas_flag=False):
    """Validates the emulated pod's settings before anything starts.

    ``TPU_COMPAT_NUM_HOSTS``, ``TPU_COMPAT_POD_TIMEOUT``, ``TPU_COMPAT_POD_PORT``
    and a chief's ``TF_CONFIG``, each error naming its variable; and that the
    replicas split evenly over the hosts, naming both settings (as flags when
    they came from ``--hosts`` / ``--replicas``). Returns the pod requested
    (``tpu_compat.pod.config.PodRequest``), or None.
    """
    from tpu_compat.pod import config as pod_config  # pylint: disable=import-outside-toplevel
    _config.pod_timeout(environ)
    port = _config.pod_port(environ)
    request = pod_config.requested_pod(environ)
    if request is None or request[1] is not None:
        return request  # one host, or TF_CONFIG's workers, whose cores are theirs
    if port is not None and port + request[0] - 1 > 65535:
        raise _config.ConfigError(
            f"{_config.POD_PORT_VAR}={port} is not valid for {request[0]} hosts "
            f"(ports {port} to {port + request[0] - 1}); expected a port number "
            f"from 1 to {65536 - request[0]}")
    replicas = _config.num_replicas(environ)
    _config.cores_per_host(
        request[0], replicas or _config.DEFAULT_EMULATED_REPLICAS,
        hosts_name="--hosts" if hosts_flag else _config.HOSTS_VAR,
        replicas_name="--replicas" if replicas_flag else _config.REPLICAS_VAR,
        replicas_defaulted=replicas is None)
    return request


def _install(tf1):
    # pylint: disable=import-outside-toplevel
    import tpu_compat
    handle = tpu_compat.install()
    if handle.backend.emulated and COLAB_TPU_ADDR_VAR not in os.environ:
        from tpu_compat.runtime import resolver
        os.environ[COLAB_TPU_ADDR_VAR] = resolver.EMULATED_WORKER_ADDRESS
    if tf1:
        _enable_tf1_imports()
    _seed_random_generators()
    return handle


def _seed_random_generators():
    """Seeds Python's, NumPy's and TensorFlow's RNGs when TPU_COMPAT_SEED is set.

    `tpu-compat regress` and `verify` set it so that unseeded legacy scripts
    give the same numbers on every run. It runs before the script, so a script
    that seeds its own generators overrides these seeds, as it should.
    """
    seed = _config.seed()
    if seed is None:
        return
    # pylint: disable=import-outside-toplevel
    import random

    import numpy as np
    import tensorflow as tf
    random.seed(seed)
    np.random.seed(seed)
    # The global seed of eager ops (or of the default graph under --tf1) ...
    tf.random.set_seed(seed)
    # ... and of the default graph that TF 1.x scripts build after calling
    # disable_v2_behavior() themselves: it is the same graph object.
    tf.compat.v1.get_default_graph().seed = seed


# -- --tf1: `import tensorflow` means tf.compat.v1, for the program's code only


def _enable_tf1_imports():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tf.compat.v1.disable_v2_behavior()
    compat_v1 = tf.compat.v1
    original_import = builtins.__import__

    def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
        module = original_import(name, globals, locals, fromlist, level)
        if level == 0 and name == "tensorflow" and _program_code.is_program_code(globals):
            return compat_v1
        return module

    builtins.__import__ = tf1_import


# -- running ---------------------------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The modules between `tpu-compat run` and the user's code: the runner, and
# the import hooks every import of the program passes through (--tf1 here,
# tensorflow.python.keras and tensorflow.contrib), which `python SCRIPT` lacks.
_RUNNER_FILES = frozenset(os.path.join(_PACKAGE_DIR, name) for name in (
    "runner.py", "cli.py", "__main__.py", os.path.join("commands", "run.py"),
    os.path.join("runtime", "keras_imports.py"), os.path.join("contrib", "_hook.py")))


def _is_runner_frame(frame):
    return os.path.abspath(frame.filename) in _RUNNER_FILES


def _is_runpy_frame(frame):
    return (frame.filename.startswith("<frozen runpy")
            or os.path.basename(frame.filename) == "runpy.py")


def _strip_runner_frames(report, seen):
    """Removes the runner's frames from ``report`` and the exceptions it chains.

    The leading frames (runner, and runpy for ``-m``) are how the script was
    started; the --tf1 import hook's frames sit in the middle of any import.
    ``python SCRIPT`` shows neither.
    """
    if report is None or id(report) in seen:
        return
    seen.add(id(report))
    frames = list(report.stack)
    while frames and (_is_runner_frame(frames[0]) or _is_runpy_frame(frames[0])):
        frames.pop(0)
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in frames if not _is_runner_frame(frame)])
    for chained in (report.__cause__, report.__context__,
                    *(getattr(report, "exceptions", None) or ())):
        _strip_runner_frames(chained, seen)


def _print_user_traceback(error):
    """Prints ``error`` as ``python SCRIPT`` would: without the runner's frames."""
    report = traceback.TracebackException(
        type(error), error, error.__traceback__, compact=True)
    _strip_runner_frames(report, set())
    sys.stderr.write("".join(report.format()))


def own_errors():
    """tpu_compat's own error types: reported as one line with exit code 2.

    They are about configuration (the backend, the device layout, a bad
    variable or argument), not about the user's program.
    """
    errors = [_config.ConfigError]
    # Not imported means not raised (and importing it would import TensorFlow).
    backend = sys.modules.get("tpu_compat.runtime.backend")
    if backend is not None:
        errors += [backend.BackendUnavailableError, backend.EmulationTooLateError]
    pod_errors = sys.modules.get("tpu_compat.pod.errors")
    if pod_errors is not None:
        # A pod worker that did not start or went away (WorkerLostError).
        errors.append(pod_errors.PodError)
    return tuple(errors)


def print_own_error(error):
    """The one line tpu_compat prints for one of :func:`own_errors`."""
    pod_errors = sys.modules.get("tpu_compat.pod.errors")
    if pod_errors is not None and isinstance(error, pod_errors.PodError):
        # The pod's monitor thread may have printed this line already.
        pod_errors.report(str(error))
        return
    message = str(error)
    if not message.startswith("tpu-compat"):
        message = f"tpu-compat: error: {message}"
    print(message, file=sys.stderr)


EXIT_OWN_ERROR = 2


def _exit_code(error):
    """The process exit code ``python`` would give for SystemExit ``error``."""
    code = error.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _pod_failure_behind(error):
    """What really ended the program when it ran on an emulated pod, or None.

    A worker that died makes the step in flight fail with TensorFlow's gRPC
    error; the user is told which worker died instead (tpu_compat/pod/faults.py).
    """
    faults = sys.modules.get("tpu_compat.pod.faults")
    return faults.failure_behind(error) if faults is not None else None


def _exit_status(error):
    """Reports ``error``, which ended the program; returns the exit code."""
    if isinstance(error, SystemExit):
        return _exit_code(error)
    if isinstance(error, KeyboardInterrupt):
        _print_user_traceback(error)
        return 130
    if isinstance(error, own_errors()):
        print_own_error(error)
        return EXIT_OWN_ERROR
    _print_user_traceback(error)
    return 1


def _execute(run):
    try:
        run()
    except BaseException as error:  # pylint: disable=broad-except
        return _exit_status(_pod_failure_behind(error) or error)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def run_script(path, args=(), tf1=False):
    """Runs the file ``path`` as ``__main__`` with ``args``; returns its exit code."""
    if not os.path.isfile(path):
        raise RunError(f"cannot run {path!r}: no such file")
    with open(path, "rb") as handle:
        source = handle.read()
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes (< 3.12)
        # Python compiles the script before running anything, TensorFlow
        # included: report it the same way, with no frame of ours.
        _print_user_traceback(error)
        return 1
    _install(tf1)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": builtins,
                          "__loader__": None, "__spec__": None,
                          "__package__": None, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    return _execute(lambda: exec(code, main.__dict__))  # pylint: disable=exec-used


def run_module(module_name, args=(), tf1=False):
    """Runs ``python -m module_name args``; returns its exit code."""
    import runpy  # pylint: disable=import-outside-toplevel
    sys.path[0] = os.getcwd()
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise RunError(f"cannot run module {module_name!r}: no module of that name")
    _install(tf1)
    sys.argv = [spec.origin or module_name, *args]
    return _execute(lambda: runpy.run_module(module_name, run_name="__main__",
                                             alter_sys=True))
