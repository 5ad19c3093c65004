"""Owns which release of its agent CLI a session ran, for the session's record: the version the
CLI's own stream named (Claude Code's `system/init` event carries `claude_code_version`; the
renderer keeps it as the summary's `cli_version`), else the version of the npm package whose
`bin` the binary on the session's PATH is, read once per run and kept. codex, gemini, opencode
and pi name no version of themselves in their streams (pi's `session` event's `version` is its
session format's).

Never runs the CLI: `<cli> --version` would be one more process per run of a program that may
be a wrapper, `npx`, or a stub that takes any argv for a session. Does not own the session
record (runs/) or the report. Never prints."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping

_PACKAGE_LEVELS = 3            # bin/x, dist/x, bundle/x: the package root is a level or two up
_KNOWN: dict[tuple[str, str, str], str | None] = {}    # (agent, binary, PATH) -> version


def _installed(name: str, binary: str, path: str) -> str | None:
    """The version of the npm package that installed `binary` as its `name` command."""
    found = shutil.which(binary, path=path)
    if found is None:
        return None
    target = Path(found).resolve()
    for root in list(target.parents)[:_PACKAGE_LEVELS]:
        manifest = root / "package.json"
        if not manifest.is_file():
            continue
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        bins = data.get("bin") if isinstance(data, dict) else None
        command = bins.get(name) if isinstance(bins, dict) else (
            bins if str(data.get("name", "")).rsplit("/", 1)[-1] == name else None)
        version = data.get("version")
        if (isinstance(command, str) and (root / command).resolve() == target
                and isinstance(version, str) and version):
            return version
        return None                         # the nearest package is not this CLI's
    return None


def of_session(adapter: Any, summary: Any, env: Mapping[str, str]) -> str | None:
    """The version of the CLI the session ran, or None when neither its stream nor its
    installation says."""
    named = getattr(summary, "cli_version", None)
    if isinstance(named, str) and named:
        return named
    if getattr(adapter, "name", "command") == "command" or not adapter.binary:
        return None
    key = (adapter.name, adapter.binary[0], env.get("PATH", ""))
    if key not in _KNOWN:
        _KNOWN[key] = _installed(adapter.name, adapter.binary[0], key[2])
    return _KNOWN[key]


def session_fields(adapter: Any, summary: Any, env: Mapping[str, str]) -> dict[str, str]:
    """`{"agent_version": ...}` for the session_end event, or {} when it is not known."""
    version = of_session(adapter, summary, env)
    return {"agent_version": version} if version else {}


__all__ = ["of_session", "session_fields"]
