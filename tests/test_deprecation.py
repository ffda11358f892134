"""Legacy-API warnings: category, message, call site, and the policy switch."""

import subprocess
import sys
import textwrap
import warnings

import pytest

from tpu_compat import deprecation
from tpu_compat.deprecation import TPUCompatDeprecationWarning
from conftest import REPO_ROOT, run_cli, subprocess_env

# interpreter: which line a warning names (stacklevel, frames) is the
# interpreter's (3.12 changed it once), so CI's Python 3.12 lane runs these too.
pytestmark = pytest.mark.interpreter


def _legacy_call():
    deprecation.warn_legacy("TPC001")  # stands in for an adapter method


def _user_code_calls_legacy_api():
    _legacy_call()  # the line a warning must point at


@pytest.fixture
def clean_filters():
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("ignore")  # a baseline the policy must override
        yield
    deprecation.apply_policy()


def test_category_is_a_deprecation_warning():
    assert issubclass(TPUCompatDeprecationWarning, DeprecationWarning)


def test_message_names_legacy_api_replacement_and_rule(clean_filters):
    deprecation.apply_policy("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", UserWarning)
        deprecation.apply_policy("always")
        _user_code_calls_legacy_api()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message == ("Strategy.experimental_run_v2 is a TF 1.15-2.3 API (removed in "
                       "TF 2.4); use strategy.run(fn, args=..., kwargs=...) instead. "
                       "[TPC001]")
    assert caught[0].category is TPUCompatDeprecationWarning


def test_policy_error_raises(clean_filters):
    deprecation.apply_policy("error")
    with pytest.raises(TPUCompatDeprecationWarning, match="TPC001"):
        _user_code_calls_legacy_api()


def test_policy_ignore_is_silent(clean_filters):
    with warnings.catch_warnings(record=True) as caught:
        deprecation.apply_policy("ignore")
        _user_code_calls_legacy_api()
    assert caught == []


def test_policy_only_filters_our_category(clean_filters):
    deprecation.apply_policy("error")
    ours = [f for f in warnings.filters if f[2] is TPUCompatDeprecationWarning]
    assert ours == [("error", None, TPUCompatDeprecationWarning, None, 0)]
    warnings.warn("TensorFlow's own deprecation", DeprecationWarning)  # not escalated


@pytest.mark.parametrize("policy, shown, raised", [
    ("error", False, True), ("ignore", False, False), ("always", True, False)])
def test_policy_governs_the_tpu_semantics_lint_too(clean_filters, policy, shown, raised):
    deprecation.apply_policy(policy)
    warning = deprecation.TPUSemanticsWarning("step.py:3: on a TPU, op Cast ...")
    with warnings.catch_warnings(record=True) as caught:
        if raised:
            with pytest.raises(deprecation.TPUSemanticsWarning, match="step.py:3: "):
                deprecation.warn_at(warning, "step.py", 3)
        else:
            deprecation.warn_at(warning, "step.py", 3)
    assert [(w.filename, w.lineno) for w in caught] == ([("step.py", 3)] if shown else [])


def test_each_policy_change_can_be_undone_exactly(clean_filters):
    def identities():
        return [id(entry) for entry in warnings.filters]
    original = identities()
    to_error = deprecation.apply_policy("error")
    # A user's own filter, equal to ours, must survive our undo.
    warnings.filterwarnings("always", category=TPUCompatDeprecationWarning)
    users = warnings.filters[0]
    to_always = deprecation.apply_policy("always")
    assert warnings.filters[0][0] == "always" and warnings.filters[0] is not users
    to_always()
    assert warnings.filters[0] is users
    assert [f[0] for f in warnings.filters if f[2] is TPUCompatDeprecationWarning] == [
        "always", "error"]
    warnings.filters.remove(users)
    to_error()
    assert identities() == original
    assert not any(f[2] is TPUCompatDeprecationWarning for f in warnings.filters)


