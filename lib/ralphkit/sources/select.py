"""Owns choosing the task source of a run: the `--tasks` flag (its row `tasks` in config's
table also gives `tasks:` in ralph.yml and RALPH_TASKS), and what choosing one means before any
session: the tool is there (else one line naming what to install, exit 1), the files it will
skip, and the variables every child gets (RALPH_TASKS, and RALPH_TASKS_ROOT so sessions in git
worktrees reach the main checkout's backlog). Does not print and does not touch os.environ."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ralphkit.config import flags as cli_args
from ralphkit.sources import registry

_registered = False


def register() -> None:
    """Add `--tasks` to the flag table (once; ralph.py calls this before parsing)."""
    global _registered
    if _registered:
        return
    _registered = True
    cli_args.add_flag(cli_args.Flag(
        ("--tasks",), "tasks", "Error: --tasks requires sqlite, tk or flowctl",
        help_lines=("  --tasks sqlite|tk|flowctl   Task source (default: sqlite, "
                    ".ralph/tasks.db)",)))
    cli_args.add_flag(cli_args.Flag(
        ("--prompt",), "prompt", "Error: --prompt requires a template (e.g. '/tf {id} --auto')",
        modes=("build",), setting=False,
        help_lines=("  --prompt TEMPLATE           Claim a task, run TEMPLATE with {id} as "
                    "prompt",)))


def chosen(settings: Mapping[str, object]) -> str:
    """The run's task source: the `tasks` setting (CLI > RALPH_TASKS > ralph.yml > sqlite)."""
    return str(settings.get("tasks") or registry.DEFAULT)


def prepare(name: str, mode: str, environ: Mapping[str, str],
            cwd: Path) -> tuple[dict[str, str], list[str]]:
    """(variables to export, notices for stderr). Raises UsageError when the tool is missing."""
    if not registry.is_source(name):
        return ({"RALPH_TASKS": name} if environ.get("RALPH_TASKS") else {}), []
    root, problems = registry.preflight(name, environ, cwd)
    notes = [f"Warning: {name}: {problem}" for problem in problems]
    if mode == "plan":
        notes.append(f"Note: the {name} task source has no plan-sync: the planner's "
                     f"`task plan-sync` is refused; create tasks with "
                     f"{'tk create' if name == 'tk' else 'flowctl task create'}")
    return {"RALPH_TASKS": name, "RALPH_TASKS_ROOT": str(root)}, notes


__all__ = ["register", "chosen", "prepare"]
