"""Owns loading the settings of one run: the command line's values, the environment and an
optional ralph.yml at the repository root, merged with the precedence CLI > environment >
ralph.yml > defaults and validated against the settings table before anything is written, with
one clear line per bad key or value; the result is a typed `Options`. Does not parse argv
(flags does) and does not act on any setting."""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ralphpy.config import kinds
from ralphpy.config.options import Options
from ralphpy.config.table import SETTINGS, iteration_limit
from ralphpy.errors import UsageError

CONFIG_NAME = "ralph.yml"
_YML_KEYS = [s.name for s in SETTINGS if s.in_yml]


def _usage(problems: list[str]) -> UsageError:
    error = UsageError("\n".join(problems))
    error.problems = problems      # one line each; ralph.py prints each as an `Error: ` line
    return error


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
    from ralphpy.config import yaml_text         # only a run with a ralph.yml pays for PyYAML
    try:
        data = yaml_text.parse(text)
    except yaml_text.InvalidYaml as err:
        raise _usage([f"{CONFIG_NAME}: {err}"]) from None
    if data is None:
        return {}                  # an empty file, or only comments
    if not isinstance(data, dict):
        raise _usage([f"{CONFIG_NAME}: the top level must be a mapping of settings "
                      f"(key: value lines), got a {type(data).__name__}"])
    return data


def _shown(value: Any) -> str:
    """A value as a message shows it: a password in a URL (a task store's) is `***`."""
    if isinstance(value, float):              # a flag's number or duration: `0`, not `0.0`
        return f"{value:g}"
    if not isinstance(value, str):
        return str(value)
    from ralphpy.tasks.store_url import redact
    return repr(redact(value))


def load(mode: str, cli_values: Mapping[str, Any], environ: Mapping[str, str],
         repo_root: Path, only: frozenset[str] | None = None) -> Options:
    """Merge and validate. cli_values holds only what the command line gave. Raises
    UsageError: one line per problem, all of them, in .problems too; then plan mode's
    `-n 0` rule (docs/contract/ralph-cli.md s.3). only: the settings a command uses (`ralph task`:
    `tasks`): the others keep their defaults, and a problem in them (a key misspelt in ralph.yml) is
    left to the command that uses them."""
    if cli_values.get("max_iterations") is not None:     # s.3: a flag error comes first,
        iteration_limit(mode, cli_values["max_iterations"])  # before ralph.yml is read
    problems: list[str] = []
    file_values = _read_file(Path(repo_root) / CONFIG_NAME)
    for key in file_values if only is None else ():
        if key not in _YML_KEYS:
            close = difflib.get_close_matches(str(key).replace("-", "_"), _YML_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(f"{CONFIG_NAME}: unknown key '{key}'{hint}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        candidates = [
            ("cli", setting.flag or setting.name, cli_values.get(setting.name)),
            ("env", f"environment variable {setting.env}",
             (environ.get(setting.env) or None) if setting.env else None),
            (CONFIG_NAME, f"{CONFIG_NAME}: {setting.name}",
             file_values.get(setting.name) if setting.in_yml else None),
        ]
        values[setting.name], sources[setting.name] = setting.default, "default"
        if only is not None and setting.name not in only:
            continue
        chosen = False
        for source, label, raw in candidates:
            if raw is None:        # not given here (a null in ralph.yml means "default")
                continue
            try:               # every source is checked, even one a higher source overrides
                value = kinds.read(setting.kind, raw)
                expected = setting.check(value) if setting.check else None
                if expected:
                    raise kinds.Bad(expected)
            except kinds.Bad as err:
                problems.append(f"{label} must be {err}, got {_shown(raw)}")
                continue
            if not chosen:
                values[setting.name], sources[setting.name], chosen = value, source, True
    if problems:
        raise _usage(problems)
    values["max_iterations"] = iteration_limit(mode, values["max_iterations"])
    return Options(mode=mode, sources=sources, **values)


__all__ = ["CONFIG_NAME", "load", "find_repo_root"]
