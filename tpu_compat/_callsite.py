"""Whose frame is this: the one place that tells the program's code from ours.

Four kinds of code sit on a legacy program's stack, and every feature that
reports to the user has to tell them apart the same way:

* **the program** (``__main__`` and any file outside the interpreter's library
  directories and outside tpu_compat),
* **tpu_compat** itself (its package directory),
* **libraries**: TensorFlow, tf_keras, Keras, tensorboard (tf.summary's ops) and
  tensorflow_estimator, and TensorFlow's tracing
  machinery (autograph, ``tf.function``), which is looked *through*,
* **the import system** (``<frozen importlib._bootstrap>``).

Served from here:

* legacy-API and device-mapping warnings: :func:`user_frame` (and
  :func:`autograph_source`, the user's line behind autograph's copy);
* fidelity errors: :func:`user_location`, the same walk over an op's
  creation traceback (and numerics-diff's ops, with :func:`current_frames`);
* the import router's scope: :func:`is_program_code`;
* the runner's traceback trimming: :func:`shown_in_program_traceback`,
  which recognises the runner's launch frame by its code object and
  tpu_compat's import plumbing by a module flag (:data:`PLUMBING_FLAG`),
  never by file name.

Imports nothing heavy: ``import tpu_compat`` loads it (through deprecation).
"""

import functools
import os
import sys
import threading

__all__ = ["PACKAGE_DIR", "PLUMBING_FLAG", "autograph_source", "current_frames",
           "is_program_code", "is_program_file", "library_roots", "package_dir",
           "shown_in_program_traceback", "user_frame", "user_location"]

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_IMPORT_SYSTEM = "<frozen importlib."  # importlib._bootstrap's frames' filename
# A module whose frames sit between the program's import statement and the
# module it imports (the import router and the routes it calls) sets
# ``__tpu_compat_plumbing__ = True``: `python SCRIPT` has no such frames, so
# the runner leaves them out of the program's traceback.
PLUMBING_FLAG = "__tpu_compat_plumbing__"


