"""The test suite's fork server: every child that imports TensorFlow, forked.

Why: importing TensorFlow 2.21 costs about 5-6 s of CPU, and the suite starts
hundreds of processes that import it: `tpu-compat run` (other replica counts,
graph mode and the command line need a process of their own, see conftest),
and the processes those start, pod workers, regress/verify's script
processes, benchmark programs, the pytest plugin's child pytest. On CI's 2
cores those imports alone were a third of the budget. One server per pytest
process imports TensorFlow once, as `tpu-compat run` would: in
``tpu_compat._process.tensorflow_environment`` (what the runner exports before
its import, ``TF_USE_LEGACY_KERAS=1``, ``TF_ENABLE_ONEDNN_OPTS=0``: its Keras
and its kernels) and the suite's ``TF_CPP_MIN_LOG_LEVEL``, and forks a child
per request. Importing TensorFlow initializes no devices and starts no thread
of TensorFlow's (one of OpenBLAS's, whose library handles fork), so each child
still chooses its own device layout, as a fresh process does.

How children reach it: conftest exports ``_TPU_COMPAT_FORK_SERVER``, the path
of the server's Unix-domain socket (in a 0700 temporary directory; nothing
listens on a network address), so every child started through
``tpu_compat._process`` (``popen``, ``start_tensorflow_child``,
``run_in_own_group``...), at any depth, asks this server first
(tpu_compat/_fork_client.py has the protocol); conftest's ``run_cli`` forks
`tpu-compat run` and ``matrix`` through it too (not ``doctor``). The server forks a
process per connection, which reads the request and, unless it declines,
forks the child and waits for it, reporting its exit status: requests are
served concurrently, a pod's chief and its workers at once.

What the child is given so that it is ``python -m MODULE ARGS`` (or ``python
SCRIPT ARGS``, ``python -c CODE ARGS``) started afresh: the request's
environment, working directory, ``sys.argv`` and ``sys.orig_argv``, the
``sys.path`` python would give, the client's stdin, stdout and stderr (passed
as file descriptors) with Python's stream objects made afresh on them, its own
session when asked (else the client's process group where it can), every
signal at its default but those the client ignores and Python's own
(SIGINT's KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored), NumPy's global
generator reseeded from entropy (Python's own reseeds at fork), and the
variables TensorFlow's import sets. It exits through the interpreter's own
shutdown (atexit handlers, non-daemon threads). What it shares with its
siblings: the hash seed of ``str`` (Python fixes it at startup).

A request whose environment differs from the server's in a variable read
when the interpreter starts or TensorFlow is imported (``PYTHON*``, ``TF_*``
but ``TF_CONFIG``, ``XLA_*``, thread-pool and locale variables;
``PYTHONPATH`` compared as the ``sys.path`` it makes, which may add
directories that hold none of the modules the server imported) goes to a sibling
server started in that environment by the first such request (regress and
verify run their scripts with ``PYTHONHASHSEED``): up to 3 of them at once,
a new one retiring the one asked for least recently (no request waits for a
place; nothing a client waits for is unbounded).

What stays a fresh process (the server declines): another interpreter or interpreter options; a script or working
directory that is not there (the fresh process reports it as python does);
and every test marked ``fresh_process`` (its children do not see the server):
the claims about how a process starts. ``TPU_COMPAT_TEST_FORK_SERVER=0`` turns
the server off for a whole run.

Its children are not children of the processes that asked for them, so
/proc shows another parent and the server's command line: :func:`children_of`
and :func:`command_line` tell tests what a fresh process would show.
"""

import contextlib
import gc
import hashlib
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWITCH_VAR = "TPU_COMPAT_TEST_FORK_SERVER"
SOCKET_VAR = "_TPU_COMPAT_FORK_SERVER"  # tpu_compat._fork_client.FORK_SERVER_ENV
SOCKET_NAME = "socket"
CHILDREN_DIR = "children"
# The server runs this file: importing tpu_compat in it before TensorFlow would
# leave tpu_compat modules in every forked child, which a fresh python process
# does not start with. So the client functions below import it when called,
# and the server never does.

