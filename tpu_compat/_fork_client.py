"""The client of a fork server that starts :mod:`tpu_compat._process`'s children.

When a child's environment has ``_TPU_COMPAT_FORK_SERVER`` (private, for the
test suite only, not a setting) naming a fork server's Unix-domain socket
(tests/fork_server.py's, in a 0700 directory; nothing listens on a network),
:func:`tpu_compat._process.popen` asks that server to fork the child from a
process that has imported TensorFlow once (about 5 s of CPU saved per child)
instead of exec'ing ``python``. It asks for commands of the shapes ``python -m
MODULE ...``, ``python SCRIPT ...`` and ``python -c CODE ...`` (this
interpreter, no interpreter options, none of Popen's options a fork could not
honour: ``preexec_fn``, ``pass_fds``, user and group, ...). What comes back
is a :class:`subprocess.Popen` (:class:`ForkedPopen`) with the usual surface:
``pid`` is the child's, in its own session when asked (``killpg`` works),
pipes and files as given (the child's standard streams travel to the server
as file descriptors, ``SCM_RIGHTS``), ``wait``/``poll``/``communicate`` get
the exit status the server sends. Whatever the server declines (an
environment that differs from its own in a variable read at startup, a
working directory that is not there, ...) or cannot answer (no server, or no
answer within :data:`HANDSHAKE_SECONDS`: every step until the child exists
is bounded) goes the ordinary way, exec, with the same arguments; the reason
is kept in :attr:`ForkedPopen.fork_declined`. Without the
variable nothing here runs: users never get a forked child.

The protocol, one connection per child: the client sends an 8-byte length,
then that many bytes of JSON (the command, environment, working directory,
session, ignored signals); the server answers one JSON line, ``{"ok":
true}``, ``{"declined": why}`` or ``{"redirect": path}`` (ask the server
there instead; once); on ``ok`` the client sends ``g`` (go) with its three
standard streams' descriptors, and the server forks and answers
``{"pid": N}``, later ``{"status": S}`` (the raw wait status) when the child
has ended. A client that goes away closes the connection; the server's
process that waits for the child then exits, so a child that asked the kernel
for a signal at its parent's death (``PR_SET_PDEATHSIG``) gets it, as it
would when its parent thread ended.
"""

import inspect
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

__all__ = ["FORK_SERVER_ENV", "ForkedPopen"]

FORK_SERVER_ENV = "_TPU_COMPAT_FORK_SERVER"
# How long the handshake may take, connecting, sending and the answer, the
# redirect included (a server may still be importing TensorFlow: a fresh
# child would spend that time importing it too); then exec. And how long the
# server may take to answer with the child's pid once told to fork.
HANDSHAKE_SECONDS = 120.0
_FORK_SECONDS = 60.0
# Popen's defaults that a forked child can honour; anything else goes exec.
_EXECUTE_CHILD = inspect.signature(subprocess.Popen._execute_child)  # pylint: disable=protected-access
_SERVABLE_DEFAULTS = {"shell": False, "preexec_fn": None, "pass_fds": (), "close_fds": True,
                      "restore_signals": True, "gid": None, "gids": None, "uid": None,
                      "umask": -1, "process_group": -1}
# Signals Popen's restore_signals sets back to their default before exec.
_RESTORED_AT_EXEC = ("SIGPIPE", "SIGXFZ", "SIGXFSZ")


def _command_shape(args):
    """Whether ``args`` is ``python -m M ...``, ``python -c C ...`` or ``python SCRIPT ...``
    with this interpreter and no interpreter options."""
    if len(args) < 2 or args[0] != sys.executable:
        return False
    if args[1] in ("-m", "-c"):
        return len(args) >= 3
    return not args[1].startswith("-")


