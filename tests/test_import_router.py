"""The one import router (tpu_compat.patching.import_router) and the registry install() walks.

Foreign ``__import__`` wrappers and meta-path finders stacked around the router:
after uninstall() nothing of ours stays live, the foreign ones still work, and
a reinstall works again.
"""

import builtins
import importlib.abc
import importlib.machinery
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import tpu_compat
from conftest import REPO_ROOT, subprocess_env
from tpu_compat import patching
from tpu_compat.patching import changes as changes_lib
from tpu_compat.patching import import_router, registry
from tpu_compat.patching.rows import Call

# interpreter: the import system (meta-path finders, __import__) changes between
# Python versions, so CI's Python 3.12 lane runs these too.
pytestmark = pytest.mark.interpreter


def _program_import(statement):
    """Runs ``statement`` as the program's code (``__main__``); returns its namespace."""
    namespace = {"__name__": "__main__"}
    exec(statement, namespace)  # pylint: disable=exec-used
    return namespace


def _foreign_wrapper(calls):
    """A foreign ``__import__`` wrapper, as a profiler or another shim installs one."""
    below = builtins.__import__

    def foreign_import(name, globals=None, locals=None, fromlist=(), level=0):  # pylint: disable=redefined-builtin
        calls.append(name)
        return below(name, globals, locals, fromlist, level)

    builtins.__import__ = foreign_import
    return foreign_import, below


def _ours_live():
    """What of the router still answers the program's imports."""
    live = []
    try:
        _program_import("from tensorflow.contrib import training")
        live.append("tensorflow.contrib")
    except ModuleNotFoundError:
        pass
    try:
        namespace = _program_import("from tensorflow.python.keras import layers")
    except ImportError:  # TensorFlow's leftover package, without layers
        return live
    dense = getattr(namespace["layers"], "Dense", None)
    if dense is not None and dense.__module__.startswith("tf_keras"):
        live.append("tensorflow.python.keras")
    return live


@pytest.fixture
def uninstalled(tpu8):  # pylint: disable=redefined-outer-name
    del tpu8
    tpu_compat.uninstall()
    pristine = builtins.__import__
    yield pristine
    tpu_compat.uninstall()
    builtins.__import__ = pristine


@pytest.mark.filterwarnings("ignore::tpu_compat.TPUCompatDeprecationWarning")
def test_foreign_import_wrappers_around_the_router(uninstalled):
    pristine = uninstalled
    below_calls, above_calls = [], []
    foreign_below, _ = _foreign_wrapper(below_calls)  # installed before install()
    tpu_compat.install()
    assert set(_ours_live()) == {"tensorflow.contrib", "tensorflow.python.keras"}
    foreign_above, router_wrapper = _foreign_wrapper(above_calls)  # on top of the router
    assert getattr(router_wrapper, "__tpu_compat_router__", None) is not None
    tpu_compat.uninstall()
    # The router could not take itself out from under the foreign wrapper:
    # it stays in the chain, passing everything through.
    assert builtins.__import__ is foreign_above
    assert _ours_live() == []
    below_calls.clear()
    above_calls.clear()
    import json  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    assert above_calls == ["json"] and below_calls == ["json"]  # both still work
    # TensorFlow's own module, as under plain TF 2.
    namespace = _program_import("import tensorflow")
    assert namespace["tensorflow"] is sys.modules["tensorflow"]

    # Reinstalled: served again, the foreign wrappers still called.
    tpu_compat.install()
    assert set(_ours_live()) == {"tensorflow.contrib", "tensorflow.python.keras"}
    below_calls.clear()
    above_calls.clear()
    import json  # noqa: F401,F811  pylint: disable=unused-import,import-outside-toplevel,reimported
    assert above_calls == ["json"] and below_calls == ["json"]
    tpu_compat.uninstall()
    assert _ours_live() == []

    # The foreign wrapper goes away, restoring what it found (our passive
    # router): the next install() takes that out before wrapping, and its
    # uninstall() leaves exactly the foreign wrapper that was there first.
    builtins.__import__ = router_wrapper
    tpu_compat.install()
    assert builtins.__import__.__wrapped__ is foreign_below
    tpu_compat.uninstall()
    assert builtins.__import__ is foreign_below
    builtins.__import__ = pristine
    assert _ours_live() == []


class _ForeignFinder(importlib.abc.MetaPathFinder):
    """Serves one made-up package; also asks the finder it wraps, as some do."""

    def __init__(self, name, wrapped=None):
        self.name, self.wrapped, self.asked = name, wrapped, []

    def find_spec(self, fullname, path=None, target=None):
        self.asked.append(fullname)
        if self.wrapped is not None:
            spec = self.wrapped.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        if fullname != self.name:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader())


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.loaded = True


