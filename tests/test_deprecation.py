"""Legacy-API warnings: category, message, call site, and the policy switch."""

import subprocess
import sys
import textwrap
import warnings

import pytest

from tpu_compat import deprecation
from tpu_compat.deprecation import TPUCompatDeprecationWarning
from conftest import REPO_ROOT, run_cli, subprocess_env


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


def test_once_policy_warns_once_per_call_site_at_user_line(legacy_script):
    result = run_cli("run", "--replicas", "2", legacy_script)
    assert result.returncode == 0, result.stderr
    lines = _warning_lines(result.stderr)
    assert [line.split(":")[1] for line in lines] == ["6", "7"]
    assert all(line.startswith(legacy_script) for line in lines)


def test_always_policy_warns_every_call(legacy_script):
    result = run_cli("run", "--replicas", "2", "--warnings", "always", legacy_script)
    assert result.returncode == 0, result.stderr
    assert len(_warning_lines(result.stderr)) == 4


def test_error_policy_fails_the_run_at_first_legacy_use(legacy_script):
    result = run_cli("run", "--replicas", "2", legacy_script,
                     env={"TPU_COMPAT_WARNINGS": "error"})
    assert result.returncode == 1
    assert "finished" not in result.stdout
    assert "TPUCompatDeprecationWarning: Strategy.experimental_run_v2" in result.stderr
    assert f'File "{legacy_script}", line 6' in result.stderr


def test_python_W_option_with_our_category_fails_legacy_use(legacy_script):
    # -W resolves the category by importing tpu_compat at interpreter start:
    # that import must be cheap and must not override the user's filter.
    result = subprocess.run(
        [sys.executable, "-W", "error::tpu_compat.TPUCompatDeprecationWarning",
         "-m", "tpu_compat", "run", "--replicas", "2", legacy_script],
        capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT, timeout=600)
    assert result.returncode == 1, result.stderr
    assert "TPUCompatDeprecationWarning" in result.stderr
    assert "finished" not in result.stdout


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
