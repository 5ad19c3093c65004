"""Owns the task command line answered from a task source (RALPH_TASKS=tk|flowctl): the same
`main()` as ralphpy.tasks.cli (argv, streams, environ; returns 0, 1 or 2, never exits), the
same help, `Error: ` lines and exit codes (docs/contract/task-cli.md s.1), and `_get-scope` passed
to the embedded CLI. Does not own any command (contract_cmds.py) or any tool (tk.py, flowctl.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping, Sequence, TextIO

from ralphpy.errors import RalphError
from ralphpy.sources import registry
from ralphpy.sources.base import SourceError
from ralphpy.tasks.errors import TaskError


def _run(argv: Sequence[str], stdin: TextIO, stdout: TextIO, stderr: TextIO,
         environ: Mapping[str, str], cwd: str) -> str:
    from ralphpy.sources import contract_cmds
    from ralphpy.tasks import cli as tasks_cli
    if not argv or argv[0] in ("--help", "-h", "_get-scope", "_render-md", "plan-export"):
        code = tasks_cli.main(argv, stdin=stdin, stdout=stdout, stderr=stderr, environ=environ)
        if code:
            raise SystemExit(code)
        return ""
    name = environ.get("RALPH_TASKS", "")
    command = argv[0]
    if command in contract_cmds.UNSUPPORTED:
        raise contract_cmds.unsupported(name, command)
    if command not in contract_cmds.COMMANDS:
        raise TaskError(f"unknown command '{command}'")
    source = registry.open_source(name, environ, Path(cwd))
    backlog = contract_cmds.Backlog(source, environ, cwd)
    output = contract_cmds.COMMANDS[command](backlog, argv[1:])
    for problem in backlog.problems():
        stderr.write(f"Warning: {problem}\n")
    return output


def main(argv: Sequence[str], *, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one task command against the source RALPH_TASKS names; returns its exit status."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    environ = os.environ if environ is None else environ
    try:
        output = _run(list(argv), stdin, stdout, stderr, environ, os.getcwd())
    except SystemExit as exc:                   # the embedded CLI's status, already written
        return int(exc.code or 0)
    except TaskError as err:
        stderr.write(err.lines())
        stderr.flush()
        return err.exit_code
    except (SourceError, RalphError, OSError) as err:   # RalphError: GitHub's token, requests
        stderr.write(f"Error: {err}\n")
        stderr.flush()
        return 1
    stdout.write(output)
    stdout.flush()
    return 0


def console_main() -> None:
    """The task CLI as a program when RALPH_TASKS names a source (sources.entry chooses it)."""
    from ralphpy.tasks import cli as tasks_cli
    tasks_cli.console_main(main)


__all__ = ["main", "console_main"]