# Read when the interpreter starts or TensorFlow (NumPy, OpenBLAS, oneDNN) is
# imported: a request must agree with the server on these.
_STARTUP_PREFIXES = ("PYTHON", "TF_", "XLA_", "LD_", "OMP_", "KMP_", "MKL_", "OPENBLAS_",
                     "CUDA_", "LC_", "LANG", "HDF5_", "TPU_ML_PLATFORM",
                     "ENABLE_RUNTIME_UPTIME_TELEMETRY")
# Read later, by tpu_compat or the program.
_READ_AFTER_STARTUP = ("TF_CONFIG",)
_DIFFERS = " differs from the server's"
# Servers for other startup environments running at once, at most (each
# imported TensorFlow: about 570 MB). tests/test_fork_server.py sets fewer.
_MAX_SIBLINGS = int(os.environ.get("_TPU_COMPAT_FORK_SIBLINGS", "3"))
# What a server imports before it forks: TensorFlow. test_fork_server's tests
# of the siblings' bookkeeping start servers that import NumPy only (cheap).
_IMPORTS = os.environ.get("_TPU_COMPAT_FORK_SERVER_IMPORTS", "tensorflow")
if _IMPORTS not in ("tensorflow", "numpy"):
    raise ValueError(f"_TPU_COMPAT_FORK_SERVER_IMPORTS={_IMPORTS!r}: expected tensorflow or numpy")
# How long a handler waits for the first server's answer and the sibling's socket.
_SIBLING_SECONDS = 30.0
# How long the handshake with a client may take (it sends at once).
_REQUEST_SECONDS = 60.0


def _startup_variable(name):
    return name.startswith(_STARTUP_PREFIXES) and name not in _READ_AFTER_STARTUP


def _path_entries(value):
    """PYTHONPATH as the sys.path entries it makes (site removes duplicates)."""
    entries = []
    for entry in (value or "").split(os.pathsep):
        if entry and os.path.abspath(entry) not in entries:
            entries.append(os.path.abspath(entry))
    return entries


def startup_difference(env, server_env, set_by_import=None, imported=None):
    """The first variable read at startup in which ``env`` and ``server_env``
    differ, or None. A variable that TensorFlow's import sets (``set_by_import``)
    may be in ``env`` already, at that value: the client imported TensorFlow.
    With ``imported`` (the server's top-level modules), a PYTHONPATH that adds
    entries to the server's agrees with it when they shadow none of them."""
    set_by_import = set_by_import or {}
    for name in sorted({n for n in set(env) | set(server_env) if _startup_variable(n)}):
        mine, theirs = env.get(name), server_env.get(name)
        if name in set_by_import and mine in (None, set_by_import[name]):
            continue
        if name == "PYTHONPATH":
            mine, theirs = _path_entries(mine), _path_entries(theirs)
            if imported is not None and _adds_nothing_imported(mine, theirs, imported):
                continue
        if mine != theirs:
            return name
    return None


def _adds_nothing_imported(mine, theirs, imported):
    """Whether sys.path entries ``mine`` are ``theirs`` (in their order) plus
    directories that hold none of the ``imported`` top-level modules: a fresh
    process with ``mine`` then imports each of those from where the server did
    (the pytest plugin's children run with pytester's directory added: a
    sibling server per test, each importing TensorFlow, was the price)."""
    if [entry for entry in mine if entry in theirs] != theirs:
        return False
    for entry in mine:
        if entry in theirs or not os.path.exists(entry):
            continue
        if not os.path.isdir(entry):
            return False  # a zip file: not looked into
        try:
            names = {name.partition(".")[0] for name in os.listdir(entry)}
        except OSError:
            return False
        if names & imported:
            return False
    return True


