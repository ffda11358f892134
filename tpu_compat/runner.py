"""Run a legacy script unchanged, as ``python SCRIPT`` would, with routing on.

The script runs in this process as ``__main__``: ``sys.argv``, ``sys.path[0]``,
``__file__``, its exit code and its traceback (user frames only) are what
``python SCRIPT ARGS`` gives. Before TensorFlow is imported the runner picks
the Keras the legacy code expects (tf-keras, via ``TF_USE_LEGACY_KERAS=1``,
unless the user chose), then decides the backend, installs the routing and,
when emulating, provides the environment that Colab-era bring-up code reads.
"""

import atexit
import builtins
import importlib.util
import os
import pkgutil
import signal
import sys
import traceback
import types

from tpu_compat import _callsite, _config, settings, tf_support
from tpu_compat.exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE
# The runner's Keras choice, which doctor reports (and tests stub here).
from tpu_compat.settings import tf_keras_installed  # pylint: disable=unused-import

__all__ = ["NotRunnable", "RunError", "prepare_environment", "run_module", "run_script"]

LEGACY_KERAS_VAR = settings.LEGACY_KERAS_VAR
# Colab TPU notebooks read this and dial grpc://$COLAB_TPU_ADDR. When
# emulating, a placeholder keeps `assert 'COLAB_TPU_ADDR' in os.environ` true:
# the emulated worker's address, which the routed resolver never dials.
COLAB_TPU_ADDR_VAR = "COLAB_TPU_ADDR"


class RunError(Exception):
    """The script or module to run cannot be found (a usage error)."""


class NotRunnable(Exception):
    """What ``python`` refuses to run with exit code 1, worded as python words it.

    A directory or zip file without ``__main__``, a module ``-m`` cannot find,
    a package without ``__main__`` (``python`` exits 2 only for a file it
    cannot open, which stays a :class:`RunError`).
    """


def prepare_environment(flags=None, environ=None):
    """Sets the environment the runner promises, before TensorFlow is imported.

    Resolves ``tpu-compat run``'s settings once (``flags``, ``{row name: raw
    value or None}`` as :func:`settings.flags_given` reads them from the
    command line, win over the variables; each bad value is named as the flag
    or the variable it came from), then exports them for the program's library
    code and the processes it starts: what the flags gave, run's fidelity
    (``tpu``) and ``TF_USE_LEGACY_KERAS=1`` unless the user chose
    (tpu_compat/settings.py). Returns the names of the variables it set (for
    ``doctor`` and tests).
    """
    environ = os.environ if environ is None else environ
    flags = dict(flags or {})
    chosen = settings.resolve(settings.RUN, environ, flags=flags)
    changed = settings.export(chosen, environ)
    check_pod_settings(environ, hosts_flag=flags.get("num_hosts") is not None,
                       replicas_flag=flags.get("num_replicas") is not None)
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
    settings.read("pod_timeout", environ)
    port = settings.read("pod_port", environ)
    request = pod_config.requested_pod(environ)
    if request is None or request[1] is not None:
        return request  # one host, or TF_CONFIG's workers, whose cores are theirs
    if port is not None and port + request[0] - 1 > 65535:
        raise _config.ConfigError(
            f"{settings.POD_PORT_VAR}={port} is not valid for {request[0]} hosts "
            f"(ports {port} to {port + request[0] - 1}); expected a port number "
            f"from 1 to {65536 - request[0]}")
    replicas = settings.read("num_replicas", environ, settings.RUN)
    _config.cores_per_host(
        request[0], replicas or settings.DEFAULT_EMULATED_REPLICAS,
        hosts_name="--hosts" if hosts_flag else settings.HOSTS_VAR,
        replicas_name="--replicas" if replicas_flag else settings.REPLICAS_VAR,
        replicas_defaulted=replicas is None)
    return request


def _install(tf1):
    from tpu_compat import patching  # pylint: disable=import-outside-toplevel
    # --tf1 is a row of install()'s registry: TF 1.x behaviour, and the
    # program's `import tensorflow` is tf.compat.v1 (patching.import_router).
    handle = patching.install(tf1_imports=tf1)
    if handle.backend.emulated and COLAB_TPU_ADDR_VAR not in os.environ:
        from tpu_compat.runtime import resolver  # pylint: disable=import-outside-toplevel
        os.environ[COLAB_TPU_ADDR_VAR] = resolver.EMULATED_WORKER_ADDRESS
    _seed_random_generators()
    return handle