def package_dir(name):
    """The directory (ending in a separator) of the imported package ``name``, or None."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


def _library_dirs():
    tf_dir = package_dir("tensorflow")
    # tensorboard holds tf.summary's ops (histogram, image, ...): a finding
    # in its code belongs to the program line that called tf.summary.
    library_dirs = tuple(d for d in (tf_dir, package_dir("tf_keras"), package_dir("keras"),
                                     package_dir("tensorboard"),
                                     package_dir("tensorflow_estimator")) if d)
    tracing_dirs = tuple(os.path.join(tf_dir, "python", sub) + os.sep
                         for sub in ("autograph", "eager", "util")) if tf_dir else ()
    return library_dirs, tracing_dirs


# -- warnings: the frame a legacy use (or a device name) is reported at ---------

def user_frame(frame, direct=False):
    """The user's frame that used a legacy API, walking up from ``frame``.

    Frames of TensorFlow's function-tracing machinery (autograph,
    tf.function) are skipped: inside a ``tf.function`` the user's call
    reaches us through them. Frames of tpu_compat itself are skipped too,
    unless ``direct``: a hook wrapper passes the frame that called the legacy
    API, and when that is tpu_compat's own code (``strategy_by_era`` building the v1
    strategy, an adapter reading ``extended.steps_per_run``) the use is
    internal and does not warn. If the first remaining frame belongs to
    TensorFlow or Keras, the library called the legacy API itself (e.g.
    tf_keras's TF1 training loop calling ``make_dataset_iterator``), not the
    user: None says do not warn. The import system's frames are skipped too,
    and a hook read made by it directly is silent: for ``from
    tf.estimator import ModeKeys`` importlib first checks the name with
    ``hasattr``, then the user's own frame reads it (and that read warns).
    """
    library_dirs, tracing_dirs = _library_dirs()
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            if direct:
                return None
            frame = frame.f_back
            continue
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(PACKAGE_DIR):
            if direct:
                return None
        elif not filename.startswith(tracing_dirs):
            return None if filename.startswith(library_dirs) else frame
        frame = frame.f_back
    return None


def autograph_source(filename, lineno):
    """The user's ``(filename, lineno)`` behind an autograph-generated location, or None."""
    if "__autograph_generated_file" not in filename:
        return None
    try:
        from tpu_compat._tf_internals import tf_stack  # pylint: disable=import-outside-toplevel
        mapper = tf_stack._source_mapper_stacks[threading.get_ident()][-1]  # pylint: disable=protected-access
        origin = mapper.get_effective_source_map().get((filename, lineno))
    except Exception:  # pylint: disable=broad-except
        return None  # private API moved: fall back to the generated location
    return (origin[0], origin[1]) if origin else None


# -- fidelity errors: the user's line in an op's creation traceback ---------------

def current_frames():
    """The calling thread's frames (``filename``, ``lineno``), outermost first."""
    import traceback  # pylint: disable=import-outside-toplevel
    return traceback.extract_stack()[:-1]


@functools.lru_cache(maxsize=1)
def _stdlib_dir():
    import sysconfig  # pylint: disable=import-outside-toplevel
    return os.path.join(os.path.abspath(sysconfig.get_paths()["stdlib"]), "")


@functools.lru_cache(maxsize=1)
def _installed_package_dirs():
    import sysconfig  # pylint: disable=import-outside-toplevel
    paths = sysconfig.get_paths()
    return tuple(os.path.join(os.path.abspath(paths[key]), "")
                 for key in ("purelib", "platlib") if paths.get(key))


def _in_standard_library(path):
    """Python's own modules (``threading``, ``runpy``...), not the packages
    installed beside them in site-packages."""
    return path.startswith(_stdlib_dir()) and not path.startswith(_installed_package_dirs())


def user_location(frames, caller=None):
    """The ``(file, line)`` of the user's code in ``frames``, outermost first.

    ``frames`` have ``filename`` and ``lineno`` (an op's ``traceback``). The
    innermost frame outside TensorFlow, tf_keras, Keras, tpu_compat and the
    standard library (``threading``'s bootstrap of a replica's thread) wins,
    autograph's copies mapped back to the user's source; failing that, the
    innermost real file; failing that, ``("<unknown>", 0)``.

    ``caller``: for ``frames`` of a thread started for the work (a replica of
    a mirrored step, whose stack begins in ``threading``), the frames of the
    thread that asked for it (:func:`current_frames`), looked at after
    ``frames`` less the standard library's (a Keras step has no user frame
    in its replica's thread: the line calling ``fit`` is the user's then).
    """
    if caller is not None:
        stdlib = _stdlib_dir()
        frames = list(caller) + [frame for frame in frames or ()
                                 if not os.path.abspath(frame.filename).startswith(stdlib)]
    library_dirs, _ = _library_dirs()
    skipped = library_dirs + (PACKAGE_DIR,)
    fallback = None
    for frame in reversed(list(frames or ())):
        filename, lineno = frame.filename, frame.lineno
        origin = autograph_source(filename, lineno)
        if origin is not None:
            filename, lineno = origin
        if filename.startswith("<") or "__autograph_generated_file" in filename:
            continue
        fallback = fallback or (filename, lineno)
        path = os.path.abspath(filename)
        if not path.startswith(skipped) and not _in_standard_library(path):
            return filename, lineno
    return fallback or ("<unknown>", 0)


# -- import scope: which import statements are the program's ----------------------

_LIBRARY_ROOTS = None


def library_roots():
    """Directory prefixes (ending in a separator) of installed code."""
    global _LIBRARY_ROOTS
    if _LIBRARY_ROOTS is None:
        import sysconfig  # pylint: disable=import-outside-toplevel
        paths = sysconfig.get_paths()
        roots = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
        # tpu_compat's own package, not the directory holding it: a program or
        # test next to an editable checkout is still the program's code.
        roots.add(PACKAGE_DIR)
        _LIBRARY_ROOTS = tuple(os.path.abspath(r) + os.sep for r in roots if r)
    return _LIBRARY_ROOTS


def is_program_code(globals_):
    """Whether the module whose globals are ``globals_`` belongs to the program.

    The import router changes what the *program* imports (``--tf1``,
    ``tensorflow.python.keras``, ``tensorflow.contrib``) and never what
    TensorFlow, tf_keras or any other installed library imports for itself.
    """
    if not globals_:
        return False
    filename = globals_.get("__file__")
    if globals_.get("__name__") == "__main__":
        return True
    if not filename:
        return False
    return _is_program_file(filename)


def is_program_file(filename):
    """Whether ``filename`` is the program's (a real file outside installed code
    and outside tpu_compat)."""
    if not filename or filename.startswith("<"):
        return False
    return _is_program_file(filename) and not os.path.abspath(filename).startswith(PACKAGE_DIR)


@functools.lru_cache(maxsize=4096)
def _is_program_file(filename):
    # Cached: the router asks for every `import tensorflow...` statement run
    # after install(), TensorFlow's and tf_keras's own included.
    return not os.path.abspath(filename).startswith(library_roots())


# -- tracebacks: which frames `python SCRIPT` would show ---------------------------

def _is_runpy_frame(frame):
    filename = frame.f_code.co_filename
    return filename.startswith("<frozen runpy") or os.path.basename(filename) == "runpy.py"


def shown_in_program_traceback(frames, runner_codes):
    """Which of ``frames`` (a traceback's, outermost first) ``python SCRIPT`` shows.

    Returns one bool per frame. ``runner_codes`` are the code objects of the
    runner's functions that start the program: the innermost frame running
    one of them and every frame above it are how ``tpu-compat run`` started
    (the runner catches the program's exception, so its traceback starts
    there), and the runpy frames right below it are how ``-m`` starts a
    module. A traceback that does not pass through them (a chained exception
    caught inside the program) keeps its leading frames. Frames of the import plumbing
    (modules flagged :data:`PLUMBING_FLAG`) are dropped wherever they are.
    """
    frames = list(frames)
    start = 1 + max((i for i, frame in enumerate(frames) if frame.f_code in runner_codes),
                    default=-1)
    if start:
        while start < len(frames) and _is_runpy_frame(frames[start]):
            start += 1
    return [index >= start and frame.f_globals.get(PLUMBING_FLAG) is not True
            for index, frame in enumerate(frames)]