def enabled(environ=None):
    value = (os.environ if environ is None else environ).get(SWITCH_VAR, "1")
    if value not in ("0", "1"):
        raise ValueError(f"{SWITCH_VAR}={value!r}: expected 0 or 1")
    return value == "1"


def server_environment(env):
    """The environment the server imports TensorFlow in, for requests like ``env``:
    ``env`` plus what the runner exports before TensorFlow's import."""
    from tpu_compat import _process  # pylint: disable=import-outside-toplevel
    return _process.tensorflow_environment(env)


# Commands that import TensorFlow as the environment they are given says.
# Not doctor: it reports whether TensorFlow is imported before it looks (and
# which Keras that fixed), which a forked child always has; a fresh one not.
_FORKED_AS_GIVEN = ("matrix",)


def import_environment(args, env):
    """The environment ``python -m tpu_compat ARGS`` imports TensorFlow in, for
    the commands run_cli forks; None for the others."""
    if not args or args[0] not in ("run",) + _FORKED_AS_GIVEN:
        return None
    # The runner exports its pre-import variables unless the user chose.
    return server_environment(env) if args[0] == "run" else dict(env)


def forkable(args, env, server_env):
    """Whether the server forks ``python -m tpu_compat ARGS`` with ``env``."""
    imported_in = import_environment(args, env)
    return imported_in is not None and startup_difference(imported_in, server_env) is None