def test_bad_policy_names_allowed_values():
    with pytest.raises(ValueError, match="warnings='loud' is not valid; allowed values: "
                                         "once, always, error, ignore"):
        deprecation.apply_policy("loud")


# The globals a warning's frame can have: a script run by `tpu-compat run`
# (no loader at all, like a notebook cell), one run by `python script.py`
# (__loader__ but __spec__ None) and an imported module (__spec__.loader).
def _globals_without_loader(path):
    return {"__name__": "__main__", "__file__": path, "__loader__": None, "__spec__": None}


def _globals_of_python_script(path):
    import importlib.machinery  # pylint: disable=import-outside-toplevel
    return {"__name__": "__main__", "__file__": path, "__spec__": None,
            "__loader__": importlib.machinery.SourceFileLoader("__main__", path)}


def _globals_of_imported_module(path):
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("users_module", path)
    return {"__name__": "users_module", "__file__": path, "__spec__": spec,
            "__loader__": spec.loader}


USERS_FILE = textwrap.dedent("""\
    import sys
    def caller():
        return sys._getframe(1)
    frame = caller()  # line 4: where the warning must point
""")


@pytest.mark.parametrize("make_globals, passes_globals", [
    (_globals_without_loader, False), (_globals_of_python_script, False),
    (_globals_of_imported_module, True)])
