"""Owns the agent's command line: the agent backends as one table of adapters, one per agent
CLI, each knowing its argv (docs/contract/ralph-cli.md s.11 for claude, byte-exact), whether the
prompt goes on argv or stdin, the extra environment it needs, which renderer reads its stdout, which
facts (cost, turns, tokens, result, rate-limit events, errors) that CLI reports, so the loop can
tell a user that a budget cannot be enforced, and, for a CLI that says a refusal only on its stderr
(amp), how to recognise it (`refusal`; amp's words are agents/amp.py's). `get_adapter(name,
agent_cmd)` picks one by `--agent` / `agent:` name; `--agent-cmd` replaces the binary (and is
the argv template of the `command` backend).

Also the big-prompt fallback (Linux refuses one argument of 128 KiB or more, so task data that
would not fit goes to a file under .ralph/ and the prompt names that file): `prompt_fits` and
`spill_prompt`.

Does not own running the process (session/), the log file, model alias resolution (s.7),
the prompt text, or what the facts mean. Never looks a binary up: the session runner does,
when it starts the agent (s.11: "looked up on PATH for every session"). Never prints.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping, Sequence

from ralphpy import atomic_file
from ralphpy.agents import amp
from ralphpy.agents import summary as agent_summary
from ralphpy.agents import streams
from ralphpy.agents import claude_render
from ralphpy.agents.refusal import Refusal
from ralphpy.errors import EnvironmentFailure, UsageError

AGENT = "claude"
# MAX_ARG_STRLEN on Linux: 32 pages = 131072 bytes per argument, its NUL included.
MAX_ARG_BYTES = 131072 - 1

# Slots in a template: replaced by the prompt, the danger/safe flags, the model flags and the
# caller's extra arguments; any other token is copied as is.
PROMPT, DANGER, MODEL, EXTRA = "{prompt}", "{danger}", "{model}", "{extra}"
# How to log an agent CLI in again after its key was refused (the exit-9 line), when its
# adapter does not know better.
ANY_LOGIN = "or fix the agent's API key"


@dataclass(frozen=True)
class AgentAdapter:
    """How to run one agent CLI. `template` is the argv after `binary`."""

    name: str
    binary: tuple[str, ...]
    template: tuple[str, ...]
    renderer_factory: Callable[[BinaryIO], Any]
    danger_args: tuple[str, ...] = ()
    safe_args: tuple[str, ...] = ()
    model_args: tuple[str, ...] | None = ("--model", MODEL)   # None: the CLI has no model option
    danger_env: Mapping[str, str] = field(default_factory=dict)
    reports: frozenset[str] = frozenset()
    notes: str = ""
    login: str = ANY_LOGIN          # how to log in again and the key it reads (exit 9)
    package: str = ""               # the npm package that installs the CLI (ralph doctor's hint)
    # The CLI's own refusal of a session, from its stderr's tail and the summary (refusal.py):
    # set, the agent's stderr is read (passed on as it comes), not inherited.
    refusal: Callable[[str, Any], Refusal | None] | None = None
    # Its own files under $HOME (login, settings, sessions): a sandbox shows these, and of
    # $HOME nothing else (docs/sandbox.md). A name ending in "/" is a folder, made when missing
    # so that what the CLI writes there outlives the session.
    state: tuple[str, ...] = ()

    @property
    def reads_stderr(self) -> bool:
        return self.refusal is not None

    @property
    def prompt_on_stdin(self) -> bool:
        """True when the template has no {prompt}: the prompt is written to the agent's stdin
        (then closed), instead of s.11's /dev/null."""
        return not any(PROMPT in token for token in self.template)

    def argv(self, prompt: str, *, model: str | None = None, danger: bool = False,
             extra: Sequence[str] = ()) -> list[str]:
        """The full argv. The prompt is one element whatever it holds (s.11: no shell), but
        for a NUL byte, which no argument can hold: task text may (a title, a verify command's
        output in a fail reason), so it is given as U+FFFD."""
        prompt = prompt.replace("\0", "\ufffd")
        if model is not None and self.model_args is None:
            raise UsageError(f"agent '{self.name}' takes no --model; "
                             f"put the model in --agent-cmd or drop --model")
        out = list(self.binary)
        for token in self.template:
            if token == DANGER:
                out += self.danger_args if danger else self.safe_args
            elif token == MODEL:
                if model is not None:
                    out += [model if t == MODEL else t for t in self.model_args or ()]
            elif token == EXTRA:
                out += list(extra)
            elif PROMPT in token:
                out.append(token.replace(PROMPT, prompt))
            else:
                out.append(token)
        return out

    def stdin(self, prompt: str) -> bytes | None:
        """Bytes to write to the agent's stdin, or None for /dev/null (s.11)."""
        return prompt.encode("utf-8", "surrogateescape") if self.prompt_on_stdin else None

    @property
    def danger_shown(self) -> str:
        """What --danger gives this CLI, as the banner's `Safe:` line names it (s.10: claude's
        `--dangerously-skip-permissions`)."""
        given = [*self.danger_args, *(f"{k}={v}" for k, v in self.danger_env.items())]
        return " ".join(given) or "nothing to skip: the agent asks no permissions"

    def env(self, *, danger: bool = False) -> dict[str, str]:
        """Variables to add to the agent's environment (on top of ralph.py's, s.11)."""
        return dict(self.danger_env) if danger else {}

    def new_renderer(self, out: BinaryIO) -> Any:
        """A renderer with feed(bytes)/close()/summary for this CLI's stdout."""
        return self.renderer_factory(out)