def _seed_random_generators():
    """Seeds Python's, NumPy's and TensorFlow's RNGs when TPU_COMPAT_SEED is set.

    `tpu-compat regress` and `verify` set it so that unseeded legacy scripts
    give the same numbers on every run. It runs before the script, so a script
    that seeds its own generators overrides these seeds, as it should.
    """
    seed = settings.read("seed", entry=settings.RUN)
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


# -- running ---------------------------------------------------------------

def _strip_runner_frames(report, error, seen):
    """Removes the runner's frames from ``report`` and the exceptions it chains.

    ``report`` is the TracebackException of ``error``. The leading frames
    (everything up to the runner's launch, and runpy for ``-m``) are how the
    script was started; the import router's frames sit in the middle of any
    import of the program. ``python SCRIPT`` shows neither (the decision is
    tpu_compat._callsite's).
    """
    if report is None or error is None or id(report) in seen:
        return
    seen.add(id(report))
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    # The report's stack is the traceback's frames, outermost first (cut short
    # only by sys.tracebacklimit).
    shown = _callsite.shown_in_program_traceback(frames[:len(report.stack)],
                                                 _LAUNCH_CODES)
    report.stack = traceback.StackSummary.from_list(
        [summary for summary, keep in zip(report.stack, shown) if keep])
    _strip_runner_frames(report.__cause__, error.__cause__, seen)
    _strip_runner_frames(report.__context__, error.__context__, seen)
    for chained_report, chained in zip(getattr(report, "exceptions", None) or (),
                                       getattr(error, "exceptions", None) or ()):
        _strip_runner_frames(chained_report, chained, seen)


def _print_user_traceback(error):
    """Prints ``error`` as ``python SCRIPT`` would: without the runner's frames."""
    report = traceback.TracebackException(
        type(error), error, error.__traceback__, compact=True)
    _strip_runner_frames(report, error, set())
    # ... and, where a package the era's TensorFlow brought is missing, the one-line fix.
    sys.stderr.write("".join(report.format()) + tf_support.missing_package_note(error))


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
    if pod_errors is not None:  # a pod worker that did not start or went away
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
    print(message if message.startswith("tpu-compat") else f"tpu-compat: error: {message}",
          file=sys.stderr)


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
        _interrupted.append(error)
        return EXIT_INTERRUPTED
    if isinstance(error, own_errors()):
        print_own_error(error)
        return EXIT_USAGE
    _print_user_traceback(error)
    return EXIT_FAILURE


def _execute(run, *args, **kwargs):
    """Runs the program: ``run(*args, **kwargs)``; returns its exit code. This frame
    and those above it are left out of the program's traceback (:data:`_LAUNCH_CODES`)."""
    try:
        run(*args, **kwargs)
    except BaseException as error:  # pylint: disable=broad-except
        return _exit_status(_pod_failure_behind(error) or error)
    finally:
        _flush_standard_streams()
    return 0


def _flush_standard_streams():  # unless closed: python exits 0 after sys.stdout.close()
    for stream in (stream for stream in (sys.stdout, sys.stderr) if stream is not None):
        if not getattr(stream, "closed", False):
            stream.flush()


# An uncaught KeyboardInterrupt ended the program: python then ends by SIGINT,
# after its exit handlers, so that the shell (and a parent process) knows the
# user pressed Ctrl-C (CPython's Modules/main.c, exit_sigint, since 3.8).
_interrupted = []


def _exit_by_sigint_if_interrupted():
    """An exit handler, registered before the program's (so it runs after them):
    dies by SIGINT when an uncaught KeyboardInterrupt ended the program."""
    if not _interrupted:
        return
    _flush_standard_streams()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    # Delivered to this process at once; should it not be, the exit code
    # stays 130 (128 + SIGINT), what a shell reports either way.


def _before_the_program():
    """What every run does before installing tpu_compat and running the program."""
    # Registered before TensorFlow's, the pod's and the program's exit
    # handlers, so it runs after them all (atexit runs the last registered
    # first); unregistered first, so it is there once.
    atexit.unregister(_exit_by_sigint_if_interrupted)
    atexit.register(_exit_by_sigint_if_interrupted)


