"""`tpu-compat run` runs a script as `python SCRIPT` would."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import SCENARIOS, assert_one_error_line, run_cli, subprocess_env

# interpreter: `python SCRIPT`'s view (runpy, sys.argv, tracebacks) is the
# interpreter's, so CI's Python 3.12 lane runs these too.
pytestmark = [pytest.mark.requires_tf, pytest.mark.interpreter]

PROBE = os.path.join(SCENARIOS, "runner_probe.py")


def _python(*args, cwd):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=subprocess_env(), cwd=cwd, timeout=600)


def _result(stdout):
    line = next(l for l in stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("args,code", [((), 0), (("7",), 7), (("message",), 1),
                                        (("raise",), 1)])
def test_same_view_and_exit_code_as_python(args, code, tmp_path):
    plain = _python(PROBE, *args, cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", PROBE, *args, cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (code, code)
    assert _result(shimmed.stdout) == _result(plain.stdout)
    assert _result(shimmed.stdout)["path0"] == SCENARIOS
    if args == ("message",):
        assert shimmed.stderr.strip().endswith("leaving with a message")


def _traceback_of(stderr):
    """The traceback, without the log lines TensorFlow's import writes first."""
    start = stderr.index("Traceback (most recent call last):")
    return stderr[start:].strip().splitlines()


def _names_tpu_compat(text):
    """tpu_compat's package or module names in ``text``.

    A whole word only: CI's venvs live under ``/tmp/tpu_compat_ci.XXXX``, so
    every site-packages path there contains ``tpu_compat_ci``, which is not
    tpu_compat speaking.
    """
    return re.findall(r"(?<!\w)tpu_compat(?!\w)", text)