class ForkServer:
    """One server process; its socket is :attr:`path`."""

    def __init__(self, env):
        _compile_package()
        self.env = dict(env)
        self.directory = tempfile.mkdtemp(prefix="tpu_compat_fork_")  # mode 0700
        self.path = os.path.join(self.directory, SOCKET_NAME)
        self._log = open(os.path.join(self.directory, "server.log"), "wb")
        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), self.path], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=self._log, env=self.env, cwd=REPO_ROOT)
        # It listens before it imports TensorFlow; requests wait for it then.
        deadline = time.monotonic() + 30
        while not os.path.exists(self.path) and self._process.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self):
        if self._process.poll() is None:
            self._process.stdin.close()  # the server exits at end of input
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        self._log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _forked_children(server_path):
    folder = os.path.join(os.path.dirname(server_path), CHILDREN_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    found = {}
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                found[int(name.partition(".")[0])] = json.load(handle)
    return found


def children_of(pid, server_path=None):
    """The processes started for ``pid``: its children, and those the server
    forked at its request (and has not seen end)."""
    server_path = server_path or os.environ.get(SOCKET_VAR)
    pids = [p for p, record in _forked_children(server_path).items()
            if record["parent"] == pid] if server_path else []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{name}/stat", encoding="utf-8") as handle:
                    if int(handle.read().rpartition(")")[2].split()[1]) == pid:
                        pids.append(int(name))
    return sorted(set(pids))


def command_line(pid, server_path=None):
    """``pid``'s command line as a fresh process's /proc/PID/cmdline gives it."""
    server_path = server_path or os.environ.get(SOCKET_VAR)
    record = _forked_children(server_path).get(pid) if server_path else None
    if record is not None:
        return list(record["args"])
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().decode(errors="replace").split("\0")[:-1]


# -- the server ------------------------------------------------------------------

class _Siblings:
    """The servers for other startup environments (regress and verify's
    scripts run with ``PYTHONHASHSEED``, the pytest plugin's child pytest with
    its own ``PYTHONPATH``), children of the first server, which starts one
    when a handler asks for an environment none serves, ends them, and keeps
    at most ``_MAX_SIBLINGS`` running: a new environment retires the one
    asked for least recently (it ends when its children have), never waits
    for a place. A handler asks over a datagram socket, passing the end of a
    socket pair on which the first server answers with the sibling's socket
    path (unique per start: a retired sibling removes only its own)."""

    def __init__(self, path):
        self.directory = os.path.dirname(path)
        self.asked, self.ask = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        # Set here, before any handler is forked: every copy of it shares it.
        self.ask.settimeout(_SIBLING_SECONDS)
        self._running = {}  # startup key -> (path, Popen), least recently asked first
        self._retired = []
        self._started = 0

    def path_for(self, import_env):
        """In a handler: the socket of the server for ``import_env`` (started
        if need be), or None when none answers within _SIBLING_SECONDS."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with mine, theirs:
            try:
                socket.send_fds(self.ask, [json.dumps(import_env).encode()], [theirs.fileno()])
                theirs.close()
                mine.settimeout(_SIBLING_SECONDS)
                path = mine.recv(4096).decode()
            except OSError:
                return None  # too large a message, or no answer in time
        # It listens before it imports TensorFlow: at once, when it started.
        deadline = time.monotonic() + _SIBLING_SECONDS
        while path and not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        return path if path and os.path.exists(path) else None

    def start_asked(self):
        """In the first server: answers a handler with the path of the server
        for the environment it asked for, started if none runs."""
        message, fds, _, _ = socket.recv_fds(self.asked, 1 << 20, 1)
        if not fds:
            return
        with socket.socket(fileno=fds[0]) as answer:
            answer.settimeout(_SIBLING_SECONDS)
            env = json.loads(message)
            key = _startup_key(env)
            path, process = self._running.pop(key, (None, None))
            if process is None or process.poll() is not None:
                path, process = self._start(key, env)
            self._running[key] = (path, process)  # the most recently asked for, last
            with contextlib.suppress(OSError):
                answer.sendall(path.encode())

    def _start(self, key, env):
        while len(self._running) >= _MAX_SIBLINGS:
            oldest = next(iter(self._running))
            process = self._running.pop(oldest)[1]
            process.stdin.close()  # it stops serving, and ends after its children
            self._retired.append(process)
        self._started += 1
        path = os.path.join(self.directory, f"{SOCKET_NAME}-{key}-{self._started}")
        with open(os.path.join(self.directory, "server.log"), "ab") as log:
            process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), path, "--sibling"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
                env=env, cwd=REPO_ROOT)
        return path, process

    def in_handler(self):
        """In a handler just forked: it holds no sibling's stdin (a retired
        sibling ends when the first server closes it) and reads no asks."""
        for process in [process for _, process in self._running.values()] + self._retired:
            with contextlib.suppress(OSError):
                process.stdin.close()
        self.asked.close()

    def close(self):
        processes = [process for _, process in self._running.values()] + self._retired
        for process in processes:
            with contextlib.suppress(OSError):
                process.stdin.close()
        for process in processes:
            with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
                process.wait(timeout=30)


def _startup_key(env):
    startup = {name: value for name, value in env.items() if _startup_variable(name)}
    return hashlib.sha256(json.dumps(startup, sort_keys=True).encode()).hexdigest()[:16]


def _compile_package():
    """Writes tpu_compat's bytecode (``__pycache__``, git-ignored) where it is stale.

    With PYTHONDONTWRITEBYTECODE (CI's machine sets it) no process writes it,
    so every child compiled tpu_compat's ~150 modules from source again: 0.45 s
    of a forked ``tpu-compat run``'s 0.75 s of CPU (issue 32's CI budget).
    Compiled by the client before its server starts, not in the server (its
    children must start with nothing a fresh process lacks: neither tpu_compat
    nor compileall loaded); every child and fresh process then reads it, as an
    installed package's. compileall skips what is up to date.
    """
    import compileall  # pylint: disable=import-outside-toplevel
    compileall.compile_dir(os.path.join(REPO_ROOT, "tpu_compat"), quiet=2)


def _serve(path, siblings):
    """Serves until its stdin ends; returns (request, fds) in a forked child."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The path appears when it listens (a connect between bind and listen is
    # refused): bound under another name, then renamed.
    listener.bind(path + ".binding")
    listener.listen(64)
    os.rename(path + ".binding", path)
    os.makedirs(os.path.join(os.path.dirname(path), CHILDREN_DIR), exist_ok=True)
    server_env = dict(os.environ)
    import numpy  # pylint: disable=import-outside-toplevel
    if _IMPORTS == "tensorflow":
        import tensorflow  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    set_by_import = {name: value for name, value in os.environ.items()
                     if server_env.get(name) != value}
    # After this file's directory: PYTHONPATH's entries and the interpreter's,
    # as site left them. A request's PYTHONPATH has the same entries, maybe
    # more (startup_difference): the child's come from it, then the rest.
    own_entries = _path_entries(server_env.get("PYTHONPATH"))
    base_path = [entry for entry in sys.path[1:] if entry not in own_entries]
    imported = frozenset(name.partition(".")[0] for name in sys.modules)
    # Out of the collector's sight: a child's collections and its exit then
    # leave these pages shared, not copied (a forked child's exit cost 1.3 s
    # of CPU, 0.3 s frozen; a fresh process's import and exit, 6-7 s).
    gc.freeze()
    control = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    watched = [listener, control] + ([siblings.asked] if siblings else [])
    while True:
        ready, _, _ = select.select(watched, [], [], 1.0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass  # handlers that ended
        if control in ready and not control.read(4096):
            break
        if siblings and siblings.asked in ready:
            try:
                siblings.start_asked()
            except Exception:  # pylint: disable=broad-except
                traceback.print_exc()  # into the server's log; the asker execs
                sys.stderr.flush()
        if listener not in ready:
            continue
        connection, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            control.close()
            if siblings:
                siblings.in_handler()
            target = None
            try:
                target = _handle(connection, (server_env, set_by_import, imported), path,
                                 siblings)
            except BaseException:  # pylint: disable=broad-except
                traceback.print_exc()  # into the server's log
                sys.stderr.flush()
                os._exit(1)  # pylint: disable=protected-access
            if target is None:
                os._exit(0)  # pylint: disable=protected-access
            return target + (set_by_import, base_path, numpy)
        connection.close()
    listener.close()
    with contextlib.suppress(OSError):
        os.unlink(path)
    if siblings:
        siblings.close()
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, 0)[0]:
            pass  # the last handlers: their CPU time counts as the suite's
    return None


