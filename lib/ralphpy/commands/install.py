"""Owns `ralph install`: copies the shipped Claude Code skills and hooks (package data under
ralphpy/claude/) into a project's or the user's `.claude/` and registers the hooks as
`PreCompact` and `SessionEnd` command hooks in its `settings.json`
(docs/contract/ralph-cli.md s.19).

Idempotent: a file whose bytes (and, for hooks, mode) already match is left alone, and a hook
command already registered is not added again. Every other key and hook of settings.json is
kept. Everything is validated before the first write: a settings.json that is not valid JSON,
not an object, or whose `hooks` is not an object of lists is refused and nothing is written.
Writes are atomic (atomic_file).

Does not own what the hooks and skills do (the files themselves), nor the `ralph` command
line around it beyond `main()`, which is the only place that prints.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ralphpy import atomic_file
from ralphpy.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USAGE, UsageError

# The shipped files: lib/ralphpy/claude/{skills/<name>/SKILL.md,hooks/<name>}.
_DATA = Path(__file__).resolve().parent.parent / "claude"
# Claude Code hook event -> the shipped hook program registered for it (s.19).
_HOOK_EVENTS = {"PreCompact": "precompact", "SessionEnd": "session_end"}
_HOOK_SUBDIR = Path("hooks") / "ralph"
_HOOK_MODE = 0o755


@dataclass(frozen=True)
class FileResult:
    """One file install touched or would touch: `changed` False means already up to date."""

    path: Path
    changed: bool


def install(claude_dir: Path, *, project: bool, dry_run: bool = False) -> list[FileResult]:
    """Install skills and hooks into claude_dir (a `.claude` directory) and register the hooks.

    project=True writes hook commands relative to "$CLAUDE_PROJECT_DIR" so that a committed
    .claude/settings.json works in every checkout; otherwise they are absolute paths.
    Raises UsageError (nothing written) when settings.json cannot be merged."""
    settings_path = claude_dir / "settings.json"
    settings = _read_settings(settings_path)          # validate before any write
    planned: list[tuple[Path, bytes, int | None]] = []
    for skill in sorted((_DATA / "skills").glob("*/SKILL.md")):
        planned.append((claude_dir / "skills" / skill.parent.name / "SKILL.md",
                        skill.read_bytes(), None))
    commands = {}
    for event, name in _HOOK_EVENTS.items():
        dest = claude_dir / _HOOK_SUBDIR / name
        planned.append((dest, (_DATA / "hooks" / name).read_bytes(), _HOOK_MODE))
        commands[event] = (f'"$CLAUDE_PROJECT_DIR"/.claude/{_HOOK_SUBDIR.as_posix()}/{name}'
                           if project else shlex.quote(str(dest)))
    merged, added = _merge_hooks(settings, commands)
    results = [_put(path, data, mode, dry_run) for path, data, mode in planned]
    if added or not settings_path.exists():
        text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
        results.append(_put(settings_path, text.encode("utf-8"), None, dry_run))
    else:       # every hook already registered: the file stays byte for byte as it is
        results.append(FileResult(settings_path, False))
    return results


def _read_settings(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise UsageError(f"{path} cannot be read ({err.strerror or err}); fix it, then re-run "
                         "ralph install") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as err:               # UnicodeDecodeError is a ValueError too
        raise UsageError(f"{path} is not valid JSON ({err}); fix or remove it, then re-run "
                         "ralph install") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object; fix it, then re-run ralph install")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(
            isinstance(hooks.get(event, []), list) for event in _HOOK_EVENTS):
        raise UsageError(f'{path}: "hooks" must be an object whose PreCompact and SessionEnd '
                         "are lists; fix it, then re-run ralph install")
    return data


def _merge_hooks(settings: dict, commands: dict[str, str]) -> tuple[dict, bool]:
    """(settings with each command registered once under its event, whether one was added);
    every other key, group and hook is kept as it is, in its order."""
    merged = json.loads(json.dumps(settings))          # deep copy, key order kept
    hooks = merged.setdefault("hooks", {})
    added = False
    for event, command in commands.items():
        groups = hooks.setdefault(event, [])
        present = any(isinstance(group, dict) and isinstance(group.get("hooks"), list)
                      and any(isinstance(h, dict) and h.get("command") == command
                              for h in group["hooks"])
                      for group in groups)
        if not present:
            # An empty matcher matches every trigger (manual/auto compact, every end reason).
            groups.append({"matcher": "", "hooks": [{"type": "command", "command": command}]})
            added = True
    return merged, added


def _put(path: Path, data: bytes, mode: int | None, dry_run: bool) -> FileResult:
    try:
        same = path.read_bytes() == data and (
            mode is None or (path.stat().st_mode & 0o777) == mode)
    except OSError:
        same = False
    if same or dry_run:
        return FileResult(path, not same)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_file.replace(path, data, mode=mode)
    return FileResult(path, True)


_HELP = """\
Usage: ralph install [options]

Installs the /ralph-plan, /ralph-build and /ralph-spec skills and the PreCompact and
SessionEnd hooks for Claude Code, and registers the hooks in settings.json.

Options:
  --project DIR   Install into DIR/.claude/ (default: the current directory)
  --user          Install into ~/.claude/ (every project of this user)
  --dry-run       Show what would be written, write nothing
  --help, -h      Show this help
"""


def main(argv: list[str]) -> int:
    """`ralph install [--project DIR | --user] [--dry-run]`; prints one line per file."""
    project: str | None = None
    user = dry_run = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--help", "-h"):
            sys.stdout.write(_HELP)
            return EXIT_OK
        if arg == "--project":
            if not args or not args[0] or args[0].startswith("-"):
                return _fail("--project requires a directory")
            project = args.pop(0)
        elif arg == "--user":
            user = True
        elif arg == "--dry-run":
            dry_run = True
        else:
            print(f"Error: Unknown option '{arg}'", file=sys.stderr)
            print("Run 'ralph install --help' for usage", file=sys.stderr)
            return EXIT_USAGE
    if user and project is not None:
        return _fail("--project and --user are mutually exclusive")
    if user:
        claude_dir = Path(os.path.expanduser("~")) / ".claude"
    else:
        root = Path(project if project is not None else ".")
        if not root.is_dir():
            return _fail(f"project directory '{root}' does not exist")
        claude_dir = root.resolve() / ".claude"
    try:
        results = install(claude_dir, project=not user, dry_run=dry_run)
    except UsageError as err:
        return _fail(str(err))
    except OSError as err:
        print(f"Error: cannot write {getattr(err, 'filename', None) or claude_dir}: "
              f"{err.strerror or err}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    verb = "would write" if dry_run else "wrote"
    for result in results:
        print(f"{verb if result.changed else 'unchanged'} {result.path}")
    return EXIT_OK


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return EXIT_USAGE


__all__ = ["FileResult", "install", "main"]

if __name__ == "__main__":                      # python -m ralphpy.commands.install [options]
    sys.exit(main(sys.argv[1:]))
