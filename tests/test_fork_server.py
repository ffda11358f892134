"""The suite's fork server gives every child what a fresh process gives it.

tests/fork_server.py forks the suite's children (`tpu-compat run`, and every
child tpu_compat._process starts: pod workers, regress/verify's script
processes, benchmark programs) from a process that has imported TensorFlow;
this compares such children with fresh ones, field by field, so that a
difference shows here rather than as a puzzling failure elsewhere. That
includes what TensorFlow fixed at its import (oneDNN's kernels on or off, the
Keras ``tf.keras`` is, the devices): a forked child, a fresh `tpu-compat run`
and the suite's own process (the in-process ``tpu8`` tests) compute with the
same kernels. And: what the server cannot serve runs fresh, correctly; the
server listens on a Unix-domain socket only.
"""

import json
import os
import socket
import stat
import subprocess
import sys
import time

import pytest

import conftest
import fork_server
from tpu_compat import _fork_client, _process
from tpu_compat.regress import script_process

pytestmark = pytest.mark.requires_tf

_PROBE = """\
import importlib, json, os, sys
import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.python.util import _pywrap_util_port
print("RESULT " + json.dumps({
    "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "cwd": os.getcwd(),
    "path": sys.path, "stdin": sys.stdin.read(), "name": __name__,
    "env": {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    "tf_keras": tf.keras.Model is tf_keras.Model,
    "devices": [d.name for d in tf.config.list_logical_devices()],
    # Fixed when TensorFlow was imported (port.cc caches TF_ENABLE_ONEDNN_OPTS).
    "onednn": _pywrap_util_port.IsMklEnabled(),
    "keras": [tf.keras.__name__,
              importlib.import_module(tf.keras.__name__.partition(".")[0]).__version__],
    "draw": float(np.random.uniform()), "parent": os.getppid(),
}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def _result(completed):
    line = next(l for l in completed.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def server():
    """A server of this module's own, so that its tests see its runs only."""
    started = fork_server.ForkServer(
        fork_server.server_environment(conftest.subprocess_env()))
    yield started
    started.close()


def _env(server=None, **overrides):
    """subprocess_env whose children ask ``server`` (None: no server)."""
    env = conftest.subprocess_env(**overrides)
    env.pop(fork_server.SOCKET_VAR, None)
    if server is not None:
        env[fork_server.SOCKET_VAR] = server.path
    return env


def _run_cli(server, args, cwd, timeout=300):
    """conftest.run_cli's forked path, on this module's server."""
    env = _env(server)
    command = [sys.executable, "-m", "tpu_compat", *args]
    with _process.popen(command, import_env=fork_server.import_environment(args, env),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env=env, cwd=cwd) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _compared(runs):
    """The probes' views, with the fields that differ by nature taken out:
    each draw of NumPy's generator, the parent process (this one, or the server's)."""
    seen = [_result(run) for run in runs]
    draws = [view.pop("draw") for view in seen]
    assert len(set(draws)) == len(draws), "NumPy's generator must be seeded afresh in each child"
    forked = [view.pop("parent") != os.getpid() for view in seen]
    for view in seen:
        view["env"].pop(fork_server.SOCKET_VAR, None)
    return seen, forked


