"""Owns the connection to a PostgreSQL task store: opening it (psycopg 3, an optional extra,
imported only here), statements in the commands' SQLite text (pg_dialect translates them and
makes the rows), and transactions that survive a lost server:
retried after a growing pause (one line each; a run's Ctrl+C ends it) until RALPH_STORE_RETRY
seconds (default 300) have passed. Writes take one advisory lock, as SQLite's BEGIN IMMEDIATE
serializes writers (docs/contract/task-cli.md s.4); claims do not (skip locked). Not the schema
(pg_schema), no command."""
from __future__ import annotations

import os
import sys
import threading
import time

from ralphpy import signals
from ralphpy.tasks import pg_schema
from ralphpy.tasks.errors import TaskError
from ralphpy.tasks.pg_dialect import rows, translate
from ralphpy.tasks.store_url import redact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping, TypeVar

    T = TypeVar("T")

_WRITE_LOCK = 0x7461_736B  # "task": the writers' lock (claims skip it)
_PAUSES = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # then 8 s until the retry budget is spent
_DEFAULT_RETRY_S = 300.0
_CONNECT_TIMEOUT_S = 5


def driver_missing() -> str:
    """The one line a PostgreSQL store without its driver gets, naming what installs it."""
    return f"a postgresql:// task store needs psycopg: {install_hint()}"


def install_hint() -> str:
    """What installs psycopg for the Python running this: from a checkout `make setup` (its
    .venv, which ralph.py and scripts/task then use), under pipx an inject into ralph's own
    venv, else pip for this very interpreter. Neither ralph's distribution nor its import
    name is on the package index (and `ralph-py` there is another project), so no hint names
    an extra to install from it."""
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__)))))                   # <checkout>/lib/ralphpy/tasks/pg.py
    if os.path.isfile(os.path.join(checkout, "Makefile")) and os.path.isfile(
            os.path.join(checkout, "ralph.py")):
        return f"run `make setup` in {checkout}"
    if "pipx" in sys.prefix.split(os.sep):
        return "pipx inject ralphpy 'psycopg[binary]>=3.2'"
    return f"{sys.executable} -m pip install 'psycopg[binary]>=3.2'"


def _driver():
    try:
        import psycopg
    except ImportError:
        raise TaskError(driver_missing()) from None
    return psycopg


class _Cursor:
    """conn.cursor() of the commands: its row_factory is always Row."""
    row_factory = None

    def __init__(self, conn: "Connection") -> None:
        self._conn = conn

    def execute(self, sql: str, params=()):
        return self._conn.execute(sql, params)


# --- the connection ---------------------------------------------------------------------

class Connection:
    """What the commands call `conn`: execute, executemany, cursor, close; and the
    transactions db.write/db.read run on it."""
    dialect = "postgresql"

    def __init__(self, url: str, environ: Mapping[str, str], report: Callable[[str], object],
                 migrate: bool = True):
        self.url, self.report = url, report
        self.retry_s = _retry_budget(environ)
        self.raw = None
        self.migrate = migrate          # False: a reader that writes nothing (a dry run)
        self.schema = 0                 # the store's schema version, once connected
        self._one = (None, None)        # fetch_one's cursor and the raw connection it is on

    # -- statements
    def execute(self, sql: str, params=()):
        return self.raw.execute(translate(sql), params)

    def fetch_one(self, sql: str, params=()):
        """The statement's first row, or None. Its cursor is kept: psycopg's execute makes a
        new one each time, which costs a claim's client nearly as much as ralph's own work."""
        raw, cursor = self._one
        if raw is not self.raw:                 # first use, or a connection opened again
            self._one = raw, cursor = self.raw, self.raw.cursor()
        return cursor.execute(translate(sql), params).fetchone()

    def executemany(self, sql: str, rows):
        cursor = self.raw.cursor()
        cursor.executemany(translate(sql), list(rows))
        return cursor

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def close(self) -> None:
        if self.raw is not None:
            self.raw.close()
            self.raw = None

    # -- connecting and transactions, retried across a lost server
    def open(self) -> None:
        self._retrying(lambda: None)

    def transaction(self, body: Callable[[Connection], T], *, write: bool, lock: bool) -> T:
        """body in one transaction. A write without the writers' lock (a claim) runs without
        BEGIN: each of its statements is a transaction of its own, and the round trips of
        BEGIN and COMMIT are most of a claim's cost when many claimers share few cores."""
        if write and not lock:
            return self._retrying(lambda: body(self))

        def attempt() -> T:
            begin = "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            self.raw.execute(begin)
            try:
                if write and lock:
                    self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
                result = body(self)
                self.raw.execute("COMMIT")
                return result
            except BaseException:
                if not self.raw.closed:
                    try:
                        self.raw.execute("ROLLBACK")
                    except _driver().Error:
                        pass
                raise
        return self._retrying(attempt)

    def _retrying(self, action: Callable[[], T]) -> T:
        psycopg = _driver()
        spent, pauses = 0.0, iter(_PAUSES)
        while True:
            connecting = self.raw is None or self.raw.closed
            try:
                if connecting:
                    self._connect(psycopg)
                return action()
            except (psycopg.ProgrammingError, psycopg.InterfaceError) as err:
                if not connecting:
                    raise
                # a URL libpq cannot read ('[::1:5432', '?foo=bar', '%zz'): its message quotes
                # the URL, password and all
                raise TaskError(f"task store URL not usable: {redact(self.url)}: "
                                f"{_one_line(err)}") from None
            except psycopg.OperationalError as err:
                # A lost or restarting server, a refused connection, a deadlock: the whole
                # transaction again (nothing of a failed one was committed).
                reason = _one_line(err)
                if connecting and _refused(reason):
                    raise TaskError(f"task store refused the connection: {redact(self.url)}: "
                                    f"{reason}") from None
                if self.raw is not None and (self.raw.closed or self.raw.broken):
                    self.close()
                if spent >= self.retry_s:
                    raise StoreUnreachable(f"task store unreachable: {redact(self.url)}: "
                                           f"{reason}") from None
                # the last pause ends with the budget: a bound of 15 s is waited in full
                pause = min(next(pauses, _PAUSES[-1]), self.retry_s - spent)
                self.report(f"ralph task: task store unavailable ({reason}); "
                            f"retrying in {pause:g}s\n")
                with signals.safe_point():
                    time.sleep(pause)
                spent += pause

    def _connect(self, psycopg) -> None:
        raw = psycopg.connect(self.url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S,
                              row_factory=rows)
        try:
            found = pg_schema.version(raw)
            if found != pg_schema.KNOWN:
                pg_schema.check_known(found)
                if self.migrate:
                    pg_schema.migrate(raw)
                    found = pg_schema.KNOWN
            self.schema = found
        except BaseException:
            raw.close()
            raise
        self.raw = raw


