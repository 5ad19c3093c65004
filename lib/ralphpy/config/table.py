"""Owns the one table of ralph.py's settings: for each, its flag (with its `--help` lines and
the message for a bad argument), environment variable, ralph.yml key, default, kind, check and
one line of help. The command line (flags), the help text, the ralph.yml and environment
loading and the validation (settings) are derived from it; a new setting is a new row. Also
owns the mode default of the iteration limit and plan mode's `-n 0` rule. Knows nothing of
acting on a setting."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ralphpy.config import kinds
from ralphpy.errors import UsageError

MODES = ("plan", "build")
# The `--help` lines of a mode list the flags section by section, in this order
# (docs/contract/ralph-cli.md s.4: the lines of options ralph.sh did not have go after its four and
# before `--help, -h`).
SECTIONS = ("loop", "run", "tasks", "scope", "assign", "agent", "parallel", "sync", "verify",
            "notify", "unattended", "sandbox")
# s.3: without -n, plan runs one iteration and build runs until the backlog is done.
ITERATIONS_DEFAULT = {"plan": 1, "build": 0}
_DURATION = "a duration (e.g. 90s, 15m, 1h)"
# Each --parallel slot registers an agent and may run an agent CLI and a worktree: more than
# this is a typo (--parallel 100000 once registered agents until the id space ran out).
PARALLEL_MAX = 64


@dataclass(frozen=True)
class Setting:
    name: str                            # the Options field; the ralph.yml key when in_yml
    kind: str                            # kinds.KINDS: int, bool, number, duration (s), text,
                                         # list (of texts), lists (a list or name: list)
    default: Any
    section: str                         # SECTIONS: where its flag's help lines go
    help: str                            # one line for the configuration reference
    flags: tuple[str, ...] = ()          # ("--max-iterations", "-n"); (): ralph.yml/env only
    needs: str = ""                      # a flag's argument ("Error: <flag> requires <needs>");
                                         # "" for a switch
    flag_help: tuple[str, ...] = ()      # its `--help` lines; "{default}" shows the default
    modes: tuple[str, ...] = MODES       # the modes whose command line takes the flag
    env: str | None = None               # environment variable
    in_yml: bool = True                  # a ralph.yml key
    check: kinds.Check | None = None     # None if fine, else what is expected
    persist: bool = True                 # kept in the run state; a resumed run keeps it

    @property
    def flag(self) -> str | None:
        """The long flag, as messages name it."""
        return self.flags[0] if self.flags else None


def _row(name: str, kind: str, default: Any, section: str, help: str, flag_help: str = "",
         **more: Any) -> Setting:
    """A row whose flag is --<name with dashes>, when it has --help lines."""
    lines = tuple(flag_help.split("\n")) if flag_help else ()
    flags = more.pop("flags", ("--" + name.replace("_", "-"),) if lines else ())
    return Setting(name, kind, default, section, help, flags=flags, flag_help=lines, **more)


def _unattended(name: str, kind: str, default: Any, help: str, line: str, **more: Any) -> Setting:
    needs = {"duration": _DURATION, "int": "a number", "number": "a number (USD)"}[kind]
    return _row(name, kind, default, "unattended", help, line, needs=needs, **more)


def _task_store(value: str) -> str | None:
    """--tasks: a source name, or a store URL whose scheme is known (postgresql://)."""
    from ralphpy.sources.registry import NAMES, source_name
    from ralphpy.tasks import store_url
    kind = store_url.scheme(value)
    if kind in store_url.POSTGRES_SCHEMES or (kind is None and source_name(value) in NAMES):
        return None
    return f"{', '.join(NAMES)} or a postgresql:// URL"


def _known_agents(names: tuple[str, ...]) -> str | None:
    """agents: each a named agent CLI (`command` has no CLI of its own to fall back to)."""
    from ralphpy.agents.adapters import named
    known = sorted(a.name for a in named())
    unknown = [n for n in names if n not in known]
    return f"agents ralph knows ({', '.join(known)}); not {unknown[0]!r}" if unknown else None


def _escalation_agents(value: tuple[str, ...] | dict[str, tuple[str, ...]]) -> str | None:
    """escalate: a mapping's keys each a named agent CLI. The models are checked per agent
    once the run's agent and models.json are known (loop.night_shift.check_escalate)."""
    return _known_agents(tuple(value)) if isinstance(value, dict) else None


SETTINGS: tuple[Setting, ...] = (
    # s.3, s.4: ralph.sh's four flags; their help lines are s.4's, byte for byte.
    _row("max_iterations", "int", None, "loop",
         "iteration limit; unset: 1 in plan mode, 0 (unlimited) in build mode",
         "  --max-iterations N, -n N   Limit loop iterations\n"
         "                             (default: {default})",
         flags=("--max-iterations", "-n"), needs="a number", check=kinds.at_least(0),
         persist=False),                 # the run state keeps it as maxIterations
    _row("model", "text", None, "loop", "model alias (models.json)",
         "  --model <alias>, -m <alias> Select model by alias (see models.json)",
         flags=("--model", "-m"), needs="an alias (e.g. opus-4.5, sonnet, haiku)"),
    _row("danger", "bool", False, "loop", "pass --dangerously-skip-permissions to the agent",
         "  --danger                    Enable --dangerously-skip-permissions"),
    _row("completion_promise", "text", "COMPLETE", "loop",
         "plan mode: stop on <promise>TEXT</promise>",
         "  --completion-promise TEXT   Stop early on <promise>TEXT</promise>\n"
         "                              (default: {default})",
         needs="a text", modes=("plan",)),
    # How this invocation runs, not what the run is: not persisted.
    _row("dry_run", "bool", False, "run", "print what would happen, write nothing",
         "  --dry-run                   Show what would run; write nothing", persist=False),
    _row("resume", "bool", False, "run", "continue the last unfinished run",
         "  --resume                    Continue the last unfinished run", persist=False),
    # The task source is this invocation's choice, made before the run state is read
    # (docs/task-sources.md): not persisted.
    _row("tasks", "text", "sqlite", "tasks",
         "task source: sqlite (the embedded store), tk, flowctl, github[:OWNER/REPO][?label=L]"
         " (labelled issues, docs/github.md), or a postgresql:// URL (the"
         " embedded task CLI on a PostgreSQL store shared by a fleet, docs/fleet.md)",
         "  --tasks sqlite|tk|flowctl|github|postgresql://...\n"
         "                              Task source (default: sqlite, .ralph/tasks.db;\n"
         "                              postgresql://user@host/db: a fleet's shared store)",
         needs="sqlite, tk, flowctl, github or a postgresql:// URL", env="RALPH_TASKS",
         check=_task_store, persist=False),
    # A fleet's claims are renewed by the runner's heartbeat (docs/fleet.md): a stopped host's
    # task is free again once this lease runs out. ralph.yml only: the machines of a fleet
    # share the repository's ralph.yml, so they agree on how long a silent host is waited for.
    _row("lease", "duration", 600.0, "tasks",
         "PostgreSQL store: how long a claimed task stays its agent's without a heartbeat; the"
         " runner renews it every third of this while the agent's session runs",
         check=kinds.at_least(3)),
    # A store never reached since the command started is a typo in its host or port, not an
    # outage (docs/fleet.md): given up after this long, where an outage of a store the run
    # has reached is waited out (fleet.outage). How this invocation starts: not persisted.
    _row("store_connect_timeout", "duration", 15.0, "tasks",
         "PostgreSQL store: how long a command waits for a store it has not reached yet"
         " before it stops (exit 1)",
         "  --store-connect-timeout DUR Stop (exit 1) when the store is not reached\n"
         "                              within DUR at start (default: 15s)",
         needs=_DURATION, check=kinds.at_least(1), persist=False),
    _row("prompt", "text", None, "tasks",
         "claim a task and send this template, {id} replaced by its id",
         "  --prompt TEMPLATE           Claim a task, run TEMPLATE with {id} as prompt",
         needs="a template (e.g. '/tf {id} --auto')", modes=("build",), in_yml=False,
         persist=False),
    _row("freeze_scope", "bool", False, "scope",
         "snapshot the scope at start; only frozen tasks run",
         "  --freeze-scope              Run only the tasks that exist at start",
         env="FREEZE_SCOPE"),
    _row("stop_on_scope_change", "bool", False, "scope",
         "stop the run when the frozen scope changes",
         "  --stop-on-scope-change      Stop (exit 4) when the frozen scope changes",
         env="STOP_ON_SCOPE_CHANGE"),
    _row("scope_watch", "bool", True, "scope",
         "scope freeze: let inotify say which spec files changed (off: stat every spec"
         " file before each session)", env="SCOPE_WATCH", persist=False),
    _row("assign", "bool", False, "assign",
         "ralph claims the task and injects it (one task per session)",
         "  --assign                    Claim one task per session and inject it",
         modes=("build",)),
    _row("assign_prompt", "text", None, "assign",
         "assignment mode: the anti-drift template file (default: the shipped one)"),
    _row("inbox", "text", None, "assign",
         "assignment mode: inbox folder of JSON/.md tasks (default: .ralph/inbox)"),
    _row("respawn_limit", "int", 3, "assign",
         "assignment mode: hold a task spawned this many times without progress",
         check=kinds.at_least(1)),
    _row("continue_session", "bool", False, "assign",
         "resume the agent's last conversation (--continue) unless FRESH_START",
         "  --continue-session          Resume the last agent conversation\n"
         "                              (unless .ralph/FRESH_START exists)"),
    _row("respawn_safety", "bool", True, "assign",
         "neutralise a leftover .claude/ralph-loop.local.md before each launch"),
    _unattended("session_timeout", "duration", 3600.0,
                "kill a session after this long; 0 disables",
                "  --session-timeout DUR       End a session after DUR (default: 60m; 0: off)",
                check=kinds.at_least(0)),
    _unattended("idle_timeout", "duration", 900.0,
                "kill a session silent for this long; 0 disables",
                "  --idle-timeout DUR          End a session silent for DUR (default: 15m; 0: off)",
                check=kinds.at_least(0)),
    _unattended("kill_grace", "duration", 10.0, "SIGTERM to SIGKILL after a timeout",
                "  --kill-grace DUR            SIGTERM to SIGKILL after a timeout (default: 10s)",
                in_yml=False, persist=False),
    _unattended("max_attempts", "int", 3, "block a task after this many failed attempts",
                "  --max-attempts N            Hold a task after N failed attempts",
                modes=("build",), check=kinds.at_least(1)),
    _unattended("max_idle_sessions", "int", 3,
                "stop after this many sessions in a row without progress; 0 disables",
                "  --max-idle-sessions N       Stop (exit 6) after N sessions without progress",
                check=kinds.at_least(0)),
    _unattended("max_consecutive_failures", "int", 5,
                "stop after this many failed sessions in a row; 0 disables",
                "  --max-consecutive-failures N Stop (exit 6) after N failed sessions in a row",
                check=kinds.at_least(0)),
    _unattended("max_cost", "number", None, "stop after the sessions cost this many USD",
                "  --max-cost USD              Stop (exit 5) once the sessions cost USD",
                check=kinds.positive),
    _unattended("max_runtime", "duration", None, "stop after the run has lasted this long",
                "  --max-runtime DUR           Stop (exit 5) once the run has lasted DUR",
                check=kinds.positive),
    _unattended("max_limit_wait", "duration", None,
                "longest total wait for usage limits to reset",
                "  --max-limit-wait DUR        Longest usage-limit wait (default: 6h; exit 5)",
                check=kinds.at_least(0)),
    _unattended("limit_wait_margin", "duration", 120.0, "wait this long past a limit's reset",
                "  --limit-wait-margin DUR     Wait this long past a limit's reset (default: 2m)",
                in_yml=False, persist=False),
    _unattended("limit_default_wait", "duration", 1800.0,
                "wait this long for a usage limit that names no reset time",
                "  --limit-default-wait DUR    Wait for a limit without reset time (default: 30m)",
                in_yml=False, persist=False),
    _row("agent", "text", "claude", "agent", "agent backend name",
         "  --agent NAME                Agent CLI: claude (default), amp, codex,\n"
         "                              command, gemini, opencode, pi",
         needs="a name (e.g. claude, codex, pi)"),
    _row("agent_cmd", "text", None, "agent", "agent binary or command template",
         "  --agent-cmd CMD             Agent program; with --agent command, the\n"
         "                              command ({prompt} marks the prompt)",
         needs="a command"),
    _row("parallel", "int", 1, "parallel", "sessions at once (build mode)",
         "  --parallel N                Up to N sessions at once, in git worktrees",
         needs="a number", modes=("build",), check=kinds.between(1, PARALLEL_MAX)),
    _row("merge", "text", "rebase", "parallel",
         "merge a finished task's branch back with --parallel: rebase, ff or none",
         "  --merge rebase|ff|none      Merge a finished task's branch (--parallel)",
         needs="rebase, ff or none", modes=("build",),
         check=kinds.one_of("rebase", "ff", "none")),
    # A worktree has the tracked files only: .worktreeinclude copies the ignored ones a project
    # needs (.env), this command does the rest (parallel.worktree_setup).
    _row("worktree_setup", "text", None, "parallel",
         "run this command (sh -c) in each new --parallel worktree before its agent starts; a"
         " failure fails its task",
         "  --worktree-setup CMD        Run CMD in each new worktree before its\n"
         "                              agent starts (--parallel)",
         needs="a command", modes=("build",)),
    _row("worktree_setup_timeout", "duration", 600.0, "parallel",
         "stop the worktree set-up command after this long (its task fails)",
         check=kinds.positive),
    # git across machines (docs/fleet.md). No environment variable (decisions/0007).
    _row("sync", "bool", False, "sync",
         "fetch and rebase onto the shared branch before each session; push after each"
         " finished task (build)",
         "  --sync                      Rebase on origin before each session,\n"
         "                              push each finished task"),
    # A pull request per finished task (docs/github.md). No environment variable, as --sync.
    _row("pr", "bool", False, "sync",
         "build: push each finished task to its own branch and open a pull request; hold the"
         " task until it is merged",
         "  --pr                        A pull request per finished task (GitHub)",
         modes=("build",)),
    _row("pr_wait", "text", "checks", "sync",
         "--pr: checks (wait for the checks and reviews, feed failures back) or none",
         "  --pr-wait checks|none       Wait for checks and reviews (default: checks)",
         needs="checks or none", modes=("build",), check=kinds.one_of("checks", "none")),
    _row("pr_merge", "text", "auto", "sync",
         "--pr: merge a green pull request (auto: a merge commit, squash, rebase) or leave it"
         " to a person (manual)",
         "  --pr-merge auto|squash|rebase|manual\n"
         "                              Merge green pull requests (default: auto)",
         needs="auto, squash, rebase or manual", modes=("build",),
         check=kinds.one_of("auto", "squash", "rebase", "manual")),
    _row("pr_poll", "duration", 30.0, "sync",
         "--pr: how often a waiting pull request's checks and reviews are read",
         check=kinds.at_least(1)),
    # One channel per line: a command, an http(s):// URL or `desktop` (notify.settings).
    _row("notify", "text", None, "notify",
         "notify on run end, stops, limit waits, held tasks, scope changes",
         "  --notify CMD|URL|desktop    Notify on run end, stops, limit waits,\n"
         "                              held tasks and scope changes",
         needs="a command, a URL or desktop"),
    _row("notify_timeout", "duration", 10.0, "notify", "longest time one notification may take",
         check=kinds.positive),
    # verified completion (docs/verify.md)
    _row("verify", "text", None, "verify",
         "run this command after a task is marked done; a failure reopens the task",
         "  --verify CMD                Run CMD after a task is marked done;\n"
         "                              a failure reopens the task",
         needs="a command", modes=("build",)),
    _row("verify_timeout", "duration", 600.0, "verify",
         "stop the verify command after this long (a failure of its own)", check=kinds.positive),
    _row("tamper", "text", "hold", "verify",
         "test tampering found in a session's diff: hold the task, warn, or off",
         check=kinds.one_of("hold", "warn", "off")),
    _row("protect", "list", (), "verify",
         "globs of files a session may add to but not change (a list, or one text of globs"
         " separated by spaces or commas)"),
    # the night shift (docs/night-shift.md): pacing, fallback agents, model escalation
    _row("pace", "text", None, "unattended",
         "use at most this share of each usage window, spread over the window (e.g. 80%)",
         "  --pace PCT                  Use at most PCT of each usage window, spread\n"
         "                              over it (e.g. 80%)",
         needs="a percentage (e.g. 80%)", check=kinds.percentage),
    _row("agents", "list", (), "agent",
         "fallback agents, in order, after --agent: the first not limited takes the next"
         " session",
         "  --fallback-agent NAMES      Agents that take over at a usage limit",
         flags=("--fallback-agent",), needs="an agent name (e.g. codex)",
         check=lambda names: _known_agents(names)),
    _row("escalate", "lists", (), "agent",
         "models of a task's attempts, one after another failure (e.g. [haiku, sonnet, opus]),"
         " or per agent ({claude: [haiku, opus], codex: [gpt-5-mini, gpt-5]})",
         check=lambda value: _escalation_agents(value)),
    # docs/sandbox.md: what a session sees inside; none keeps every run as it was.
    _row("sandbox", "text", "none", "sandbox",
         "run each agent session in a sandbox: auto, bwrap, docker, podman or none",
         "  --sandbox MODE              Run each session in a sandbox: auto, bwrap,\n"
         "                              docker, podman or none (default)",
         needs="auto, bwrap, docker, podman or none",
         check=kinds.one_of("auto", "bwrap", "docker", "podman", "none")),
    _row("sandbox_image", "text", None, "sandbox",
         "the image --sandbox docker or podman runs the agent in (the agent CLI installed)",
         "  --sandbox-image IMAGE       The image of --sandbox docker|podman",
         needs="an image name"),
)
BY_NAME = {s.name: s for s in SETTINGS}


def iteration_limit(mode: str, value: int | None) -> int:
    """The run's iteration limit: `value` (from any source), else the mode default. Plan mode
    refuses 0 (s.3), whichever source gave it."""
    if value is None:
        return ITERATIONS_DEFAULT[mode]
    if mode == "plan" and value == 0:
        raise UsageError("Error: plan mode requires at least 1 iteration (-n 0 is not allowed)")
    return value


def default_shown(setting: Setting, mode: str) -> str:
    """The "(default: ...)" of a help line."""
    if setting.name == "max_iterations":
        return str(ITERATIONS_DEFAULT[mode] or "unlimited")
    return str(setting.default)


__all__ = ["MODES", "SECTIONS", "Setting", "SETTINGS", "BY_NAME", "iteration_limit",
           "default_shown"]