def _receive(connection):
    """The request a client sent."""
    connection.settimeout(_REQUEST_SECONDS)
    header = b""
    while len(header) < 8:
        chunk = connection.recv(8 - len(header))
        if not chunk:
            raise ConnectionError("the client went away")
        header += chunk
    size = struct.unpack("!Q", header)[0]
    body = b""
    while len(body) < size:
        chunk = connection.recv(min(1 << 20, size - len(body)))
        if not chunk:
            raise ConnectionError("the client went away")
        body += chunk
    return json.loads(body)


def _go(connection):
    """The client's go and its three standard streams' descriptors, sent only
    once this server agreed: a server that never answers holds none of them
    (a pipe's write end held there would keep its reader from its end)."""
    go, fds, _, _ = socket.recv_fds(connection, 1, 3)
    if go == b"g" and len(fds) == 3:
        return fds
    for fd in fds:
        os.close(fd)
    return None  # the client gave up meanwhile: it runs the child itself


def _declined(request, server_env, set_by_import, imported):
    """Why this server does not fork ``request``, or None."""
    args = request["args"]
    if len(args) < 2 or (args[1] in ("-m", "-c") and len(args) < 3):
        return "not a python command this server runs"
    if args[0] != sys.executable:
        return f"another interpreter: {args[0]}"
    if args[1].startswith("-") and args[1] not in ("-m", "-c"):
        return f"interpreter option {args[1]}"
    if not os.path.isdir(request["cwd"]):
        return f"no working directory {request['cwd']}"
    if not args[1].startswith("-") and not os.path.exists(
            os.path.join(request["cwd"], args[1])):
        return f"no script {args[1]}"
    different = startup_difference(request["import_env"], server_env, set_by_import, imported)
    if different:
        return f"{different}{_DIFFERS}"
    return None


def _send(connection, **fields):
    connection.sendall(json.dumps(fields).encode() + b"\n")