_CLAUDE_FACTS = frozenset({"cost", "turns", "result", "rate_limits"})

_TABLE: dict[str, AgentAdapter] = {a.name: a for a in (
    # s.11, exactly: claude -p P --output-format=stream-json --verbose [--danger…] [--model M]
    AgentAdapter(
        "claude", ("claude",),
        ("-p", PROMPT, "--output-format=stream-json", "--verbose", DANGER, MODEL, EXTRA),
        claude_render.StreamRenderer, danger_args=("--dangerously-skip-permissions",),
        reports=_CLAUDE_FACTS, login="(`claude /login`) or fix the API key (ANTHROPIC_API_KEY)",
        package="@anthropic-ai/claude-code", state=(".claude/", ".claude.json")),
    # pi runs tools without asking, so --danger adds nothing. pi 0.73 rejects `--` ("Error:
    # Unknown option: --") and reads an argument starting with '-' as an option and one with
    # '@' as a file to attach, so the prompt goes on stdin, which print mode (-p) reads.
    AgentAdapter(
        "pi", ("pi",), ("--mode", "json", "-p", MODEL, DANGER, EXTRA),
        streams.PiRenderer,
        reports=frozenset({"cost", "turns", "tokens", "result", "errors"}),
        notes="pi has no permission prompts: --danger changes nothing",
        package="@mariozechner/pi-coding-agent", state=(".pi/",)),
    # Without --danger: workspace-write sandbox (edits in the checkout, no network), since
    # codex exec defaults to read-only and could do no work.
    AgentAdapter(
        "codex", ("codex",), ("exec", "--json", DANGER, MODEL, EXTRA, "--", PROMPT),
        streams.CodexRenderer,
        danger_args=("--dangerously-bypass-approvals-and-sandbox",),
        safe_args=("--sandbox", "workspace-write"), model_args=("-m", MODEL),
        reports=frozenset({"turns", "tokens", "result", "errors"}),
        login="(`codex login`) or fix the API key (OPENAI_API_KEY, or the model provider's "
              "env_key)", package="@openai/codex", state=(".codex/",)),
    # amp's --stream-json is Claude Code's stream-json: the s.12 renderer reads it (amp.py
    # adds amp's own lines). The prompt must follow --execute directly (amp reads it as that
    # option's value). amp says a refused key or a spent credit only on stderr.
    AgentAdapter(
        "amp", ("amp",), ("--execute", PROMPT, "--stream-json", DANGER, EXTRA),
        amp.AmpRenderer, danger_args=("--dangerously-allow-all",), model_args=None,
        reports=frozenset({"turns", "result", "errors"}),
        login="(`amp login`) or fix the API key (AMP_API_KEY)", refusal=amp.refusal,
        package="@ampcode/cli", state=(".config/amp/", ".local/share/amp/", ".cache/amp/")),
    # opencode's run flag for skipping permissions changed name across versions; the
    # OPENCODE_PERMISSION variable works in all of them.
    AgentAdapter(
        "opencode", ("opencode",), ("run", "--format", "json", MODEL, EXTRA, PROMPT),
        streams.OpencodeRenderer, model_args=("-m", MODEL),
        danger_env={"OPENCODE_PERMISSION": '{"*":"allow"}'},
        reports=frozenset({"cost", "turns", "tokens", "result", "errors"}),
        package="opencode-ai",
        state=(".config/opencode/", ".local/share/opencode/", ".local/state/opencode/")),
    # gemini 0.61 refuses to run headless in a folder it does not trust (exit 55): --danger
    # also trusts the checkout for the session; without it the user trusts the folder once.
    AgentAdapter(
        "gemini", ("gemini",),
        ("-p", PROMPT, "--output-format=stream-json", DANGER, MODEL, EXTRA),
        streams.GeminiRenderer, danger_args=("--yolo", "--skip-trust"),
        model_args=("-m", MODEL),
        reports=frozenset({"tokens", "result", "errors"}),
        login="(`gemini`, then /auth) or fix the API key (GEMINI_API_KEY)",
        package="@google/gemini-cli", state=(".gemini/",)),
)}

