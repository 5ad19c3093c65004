"""Owns the task calls of the loop (docs/contract/ralph-cli.md s.1 "Task command", "Task call"):
which task command to use (`$RALPH_TASK_CMD`, else the project's own task CLI), running it without a
shell with an explicit environment, and what a call yields (ok + stdout with trailing `\n`
removed; stderr discarded, but an in-process call's last line is kept and a PostgreSQL store's
retry lines reach `notice`); a call that found the store unreachable is made again for as long
as the caller's `store_lost` waits (docs/fleet.md). The embedded task CLI runs in-process
(`ralphpy.tasks.cli.main`), which keeps a build iteration's overhead to milliseconds; any
other command runs as a program (ralphpy.programs). Knows nothing of what the calls mean to
the loop (ralph.py's)."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, ContextManager, Mapping

from ralphpy import programs
from ralphpy.errors import EnvironmentFailure
from ralphpy.sources import registry


STORE_LOST = "Error: task store unreachable"     # the task CLI gave up on a lost server
STORE_RETRYING = "ralph task: task store unavailable"   # the task CLI waits for it


@dataclass(frozen=True)
class TaskResult:
    ok: bool            # exited 0
    output: str         # stdout, every trailing "\n" removed ("" when skipped or passed through)
    error: str = ""     # an in-process call's last stderr line (its `Error: ` line), else ""

    @property
    def store_lost(self) -> bool:
        """The call failed because the task store (a server) could not be reached."""
        return self.error.startswith(STORE_LOST)


def backlog_unreadable(peek: TaskResult) -> EnvironmentFailure:
    """ralph claims for the session (--assign, --prompt) and got no task after a failed
    `peek`: the backlog cannot be read (exit 8), not empty. `No tasks available` (exit 0)
    would end an unattended run over a broken task database as if it were done."""
    why = peek.error.removeprefix("Error: ") or "it exited non-zero"
    return EnvironmentFailure(f"cannot read the backlog: `task peek -n 10` failed: {why}; "
                              "no task was claimed, stopping")


@dataclass(frozen=True)
class TaskCommand:
    command: str                 # as the user gave it, or the absolute path of ours: RALPH_TASK_SCRIPT
    executable: str | None       # resolved path; None: not an executable file, every call is skipped
    embedded: bool               # our own CLI, importable: calls run in-process
    source: str = ""             # RALPH_TASKS names a task source: ralphpy.sources.cli answers
    # Wraps each in-process call (ralph.py passes signals.Guard.deferred, so a signal cannot
    # land in the middle of a database transaction); subprocess calls stay interruptible.
    critical: Callable[[], ContextManager[None]] = contextlib.nullcontext
    # A PostgreSQL store's retry lines of an in-process call ("task store unavailable ...;
    # retrying in 2s"), as they happen; None: discarded with the rest of its stderr.
    notice: Callable[[str], None] | None = None
    # A call that found the store unreachable (the task CLI's retry budget spent): called with
    # the result and how many times in a row; True: it waited, make the call again.
    store_lost: Callable[[TaskResult, int], bool] | None = None

    def script(self, ralph_dir: Path) -> str:
        """What an agent calls, RALPH_TASK_SCRIPT (s.9): a task command given, as given; the
        project's own CLI through the launcher under `ralph_dir` that starts it with the
        interpreter of this process, without a PATH lookup (sources.entry), else its path."""
        if not (self.embedded or self.source):
            return self.command
        from ralphpy.sources import entry
        return entry.write_launcher(ralph_dir, sys.executable, entry.own_lib()) or self.command

    def call(self, *args: str, env: Mapping[str, str]) -> TaskResult:
        """A task call whose output is captured."""
        return self._until_reachable(list(args), env, None)

    def _until_reachable(self, argv: list[str], env: Mapping[str, str],
                         out: BinaryIO | None) -> TaskResult:
        lost = 0
        while True:
            rc, data, error = self._run(argv, env, out)
            result = TaskResult(rc == 0, "" if out is not None else
                                data.rstrip(b"\n").decode("utf-8", "surrogateescape"), error)
            if not result.store_lost or self.store_lost is None:
                return result
            lost += 1
            if not self.store_lost(result, lost):
                return result

    def bound(self, env: Mapping[str, str]) -> Callable[[list[str]], tuple[bool, str]]:
        """This command as an `(argv) -> (ok, output)` callable over `env` (the TaskCall of the
        assignment modules): one mechanism for every task call of a run."""
        def call(argv: list[str]) -> tuple[bool, str]:
            result = self.call(*argv, env=env)
            return result.ok, result.output
        return call

    def passthrough(self, *args: str, env: Mapping[str, str], out: BinaryIO) -> TaskResult:
        """A task call whose stdout goes to `out` (s.1: `fail` and `agent deregister`).
        `out` must be flushed by the caller beforehand when it shares a file with ours."""
        return self._until_reachable(list(args), env, out)

    def _run(self, argv: list[str], env: Mapping[str, str],
             out: BinaryIO | None) -> tuple[int, bytes, str]:
        if self.embedded or self.source:
            with self.critical():
                return _run_in_process(argv, env, out, self.source, self.notice)
        if self.executable is None:
            return 127, b"", ""                 # [SH-COMPAT] missing task CLI: skipped, failed, empty
        return (*_run_subprocess(self.executable, argv, env, out), "")


class _Stderr:
    """An in-process call's stderr: kept for its last line, the store's retry lines passed
    on as they are written (the call may wait minutes for a lost server)."""

    def __init__(self, notice: Callable[[str], None] | None) -> None:
        self.text, self._notice = "", notice

    def write(self, text: str) -> int:
        self.text += text
        if self._notice is not None and text.startswith(STORE_RETRYING):
            self._notice(text.rstrip("\n"))
        return len(text)

    def flush(self) -> None:
        pass

    def last_line(self) -> str:
        lines = self.text.strip("\n").split("\n")
        return lines[-1]


def _run_in_process(argv: list[str], env: Mapping[str, str], out: BinaryIO | None,
                    source: str = "", notice: Callable[[str], None] | None = None
                    ) -> tuple[int, bytes, str]:
    if source:
        from ralphpy.sources import cli
    else:
        from ralphpy.tasks import cli   # imported on first use: no cost for `--help`
    buf = io.BytesIO()
    stdout = io.TextIOWrapper(buf, encoding="utf-8", errors="surrogateescape", newline="\n",
                              write_through=True)
    stderr = _Stderr(notice)
    stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    try:
        rc = cli.main(argv, stdin=stdin, stdout=stdout, stderr=stderr, environ=dict(env))
    except SystemExit as exc:                  # a CLI that exits anyway: its code is the status
        rc = exc.code if isinstance(exc.code, int) else 1
    except Exception:                          # as a crashing subprocess would: a failed call
        rc = 1
    stdout.flush()
    data = buf.getvalue()
    if out is not None:
        out.write(data)
        out.flush()
    return rc, data, stderr.last_line()


def _run_subprocess(executable: str, argv: list[str], env: Mapping[str, str],
                    out: BinaryIO | None) -> tuple[int, bytes]:
    # An interrupting signal kills the call's process before it propagates (programs.run).
    done = programs.run([executable, *argv], cwd=Path.cwd(), env=env,
                        stdout=programs.CAPTURE if out is None else programs.INHERIT,
                        stderr=programs.DISCARD)
    return done.code, done.stdout


def _own_task_cli(script_dir: Path) -> str | None:
    """The project's task CLI: scripts/task of a checkout, else the installed `ralph-task`."""
    candidate = script_dir / "scripts" / "task"
    if candidate.is_file():
        return str(candidate)
    for scheme in (sysconfig.get_default_scheme(), f"{os.name}_user"):
        try:
            path = Path(sysconfig.get_path("scripts", scheme)) / "ralph-task"
        except KeyError:
            continue
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which("ralph-task")


def _embedded_available() -> bool:
    try:
        from ralphpy.tasks import cli  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(script_dir: Path, environ: Mapping[str, str], *, in_process: bool = True) -> TaskCommand:
    """The task command of s.1 for this environment (RALPH_TASK_CMD wins when non-empty).
    `in_process=False` (for `ralph task`, which execs) skips importing the embedded CLI."""
    given = environ.get("RALPH_TASK_CMD", "")
    if given:
        if "/" in given:
            path = given if os.path.isfile(given) and os.access(given, os.X_OK) else None
        else:
            path = shutil.which(given, path=environ.get("PATH", os.defpath))
        return TaskCommand(given, path, False)
    own = _own_task_cli(script_dir)
    command = own or str(script_dir / "scripts" / "task")
    executable = own if own and os.access(own, os.X_OK) else None
    source = environ.get("RALPH_TASKS", "")
    if registry.is_source(source):             # a task source answers (docs/task-sources.md)
        return TaskCommand(command, executable, False, source=source if in_process else "")
    return TaskCommand(command, executable, in_process and _embedded_available())


__all__ = ["TaskCommand", "TaskResult", "backlog_unreadable", "resolve", "STORE_LOST"]
