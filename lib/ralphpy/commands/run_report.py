"""Owns `ralph report [RUN] [--md | --json | --html FILE] [--since DURATION]`: the report of one
run (default the latest) or of the runs started in the last DURATION, on the terminal, as
Markdown, JSON or one HTML file. Read-only but for the --html file; never exits (main returns
the exit code for ralph.py)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO

from ralphpy.atomic_file import write_atomic
from ralphpy.durations import format_duration, parse_duration
from ralphpy.errors import EXIT_OK, EXIT_USAGE, RalphError
from ralphpy.report import collect, files, render_html, render_md, render_text

HELP = """\
Usage: ralph report [RUN] [options]

Shows what a run did: tasks done and failed and why, sessions, cost, time, limit waits.
RUN is a run id (or a unique prefix of one); default: the latest run.

Options:
  --md             Print the report as Markdown
  --json           Print the report as one JSON object
  --html FILE      Write the report as one self-contained HTML page to FILE
  --since DURATION Report all runs started in the last DURATION (e.g. 12h, 7d)
  --help, -h       Show this help
"""


def _usage(err: TextIO, message: str) -> int:
    err.write(f"Error: {message}\nRun 'ralph report --help' for usage\n")
    return EXIT_USAGE


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         ralph_dir: Path | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    fmt, html_file, since, run = "text", None, None, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--help", "-h"):
            out.write(HELP)
            return EXIT_OK
        if arg in ("--md", "--json") or arg == "--html" and args:
            if fmt != "text" and fmt != arg[2:]:       # one form per report, not the last one
                return _usage(err, f"give one of --md, --json, --html, not both --{fmt} and {arg}")
        if arg in ("--md", "--json"):
            fmt = arg[2:]
        elif arg in ("--html", "--since"):
            if not args or not args[0] or args[0].startswith("-") and args[0] != "-":
                return _usage(err, f"{arg} requires a "
                                   + ("file name" if arg == "--html" else "duration (e.g. 7d)"))
            value = args.pop(0)
            if arg == "--html":
                fmt, html_file = "html", value
            else:
                try:
                    since = parse_duration(value)
                except ValueError:
                    return _usage(err, f"--since requires a duration (e.g. 12h, 7d), got "
                                       f"'{value}'")
        elif arg.startswith("-"):
            return _usage(err, f"Unknown option '{arg}'")
        elif run is None:
            run = arg
        else:
            return _usage(err, f"one run at a time: '{run}' and '{arg}' given")
    if run is not None and since is not None:
        return _usage(err, "give a run or --since, not both")
    ralph_dir = Path(ralph_dir) if ralph_dir is not None else Path.cwd() / ".ralph"
    if since is not None:
        run_ids = files.since(ralph_dir, since)
        if not run_ids:
            out.write(f"No ralph run started in the last {format_duration(since)} "
                      f"in {ralph_dir}.\n")
            return EXIT_OK
        title = f"{len(run_ids)} run(s) started in the last {format_duration(since)}"
    else:
        run_id = files.find(ralph_dir, run) if run else files.latest(ralph_dir)
        if run_id is None:
            if run:
                err.write(f"Error: no run '{run}' in {ralph_dir / 'runs'} (ralph status names "
                          "the latest)\n")
                return EXIT_USAGE
            out.write(f"No ralph run found in {ralph_dir}.\n")
            return EXIT_OK
        run_ids, title = [run_id], None
    report = collect.collect(ralph_dir, run_ids, title=title)
    if fmt == "json":
        out.write(json.dumps(report.to_json(), ensure_ascii=False, default=str) + "\n")
    elif fmt == "md":
        out.write(render_md.render(report))
    elif fmt == "html":
        page = render_html.render(report)
        if html_file == "-":
            out.write(page)
        else:
            try:
                write_atomic(Path(html_file), page.encode("utf-8"))
            except RalphError as error:             # EnvironmentFailure: exit 8
                err.write(f"Error: {error}\n")
                return error.exit_code
            out.write(f"Wrote {html_file}\n")
    else:
        shown = [str(p) for p in files.paths(ralph_dir, run_ids[0]) if p.exists()] \
            if len(run_ids) == 1 else []
        out.write(render_text.render(report, [os.path.relpath(p) for p in shown]))
    return EXIT_OK


__all__ = ["main"]