def _handle(connection, server, path, siblings):
    """In a process forked per connection: forks the child and waits for it.

    ``server``: its environment, what TensorFlow's import set in it, and its
    top-level modules. Returns (request, fds) in the child, None in this
    process when done. A request for another startup environment is sent to
    its sibling server.
    """
    request = _receive(connection)
    why = _declined(request, *server)
    if why and why.endswith(_DIFFERS) and siblings:
        sibling = siblings.path_for(request["import_env"])
        if sibling:
            _send(connection, redirect=sibling)
            return None
    if why:
        _send(connection, declined=why)
        return None
    _send(connection, ok=True)
    fds = _go(connection)
    if fds is None:
        return None
    client = struct.unpack("3i", connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        connection.close()
        return request, fds
    for fd in fds:
        os.close(fd)
    record = os.path.join(os.path.dirname(path), CHILDREN_DIR, f"{pid}.json")
    try:
        with open(record, "w", encoding="utf-8") as handle:
            json.dump({"parent": client, "args": request["args"]}, handle)
        _send(connection, pid=pid)
        status = _wait(pid, connection)
        if status is not None:
            _send(connection, status=status)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(record)
    return None


def _wait(pid, connection):
    """The child's wait status; None when the client went away first (this
    process then ends, and a child that asked for PR_SET_PDEATHSIG gets it)."""
    connection.settimeout(None)
    child = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([child, connection], [], [])
            if child in ready:
                return os.waitpid(pid, 0)[1]
            if not connection.recv(1):
                return None
    finally:
        os.close(child)


def _reopen_standard_streams():
    """Python's stream objects on the new 0, 1, 2, as a fresh interpreter makes them."""
    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        old = getattr(sys, name)
        raw = io.open(fd, mode, buffering=0, closefd=False)
        interactive = os.isatty(fd)
        buffered = (io.BufferedReader if fd == 0 else io.BufferedWriter)(raw)
        stream = io.TextIOWrapper(buffered, encoding=old.encoding, errors=old.errors,
                                  line_buffering=fd == 2 or (fd == 1 and interactive))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _reset_signals(ignored):
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_IGN if signum in ignored else signal.SIG_DFL)
    # What Python sets at startup.
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGPIPE", "SIGXFSZ"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _become(request, fds, set_by_import, base_path, numpy):
    """Turns this forked child into the requested python command and runs it."""
    import runpy  # pylint: disable=import-outside-toplevel
    import types  # pylint: disable=import-outside-toplevel
    if request["new_session"]:
        os.setsid()
    else:
        with contextlib.suppress(OSError):
            os.setpgid(0, request["pgid"])
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    _reopen_standard_streams()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(set_by_import)
    _reset_signals(set(request["ignored_signals"]))
    entries = _path_entries(request["env"].get("PYTHONPATH"))
    base_path = entries + [entry for entry in base_path if entry not in entries]
    numpy.random.seed()  # a fresh process's global generator is seeded from entropy
    args = request["args"]
    sys.orig_argv = list(args)
    if args[1] == "-m":
        sys.path[:] = [os.getcwd()] + base_path  # `python -m` puts the working directory first
        sys.argv = ["-m", *args[3:]]  # runpy sets argv[0] to the module's file
        runpy.run_module(args[2], run_name="__main__", alter_sys=True)
    elif args[1] == "-c":
        sys.path[:] = [""] + base_path
        sys.argv = ["-c", *args[3:]]
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(args[2], "<string>", "exec"), main.__dict__)  # pylint: disable=exec-used
    else:
        script = args[1]
        sys.path[:] = [os.path.dirname(os.path.realpath(script))] + base_path
        sys.argv = list(args[1:])
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _TARGET = _serve(sys.argv[1], None if "--sibling" in sys.argv else _Siblings(sys.argv[1]))
    if _TARGET is not None:
        _become(*_TARGET)  # then the interpreter's own exit, as python's
