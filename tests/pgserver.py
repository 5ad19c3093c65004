"""A throwaway PostgreSQL server for the tests (tests/conftest.py) and the benchmarks
(bench/fleet.py). Plain functions, no pytest, no psycopg for the server itself (its own psql
does the administration), so bench/ imports it as it is.

    cluster = start_cluster()                 # initdb + pg_ctl start in a temp directory
    name = cluster.create_database()
    cluster.url(name)            # postgresql://ralph@/<name>?host=<socket dir>&port=<port>
    cluster.password_url(name)   # postgresql://ralph_pw:secret@127.0.0.1:<port>/<name>
    cluster.restart()            # same data directory, same port
    cluster.destroy()            # pg_ctl stop -m immediate, temp directory removed

Authentication: the superuser `ralph` is trusted on the unix socket only; `ralph_pw` (not a
superuser) logs in over TCP on 127.0.0.1 with a scram-sha-256 password only. Databases made by
create_database() belong to `ralph_pw` (so it can create its tables in them), and what `ralph`
creates there is granted to `ralph_pw` (default privileges set in template1), so both URLs
work on one database.

initdb and the server refuse to run as root: as root, they run as `nobody`, in a temp
directory under /tmp given to that user. Nothing outlives the process that started the
cluster: destroy() runs from atexit, and a guard process (reading a pipe from its owner until
EOF) stops the server and removes the directory when the owner dies without atexit (SIGKILL,
os._exit). The server's own check of its lock file would also stop it within a minute of the
directory's removal.
"""
from __future__ import annotations

import atexit
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "ralph"
PASSWORD_ROLE = "ralph_pw"
PASSWORD = "secret"
SERVER_USER_WHEN_ROOT = "nobody"
INSTALL_HINT = "apt-get install postgresql"
_PROGRAMS = ("initdb", "pg_ctl", "postgres", "psql")
_START_ATTEMPTS = 5  # a free port can be taken between choosing it and the server binding it

# Runs in the guard process: waits for EOF on stdin (its owner closed the pipe or died), then
# stops the server if it still runs and removes the cluster's directory.
_GUARD = """
import json, os, shutil, subprocess, sys
sys.stdin.buffer.read()
pg_ctl, data, base, user = json.loads(sys.argv[1])
if os.path.exists(os.path.join(data, "postmaster.pid")):
    subprocess.run([pg_ctl, "stop", "-D", data, "-m", "immediate", "-w", "-t", "60"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   user=user and user[0], group=user and user[1], extra_groups=user and [])
shutil.rmtree(base, ignore_errors=True)
"""


class PgServerError(Exception):
    """The cluster could not be made or started; the message names the step and the log."""


def _version_key(path: Path) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name) or ["0"])


def find_bindir() -> Path | None:
    """The directory holding initdb, pg_ctl, postgres and psql: PATH first, then
    `pg_config --bindir`, then Debian's /usr/lib/postgresql/<version>/bin (highest version)."""
    def complete(folder: Path) -> bool:
        return all(os.access(folder / name, os.X_OK) for name in _PROGRAMS)

    on_path = shutil.which("initdb")
    if on_path and complete(Path(on_path).resolve().parent):
        return Path(on_path).resolve().parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            answer = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                                    timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            answer = ""
        if answer and complete(Path(answer)):
            return Path(answer)
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    return next((folder for folder in debian if complete(folder)), None)


def missing(need_driver: bool = True) -> str | None:
    """Why a cluster cannot be used on this machine, or None: no server binaries, no psycopg,
    or root without the `nobody` user to run the server as."""
    if find_bindir() is None:
        return f"PostgreSQL server binaries not found: {INSTALL_HINT}"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER_WHEN_ROOT)
        except KeyError:
            return f"running as root and no '{SERVER_USER_WHEN_ROOT}' user to run PostgreSQL as"
    if need_driver:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "psycopg is not installed: pip install 'psycopg[binary]' (the test extra has it)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update({"LC_ALL": "C", "LANG": "C", "HOME": str(home), "TZ": "UTC"})
    return env


def _traversable(path: Path) -> bool:
    """Every directory from / down to path can be entered by any user (o+x)."""
    return all(os.stat(part).st_mode & 0o001 for part in (path, *path.parents))


