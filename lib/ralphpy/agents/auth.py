"""Owns where each agent CLI looks for its login, for `ralph doctor`: the environment
variables and the files under its configuration directory whose presence means a login may
be there. Presence only: never reads a value or a file's content, never says whether a key
works (a session does: unattended.outcome's auth_failure). Not the login hint of the exit-9
line (adapters.login_hint), not the CLI itself (adapters). Never prints."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass(frozen=True)
class Login:
    variables: tuple[str, ...]          # any one set (non-empty) may log the CLI in
    home_variable: str | None           # the CLI's configuration directory, when it has one
    home_default: str                   # ... else this, relative to HOME
    files: tuple[str, ...]              # credential files inside that directory


# What each CLI's own documentation names (Claude Code: ANTHROPIC_API_KEY, an OAuth token, a
# cloud provider; codex: `codex login`'s auth.json; gemini: its OAuth cache; opencode and pi:
# their auth.json or a provider's key; amp: AMP_API_KEY or `amp login`'s secrets file).
_LOGINS: dict[str, Login] = {
    "claude": Login(("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                     "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"),
                    "CLAUDE_CONFIG_DIR", ".claude", (".credentials.json",)),
    "codex": Login(("OPENAI_API_KEY", "CODEX_API_KEY"), "CODEX_HOME", ".codex", ("auth.json",)),
    "gemini": Login(("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
                    None, ".gemini", ("oauth_creds.json",)),
    "opencode": Login(("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
                       "GEMINI_API_KEY"), None, ".local/share/opencode", ("auth.json",)),
    "pi": Login(("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
                 "OPENROUTER_API_KEY"), None, ".pi/agent", ("auth.json",)),
    "amp": Login(("AMP_API_KEY",), None, ".local/share/amp", ("secrets.json",)),
}


def _directory(login: Login, env: Mapping[str, str], home: Path) -> Path:
    given = env.get(login.home_variable, "") if login.home_variable else ""
    return Path(given) if given else home / login.home_default


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def found(name: str, env: Mapping[str, str], home: Path) -> str | None:
    """Where agent `name`'s login was found (a variable's name, never its value, or a file),
    None when nowhere it looks (`looked_for`) holds one."""
    login = _LOGINS.get(name)
    if login is None:
        return None
    for variable in login.variables:
        if env.get(variable):
            return f"${variable} is set"
    for file in login.files:
        path = _directory(login, env, home) / file
        if path.is_file():
            return _shown(path, home)
    return None


def looked_for(name: str, env: Mapping[str, str], home: Path) -> str:
    """The places `found` looks in for agent `name`, for the line that says none holds one."""
    login = _LOGINS.get(name)
    if login is None:
        return "nothing known"
    places = [f"${v}" for v in login.variables]
    places += [_shown(_directory(login, env, home) / f, home) for f in login.files]
    return ", ".join(places)


__all__ = ["found", "looked_for"]
