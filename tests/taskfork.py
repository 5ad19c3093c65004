"""The task CLI on a PostgreSQL store for the tests, without paying for psycopg's import at
every call. A task CLI process spends most of its start-up importing psycopg (about 130 ms of
CPU, a few ms of work on the store), and the task-CLI tests run once per store: hundreds of
calls. So `run_task` answers a call whose environment names a PostgreSQL store from a
fork of one warm process per test worker, which imported the task CLI and psycopg once.

Each call is still a process of its own, forked fresh from a process that never ran a command:
its argv, environment, working directory and stdin are the call's, its stdout, stderr and exit
status go back to the test, and it runs the task CLI's own entry point
(ralphpy.sources.entry.main, as scripts/task and ralph-task do). Only the interpreter's
start-up and the imports are shared. scripts/task's own start-up with a PostgreSQL store (its
search for psycopg) is tested through real processes elsewhere (tests/fleethelp.py's task
calls, tests/e2e/test_task_store_pg.py).

A stub agent run hundreds of times (tests/stubs/fleet-agent) makes its task calls through the
same warm process (`call`, its socket in $FLEET_TASKFORK), for the same reason.

    python tests/taskfork.py <socket>       the warm process: accepts calls on a unix socket
"""
from __future__ import annotations

import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SCHEMES = ("postgresql://", "postgres://")


def names_postgres(env: dict[str, str]) -> bool:
    """True when a task CLI with this environment answers from a PostgreSQL store."""
    return any(env.get(name, "").startswith(_SCHEMES) for name in ("RALPH_TASKS_DB", "RALPH_TASKS"))


def _send(sock: socket.socket, value) -> None:
    data = pickle.dumps(value)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv(sock: socket.socket):
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the task CLI process went away without an answer")
            buf += chunk
        return buf
    (size,) = struct.unpack("!Q", exactly(8))
    return pickle.loads(exactly(size))


def call(path: str, args: list[str], *, cwd: str, env: dict[str, str], stdin: bytes | None = None,
         timeout: float | None = None) -> tuple[int, bytes, bytes]:
    """One task call (`scripts/task <args>`) answered by the warm process listening on path:
    (exit status, stdout, stderr). socket.timeout after timeout seconds, the call killed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        _send(sock, {"args": list(args), "cwd": cwd, "env": dict(env), "stdin": stdin})
        pid = _recv(sock)
        try:
            return _recv(sock)
        except socket.timeout:
            os.kill(pid, signal.SIGKILL)
            raise


class Forker:
    """The warm process of one test worker, and the calls made through it."""

    def __init__(self, workdir: Path) -> None:
        self.path = str(workdir / "taskfork.sock")
        self.proc: subprocess.Popen | None = None
        self._starting = threading.Lock()           # calls may come from a test's threads

    def _start(self) -> None:
        with self._starting:
            if self.proc is not None:
                return
            proc = subprocess.Popen([sys.executable, __file__, self.path],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
            if proc.stdout.readline() != b"listening\n":
                raise RuntimeError(f"tests/taskfork.py exited with {proc.wait()}")
            self.proc = proc

    def address(self) -> str:
        """The socket of the warm process, started now if it is not yet: for a stub agent
        that makes its task calls through it (call)."""
        self._start()
        return self.path

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 60,
            input: str | None = None) -> subprocess.CompletedProcess:
        """What run_process(argv, ...) answers for this task call (argv: conftest.TASK_ARGV,
        then the command's arguments), with run_process's encoding."""
        stdin = None if input is None else input.encode("utf-8", "surrogateescape")
        try:
            code, out, err = call(self.address(), argv[3:], cwd=str(cwd), env=env, stdin=stdin,
                                  timeout=timeout)
        except socket.timeout:
            raise subprocess.TimeoutExpired(argv, timeout) from None
        return subprocess.CompletedProcess(argv, code, out.decode("utf-8", "surrogateescape"),
                                           err.decode("utf-8", "surrogateescape"))

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc.stdout.close()


# --- the warm process ---------------------------------------------------------------------

def _answer(conn: socket.socket) -> int:
    """In the forked child: run one call of the task CLI on this process's fds 0, 1 and 2."""
    request = _recv(conn)
    _send(conn, os.getpid())
    with tempfile.TemporaryDirectory(prefix="taskfork-") as tmp:
        names = [os.path.join(tmp, name) for name in ("in", "out", "err")]
        with open(names[0], "wb") as handle:
            handle.write(request["stdin"] or b"")
        fds = [os.open(os.devnull if request["stdin"] is None else names[0], os.O_RDONLY),
               os.open(names[1], os.O_WRONLY | os.O_CREAT), os.open(names[2], os.O_WRONLY | os.O_CREAT)]
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin, sys.stdout, sys.stderr = (open(fd, mode, encoding="utf-8", closefd=False)
                                             for fd, mode in ((0, "r"), (1, "w"), (2, "w")))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(ROOT / "scripts" / "task"), *request["args"]]
        code = 1
        try:
            from ralphpy.sources import entry
            entry.main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except BaseException:                          # a bug: the traceback, as a process shows it
            import traceback
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except OSError:
                    pass
        with open(names[1], "rb") as out, open(names[2], "rb") as err:
            _send(conn, (code, out.read(), err.read()))
    return code


def _serve(path: str) -> None:
    sys.path.insert(0, str(ROOT / "lib"))
    import pkgutil
    import importlib
    import psycopg  # noqa: F401  (the import every call would pay for)
    import ralphpy.sources
    import ralphpy.tasks
    for package in (ralphpy.tasks, ralphpy.sources):
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    server.settimeout(1.0)
    parent = os.getppid()
    sys.stdout.write("listening\n")
    sys.stdout.flush()
    while True:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            if os.getppid() != parent:                  # the test worker is gone: so are we
                sys.exit(0)
            continue
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            server.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = 1
            try:
                code = _answer(conn)
            finally:
                os._exit(code)
        conn.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:        # reap the calls that ended
                pass
        except ChildProcessError:
            pass


if __name__ == "__main__":
    _serve(sys.argv[1])
