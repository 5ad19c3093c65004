"""Owns `ralph doctor`: a look at this machine and this repository the way `ralph plan|build`
looks before its first session, printed as one line per check (`ok`, `missing`, `warning`)
that says what to do: the run's agent and every agent CLI on PATH with its release, whether
each has a login (presence only: never a value), the git identity, the repository and its
`origin` (or RALPH_SCOPE_REPO), the task store, the sandbox tool and chromium. Exit 0 when
nothing required is missing, else 1 (EXIT_USAGE: what is missing is the user's set-up, as
the preflight's own errors are). Writes nothing and prints no secret.

The checks themselves are the preflight's (loop.preflight: the agent's program, the
repository, the scope, the backlog), the store's first connection (fleet.store), a task
source's (sources.registry) and the agents' (agents.version, agents.auth): nothing is
checked twice in two ways. Not the checks of a run (the preflight stops it; doctor reports)."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, TextIO

from ralphpy import programs
from ralphpy.agents import adapters, auth, version
from ralphpy.backlog import calls, readonly
from ralphpy.config import settings
from ralphpy.config.table import BY_NAME
from ralphpy.errors import EXIT_OK, EXIT_USAGE, RalphError, UsageError
from ralphpy.fleet import store as fleet_store
from ralphpy.loop import preflight
from ralphpy.report.render_text import clean
from ralphpy.sources import registry

HELP = """\
Usage: ralph doctor [options]

Checks this machine and this repository as `ralph plan` and `ralph build` do before their
first session, and prints one line per check with what to do:
  ok       the check passed
  missing  something is not there; optional ones say so
  warning  it is there, but may not work (no login found, no version answered)
Exit 0 when nothing required is missing, else 1. Writes nothing; prints no secret.

Options:
  --help, -h   Show this help
"""
OK, MISSING, WARNING = "ok", "missing", "warning"
# docs/contract/ralph-cli.md s.8's words (ralph.py's NO_SPECS), with what is needed of them here.
NO_SPECS = ("No specs found. Run /ralph-spec first to generate specs in ./specs/ (the built-in "
            "backlog's plan and build need them)")
VERSION_TIMEOUT_S = 5.0
SANDBOX_HINT = "optional: the sandbox uses it; install the Debian package bubblewrap"
CHROMIUM_HINT = ("optional: only the HTML report's tests use it; install the Debian package "
                 "chromium")


@dataclass(frozen=True)
class Check:
    status: str
    name: str
    detail: str
    required: bool = True

    def line(self) -> str:
        return f"{self.status:<8} {self.name}: {clean(self.detail)}"


def _message(err: RalphError) -> str:
    return str(err).removeprefix("Error: ")


def _release(adapter: adapters.AgentAdapter, path: str, env: Mapping[str, str],
             cwd: Path) -> tuple[str, str | None]:
    """(status, release): the npm package's version when the CLI is one (agents.version),
    else the first line `<cli> --version` prints within VERSION_TIMEOUT_S (with the words of
    an --agent-cmd that runs it: `npx -y <package> --version`)."""
    known = version.of_session(adapter, None, env)
    if known:
        return OK, known
    asked = f"`{adapter.binary[0]} --version`"
    with tempfile.TemporaryFile() as output:     # a group of its own: a wrapper's children go too
        try:
            code = programs.run_group([path, *adapter.binary[1:], "--version"], cwd=cwd,
                                      env=env, output=output, timeout=VERSION_TIMEOUT_S,
                                      kill_grace=1.0)
        except OSError as err:
            return WARNING, f"{asked} cannot run: {err.strerror}"
        output.seek(0)
        text = output.read(4096).decode("utf-8", "replace")
    if code is None:
        return WARNING, f"{asked} gave no answer within {VERSION_TIMEOUT_S:g}s"
    said = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if code != 0 or not said:
        return WARNING, f"{asked} failed (exit {code})"
    return OK, said[:80]


def _agent(adapter: adapters.AgentAdapter, env: Mapping[str, str], cwd: Path, home: Path,
           used: bool) -> list[Check]:
    """The agent's program (required when the run uses it), its release and its login."""
    program = adapter.binary[0]
    label = adapter.name if adapter.name == program else f"{adapter.name} ({program})"
    try:
        path = preflight.agent_program(program, env, cwd)
    except UsageError as err:
        if used:
            return [Check(MISSING, label, _message(err))]
        hint = f"; npm install -g {adapter.package}" if adapter.package else ""
        return [Check(MISSING, label, f"not on PATH (optional: for --agent {adapter.name}"
                                      f"{hint})", required=False)]
    checks = []
    if adapter.name == "command":
        checks.append(Check(OK, label, f"{path} (the run's agent)"))
        return checks
    status, release = _release(adapter, path, env, cwd)
    run_s = ", the run's agent" if used else ""
    checks.append(Check(status, label, f"{release} at {path}{run_s}" if status == OK
                        else f"found at {path}{run_s}; {release}", required=used))
    where = auth.found(adapter.name, env, home)
    if where is not None:
        checks.append(Check(OK, f"{adapter.name} login", where, required=used))
    else:
        checks.append(Check(WARNING, f"{adapter.name} login",
                            f"none found ({auth.looked_for(adapter.name, env, home)}); log in "
                            f"{adapters.login_hint(adapter.name)}", required=used))
    return checks