def _retry_budget(environ: Mapping[str, str]) -> float:
    value = environ.get("RALPH_STORE_RETRY", "")
    try:
        return float(value) if value else _DEFAULT_RETRY_S
    except ValueError:
        raise TaskError(f"RALPH_STORE_RETRY must be a number of seconds, got: {value}") from None


class StoreUnreachable(TaskError):
    """The server could not be reached for RALPH_STORE_RETRY seconds: it may come back."""


# A server that answers a new connection with a FATAL error refuses this URL (a wrong
# password, an unknown database or role, no pg_hba.conf entry) and will refuse it again:
# waiting out RALPH_STORE_RETRY, and then a run's waits, would hide a typo behind hours of
# retries. libpq gives these errors no SQLSTATE, only the server's message; the FATAL errors
# of a server that is starting, stopping, recovering or full pass, and are waited out.
_PASSING_FATAL = ("the database system is", "too many clients", "connection slots are reserved",
                  "terminating connection")


# What libpq itself refuses before any server answers: no waiting makes these work.
_CLIENT_REFUSALS = ("fe_sendauth:", "invalid integer value", "invalid connection option",
                    "invalid sslmode value", "invalid URI", "invalid percent-encoded token")


def _refused(reason: str) -> bool:
    if any(text in reason for text in _CLIENT_REFUSALS):
        return True
    return "FATAL:" in reason and not any(text in reason for text in _PASSING_FATAL)


def _one_line(err: Exception) -> str:
    return redact(" ".join(str(err).split())) or type(err).__name__


# Open connections kept for the next call of the same process and thread: a runner or a
# long-lived claimer calls the task CLI in-process many times, and a new connection costs a
# server process and, over TCP, a password handshake; a kept one also keeps its prepared plans.
_kept: dict[tuple[str, int, int, bool], Connection] = {}


def connect(url: str, environ: Mapping[str, str], report: Callable[[str], object], *,
            migrate: bool = True) -> Connection:
    """An open connection; migrate=False leaves an older or new store's schema as it is (look
    at conn.schema before reading)."""
    key = (url, os.getpid(), threading.get_ident(), migrate)
    conn = _kept.get(key)
    if conn is None:
        conn = _kept[key] = Connection(url, environ, report, migrate)
    else:
        conn.report, conn.retry_s = report, _retry_budget(environ)
    conn.open()  # a kept connection the server dropped is opened again here
    return conn


def is_error(err: BaseException) -> bool:
    """A database error of the driver (only when it was imported: a SQLite run never is)."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(err, psycopg.Error)


def is_out_of_range(err: BaseException) -> bool:
    """A number beyond 64-bit integers (SQLSTATE 22003), as SQLite's OverflowError."""
    return is_error(err) and getattr(err, "sqlstate", None) == "22003"


__all__ = ["Connection", "connect", "driver_missing", "install_hint", "is_error",
           "is_out_of_range"]