@dataclass
class Cluster:
    bindir: Path
    base: Path                            # holds data/, the socket and server.log
    port: int
    user: tuple[int, int] | None          # (uid, gid) the server runs as; None: as we are
    durable: bool = True                  # fsync on (see start_cluster)
    _guard: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    @property
    def socket_dir(self) -> Path:
        return self.base

    def url(self, dbname: str = "postgres") -> str:
        """The superuser over the unix socket (trust)."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def password_url(self, dbname: str = "postgres", password: str = PASSWORD) -> str:
        """The password role over TCP on 127.0.0.1 (scram-sha-256)."""
        return f"postgresql://{PASSWORD_ROLE}:{password}@127.0.0.1:{self.port}/{dbname}"

    def _as_server(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        uid, gid = self.user or (None, None)
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=_server_env(self.base), cwd=self.base, user=uid, group=gid,
                              extra_groups=[] if self.user else None)

    def pg_ctl(self, *args: str) -> subprocess.CompletedProcess:
        return self._as_server([str(self.bindir / "pg_ctl"), *args, "-D", str(self.data)])

    def postmaster_pid(self) -> int | None:
        """The server's pid from its lock file, or None when it is not running."""
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def start(self) -> None:
        for _ in range(_START_ATTEMPTS):
            self._write_conf()
            done = self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.log))
            if done.returncode == 0:
                return
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "could not bind" not in log and "could not create any TCP/IP sockets" not in log:
                break
            self.port = _free_port()
            self.log.unlink(missing_ok=True)
        raise PgServerError(f"pg_ctl start failed ({done.returncode}): "
                            f"{(done.stderr or done.stdout).strip()}; log: {self.log}")

    def stop(self) -> None:
        """Immediate shutdown (no checkpoint: nothing here needs to survive a crash-free
        stop, and it is the fastest). Does nothing when the server is not running."""
        if self.postmaster_pid() is None:
            return
        done = self.pg_ctl("stop", "-m", "immediate", "-w", "-t", "60")
        if done.returncode != 0 and self.postmaster_pid() is not None:
            raise PgServerError(f"pg_ctl stop failed: {(done.stderr or done.stdout).strip()}")

    def restart(self) -> None:
        """Stop and start on the same data directory and port: clients lose their connections."""
        port = self.port
        self.stop()
        self.start()
        if self.port != port:
            raise PgServerError(f"port {port} was taken while the server was down")

    def destroy(self) -> None:
        """Stop the server and remove its directory. Safe to call twice."""
        try:
            self.stop()
        finally:
            if self._guard is not None:
                self._guard.stdin.close()      # the guard finds the server gone and removes base
                self._guard.wait(timeout=120)
                self._guard = None
            shutil.rmtree(self.base, ignore_errors=True)

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run SQL as the superuser over the socket; returns psql's unaligned output."""
        done = subprocess.run(
            [str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", str(self.socket_dir), "-p", str(self.port), "-U", SUPERUSER, "-d", dbname,
             "-c", sql], capture_output=True, text=True, timeout=120, env=_server_env(self.base))
        if done.returncode != 0:
            raise PgServerError(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def create_database(self, name: str | None = None) -> str:
        """A new empty database owned by the password role; returns its name. Without fsync,
        copying template1's files (FILE_COPY) costs a third of logging each page (WAL_LOG)."""
        name = name or f"t_{uuid.uuid4().hex[:16]}"
        strategy = "" if self.durable else " STRATEGY FILE_COPY"
        self.psql(f'CREATE DATABASE "{name}" OWNER {PASSWORD_ROLE}{strategy}')
        return name

    def drop_database(self, name: str) -> None:
        """Drops it even while clients are still connected (they are disconnected)."""
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _write_conf(self) -> None:
        settings = {
            "listen_addresses": "'127.0.0.1'", "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "max_connections": "200",     # 16 bench claimers, xdist workers' tests
            "log_min_messages": "warning", "log_timezone": "'UTC'", "timezone": "'UTC'",
        }
        if not self.durable:
            # Not synchronous_commit = off: a commit would be answered before its WAL is
            # written, and a stop -m immediate (the tests' server crash) would lose it.
            settings.update({"fsync": "off", "full_page_writes": "off"})
        conf = "".join(f"{key} = {value}\n" for key, value in settings.items())
        self._write_owned(self.data / "postgresql.auto.conf", conf)

    def _write_owned(self, path: Path, text: str) -> None:
        path.write_text(text)
        if self.user:
            os.chown(path, *self.user)


def _make_base(user: tuple[int, int] | None) -> Path:
    root = Path(tempfile.gettempdir())
    if user and not _traversable(root):
        root = Path("/tmp")                # e.g. a TMPDIR under /root: nobody cannot enter it
        if not _traversable(root):
            raise PgServerError(f"no temp directory {SERVER_USER_WHEN_ROOT} can enter ({root})")
    base = Path(tempfile.mkdtemp(prefix="ralph-pg-", dir=root))
    base.chmod(0o755)
    if user:
        os.chown(base, *user)
    return base


def _start_guard(cluster: Cluster) -> subprocess.Popen:
    args = json.dumps([str(cluster.bindir / "pg_ctl"), str(cluster.data), str(cluster.base),
                       list(cluster.user) if cluster.user else None])
    return subprocess.Popen([sys.executable, "-S", "-c", _GUARD, args], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)    # a Ctrl-C to the tests is not its EOF


def start_cluster(durable: bool = True) -> Cluster:
    """initdb + start on a free port of 127.0.0.1; the caller (or atexit) destroys it.
    durable: fsync on, as in production; the benchmarks need real commit costs. The tests'
    servers run without (durable=False): a commit costs about the same (0.1 instead of 0.3 ms),
    but creating and dropping a test's database went from 0.2-0.35 s to 0.07 s (measured).
    The server's crash and restart tests still hold: the operating system keeps what an
    unsynced write left in its cache."""
    bindir = find_bindir()
    if bindir is None:
        raise PgServerError(f"PostgreSQL server binaries not found: {INSTALL_HINT}")
    user = None
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER_WHEN_ROOT)
        user = (entry.pw_uid, entry.pw_gid)
    cluster = Cluster(bindir, _make_base(user), _free_port(), user, durable)
    cluster._guard = _start_guard(cluster)
    atexit.register(cluster.destroy)
    try:
        _initdb(cluster)
        cluster.start()
        _add_roles(cluster)
    except BaseException:
        cluster.destroy()
        raise
    return cluster