def _agents(opts, env: Mapping[str, str], cwd: Path, home: Path) -> list[Check]:
    """The run's agent first (ralph.yml, RALPH_AGENT, --agent-cmd as a run would pick it),
    then every other agent CLI on PATH."""
    name = (opts.agent if opts is not None else None) or adapters.AGENT
    try:
        run_agent = adapters.get_adapter(name, opts.agent_cmd if opts is not None else None)
    except UsageError as err:
        return [Check(MISSING, "agent", _message(err))]
    checks = _agent(run_agent, env, cwd, home, used=True)
    for adapter in adapters.named():
        if adapter.name != run_agent.name:
            checks += _agent(adapter, env, cwd, home, used=False)
    return checks


_EXAMPLE = {"name": "Your Name", "email": "you@example.com"}     # git's own hint's values


def _identity(env: Mapping[str, str], cwd: Path) -> Check:
    """user.name and user.email as git gives them to commits (its variables first): the
    agents' commits and --parallel's merges need both."""
    values = {}
    for key, variables in (("name", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
                           ("email", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL", "EMAIL"))):
        given = next((env[v] for v in variables if env.get(v)), "")
        if not given:
            ran = programs.run([*programs.GIT, "config", "--get", f"user.{key}"], cwd=cwd, env=env,
                               timeout=VERSION_TIMEOUT_S)
            given = ran.out.strip() if ran.code == 0 else ""
        values[key] = given
    absent = [k for k, v in values.items() if not v]
    if absent:
        fix = "; ".join(f'git config --global user.{k} "{_EXAMPLE[k]}"' for k in absent)
        return Check(MISSING, "git identity", f"user.{' and user.'.join(absent)} not set; {fix}")
    return Check(OK, "git identity", f"{values['name']} <{values['email']}>")


def _backlog(opts, env: Mapping[str, str], cwd: Path, err: TextIO) -> list[Check]:
    """The repository, its scope and the task store a run would read, as the preflight
    reads them."""
    env = dict(env)
    tasks = opts.tasks if opts is not None else None
    if env.get("RALPH_TASK_CMD"):                       # it owns its backlog (the preflight's rule)
        command = env["RALPH_TASK_CMD"]
        # as a run finds it (RALPH_TASK_CMD set: the checkout's own CLI is not looked at)
        found = calls.resolve(cwd, env, in_process=False).executable
        why = "" if found else " is not an executable file"
        return [Check(OK if found else MISSING, "task command", f"RALPH_TASK_CMD {command}{why}")]
    checks = []
    try:
        checks.append(Check(OK, "git repository", preflight.repository(env, cwd)))
    except UsageError as error:
        if not env.get("RALPH_SCOPE_REPO"):
            return [Check(MISSING, "git repository", _message(error).removeprefix(
                "cannot read the backlog: ") + " (the built-in backlog lives in one)")]
    try:
        exports, notes = registry.prepare(tasks, "build", env, cwd) if tasks else ({}, [])
    except UsageError as error:
        return [*checks, Check(MISSING, f"task source {tasks}", _message(error))]
    env.update(exports)
    if tasks and registry.is_source(tasks):
        return [*checks, Check(OK, f"task source {tasks}", env.get("RALPH_TASKS_ROOT", "")),
                *(Check(WARNING, f"task source {tasks}", n.split(": ", 1)[-1]) for n in notes)]
    try:
        repo, branch = preflight.scope(env, cwd)
        checks.append(Check(OK, "origin", f"tasks are scoped to {repo} (branch {branch})"))
    except UsageError as error:
        return [*checks, Check(MISSING, "origin", _message(error).removeprefix(
            "cannot read the backlog: ") + ", or set RALPH_SCOPE_REPO")]
    store = fleet_store.url(env)
    try:
        if store is not None:
            timeout = (opts.store_connect_timeout if opts is not None
                       else BY_NAME["store_connect_timeout"].default)
            fleet_store.check(env, timeout, lambda line: err.write(line + "\n"))
        preflight.backlog(env, cwd)
    except RalphError as error:
        return [*checks, Check(MISSING, "task store", _message(error))]
    if store is not None:
        return [*checks, Check(OK, "task store", fleet_store.shown(store))]
    path = readonly.db_path(env, cwd)
    shown = os.path.relpath(path, cwd) if path is not None else "the built-in store"
    if path is not None and not path.exists():
        return [*checks, Check(OK, "task store", f"{shown} not created yet (the first "
                                                 "`ralph plan` or `ralph task` creates it)")]
    return [*checks, Check(OK, "task store", f"{shown} opens and is a task store")]


def _specs(opts, cwd: Path) -> Check:
    """s.8's `./specs` check, as the run makes it (loop.preflight.specs_found)."""
    tasks = opts.tasks if opts is not None else None
    if tasks and registry.is_source(tasks):
        return Check(OK, "specs", f"the task source {tasks} keeps its own plan")
    if not preflight.specs_for(tasks, cwd):
        return Check(MISSING, "specs", NO_SPECS)
    return Check(OK, "specs", "present")


def _sandbox(opts, env: Mapping[str, str]) -> list[Check]:
    """The run's --sandbox (ralph.yml's `sandbox:`) starts a sandbox here, as the run checks
    before its first session (sandbox.backends); nothing to check for `none`."""
    from ralphpy.sandbox import backends
    if opts is None or opts.sandbox == backends.NONE:
        return []
    try:
        backend = backends.resolve(opts.sandbox, opts.sandbox_image, env)
    except UsageError as error:
        return [Check(MISSING, "sandbox", _message(error))]
    return [Check(OK, "sandbox", f"{backend.shown} starts a sandbox ({backend.program})")]


def _tool(names: tuple[str, ...], label: str, hint: str, env: Mapping[str, str]) -> Check:
    for name in names:
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found:
            return Check(OK, label, found, required=False)
    return Check(MISSING, label, f"not on PATH ({hint})", required=False)


def run_checks(env: Mapping[str, str], cwd: Path, err: TextIO) -> list[Check]:
    """Every check, in the order of the output."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    checks: list[Check] = []
    try:
        opts = settings.load("build", {}, env, settings.find_repo_root(cwd))
    except UsageError as error:
        opts = None
        for problem in getattr(error, "problems", None) or [str(error)]:
            checks.append(Check(MISSING, "settings", problem.removeprefix("Error: ")))
    checks += _agents(opts, env, cwd, home)
    checks.append(_identity(env, cwd))
    checks += _backlog(opts, env, cwd, err)
    checks.append(_specs(opts, cwd))
    checks += _sandbox(opts, env)
    checks.append(_tool(("bwrap",), "bwrap", SANDBOX_HINT, env))
    checks.append(_tool(("chromium", "chromium-browser"), "chromium", CHROMIUM_HINT, env))
    return checks


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         cwd: Path | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    for arg in argv:
        if arg in ("--help", "-h"):
            out.write(HELP)
            return EXIT_OK
        err.write(f"Error: Unknown option '{arg}'\nRun 'ralph doctor --help' for usage\n")
        return EXIT_USAGE
    checks = run_checks(os.environ, Path(cwd or Path.cwd()), err)
    for check in checks:
        out.write(check.line() + "\n")
    failed = [c for c in checks if c.status == MISSING and c.required]
    out.write("Nothing required is missing.\n" if not failed else
              f"{len(failed)} required check{'s' if len(failed) != 1 else ''} failed: fix the "
              "lines marked missing.\n")
    return EXIT_OK if not failed else EXIT_USAGE


__all__ = ["Check", "run_checks", "main", "HELP"]
