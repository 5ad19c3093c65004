"""Owns the command line of `ralph plan` and `ralph build`, derived from the settings table:
parsing the flags by hand into the values given (ralph.sh's exact messages,
docs/contract/ralph-cli.md s.3) and the mode help texts (s.4, byte for byte). Never prints: a bad
flag raises UsageError, `--help` comes back as `CommandLine.help`. Merging with ralph.yml and the
environment is settings'."""
from __future__ import annotations

from dataclasses import dataclass, field

from ralphpy.config import kinds
from ralphpy.config.table import SECTIONS, SETTINGS, Setting, default_shown
from ralphpy.errors import UsageError

_HELP_TAIL = "  --help, -h                  Show this help\n"


@dataclass(frozen=True)
class CommandLine:
    """What the flags after `plan`/`build` said: setting name -> value, as given."""
    values: dict[str, object] = field(default_factory=dict)
    help: bool = False


def _flags(mode: str) -> dict[str, Setting]:
    return {name: s for s in SETTINGS if mode in s.modes for name in s.flags}


def parse(mode: str, args: list[str]) -> CommandLine:
    """Read the flags left to right (s.3); the last of a repeated flag wins; `--help`
    stops the reading (later arguments are not examined)."""
    by_name = _flags(mode)
    values: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--help", "-h"):
            return CommandLine(values, help=True)
        setting = by_name.get(arg)
        if setting is None:
            raise UsageError(f"Error: Unknown option '{arg}'\nRun 'ralph {mode} --help' for usage")
        if not setting.needs:
            values[setting.name] = True
        else:
            raw = args[i + 1] if i + 1 < len(args) else ""
            try:
                if not raw or raw.startswith("-"):
                    raise ValueError(raw)
                values[setting.name] = kinds.from_flag(setting.kind, raw)
            except ValueError:
                raise UsageError(f"Error: {setting.flag} requires {setting.needs}") from None
            i += 1
        i += 1
    return CommandLine(values)


def help_text(mode: str) -> str:
    """The mode help of s.4: ralph.sh's lines, then the added flags', then `--help, -h`."""
    lines = [f"Usage: ralph {mode} [options]", "", "Options:"]
    for section in SECTIONS:
        for setting in SETTINGS:
            if setting.section == section and mode in setting.modes:
                shown = default_shown(setting, mode)
                lines += [line.replace("{default}", shown) for line in setting.flag_help]
    return "\n".join(lines) + "\n" + _HELP_TAIL


__all__ = ["CommandLine", "parse", "help_text"]