def test_traceback_shows_only_user_frames(tmp_path):
    plain = _python(PROBE, "raise", cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", PROBE, "raise", cwd=str(tmp_path))
    assert _traceback_of(shimmed.stderr) == _traceback_of(plain.stderr)
    assert not _names_tpu_compat("\n".join(_traceback_of(shimmed.stderr)))


def test_syntax_error_reads_as_under_python(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import tensorflow as tf\n\ndef train(:\n    pass\n")
    plain = _python(str(script), cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", str(script), cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (1, 1)
    # Nothing ran (TensorFlow not even imported): the whole of stderr is Python's.
    assert shimmed.stderr == plain.stderr
    assert plain.stderr.startswith(f'  File "{script}", line 3\n')


@pytest.mark.parametrize("helper,tf1", [
    ("raise ValueError('bad flag value')\n", False),
    ("raise ValueError('bad flag value')\n", True),   # --tf1 hooks every import
    ("def broken(:\n    pass\n", False),               # SyntaxError in the import
])
def test_error_while_importing_a_module_reads_as_under_python(helper, tf1, tmp_path):
    (tmp_path / "flags_helper.py").write_text("import os\n" + helper)
    script = tmp_path / "train.py"
    script.write_text("import sys\nimport flags_helper\nprint('not reached')\n")
    plain = _python(str(script), cwd=str(tmp_path))
    flags = ["--tf1"] if tf1 else []
    shimmed = run_cli("run", *flags, "--replicas", "1", str(script), cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (1, 1)
    assert _traceback_of(shimmed.stderr) == _traceback_of(plain.stderr)
    assert not _names_tpu_compat(shimmed.stderr)
    assert "not reached" not in shimmed.stdout


def test_emulation_too_late_is_one_line_exit_2(tmp_path):
    script = tmp_path / "reinstall.py"
    script.write_text("import tpu_compat\ntpu_compat.install(num_replicas=3)\n")
    result = run_cli("run", "--replicas", "2", str(script), cwd=str(tmp_path))
    assert_one_error_line(result, "this process already uses the cpu backend with 2 "
                                  "replica(s); the device layout is fixed once per process")


def test_bad_configuration_inside_the_script_is_one_line_exit_2(tmp_path):
    script = tmp_path / "policy.py"
    script.write_text("import tpu_compat\ntpu_compat.install(warnings='loud')\n")
    result = run_cli("run", "--replicas", "1", str(script), cwd=str(tmp_path))
    assert_one_error_line(result, "warnings='loud' is not valid; allowed values: "
                                  "once, always, error, ignore")


def test_script_arguments_pass_through_unchanged(tmp_path):
    shimmed = run_cli("run", "--replicas", "1", PROBE, "--replicas", "9", "-m", "x",
                      cwd=str(tmp_path))
    assert _result(shimmed.stdout)["argv"] == [PROBE, "--replicas", "9", "-m", "x"]


def test_run_module(tmp_path):
    package = tmp_path / "legacy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(
        "import sys\nprint('module argv:', sys.argv[1:])\nprint('name:', __name__)\n"
        "sys.exit(4)\n")
    result = run_cli("run", "--replicas", "1", "-m", "legacy_pkg.train", "a", "b",
                     cwd=str(tmp_path))
    assert result.returncode == 4, result.stderr
    assert "module argv: ['a', 'b']" in result.stdout
    assert "name: __main__" in result.stdout


# Fresh: the claim is that the runner sets the variable before TensorFlow's
# import, which a fork of the suite's fork server would have done for it.
@pytest.mark.fresh_process
def test_runner_selects_tf_keras_unless_user_chose(tmp_path):
    script = tmp_path / "keras_probe.py"
    script.write_text(
        "import os, tensorflow as tf\n"
        "print('legacy:', os.environ.get('TF_USE_LEGACY_KERAS'))\n"
        "print('keras:', tf.keras.__name__)\n")
    chosen = run_cli("run", "--replicas", "1", str(script), env={"TF_USE_LEGACY_KERAS": None})
    assert "legacy: 1" in chosen.stdout and "keras: tf_keras" in chosen.stdout, chosen.stderr
    kept = run_cli("run", "--replicas", "1", str(script), env={"TF_USE_LEGACY_KERAS": "0"})
    assert "legacy: 0" in kept.stdout and "keras: keras" in kept.stdout, kept.stderr


def test_tf1_flag_gives_compat_v1_to_program_code(tmp_path):
    script = tmp_path / "tf1_program.py"
    script.write_text(
        "import tensorflow as tf\n"
        "print('executing_eagerly:', int(tf.executing_eagerly()))\n"
        "w = tf.get_variable('w', shape=[], initializer=tf.constant_initializer(3.0))\n"
        "step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.square(w))\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    sess.run(step)\n"
        "    print('w:', sess.run(w))\n")
    result = run_cli("run", "--tf1", "--replicas", "1", str(script))
    assert result.returncode == 0, result.stderr
    assert "executing_eagerly: 0" in result.stdout
    assert "w: 0.0" in result.stdout  # 3 - 0.5 * 2 * 3


def test_colab_placeholder_address_when_emulating(tmp_path):
    script = tmp_path / "colab.py"
    script.write_text(
        "import os\nimport tensorflow as tf\n"
        "assert 'COLAB_TPU_ADDR' in os.environ\n"
        "resolver = tf.distribute.cluster_resolver.TPUClusterResolver("
        "tpu='grpc://' + os.environ['COLAB_TPU_ADDR'])\n"
        "tf.config.experimental_connect_to_cluster(resolver)\n"
        "tf.tpu.experimental.initialize_tpu_system(resolver)\n"
        "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
        "print('replicas:', strategy.num_replicas_in_sync)\n"
        "print('master:', repr(resolver.master()))\n")
    result = run_cli("run", "--replicas", "2", str(script), env={"COLAB_TPU_ADDR": None})
    assert result.returncode == 0, result.stderr
    assert "replicas: 2" in result.stdout and "master: ''" in result.stdout


def test_a_tf1_session_on_the_colab_tpu_address_is_local_when_emulating(tmp_path):
    # tensorflow/tpu's TF 1.14 Colabs listed the TPU's devices through
    # tf.Session('grpc://' + COLAB_TPU_ADDR); emulated, that address is the
    # placeholder (or one a resolver was given), and dialing it waited forever.
    script = tmp_path / "colab_session.py"
    script.write_text(
        "import os\nimport tensorflow as tf\n"
        "with tf.Session('grpc://' + os.environ['COLAB_TPU_ADDR']) as session:\n"
        "    print('devices:', len(session.list_devices()) > 0)\n"
        "    print('product:', session.run(tf.constant(2) * 3))\n"
        "resolver = tf.contrib.cluster_resolver.TPUClusterResolver('grpc://10.1.2.3:8470')\n"
        "with tf.Session('grpc://10.1.2.3:8470') as session:\n"
        "    print('given:', session.run(tf.constant(5)))\n")
    result = run_cli("run", "--tf1", "--replicas", "2", str(script), env={"COLAB_TPU_ADDR": None},
                     timeout=240)
    assert result.returncode == 0, result.stderr
    assert "devices: True" in result.stdout and "product: 6" in result.stdout
    assert "given: 5" in result.stdout


# -- as `python` runs a directory, a missing module and Ctrl-C (issue 23, item 10) ----------

# What a program sees of how it was started: the same under both.
_VIEW = (
    "import json, sys\n"
    "print('RESULT ' + json.dumps({'argv': sys.argv, 'file': __file__, 'name': __name__,\n"
    "    'package': __package__, 'spec': __spec__ and __spec__.name,\n"
    "    'origin': __spec__ and __spec__.origin, 'path0': sys.path[0],\n"
    "    'main': sys.modules['__main__'].__dict__ is globals()}))\n")


def _python_message(stderr):
    """Python's last line without its ``<python>:`` / ``tpu-compat run:`` prefix."""
    return stderr.strip().splitlines()[-1].split(": ", 1)[1]


def test_directory_with_main_runs_as_under_python(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(_VIEW)
    plain = _python("app", "x", cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", "app", "x", cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (0, 0), shimmed.stderr
    assert _result(shimmed.stdout) == _result(plain.stdout) == {
        "argv": ["app", "x"], "file": str(app / "__main__.py"), "name": "__main__",
        "package": "", "spec": "__main__", "origin": str(app / "__main__.py"),
        "path0": str(app), "main": True}


def test_zip_file_with_main_is_found_as_python_finds_it(tmp_path):
    # `python APP.zip` runs its __main__ from the zip as the first sys.path
    # entry; the runner finds it the same way (no TensorFlow needed to check).
    import zipfile  # pylint: disable=import-outside-toplevel
    from tpu_compat import runner  # pylint: disable=import-outside-toplevel
    archive = tmp_path / "app.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("__main__.py", _VIEW)
    entry, spec = runner._path_entry_main(str(archive))  # pylint: disable=protected-access
    assert (entry, spec.name, spec.origin) == (str(archive), "__main__",
                                               str(archive / "__main__.py"))
    assert runner._path_entry_main(PROBE) is None  # pylint: disable=protected-access


@pytest.mark.parametrize("argv", [
    ("empty_dir",),                      # can't find '__main__' module in '...'
    ("-m", "no_such_module_here"),       # No module named ...
    ("-m", "a_package"),                 # ... is a package and cannot be directly executed
    ("-m", "no_such_parent.child"),      # Error while finding module specification ...
])
def test_nothing_to_run_exits_1_in_pythons_words(argv, tmp_path):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "a_package").mkdir()
    (tmp_path / "a_package" / "__init__.py").write_text("")
    plain = _python(*argv, cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", *argv, cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (1, 1), shimmed.stderr
    assert shimmed.stderr.strip().startswith("tpu-compat run: ")
    assert _python_message(shimmed.stderr) == _python_message(plain.stderr)
    assert len(shimmed.stderr.strip().splitlines()) == 1


def test_uncaught_keyboard_interrupt_dies_by_sigint_as_under_python(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text("import atexit\n"
                      "atexit.register(lambda: print('exit handler ran', flush=True))\n"
                      "raise KeyboardInterrupt\n")
    plain = _python(str(script), cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", str(script), cwd=str(tmp_path))
    # Killed by SIGINT (a shell reports 130), after the program's exit handlers.
    assert (plain.returncode, shimmed.returncode) == (-signal.SIGINT, -signal.SIGINT)
    assert plain.stdout == shimmed.stdout == "exit handler ran\n"
    assert _traceback_of(shimmed.stderr) == _traceback_of(plain.stderr)


def test_relative_script_double_dash_and_closed_stdout_as_under_python(tmp_path):
    """Issue 33: python 3.9+ gives an absolute ``__file__`` (argv[0] as given), keeps
    a ``--`` after the script in sys.argv, and exits 0 after ``sys.stdout.close()``."""
    (tmp_path / "a.py").write_text(
        "import json, sys\n"
        "print('RESULT ' + json.dumps({'argv': sys.argv, 'file': __file__}))\n"
        "sys.stdout.close()\n")
    plain = _python("a.py", "--", "--help", cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", "a.py", "--", "--help", cwd=str(tmp_path))
    assert (plain.returncode, shimmed.returncode) == (0, 0), shimmed.stderr[-3000:]
    assert _result(shimmed.stdout) == _result(plain.stdout) == {
        "argv": ["a.py", "--", "--help"], "file": str(tmp_path / "a.py")}
    assert "Traceback" not in shimmed.stderr, shimmed.stderr[-3000:]


def test_module_keeps_a_double_dash_as_python_m_does(tmp_path):
    (tmp_path / "probe_mod.py").write_text(
        "import json, sys\nprint('RESULT ' + json.dumps(sys.argv[1:]))\n")
    plain = _python("-m", "probe_mod", "--", "x", cwd=str(tmp_path))
    shimmed = run_cli("run", "--replicas", "1", "-m", "probe_mod", "--", "x",
                      cwd=str(tmp_path))
    assert _result(shimmed.stdout) == _result(plain.stdout) == ["--", "x"]