KNOWN_AGENTS: tuple[str, ...] = tuple(sorted([*_TABLE, "command"]))


def _split(agent_cmd: str) -> list[str]:
    try:
        words = shlex.split(agent_cmd)
    except ValueError as err:
        raise UsageError(f"--agent-cmd {agent_cmd!r} cannot be split: {err}") from None
    if not words:
        raise UsageError("--agent-cmd is empty")
    return words


def get_adapter(name: str, agent_cmd: str | None = None) -> AgentAdapter:
    """The adapter for `--agent NAME` (default claude). `agent_cmd` replaces the binary of a
    named backend (shell words: `npx -y @openai/codex` works); for `command` it is the whole
    argv template: `{prompt}` marks where the prompt goes (inside a word too, as in
    `--message={prompt}`); without it the prompt goes on stdin."""
    if name == "command":
        if not agent_cmd:
            raise UsageError("agent 'command' needs --agent-cmd, "
                             "e.g. --agent-cmd 'mytool run {prompt}'")
        words = _split(agent_cmd)
        if PROMPT in words[0]:
            raise UsageError(f"--agent-cmd must start with a program, not {PROMPT}: {agent_cmd!r}")
        return AgentAdapter("command", (words[0],), (*words[1:], EXTRA),
                            agent_summary.PlainRenderer, model_args=None,
                            notes="--danger changes nothing: put such flags in --agent-cmd")
    adapter = _TABLE.get(name)
    if adapter is None:
        raise UsageError(f"unknown agent '{name}' (known: {', '.join(KNOWN_AGENTS)})")
    if agent_cmd:
        words = _split(agent_cmd)
        if any(PROMPT in w for w in words):
            raise UsageError(f"--agent-cmd with {PROMPT} needs --agent command (agent '{name}' "
                             f"places the prompt itself)")
        adapter = replace(adapter, binary=tuple(words))
    return adapter


def named() -> tuple[AgentAdapter, ...]:
    """Every named agent CLI's adapter (not `command`, which has no CLI of its own)."""
    return tuple(_TABLE.values())


def login_hint(name: str) -> str:
    """How agent `name` (`--agent`) is logged in again, as the exit-9 line says it."""
    adapter = _TABLE.get(name)
    return adapter.login if adapter is not None else ANY_LOGIN


def reports_result(name: str) -> bool:
    """Whether agent `name`'s output ends with a result event (a session without one did not
    finish): every named CLI's stream does; the `command` backend's plain output has none."""
    adapter = _TABLE.get(name)
    return adapter is not None and "result" in adapter.reports


def refusal(name: str, stderr_tail: str, summary: Any) -> Refusal | None:
    """Agent `name`'s own refusal of a finished session (a login it cannot get past, no
    credit), from what it printed; None when its adapter knows of none."""
    adapter = _TABLE.get(name)
    if adapter is None or adapter.refusal is None:
        return None
    return adapter.refusal(stderr_tail, summary)


def prompt_fits(prompt: str) -> bool:
    return len(prompt.encode("utf-8", "surrogateescape")) <= MAX_ARG_BYTES


def spill_prompt(command: str, data: str, path: Path) -> str:
    """Write `data` (the task data) to `path` atomically and return the prompt that refers to
    it: `<command> <note naming the file>`. The skill reads the file in place of the data."""
    try:
        atomic_file.replace(path, data.encode("utf-8", "surrogateescape") + b"\n")
    except OSError as exc:
        raise EnvironmentFailure(f"cannot write the task data to {path}: {exc.strerror}; "
                                 "check that .ralph/ is writable") from None
    return (f"{command} The task data is too large for the command line "
            f"({len(data.encode('utf-8', 'surrogateescape'))} bytes); read it from the file "
            f"{path} (same format as it would have had here).")


__all__ = ["AgentAdapter", "KNOWN_AGENTS", "get_adapter", "AGENT", "prompt_fits",
           "spill_prompt", "named", "login_hint", "refusal", "reports_result", "ANY_LOGIN"]