def test_foreign_meta_path_finders_around_the_router():
    """The router's finder (Keras patched on load) among foreign finders."""
    lock = threading.RLock()
    meta_path = list(sys.meta_path)
    changes = changes_lib.Changes()
    router = import_router.ImportRouter(changes, lock)
    patched = []
    router.patch_on_load("tpu_compat_test_pkg_a", patched.append)
    router.patch_on_load("tpu_compat_test_pkg_b", patched.append)
    (ours,) = [finder for finder in sys.meta_path if finder not in meta_path]
    # Foreign finders: one in front of ours, one behind that finds the
    # package (ours patches what it loads), one that holds ours and asks it.
    in_front = _ForeignFinder(None)
    source = _ForeignFinder("tpu_compat_test_pkg_a")
    wrapping = _ForeignFinder("tpu_compat_test_pkg_b", wrapped=ours)
    sys.meta_path.insert(0, in_front)
    sys.meta_path.append(source)
    try:
        import tpu_compat_test_pkg_a  # noqa: F401  pylint: disable=import-outside-toplevel,import-error
        assert [module.__name__ for module in patched] == ["tpu_compat_test_pkg_a"]
        assert tpu_compat_test_pkg_a.loaded and "tpu_compat_test_pkg_a" in in_front.asked
        sys.meta_path.insert(0, wrapping)
        changes.undo()
        assert ours not in sys.meta_path
        assert sys.meta_path[:2] == [wrapping, in_front] and sys.meta_path[-1] is source
        # The foreign finder holding ours gets no answer from it any more.
        assert ours.find_spec("tpu_compat_test_pkg_b") is None
        import tpu_compat_test_pkg_b  # noqa: F401  pylint: disable=import-outside-toplevel,import-error
        assert tpu_compat_test_pkg_b.loaded
        assert [module.__name__ for module in patched] == ["tpu_compat_test_pkg_a"]
    finally:
        sys.meta_path[:] = meta_path
        for name in ("tpu_compat_test_pkg_a", "tpu_compat_test_pkg_b"):
            sys.modules.pop(name, None)


def test_a_change_offered_after_undo_is_not_made():
    class Owner:  # pylint: disable=too-few-public-methods
        pass

    changes = changes_lib.Changes()
    assert changes.add(Owner, "first", 1)
    changes.replace(Owner, "first", 2)
    changes.add(Owner, "second", 3)
    changes.undo()
    assert not hasattr(Owner, "first") and not hasattr(Owner, "second")
    assert not changes.add(Owner, "late", 4) and not hasattr(Owner, "late")
    undone = []
    assert not changes.on_undo(lambda: undone.append(True))
    assert undone == [True]  # made too late: reverted at once


def test_the_registry_refuses_an_order_that_breaks_a_declared_constraint():
    registry.check_order()
    rows = {row.name: row for row in registry.PATCHES}
    assert rows["tensorflow hooks"].after  # each constraint says why
    assert all(why for row in registry.PATCHES for why in row.after.values())
    broken = [rows["tensorflow hooks"], rows["strategy devices"]]
    with pytest.raises(ValueError, match="'tensorflow hooks' must come after "
                                         "'strategy devices': the hooks wrap"):
        registry.check_order(broken)
    with pytest.raises(ValueError, match="'nowhere', which is not a row"):
        registry.check_order([registry.Patch("x", Call("os:getpid", gets=()), "",
                                            after={"nowhere": "y"}, targets=("m:x",))])
    # The redirects nest in table order; --tf1 only where install() is asked for it.
    assert [row.option for row in import_router.REDIRECTS] == ["tf1_imports", None, None, None, None]


def test_the_registry_refuses_two_rows_on_one_target_without_an_order():
    import dataclasses  # pylint: disable=import-outside-toplevel
    rows = {row.name: row for row in registry.PATCHES}
    assert "empty batches" in rows["numerics"].after  # both wrap gen_nn_ops.conv2d
    unordered = [rows["empty batches"], dataclasses.replace(rows["numerics"], after={})]
    with pytest.raises(ValueError, match="'empty batches' and 'numerics' both replace "
                                         "gen_nn_ops:conv2d; declare their order"):
        registry.check_order(unordered)


@pytest.mark.requires_tf
def test_the_rows_targets_are_what_their_payloads_replace():
    # pylint: disable=import-outside-toplevel
    from tpu_compat.fidelity import numerics
    from tpu_compat.runtime import empty_batches
    rows = {row.name: row for row in registry.PATCHES}
    assert rows["empty batches"].targets == tuple(
        f"gen_nn_ops:{name}" for name in empty_batches.CONVOLUTIONS)
    assert sorted(rows["numerics"].targets) == sorted(
        f"{row.module.rpartition('.')[2]}:{row.function}" for row in numerics.ROWS)


@pytest.mark.requires_tf
def test_tf1_row_is_installed_and_undone_by_install():
    # disable_v2_behavior is once per process: a fresh one.
    code = textwrap.dedent("""
        import builtins, sys
        from tpu_compat import patching
        pristine = builtins.__import__
        patching.install(tf1_imports=True)
        program = {"__name__": "__main__"}
        exec("import tensorflow as tf", program)
        library = {"__name__": "lib", "__file__": sys.modules["tensorflow"].__file__}
        exec("import tensorflow as tf", library)
        # tf.compat.v1 itself, whichever module name TensorFlow gave it (with
        # TF_USE_LEGACY_KERAS=1, run's, it is tensorflow.compat.v1).
        print("program:", program["tf"] is sys.modules["tensorflow"].compat.v1)
        print("library:", library["tf"].__name__)
        print("contrib:", hasattr(program["tf"], "contrib"))
        patching.install()  # installed already: no second wrapper
        patching.uninstall()
        exec("import tensorflow as tf", program)
        print("after uninstall:", program["tf"].__name__, builtins.__import__ is pristine)
        print("eager:", program["tf"].executing_eagerly())
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        cwd=REPO_ROOT, env=subprocess_env(TPU_COMPAT_NUM_REPLICAS=1))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "program: True", "library: tensorflow", "contrib: True",
        "after uninstall: tensorflow True",
        "eager: False"]  # TF 1.x behaviour is once per process, like the device layout


@pytest.mark.tf_free
def test_patching_imports_no_tensorflow():
    code = "import sys, tpu_compat.patching; print('tensorflow' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO_ROOT, env=subprocess_env(), timeout=300)
    assert result.stdout.strip() == "False", result.stderr
    assert os.path.basename(patching.__file__) == "__init__.py"