def test_a_forked_run_sees_what_a_fresh_process_sees(server, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    args = ("run", "--replicas", "2", str(probe), "3")
    forked = [_run_cli(server, args, str(tmp_path)) for _ in range(2)]
    fresh = _fresh(args, tmp_path)
    for run in forked + [fresh]:
        assert run.returncode == 3, run.stderr
        assert run.stderr.rstrip().endswith("to stderr")
    seen, was_forked = _compared(forked + [fresh])
    assert was_forked == [True, True, False]
    assert seen[0] == seen[1] == seen[2]
    assert seen[0]["tf_keras"] and seen[0]["keras"][1].startswith("2.")
    assert seen[0]["devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert seen[0]["onednn"] is False  # `tpu-compat run` turns oneDNN off
    # This process, where the tpu8 tests run, imported the same TensorFlow.
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.python.util import _pywrap_util_port  # pylint: disable=import-outside-toplevel
    assert _pywrap_util_port.IsMklEnabled() is seen[0]["onednn"]
    assert tf.keras.__name__ == seen[0]["keras"][0]


def _fresh(args, tmp_path):
    return subprocess.run([sys.executable, "-m", "tpu_compat", *args], capture_output=True,
                          text=True, env=_env(), cwd=str(tmp_path), timeout=300)


def test_tensorflow_children_forked_are_what_fresh_ones_are(server, tmp_path, monkeypatch):
    """Each shape of child tpu_compat starts, forked and fresh: a pod worker
    (``python -m MODULE``, started with start_tensorflow_child, own session,
    stdin a pipe), a benchmark program (``python SCRIPT``), a regress/verify
    script process (``python -m tpu_compat run --replicas N SCRIPT``)."""
    (tmp_path / "probe_module.py").write_text(_PROBE)
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)

    def worker_shape(env):
        process = _process.start_tensorflow_child(
            [sys.executable, "-m", "probe_module", "4"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(tmp_path))
        stdout, stderr = process.communicate(b"from the chief", timeout=300)
        return subprocess.CompletedProcess(process.args, process.returncode,
                                           stdout.decode(), stderr.decode())

    def benchmark_shape(env):
        finished = _process.run_tensorflow_child([sys.executable, str(probe), "5"], 300,
                                                 env=env, cwd=str(tmp_path))
        return subprocess.CompletedProcess([], finished.returncode, finished.stdout,
                                           finished.stderr)

    def regress_shape(env):
        # script_process builds its children's environment from this process's.
        monkeypatch.delenv(fork_server.SOCKET_VAR, raising=False)
        if fork_server.SOCKET_VAR in env:
            monkeypatch.setenv(fork_server.SOCKET_VAR, env[fork_server.SOCKET_VAR])
        result = script_process.run(script_process.Launch(str(probe), 2, 300, args=("6",),
                                                          cwd=str(tmp_path)))
        return subprocess.CompletedProcess([], result.returncode, result.stdout, result.stderr)

    for shape, code in ((worker_shape, 4), (benchmark_shape, 5), (regress_shape, 6)):
        runs = [shape(_env(server)), shape(_env())]
        for run in runs:
            assert run.returncode == code, (shape.__name__, run.stderr[-3000:])
        seen, forked = _compared(runs)
        assert forked == [True, False], shape.__name__
        assert seen[0] == seen[1], shape.__name__
        assert seen[0]["onednn"] is False and seen[0]["tf_keras"], shape.__name__
    assert seen[0]["stdin"] == ""  # regress: stdin is /dev/null
    assert seen[0]["devices"] == ["/device:CPU:0", "/device:CPU:1"]  # --replicas 2


# What a child was given, without importing TensorFlow: for the children the
# server declines, which python starts afresh. What a fresh process's
# TensorFlow fixes at import, given that environment, is compared with a forked
# child's above (test_a_forked_run_sees_what_a_fresh_process_sees and
# test_tensorflow_children_forked_are_what_fresh_ones_are: fresh runs there).
_ENVIRONMENT_PROBE = """\
import json, os, sys
print("RESULT " + json.dumps({
    "argv": sys.argv, "parent": os.getppid(), "tensorflow": "tensorflow" in sys.modules,
    "env": {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


def test_what_the_server_cannot_serve_runs_fresh_and_right(server, tmp_path):
    # Issue 32's CI budget: the probe imports no TensorFlow (two imports less);
    # "right" is the exit code, both streams, the arguments and the whole
    # environment as given, in a process of this one's (not the server's).
    probe = tmp_path / "probe.py"
    probe.write_text(_ENVIRONMENT_PROBE)
    cases = {
        # No server at that path: nothing listens.
        "unreachable": ([sys.executable, str(probe), "7"],
                        {fork_server.SOCKET_VAR: str(tmp_path / "no-socket")}),
        # An interpreter option: not a command shape the client asks for.
        "options": ([sys.executable, "-u", str(probe), "7"], {}),
        # Not there: python itself says so, as it does fresh.
        "missing script": ([sys.executable, str(tmp_path / "missing.py")], {}),
    }
    for name, (command, overrides) in cases.items():
        env = {**_env(server), **overrides}
        process = _process.popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env, cwd=str(tmp_path))
        stdout, stderr = process.communicate(timeout=300)
        assert not getattr(process, "_via_server", False), name
        if name == "missing script":
            assert process.returncode == 2 and "can't open file" in stderr, stderr
            continue
        assert process.returncode == 7, (name, stderr[-3000:])
        assert stderr.rstrip().endswith("to stderr"), (name, stderr[-3000:])
        view = _result(subprocess.CompletedProcess([], 7, stdout, stderr))
        assert view["parent"] == os.getpid() and not view["tensorflow"], name
        assert view["argv"] == [str(probe), "7"], name
        assert view["env"] == {k: v for k, v in env.items() if not k.startswith("PYTEST_")}, name


def test_siblings_past_the_cap_retire_the_least_recently_asked_for(tmp_path):
    """PYTHONHASHSEED (regress's seed) is fixed when the interpreter starts: a
    sibling server started with it forks the child, which has what the first
    server imported and hashes as a fresh one does. A new startup environment
    when the siblings are at their cap is served at once, forked (it once
    waited 30 s, then ran fresh, for every child): the sibling asked for least
    recently ends. Servers that import NumPy only, with a cap of 1: neither
    depends on TensorFlow (issue 32's CI budget: a sibling that imported
    TensorFlow cost a test of its own ~10 s of CPU)."""
    env = {**_env(), "_TPU_COMPAT_FORK_SIBLINGS": "1", "_TPU_COMPAT_FORK_SERVER_IMPORTS": "numpy"}
    cheap = fork_server.ForkServer(env)
    code = "import os, sys; print(hash('tpu_compat'), os.getppid(), 'numpy' in sys.modules)"
    try:
        for seed in ("1", "2", "1"):
            request = {**env, "PYTHONHASHSEED": seed, fork_server.SOCKET_VAR: cheap.path}
            started = time.monotonic()
            with _process.popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                text=True, env=request) as process:
                stdout, _ = process.communicate(timeout=120)
            assert time.monotonic() - started < 20, seed
            assert process._via_server, process.fork_declined  # pylint: disable=protected-access
            hashed, parent, numpy_imported = stdout.split()
            fresh = subprocess.run([sys.executable, "-c", "print(hash('tpu_compat'))"],
                                   env={**env, "PYTHONHASHSEED": seed}, capture_output=True,
                                   text=True, check=True, timeout=60)
            assert hashed == fresh.stdout.strip(), seed
            assert int(parent) != os.getpid() and numpy_imported == "True"
        # The retired siblings ended (each removes its socket): one runs.
        deadline = time.monotonic() + 30
        while len(_sibling_sockets(cheap)) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_sibling_sockets(cheap)) == 1, _sibling_sockets(cheap)
    finally:
        cheap.close()


def _sibling_sockets(server):
    return [name for name in os.listdir(server.directory)
            if name.startswith(fork_server.SOCKET_NAME + "-")]


def test_a_server_that_does_not_answer_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    """Nothing a client waits for is unbounded: a server whose backlog is full
    (a blocking connect would wait for it to accept) or that never answers
    costs at most HANDSHAKE_SECONDS, then the child runs fresh, and the
    reason is kept."""
    monkeypatch.setattr(_fork_client, "HANDSHAKE_SECONDS", 1.0)
    for case in ("backlog full", "no answer"):
        path = str(tmp_path / case.replace(" ", "-"))
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen(0)
            waiting = []
            while case == "backlog full":  # connections nobody accepts, till one would block
                waiting.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
                waiting[-1].setblocking(False)
                try:
                    waiting[-1].connect(path)
                except BlockingIOError:
                    break
            started = time.monotonic()
            with _process.popen([sys.executable, "-c", "print('fresh')"], stdout=subprocess.PIPE,
                                text=True, env={**_env(), fork_server.SOCKET_VAR: path}) as process:
                stdout, _ = process.communicate(timeout=60)
            for connection in waiting:
                connection.close()
        assert time.monotonic() - started < 15, case
        assert stdout == "fresh\n" and not process._via_server, case  # pylint: disable=protected-access
        # A full backlog refuses a bounded (non-blocking) connect at once.
        reason = "BlockingIOError" if case == "backlog full" else "TimeoutError"
        assert process.fork_declined.startswith(reason), (case, process.fork_declined)


def test_a_pythonpath_with_a_directory_added_is_forked_by_the_server_itself(server, tmp_path):
    """The pytest plugin's children run with pytester's directory added to
    PYTHONPATH: the server forks them itself, with the sys.path a fresh
    process makes, unless the added directory holds a module the server
    imported (a fresh process would import that one)."""
    plain, shadowing = tmp_path / "plain", tmp_path / "shadowing"
    for folder in (plain, shadowing):
        folder.mkdir()
        (folder / "helper_module.py").write_text("")
    (shadowing / "numpy").mkdir()
    server_env = fork_server.server_environment(conftest.subprocess_env())
    own = server_env["PYTHONPATH"]
    for pythonpath, agrees in (
            (os.pathsep.join([str(plain), own]), True),
            (os.pathsep.join([own, str(plain)]), True),
            (os.pathsep.join([str(shadowing), own]), False),
            (str(plain), False)):  # the server's entries left out
        request = {**server_env, "PYTHONPATH": pythonpath}
        found = fork_server.startup_difference(request, server_env, imported={"numpy", "tensorflow"})
        assert (found is None) is agrees, pythonpath

    code = "import json, os, sys; print(json.dumps([sys.path, os.getppid()]))"
    siblings = _sibling_sockets(server)
    views = []
    for socket_path in (server.path, None):
        env = _env(server) if socket_path else _env()
        env["PYTHONPATH"] = os.pathsep.join([str(plain), env["PYTHONPATH"]])
        with _process.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=str(tmp_path)) as process:
            views.append(json.loads(process.communicate(timeout=120)[0]))
    (forked_path, forked_parent), (fresh_path, fresh_parent) = views
    assert forked_path == fresh_path and str(plain) in fresh_path
    assert forked_parent != os.getpid() == fresh_parent
    assert _sibling_sockets(server) == siblings  # no sibling started for it


def test_children_are_served_at_once_and_killed_as_popen_kills(server, tmp_path):
    """A child that waits on its stdin does not hold back another; killpg ends it."""
    env = _env(server)
    waiting = _process.start_tensorflow_child(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, env=env)
    quick = _process.run_tensorflow_child([sys.executable, "-c", "print('quick')"], 300, env=env)
    assert quick.returncode == 0 and quick.stdout == "quick\n", quick
    assert waiting._via_server and waiting.poll() is None  # pylint: disable=protected-access
    assert os.getpgid(waiting.pid) == waiting.pid  # its own session, as Popen makes it
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(timeout=0.5)
    _process.kill_group(waiting)
    assert waiting.wait(timeout=60) == -9
    waiting.stdin.close()
    assert conftest.process_gone(waiting.pid)


def test_the_server_listens_on_a_unix_socket_only(server):
    assert stat.S_ISSOCK(os.stat(server.path).st_mode)
    assert stat.S_IMODE(os.stat(server.directory).st_mode) == 0o700
    inodes = set()
    for fd in os.listdir(f"/proc/{server._process.pid}/fd"):  # pylint: disable=protected-access
        target = os.readlink(f"/proc/{server._process.pid}/fd/{fd}")  # pylint: disable=protected-access
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    unix = {}
    with open("/proc/net/unix", encoding="utf-8") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            unix[fields[6]] = fields[7] if len(fields) > 7 else ""
    # The kernel keeps the name it was bound to; it listens before the rename.
    assert server.path + ".binding" in [unix.get(inode) for inode in inodes]
    for table in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6"):
        with open(f"/proc/net/{table}", encoding="utf-8") as handle:
            network = {line.split()[9] for line in handle.readlines()[1:]}
        assert not inodes & network, table


def test_a_forked_run_past_its_timeout_is_killed_as_subprocess_run_kills(server, tmp_path):
    probe = tmp_path / "sleeper.py"
    probe.write_text("import time\ntime.sleep(600)\n")
    quick = tmp_path / "quick.py"
    quick.write_text("print('quick')\n")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        _run_cli(server, ("run", "--replicas", "1", str(probe)), str(tmp_path), timeout=3)
    assert raised.value.timeout == 3
    # The server reaped the killed child and is still of use.
    again = _run_cli(server, ("run", "--replicas", "1", str(quick)), str(tmp_path))
    assert again.stdout == "quick\n", again


@pytest.mark.parametrize("args,overrides,expected", [
    (("run", "x.py"), {}, True),
    (("run", "x.py"), {"TF_CONFIG": "{}", "TPU_COMPAT_NUM_REPLICAS": "2"}, True),
    (("run", "x.py"), {"TF_USE_LEGACY_KERAS": "1"}, True),
    (("run", "x.py"), {"TF_USE_LEGACY_KERAS": "0"}, False),
    (("run", "x.py"), {"TF_ENABLE_ONEDNN_OPTS": "0"}, True),
    (("run", "x.py"), {"TF_ENABLE_ONEDNN_OPTS": "1"}, False),
    (("run", "x.py"), {"TF_CPP_MIN_LOG_LEVEL": "0"}, False),
    (("run", "x.py"), {"PYTHONPATH": "/elsewhere"}, False),
    (("run", "x.py"), {"OMP_NUM_THREADS": "1"}, False),
    (("scan", "x.py"), {}, False),
    # doctor reports whether TensorFlow was imported before it looked: always fresh.
    (("doctor",), {}, False),
    (("doctor",), {"TF_USE_LEGACY_KERAS": None}, False),
    (("matrix", "--format", "json"), {}, True),
    (("verify", "x.py"), {}, False),
])
def test_runs_that_depend_on_how_a_process_starts_go_fresh(args, overrides, expected):
    env = conftest.subprocess_env()
    server_env = fork_server.server_environment(env)
    request = {**env, **overrides}
    request = {name: value for name, value in request.items() if value is not None}
    assert fork_server.forkable(args, request, server_env) is expected


def test_the_server_imports_tensorflow_in_what_the_runner_exports_before_its_import():
    from tpu_compat import runner
    exported = {}
    runner.prepare_environment(environ=exported)
    server_env = fork_server.server_environment({})
    for name in ("TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS"):
        assert server_env[name] == exported[name], name