class ForkedPopen(subprocess.Popen):
    """A Popen whose child the fork server forks; exec's when it will not."""

    def __init__(self, args, *, server, import_env=None, **popen_kwargs):
        self._server_path = server
        self._import_env = import_env
        self._connection = None  # to the server, until the child's status came
        self._replies = b""
        self._via_server = False  # the server forked the child
        self._status = None  # its wait status, once the server sent it
        self.fork_declined = None  # why the child was exec'd instead, if it was
        super().__init__(args, **popen_kwargs)

    def _execute_child(self, *arguments):  # pylint: disable=arguments-differ
        call = _EXECUTE_CHILD.bind(self, *arguments).arguments
        if not self._servable(call):
            self.fork_declined = "not a command the fork server runs"
        else:
            try:
                if self._fork(call):
                    return
            except (OSError, ValueError) as error:
                # No server there, no answer in time, or it broke before forking.
                self.fork_declined = f"{type(error).__name__}: {error}"
            self._disconnect()
        super()._execute_child(*arguments)

    @staticmethod
    def _servable(call):
        if any(call[name] != default for name, default in _SERVABLE_DEFAULTS.items()
               if name != "pass_fds") or call["pass_fds"]:
            return False
        args = call["args"]
        if isinstance(args, (str, bytes)) or call["executable"] not in (None, sys.executable):
            return False
        try:
            args = [os.fspath(arg) for arg in args]
        except TypeError:
            return False
        return all(isinstance(arg, str) for arg in args) and _command_shape(args)

    def _fork(self, call):
        """Asks the server to fork the child; False when it declines."""
        env = dict(os.environ if call["env"] is None else call["env"])
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            return False
        request = json.dumps({
            "args": [os.fspath(arg) for arg in call["args"]], "env": env,
            "import_env": env if self._import_env is None else dict(self._import_env),
            "cwd": os.path.abspath(os.fspath(call["cwd"] if call["cwd"] is not None else ".")),
            "new_session": bool(call["start_new_session"]), "pgid": os.getpgrp(),
            "ignored_signals": _ignored_signals()}).encode()
        streams = [own if fd == -1 else fd for own, fd in
                   zip((0, 1, 2), (call["p2cread"], call["c2pwrite"], call["errwrite"]))]
        server = self._server_path
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        for _ in range(2):  # the server may send it to another, once
            self._disconnect()
            self._connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            # connect blocks while the server's backlog is full, sendall while
            # it does not read: both bounded, as the answer is.
            self._connection.settimeout(max(0.001, deadline - time.monotonic()))
            self._connection.connect(server)
            self._connection.sendall(struct.pack("!Q", len(request)) + request)
            answer = self._reply(deadline - time.monotonic())
            server = answer.get("redirect")
            if not server:
                break
        if "ok" not in answer:
            self.fork_declined = answer.get("declined", f"unexpected answer {answer!r}")
            return False
        # The streams go with the go: a server that never answered holds none.
        socket.send_fds(self._connection, [b"g"], streams)
        # From here on the child may exist: no exec in its place.
        try:
            self.pid = int(self._reply(_FORK_SECONDS)["pid"])
        except (OSError, ValueError, KeyError) as error:
            raise subprocess.SubprocessError(f"the fork server failed to start "
                                             f"{call['args']!r}: {error}") from None
        self._via_server = self._child_created = True
        self._close_pipe_fds(call["p2cread"], call["p2cwrite"], call["c2pread"],
                             call["c2pwrite"], call["errread"], call["errwrite"])
        return True

    def _reply(self, timeout, poll=False):
        """The server's next JSON line, waiting at most ``timeout`` seconds (None:
        until it comes); with ``poll``, None when none has come."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while b"\n" not in self._replies:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._connection], [], [], remaining)[0]:
                if poll:
                    return None
                raise TimeoutError(f"no answer from the fork server within {timeout:g} s")
            chunk = self._connection.recv(4096)
            if not chunk:
                raise ConnectionError("the fork server closed the connection")
            self._replies += chunk
        line, _, self._replies = self._replies.partition(b"\n")
        return json.loads(line)

    def _disconnect(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _try_wait(self, wait_flags):
        """Popen's waitpid, answered by the server for a forked child."""
        if not self._via_server:
            return super()._try_wait(wait_flags)
        blocking = not wait_flags & os.WNOHANG
        if self._status is None:
            try:
                reply = self._reply(None, poll=False) if blocking else self._reply(0, poll=True)
                if reply is None:
                    return (0, 0)
                self._status = int(reply["status"])
            except (OSError, ValueError, KeyError):
                # The server's process that waited for the child was killed:
                # the status is lost. Reported as SIGKILL once the child is gone.
                while blocking and _alive(self.pid):
                    time.sleep(0.05)
                if _alive(self.pid):
                    return (0, 0)
                self._status = int(signal.SIGKILL)
            self._disconnect()
        return (self.pid, self._status)

    def _internal_poll(self, _deadstate=None, **_):  # pylint: disable=arguments-differ
        if not getattr(self, "_via_server", False):  # also from __del__ of a failed __init__
            return super()._internal_poll(_deadstate=_deadstate)
        if self.returncode is None and self._waitpid_lock.acquire(False):
            try:
                if self.returncode is None:
                    pid, status = self._try_wait(os.WNOHANG)
                    if pid == self.pid:
                        self._handle_exitstatus(status)
            finally:
                self._waitpid_lock.release()
        return self.returncode


def _ignored_signals():
    """The signals this process ignores that an exec'd child would ignore too."""
    found = set()
    for name in dir(signal):
        if name.startswith("SIG") and not name.startswith("SIG_") and name not in _RESTORED_AT_EXEC:
            try:
                if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN:
                    found.add(int(getattr(signal, name)))
            except (ValueError, OSError, TypeError):
                pass
    return sorted(found)


def _alive(pid):
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False
