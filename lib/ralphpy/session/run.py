"""Owns one agent session (docs/contract/ralph-cli.md s.11, s.12, s.16) as the loop asks for it: a
pool of one (session/pool.py pumps it), started only when no signal is pending, recorded through the
caller's on_start, and marked interrupted when a signal arrives as the agent ends. Knows
nothing of prompts, task calls or the loop; never prints (the waiting message is the caller's
callback)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping

from ralphpy.agents import claude_render
from ralphpy.session import watchdog
from ralphpy.session.pool import Pool, SessionResult
from ralphpy.signals import Guard

_KEY = "session"


def run(argv: list[str], *, env: Mapping[str, str], log_path: Path, out: BinaryIO,
        guard: Guard, on_first_interrupt: Callable[[], None], renderer: Any = None,
        stdin: bytes | None = None, cwd: Path | None = None,
        on_start: Callable[[int], None] | None = None,
        timeouts: watchdog.SessionTimeouts | None = None,
        kill_grace_s: float = 10.0, pidfile: Path | None = None,
        heartbeat: Any = None, read_stderr: bool = False) -> SessionResult:
    """Run one session to its end and return how it ended. `out` gets the rendering, through
    `renderer` (feed/close/summary; default s.12's StreamRenderer). `stdin`: bytes the agent
    reads on its stdin (the `command` backend), else /dev/null (s.11).
    on_start(pid) is called once the agent runs (the run state records it); when it raises,
    the agent is killed before the exception goes on. pidfile: the agent links
    "<pid> <start time>" there before exec (session/pidfile.py), for the window between its
    start and on_start. `timeouts`: when one runs out, the group gets SIGTERM, then SIGKILL
    after kill_grace_s; the result says timed_out or idle_out. heartbeat: the session's
    (session.heartbeat), beating while the agent runs. read_stderr: the agent's stderr is read,
    passed on to ralph's and its tail kept (result.stderr_tail), else inherited."""
    guard.raise_pending()             # a signal during the last task call: no new session (s.16)
    with Pool(guard, on_first_interrupt, timeouts=timeouts, kill_grace_s=kill_grace_s) as pool:
        if renderer is None:
            renderer = claude_render.StreamRenderer(out)
        failed = pool.start(_KEY, argv, env=env, cwd=cwd, log_path=log_path, renderer=renderer,
                            stdin=stdin, pidfile=pidfile, heartbeat=heartbeat,
                            read_stderr=read_stderr)
        if failed is not None:
            return failed
        if on_start is not None:
            try:
                on_start(pool.pids()[_KEY])
            except BaseException:     # e.g. the state cannot be saved: no orphan
                pool.abandon(_KEY)
                raise
        ((_, result),) = pool.wait()
        if guard.pending:             # arrived as the agent ended: still this session's interrupt
            result.interrupted = True
        return result


__all__ = ["SessionResult", "run"]
