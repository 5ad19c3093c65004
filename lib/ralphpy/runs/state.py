"""Owns the run state on disk: .ralph/runs/<runId>/state.json (version 1), written atomically
(temp file, fsync, rename), loaded with corrupt-file recovery (moved to
state.corrupt.<timestamp>.json, never lost), the choice of the run to resume, and the rule that a
resumed run's persisted options win over new flags. Knows nothing of the lock, the loop or the
backlog: the caller decides when to save and what to log (seed 001)."""
from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from ralphpy.atomic_file import environment_failure, write_atomic

VERSION = 1


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunState:
    """One run. Counters: iteration = completed iterations (the loop's k), sessions_started =
    agent launches. completed/failed hold {task, at, ...}; active is the running session."""

    run_id: str
    mode: str
    max_iterations: int
    options: dict[str, Any] = field(default_factory=dict)
    iteration: int = 0
    sessions_started: int = 0
    completed: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    active: dict[str, Any] | None = None
    started_at: str = field(default_factory=utc_now)
    updated_at: str = ""
    ended_at: str | None = None
    exit_reason: str | None = None
    exit_code: int | None = None
    resume_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def begin_session(self, task: str | None, pid: int | None, log: str | None,
                      agent: str | None = None) -> None:
        """agent: the registered agent id, so that a resumed run can fail what it held."""
        self.sessions_started += 1
        self.active = {"n": self.sessions_started, "task": task, "startedAt": utc_now(),
                       "pid": pid, "log": log, "agent": agent}

    def take_interrupted(self, reason: str = "ralph.py died during this session"
                         ) -> dict[str, Any] | None:
        """On resume: the session still marked active died with its run. It is recorded as
        failed (when its task is known) and returned, so the caller can put its task back
        (task fail) and fail what its agent id still holds."""
        interrupted, self.active = self.active, None
        # --parallel: several sessions; parallel.py recovers each of them
        if interrupted and interrupted.get("task") and "sessions" not in interrupted:
            self.failed.append({"task": interrupted["task"], "at": utc_now(), "reason": reason,
                                "n": interrupted.get("n")})
        return interrupted

    def end_session(self, task: str | None, *, ok: bool, reason: str | None = None,
                    **details: Any) -> None:
        """Record the session's outcome (task may be None when nothing was claimed)."""
        if task is not None:
            entry = {"task": task, "at": utc_now(), **details}
            if ok:
                self.completed.append(entry)
            else:
                self.failed.append({**entry, "reason": reason or "failed"})
        self.active = None

    def tasks_done(self) -> list[dict[str, Any]]:
        """The completed entries whose task ended done: a --parallel session whose agent
        deleted its task is among the completed ones (`outcome: deleted`: no failed attempt),
        but its task is not done."""
        return [e for e in self.completed if e.get("outcome") != "deleted"]

    def finish(self, exit_code: int, reason: str) -> None:
        self.ended_at, self.exit_code, self.exit_reason = utc_now(), exit_code, reason
        self.active = None

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "runId": self.run_id, "mode": self.mode,
                "maxIterations": self.max_iterations, "options": self.options,
                "iteration": self.iteration, "sessionsStarted": self.sessions_started,
                "completed": self.completed, "failed": self.failed, "active": self.active,
                "startedAt": self.started_at, "updatedAt": self.updated_at,
                "endedAt": self.ended_at, "exitReason": self.exit_reason,
                "exitCode": self.exit_code, "resumeAt": self.resume_at, "extra": self.extra}


# key: (types, required). Unknown keys are kept out; a wrong type makes the file invalid.
_SCHEMA: dict[str, tuple[tuple[type, ...], bool]] = {
    "version": ((int,), True), "runId": ((str,), True), "mode": ((str,), True),
    "maxIterations": ((int,), True), "options": ((dict,), True),
    "iteration": ((int,), True), "sessionsStarted": ((int,), True),
    "completed": ((list,), True), "failed": ((list,), True),
    "active": ((dict, type(None)), True), "startedAt": ((str,), True),
    "updatedAt": ((str,), True), "endedAt": ((str, type(None)), False),
    "exitReason": ((str, type(None)), False), "exitCode": ((int, type(None)), False),
    "resumeAt": ((str, type(None)), False), "extra": ((dict,), False),
}