def _new_main(**attributes):
    """A fresh ``__main__`` module with ``attributes``, installed in sys.modules."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__loader__": None, "__spec__": None,
                          "__package__": None, "__cached__": None, **attributes})
    sys.modules["__main__"] = main
    return main


def _compile_error(error):
    """Python compiles the script before running anything, TensorFlow included:
    a SyntaxError is reported the same way, with no frame of ours."""
    _print_user_traceback(error)
    return 1


def _path_entry_main(path):
    """``(entry, spec)`` of ``__main__`` when ``path`` is a directory or zip file.

    ``python PATH`` runs such a path as the first entry of sys.path, importing
    its ``__main__`` from there; None for a plain script. Raises NotRunnable,
    as python exits 1, when it has no ``__main__``.
    """
    entry = os.path.abspath(path)
    importer = pkgutil.get_importer(entry) if os.path.exists(entry) else None
    if importer is None:
        return None
    spec = importer.find_spec("__main__")
    if spec is None or spec.loader is None:
        raise NotRunnable(f"can't find '__main__' module in {entry!r}")
    return entry, spec


def run_script(path, args=(), tf1=False):
    """Runs the file ``path`` as ``__main__`` with ``args``; returns its exit code.

    A directory or zip file runs its ``__main__``, as ``python PATH`` does.
    """
    entry_main = _path_entry_main(path)
    if entry_main is not None:
        return _run_path_entry(path, entry_main, args, tf1)
    if not os.path.isfile(path):
        raise RunError(f"cannot run {path!r}: no such file")
    with open(path, "rb") as handle:
        source = handle.read()
    filename = os.path.abspath(path)  # as python 3.9+: __file__, tracebacks (not argv)
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes (< 3.12)
        return _compile_error(error)
    _before_the_program()
    _install(tf1)
    main = _new_main(__file__=filename)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    return _execute(exec, code, main.__dict__)


def _run_path_entry(path, entry_main, args, tf1):
    """``python DIR`` / ``python APP.zip``: DIR first on sys.path, its ``__main__`` run."""
    entry, spec = entry_main
    try:
        code = spec.loader.get_code("__main__")
    except (SyntaxError, ValueError) as error:
        return _compile_error(error)
    if code is None:
        raise NotRunnable(f"can't find '__main__' module in {entry!r}")
    _before_the_program()
    _install(tf1)
    main = _new_main(__file__=spec.origin, __loader__=spec.loader, __spec__=spec,
                     __package__="", __cached__=spec.cached)
    sys.argv = [path, *args]
    sys.path[0] = entry
    return _execute(exec, code, main.__dict__)


def _module_spec(module_name):
    """The spec ``python -m module_name`` runs (a package's ``__main__``), or
    NotRunnable worded as python's refusal (CPython's Lib/runpy.py,
    _get_module_details, words these)."""
    if module_name.startswith("."):
        raise NotRunnable("Relative module names not supported")
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, AttributeError, TypeError, ValueError) as error:
        hint = (f". Try using '{module_name[:-3]}' instead of '{module_name}' as the "
                f"module name." if module_name.endswith(".py") else "")
        raise NotRunnable(f"Error while finding module specification for {module_name!r} "
                          f"({type(error).__name__}: {error}){hint}") from None
    if spec is None:
        raise NotRunnable(f"No module named {module_name}")
    if spec.submodule_search_locations is not None:
        if module_name == "__main__" or module_name.endswith(".__main__"):
            raise NotRunnable("Cannot use package as __main__ module")
        try:
            return _module_spec(f"{module_name}.__main__")
        except NotRunnable as error:
            raise NotRunnable(f"{error}; {module_name!r} is a package and cannot be "
                              f"directly executed") from None
    if spec.loader is None:
        raise NotRunnable(f"{module_name!r} is a namespace package and cannot be executed")
    return spec


def run_module(module_name, args=(), tf1=False):
    """Runs ``python -m module_name args``; returns its exit code."""
    import runpy  # pylint: disable=import-outside-toplevel
    sys.path[0] = os.getcwd()
    spec = _module_spec(module_name)
    _before_the_program()
    _install(tf1)
    sys.argv = [spec.origin or module_name, *args]
    return _execute(runpy.run_module, module_name, run_name="__main__", alter_sys=True)


# The runner's functions that start the program: a traceback shows no frame up
# to the innermost of them (run_script: a SyntaxError found before the program
# ran; _execute: anything the program raised).
_LAUNCH_CODES = frozenset((run_script.__code__, run_module.__code__, _execute.__code__,
                           _run_path_entry.__code__))
