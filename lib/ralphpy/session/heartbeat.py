"""Owns one session's heartbeat on a fleet's task store (docs/fleet.md): while the agent runs,
every `interval_s` a `<task CLI> _heartbeat --agent <id> --lease <s>` process renews the leases
the session's agent holds and records that the agent is alive, so a session longer than a
lease keeps its task, while a stopped host's tasks are free once their lease runs out. A beat
runs beside the pump, never in it: the pump's tick starts one when it is due and reaps it when
it has ended (a beat still running when the next is due is left to finish; one still running
at the session's end is killed). Its retry budget on a lost server is one interval. Knows
nothing of tasks or leases (the task CLI's `_heartbeat`) or of when a store has heartbeats
(the caller's choice)."""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping


@dataclass
class Heartbeat:
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None
    interval_s: float
    next_at: float | None = None          # monotonic time of the next beat (None: not begun)
    beats: int = 0                        # beats that succeeded
    failures: int = 0                     # beats that failed (or could not start)
    last_error: str = ""                  # the last failed beat's last stderr line
    _proc: subprocess.Popen | None = field(default=None, repr=False)

    def tick(self, now: float) -> None:
        """Called by the pump on every turn: reap an ended beat, start one when due."""
        if self.next_at is None:
            self.next_at = now + self.interval_s
        if self._proc is not None and self._proc.poll() is not None:
            self._reap()
        if self._proc is None and now >= self.next_at:
            self.next_at = now + self.interval_s
            try:
                self._proc = subprocess.Popen(
                    self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                    start_new_session=True)      # a Ctrl+C at the terminal is the agent's
            except OSError as err:
                self.failures += 1
                self.last_error = f"cannot run {self.argv[0]}: {err.strerror or err}"

    def stop(self) -> None:
        """The session ended: a beat still running is killed and reaped."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap()

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        _, err = proc.communicate()
        if proc.returncode == 0:
            self.beats += 1
            return
        if proc.returncode == -signal.SIGKILL:
            return                            # stopped with its session: not a failure
        self.failures += 1
        lines = err.decode("utf-8", "replace").strip().splitlines()
        self.last_error = lines[-1] if lines else f"exit status {proc.returncode}"


def problem(beat: Heartbeat) -> str:
    """One line on a session's failed beats (its claims may have run out)."""
    return (f"heartbeat: {beat.failures} of {beat.failures + beat.beats} beats failed "
            f"(last: {beat.last_error})")


def for_agent(task_cli: str, agent: str, lease_s: float, interval_s: float,
              env: Mapping[str, str], cwd: Path | None) -> Heartbeat:
    """The heartbeat of `agent`'s session: `task_cli` is the task CLI's executable, `env` the
    session's environment (its store)."""
    argv = [task_cli, "_heartbeat", "--agent", agent, "--lease", str(max(1, round(lease_s)))]
    beat_env = {**env, "RALPH_STORE_RETRY": f"{interval_s:g}"}   # a beat never outlives its turn
    return Heartbeat(argv, beat_env, cwd, interval_s)


__all__ = ["Heartbeat", "for_agent", "problem"]