def test_a_warning_points_at_the_users_line_whatever_loader_the_globals_name(
        tmp_path, clean_filters, make_globals, passes_globals, monkeypatch):
    # Python 3.12's warn_explicit raises "Module globals is missing a
    # __spec__.loader" for the first kind of globals and gives a
    # DeprecationWarning (an error under -W error) for the second: such
    # globals must not reach it. The source line still comes from the file.
    path = str(tmp_path / "users_file.py")
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(USERS_FILE)
    module_globals = make_globals(path)
    exec(compile(USERS_FILE, path, "exec"), module_globals)  # pylint: disable=exec-used
    frame = module_globals["frame"]

    given = []
    warn_explicit = warnings.warn_explicit
    monkeypatch.setattr(warnings, "warn_explicit", lambda *args, **kwargs: (
        given.append(kwargs.get("module_globals")), warn_explicit(*args, **kwargs)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Python 3.12's complaint about the globals (ours is a DeprecationWarning too).
        warnings.filterwarnings("error", message="Module globals", category=DeprecationWarning)
        deprecation.warn_at_frame("legacy", TPUCompatDeprecationWarning, frame)
    assert given == [module_globals if passes_globals else None]
    assert [(w.category, w.filename, w.lineno) for w in caught] == [
        (TPUCompatDeprecationWarning, path, 4)]
    shown = warnings.formatwarning(caught[0].message, caught[0].category, path, 4)
    assert "frame = caller()  # line 4" in shown

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # --warnings=error, and -W error for the rest
        with pytest.raises(TPUCompatDeprecationWarning, match="legacy"):
            deprecation.warn_at_frame("legacy", TPUCompatDeprecationWarning, frame)


SCRIPT = textwrap.dedent("""
    import tensorflow as tf
    strategy = tf.distribute.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=''))
    for _ in range(3):
        strategy.experimental_run_v2(lambda: tf.constant(1.0))   # line 6
    strategy.experimental_run_v2(lambda: tf.constant(1.0))       # line 7
    print("finished: 1")
""")


@pytest.fixture(scope="module")
def legacy_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("deprecation") / "legacy.py"
    path.write_text(SCRIPT)
    return str(path)


def _warning_lines(stderr):
    return [line for line in stderr.splitlines() if "TPUCompatDeprecationWarning" in line]


@pytest.mark.requires_tf
def test_once_policy_warns_once_per_call_site_at_user_line(legacy_script):
    result = run_cli("run", "--replicas", "2", legacy_script)
    assert result.returncode == 0, result.stderr
    lines = _warning_lines(result.stderr)
    assert [line.split(":")[1] for line in lines] == ["6", "7"]
    assert all(line.startswith(legacy_script) for line in lines)
    # Each warning shows the user's source line under it (read from the file).
    stderr = result.stderr.splitlines()
    assert [stderr[stderr.index(line) + 1].strip() for line in lines] == [
        "strategy.experimental_run_v2(lambda: tf.constant(1.0))   # line 6",
        "strategy.experimental_run_v2(lambda: tf.constant(1.0))       # line 7"]


@pytest.mark.requires_tf
def test_always_policy_warns_every_call(legacy_script):
    result = run_cli("run", "--replicas", "2", "--warnings", "always", legacy_script)
    assert result.returncode == 0, result.stderr
    assert len(_warning_lines(result.stderr)) == 4


@pytest.mark.requires_tf
def test_error_policy_fails_the_run_at_first_legacy_use(legacy_script):
    result = run_cli("run", "--replicas", "2", legacy_script,
                     env={"TPU_COMPAT_WARNINGS": "error"})
    assert result.returncode == 1
    assert "finished" not in result.stdout
    assert "TPUCompatDeprecationWarning: Strategy.experimental_run_v2" in result.stderr
    assert f'File "{legacy_script}", line 6' in result.stderr


@pytest.mark.requires_tf
def test_python_W_options_fail_legacy_use_at_the_users_line(legacy_script):
    # One fresh interpreter for two -W claims (issue 32's CI budget: each was
    # a TensorFlow import of its own; --warnings error's failure at the user's
    # line is test_error_policy_fails_the_run_at_first_legacy_use's):
    # * -W naming our category resolves it by importing tpu_compat at
    #   interpreter start (Python ignores a -W it cannot resolve, with a
    #   line saying so); that import must be cheap and must not override the
    #   user's filter: the run fails under the default policy (once);
    # * under -W error::DeprecationWarning the program runs as __main__ without
    #   a loader (Python 3.12+ refused that in warn_explicit, with a
    #   DeprecationWarning of the warning machinery, then an error): what
    #   fails is our warning, at the user's line.
    result = subprocess.run(
        [sys.executable, "-W", "error::tpu_compat.TPUCompatDeprecationWarning",
         "-W", "error::DeprecationWarning", "-m", "tpu_compat", "run", "--replicas", "2",
         legacy_script],
        capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT, timeout=600)
    assert result.returncode == 1, result.stderr
    assert "Invalid -W option" not in result.stderr, result.stderr
    assert "finished" not in result.stdout
    assert "__spec__" not in result.stderr, result.stderr
    assert f'File "{legacy_script}", line 6' in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "tpu_compat.deprecation.TPUCompatDeprecationWarning: Strategy.experimental_run_v2")


@pytest.mark.requires_tf
def test_warning_inside_tf_function_points_at_the_users_source(tmp_path):
    script = tmp_path / "traced.py"
    script.write_text(textwrap.dedent("""
        import tensorflow as tf
        strategy = tf.distribute.TPUStrategy()

        @tf.function
        def step():
            return strategy.experimental_run_v2(lambda: tf.constant(1.0))  # line 7

        step()
    """))
    result = run_cli("run", "--replicas", "2", str(script))
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[:2] for line in _warning_lines(result.stderr)] == [[str(script), "7"]]


@pytest.mark.requires_tf
def test_device_warning_inside_tf_function_points_at_the_users_source(tmp_path):
    """Device-mapping warnings take the one warn path (autograph's copy mapped back)."""
    script = tmp_path / "traced_device.py"
    script.write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.function
        def step():
            with tf.device("/gpu:1"):  # line 6
                return tf.constant(1.0) + 1

        step()
    """))
    result = run_cli("run", "--replicas", "2", str(script))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "TPUCompatDeviceWarning" in line]
    assert [line.split(":")[:2] for line in lines] == [[str(script), "6"]], result.stderr