def _initdb(cluster: Cluster) -> None:
    done = cluster._as_server([
        str(cluster.bindir / "initdb"), "-D", str(cluster.data), "-U", SUPERUSER,
        "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        "--auth-local=trust", "--auth-host=scram-sha-256"])
    if done.returncode != 0:
        raise PgServerError(f"initdb failed ({done.returncode}): {done.stderr.strip()}")
    cluster._write_owned(cluster.data / "pg_hba.conf",
                         f"local all {SUPERUSER} trust\n"
                         f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n")


def _add_roles(cluster: Cluster) -> None:
    cluster.psql(f"CREATE ROLE {PASSWORD_ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
    grants = " ".join(f"ALTER DEFAULT PRIVILEGES FOR ROLE {SUPERUSER} GRANT ALL ON {kind} "
                      f"TO {PASSWORD_ROLE};" for kind in ("TABLES", "SEQUENCES", "FUNCTIONS",
                                                          "SCHEMAS"))
    cluster.psql(grants, dbname="template1")  # copied into every database made from it


# The client sessions of the database a statement runs in, but the one running it: what a test
# ends to count, or to make lost, the connections a process keeps
# (`SELECT pg_terminate_backend(pid, 10000) FROM <OTHER_CLIENTS>`: ends them and waits until
# their server processes are gone).
OTHER_CLIENTS = ("pg_stat_activity WHERE datname = current_database() AND "
                 "backend_type = 'client backend' AND pid <> pg_backend_pid()")


def pg_query(url: str, sql: str, params: tuple | list | dict | None = None) -> list[tuple]:
    """Run one statement (autocommit) through psycopg; returns its rows ([] when none)."""
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


__all__ = ["Cluster", "OTHER_CLIENTS", "PgServerError", "find_bindir", "missing", "pg_query",
           "start_cluster"]
