"""Owns the settings of a run: one declarative table (name, type, default, environment variable,
check, help), an optional ralph.yml at the repository root, the environment, and the command
line, merged with the precedence CLI > environment > ralph.yml > defaults and validated before
anything is written, with one clear line per bad key or value. A feature adds a row to SETTINGS,
not code. Does not parse argv (ralph.py does, byte-exact per spec) and does not act on any
setting."""
from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from ralphkit.errors import UsageError

CONFIG_NAME = "ralph.yml"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")


def _usage(problems: list[str]) -> UsageError:
    error = UsageError("\n".join(problems))
    error.problems = problems      # one line each; ralph.py prints each as an `Error: ` line
    return error


class _Bad(ValueError):
    """A value that does not fit its setting; the text says what was expected."""


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    raise _Bad("a whole number")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise _Bad("a boolean (1/0, true/false, yes/no)")


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise _Bad("a number") from None
    else:
        raise _Bad("a number")
    if not math.isfinite(number):
        raise _Bad("a number")
    return number


def _duration(value: Any) -> float:
    """Seconds: 90, 1.5, '90s', '15m', '1h', '1h30m', '2d'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value >= 0 and math.isfinite(value):
            return float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        parts = _DURATION.findall(text)
        if parts and "".join(_DURATION.sub("", text).split()) == "":
            return float(sum(float(n) * _UNITS[u] for n, u in parts))
    raise _Bad("a duration (seconds, or like 30s, 15m, 1h)")


def _text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    hint = " (put it in quotes)" if isinstance(value, (int, float)) else ""
    raise _Bad(f"a non-empty text{hint}")


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "int": _int, "bool": _bool, "number": _number, "duration": _duration, "text": _text}


def _at_least(low: float) -> Callable[[Any], str | None]:
    return lambda v: None if v >= low else f"at least {low:g}"


def _positive(v: float) -> str | None:
    return None if v > 0 else "greater than 0"


@dataclass(frozen=True)
class Setting:
    name: str                      # key in ralph.yml and in Settings
    kind: str                      # int, bool, number, duration (seconds), text
    default: Any
    env: str | None                # environment variable, or None
    flag: str | None               # command-line flag (for messages and the README)
    help: str
    check: Callable[[Any], str | None] | None = None   # None if fine, else what is expected


# The one table. Defaults: ralph-cli.md for the loop flags, issues 5-8 for the others.
SETTINGS: tuple[Setting, ...] = (
    Setting("max_iterations", "int", None, None, "--max-iterations",
            "iteration limit; unset: 1 in plan mode, 0 (unlimited) in build mode",
            _at_least(0)),
    Setting("model", "text", None, None, "--model", "model alias (models.json)"),
    Setting("danger", "bool", False, None, "--danger",
            "pass --dangerously-skip-permissions to the agent"),
    Setting("completion_promise", "text", "COMPLETE", None, "--completion-promise",
            "plan mode: stop on <promise>TEXT</promise>"),
    Setting("dry_run", "bool", False, None, "--dry-run",
            "print what would happen, write nothing"),
    Setting("resume", "bool", False, None, "--resume", "continue the last unfinished run"),
    Setting("freeze_scope", "bool", False, "FREEZE_SCOPE", "--freeze-scope",
            "snapshot the scope at start; only frozen tasks run"),
    Setting("stop_on_scope_change", "bool", False, "STOP_ON_SCOPE_CHANGE",
            "--stop-on-scope-change", "stop the run when the frozen scope changes"),
    Setting("scope_watch", "bool", True, "SCOPE_WATCH", None,
            "scope freeze: let inotify say which spec files changed (off: stat every spec"
            " file before each session)"),
    Setting("assign", "bool", False, None, "--assign",
            "ralph claims the task and injects it (one task per session)"),
    # issue 6 (assignment mode, fresh context, respawn safety): notes/integration-assign.md
    Setting("assign_prompt", "text", None, None, None,
            "assignment mode: the anti-drift template file (default: the shipped one)"),
    Setting("inbox", "text", None, None, None,
            "assignment mode: inbox folder of JSON/.md tasks (default: .ralph/inbox)"),
    Setting("respawn_limit", "int", 3, None, None,
            "assignment mode: hold a task spawned this many times without progress",
            _at_least(1)),
    Setting("continue_session", "bool", False, None, "--continue-session",
            "resume the agent's last conversation (--continue) unless FRESH_START"),
    Setting("respawn_safety", "bool", True, None, None,
            "neutralise a leftover .claude/ralph-loop.local.md before each launch"),
    Setting("session_timeout", "duration", 3600.0, None, "--session-timeout",
            "kill a session after this long; 0 disables", _at_least(0)),
    Setting("idle_timeout", "duration", 900.0, None, "--idle-timeout",
            "kill a session silent for this long; 0 disables", _at_least(0)),
    Setting("max_attempts", "int", 3, None, "--max-attempts",
            "block a task after this many failed attempts", _at_least(1)),
    Setting("max_idle_sessions", "int", 3, None, "--max-idle-sessions",
            "stop after this many sessions in a row without progress; 0 disables",
            _at_least(0)),
    Setting("max_consecutive_failures", "int", 5, None, "--max-consecutive-failures",
            "stop after this many failed sessions in a row; 0 disables", _at_least(0)),
    Setting("max_cost", "number", None, None, "--max-cost",
            "stop after the sessions cost this many USD", _positive),
    Setting("max_runtime", "duration", None, None, "--max-runtime",
            "stop after the run has lasted this long", _positive),
    Setting("max_limit_wait", "duration", None, None, "--max-limit-wait",
            "longest total wait for usage limits to reset", _at_least(0)),
    Setting("agent", "text", "claude", None, "--agent", "agent backend name"),
    Setting("agent_cmd", "text", None, None, "--agent-cmd", "agent binary or command template"),
    Setting("parallel", "int", 1, None, "--parallel", "sessions at once (build mode)",
            _at_least(1)),
    Setting("merge", "text", "rebase", None, "--merge",
            "merge a finished task's branch back with --parallel: rebase, ff or none",
            lambda v: None if v in ("rebase", "ff", "none") else "one of rebase, ff, none"),
    # verified completion (docs/verify.md)
    Setting("verify", "text", None, None, "--verify",
            "run this command after a task is marked done; a failure reopens the task"),
    Setting("verify_timeout", "duration", 600.0, None, None,
            "stop the verify command after this long (a failure of its own)", _positive),
    Setting("tamper", "text", "hold", None, None,
            "test tampering found in a session's diff: hold the task, warn, or off",
            lambda v: None if v in ("hold", "warn", "off") else "one of hold, warn, off"),
    Setting("protect", "text", None, None, None,
            "globs (space or comma separated) of files a session may add to but not change"),
)
BY_NAME = {s.name: s for s in SETTINGS}


class Settings(Mapping):
    """The merged, validated settings: settings.max_cost or settings["max_cost"];
    source(name) says where a value came from: 'cli', 'env', 'ralph.yml' or 'default'."""

    def __init__(self, values: dict[str, Any], sources: dict[str, str]):
        self._values = dict(values)     # private copies; Mapping has no __setitem__
        self._sources = dict(sources)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):   # not a setting; also keeps copy/pickle from recursing
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Settings({dict(self._values)!r})"

    def source(self, name: str) -> str:
        return self._sources[name]

    def explicit(self) -> dict[str, Any]:
        """The values not left at their default (what a run persists as its options)."""
        return {k: v for k, v in self._values.items() if self._sources[k] != "default"}


def find_repo_root(cwd: Path) -> Path:
    """The git top level (nearest directory with a .git entry, worktrees included), else cwd."""
    cwd = Path(cwd).absolute()
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise _usage([f"{CONFIG_NAME}: cannot read {path}: {reason}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise _usage([f"{CONFIG_NAME}: invalid YAML{where}: {problem}"]) from None
    if data is None:
        return {}                  # an empty file, or only comments
    if not isinstance(data, dict):
        raise _usage([f"{CONFIG_NAME}: the top level must be a mapping of settings "
                      f"(key: value lines), got a {type(data).__name__}"])
    return data


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def load(cli_values: Mapping[str, Any], environ: Mapping[str, str], repo_root: Path) -> Settings:
    """Merge and validate. cli_values holds only what the command line gave (None = not given).
    Raises UsageError: one line per problem, all of them, in .problems too."""
    problems: list[str] = []
    file_values = _read_file(Path(repo_root) / CONFIG_NAME)
    for key in file_values:
        if key not in BY_NAME:
            close = difflib.get_close_matches(str(key).replace("-", "_"), BY_NAME, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(f"{CONFIG_NAME}: unknown key '{key}'{hint}")
    for key in cli_values:
        if key not in BY_NAME:      # a programming error in ralph.py, not a user's
            raise KeyError(f"no setting named {key!r}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        candidates = [
            ("cli", setting.flag or setting.name, cli_values.get(setting.name)),
            ("env", f"environment variable {setting.env}",
             (environ.get(setting.env) or None) if setting.env else None),
            (CONFIG_NAME, f"{CONFIG_NAME}: {setting.name}", file_values.get(setting.name)),
        ]
        values[setting.name], sources[setting.name] = setting.default, "default"
        chosen = False
        for source, label, raw in candidates:
            if raw is None:        # not given here (a null in ralph.yml means "default")
                continue
            try:               # every source is checked, even one a higher source overrides
                value = _PARSERS[setting.kind](raw)
                expected = setting.check(value) if setting.check else None
                if expected:
                    raise _Bad(expected)
            except _Bad as err:
                problems.append(f"{label} must be {err}, got {_shown(raw)}")
                continue
            if not chosen:
                values[setting.name], sources[setting.name], chosen = value, source, True
    if problems:
        raise _usage(problems)
    return Settings(values, sources)


__all__ = ["Setting", "SETTINGS", "Settings", "load", "find_repo_root"]