def _parse(raw: bytes, run_id: str) -> RunState:
    """The state in raw, or ValueError saying what is wrong with it."""
    if not raw.strip():
        raise ValueError("it is empty")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"it is not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise ValueError("it is not a JSON object")
    if data.get("version") != VERSION:
        raise ValueError(f"its version is {data.get('version')!r}, expected {VERSION}")
    for key, (types, required) in _SCHEMA.items():
        if key not in data:
            if required:
                raise ValueError(f"key '{key}' is missing")
            continue
        value = data[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ValueError(f"key '{key}' has the wrong type ({type(value).__name__})")
    if data["runId"] != run_id:
        raise ValueError(f"its runId {data['runId']!r} does not match its directory")
    if data["mode"] not in ("plan", "build"):
        raise ValueError(f"its mode {data['mode']!r} is neither plan nor build")
    for key in ("maxIterations", "iteration", "sessionsStarted"):
        if data[key] < 0:
            raise ValueError(f"key '{key}' is negative")
    for key in ("completed", "failed"):
        if not all(isinstance(e, dict) and isinstance(e.get("task"), str) for e in data[key]):
            raise ValueError(f"an entry of '{key}' is not an object with a task")
    return RunState(
        run_id=data["runId"], mode=data["mode"], max_iterations=data["maxIterations"],
        options=data["options"], iteration=data["iteration"],
        sessions_started=data["sessionsStarted"], completed=data["completed"],
        failed=data["failed"], active=data["active"], started_at=data["startedAt"],
        updated_at=data["updatedAt"], ended_at=data.get("endedAt"),
        exit_reason=data.get("exitReason"), exit_code=data.get("exitCode"),
        resume_at=data.get("resumeAt"), extra=data.get("extra", {}))


def active_session(state: RunState | None) -> dict[str, Any] | None:
    """The state's active session as a reader shows it (`ralph status`): its agent's pid and
    start time, which the run keeps in the session's pid file and does not save, filled in
    from there."""
    active = state.active if state else None
    if not active:
        return active
    if active.get("sessions"):                       # a --parallel run's, each with its own
        return {**active, "sessions": [_with_pid(x) for x in active["sessions"]]}
    return _with_pid(active)


def _with_pid(session: dict[str, Any]) -> dict[str, Any]:
    if session.get("pid") is not None or not session.get("pidfile"):
        return session
    from ralphpy.session import pidfile as session_pidfile   # only a live session's reader
    linked = session_pidfile.read(Path(session["pidfile"]))
    if linked is None:
        return session
    return {**session, "pid": linked[0], "pidStartTime": linked[1]}


def state_path(ralph_dir: Path, run_id: str) -> Path:
    return Path(ralph_dir) / "runs" / run_id / "state.json"


def pidfile_path(ralph_dir: Path, run_id: str, n: int) -> Path:
    """Session n's pid file (session/pidfile.py's handshake), beside the run's state."""
    return state_path(ralph_dir, run_id).parent / f"session-{n:03d}.pid"


def new_run_id() -> str:
    """Sortable by start time, unique enough for one backlog: 20261122T004512Z-3f9a1c."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)


def save(ralph_dir: Path, state: RunState) -> None:
    """Write state.json atomically; EnvironmentFailure (one line) when it cannot be written."""
    state.updated_at = utc_now()
    data = json.dumps(state.to_json(), indent=2, ensure_ascii=False) + "\n"
    write_atomic(state_path(ralph_dir, state.run_id), data.encode("utf-8"))


@dataclass(frozen=True)
class Loaded:
    """load()'s answer: state is None when there was no file or it was corrupt; then recovery
    says what happened (for the caller to log) and backup where the bad file went."""

    state: RunState | None
    recovery: str | None = None
    backup: Path | None = None


def read(ralph_dir: Path, run_id: str) -> RunState | None:
    """Read-only: the state, or None when missing or invalid (for `ralph status`)."""
    try:
        return _parse(state_path(ralph_dir, run_id).read_bytes(), run_id)
    except (OSError, ValueError):
        return None


def load(ralph_dir: Path, run_id: str) -> Loaded:
    """Load a run's state; a corrupt file is moved aside, never deleted or overwritten."""
    path = state_path(ralph_dir, run_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Loaded(None)
    except OSError as err:
        raise environment_failure("read", path, err) from None
    try:
        return Loaded(_parse(raw, run_id))
    except ValueError as err:
        problem = str(err)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"state.corrupt.{stamp}.json")
    n = 1
    while backup.exists():
        backup = path.with_name(f"state.corrupt.{stamp}-{n}.json")
        n += 1
    try:
        os.replace(path, backup)
    except OSError as err:
        raise environment_failure("move corrupt state", path, err) from None
    return Loaded(None, f"run state {path} was unreadable ({problem}); moved it to "
                        f"{backup.name} and started a fresh state", backup)


def _newest(ralph_dir: Path, mode: str | None, unfinished: bool,
            exclude: str | None = None) -> str | None:
    best: tuple[float, str] | None = None
    try:
        entries = list(os.scandir(Path(ralph_dir) / "runs"))
    except OSError:
        return None
    filtered = unfinished or mode is not None         # else the mtime alone: no file read
    for entry in entries:
        if entry.name == exclude:
            continue
        path = Path(entry.path) / "state.json"
        try:
            mtime = path.stat().st_mtime
            raw = path.read_bytes() if filtered else b""
        except OSError:
            continue
        try:
            state: RunState | None = _parse(raw, entry.name) if filtered else None
        except ValueError:
            state = None
        if state is not None and ((unfinished and state.ended_at is not None)
                                  or mode not in (None, state.mode)):
            continue
        if best is None or (mtime, entry.name) > best:
            best = (mtime, entry.name)
    return best[1] if best else None


def find_resumable(ralph_dir: Path, mode: str | None = None) -> str | None:
    """The run id of the most recently saved unfinished run (no endedAt) of this mode. A run
    whose state is corrupt counts as unfinished for any mode: load() will recover it."""
    return _newest(ralph_dir, mode, unfinished=True)


def latest_run(ralph_dir: Path) -> str | None:
    """The run id of the most recently saved run, finished or not (for `ralph status`)."""
    return _newest(ralph_dir, None, unfinished=False)


def previous_run(ralph_dir: Path, current: str) -> str | None:
    """The run id of the most recently saved run other than `current`."""
    return _newest(ralph_dir, None, unfinished=False, exclude=current)


def merge_options(state: RunState, max_iterations: int | None, options: dict[str, Any],
                  shown: Mapping[str, Callable[[Any], Any]] | None = None) -> list[str]:
    """Resume rule (seed 001): the persisted values win. Returns one line per flag given now
    that disagrees with the persisted run; options not persisted yet are added. shown: how
    the value of a key may appear in a line (a webhook's token left out)."""
    mismatches = []
    if max_iterations is not None and max_iterations != state.max_iterations:
        mismatches.append(f"max_iterations: this run keeps {state.max_iterations} "
                          f"(asked for {max_iterations} now)")
    for key, value in sorted(options.items()):
        if isinstance(value, tuple):
            value = list(value)        # a list setting as state.json holds it: not a mismatch
        if key not in state.options:
            state.options[key] = value
        elif value is not None and state.options[key] != value:
            show = (shown or {}).get(key, lambda v: v)
            mismatches.append(f"{key}: this run keeps {show(state.options[key])!r} "
                              f"(asked for {show(value)!r} now)")
    return mismatches


__all__ = ["RunState", "Loaded", "active_session", "new_run_id", "save", "load", "read",
           "find_resumable", "latest_run", "previous_run", "merge_options", "state_path"]
