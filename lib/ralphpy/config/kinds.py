"""Owns the kinds of value a setting can hold (int, bool, number, duration, text, list of
texts, and lists: a list or a mapping of names to lists): reading one
from a command-line argument, an environment variable or a ralph.yml value, and the checks a
row of the settings table can ask for. A bad value raises `Bad`, whose text says what was
expected ("a whole number"); the caller names the source. Knows nothing of the table."""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from ralphpy.durations import parse_duration

KINDS = ("int", "bool", "number", "duration", "text", "list", "lists")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

Check = Callable[[Any], "str | None"]     # None if fine, else what is expected


class Bad(ValueError):
    """A value that does not fit its setting; the text says what was expected."""


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]+\s*", value):   # ASCII, as -n's
        return int(value)
    raise Bad("a whole number")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise Bad("a boolean (1/0, true/false, yes/no)")


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = _float(value)
        except ValueError:
            raise Bad("a number") from None
    else:
        raise Bad("a number")
    if not math.isfinite(number):
        raise Bad("a number")
    return number


# Ten years: a longer wait or limit is a typo, and datetime arithmetic overflows far beyond.
_DURATION_MAX_S = 3650 * 86400


def _float(text: str) -> float:
    """float(text) for ASCII text only: float() reads "١" (Arabic-Indic) as 1 too."""
    if not text.isascii():
        raise ValueError(text)
    return float(text)


def _duration(value: Any) -> float:
    """Seconds: a non-negative number, or a text in durations' grammar; ten years at most."""
    seconds = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value >= 0 and math.isfinite(value):
            seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            pass
    if seconds is None:
        raise Bad("a duration (seconds, or like 30s, 15m, 1h)")
    if seconds > _DURATION_MAX_S:
        raise Bad("a duration of at most 3650d")
    return seconds


def _text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return _plain(value)
    hint = " (put it in quotes)" if isinstance(value, (int, float)) else ""
    raise Bad(f"a non-empty text{hint}")


def _plain(text: str) -> str:
    """Text a program can be given: no NUL byte (argv and environment cannot hold one) and
    valid UTF-8 (what the run state and the agent's argv are written as)."""
    if "\0" in text:
        raise Bad("a text without NUL bytes")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Bad("valid UTF-8 text") from None
    return text


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.replace(",", " ").split())


def _list(value: Any) -> tuple[str, ...]:
    """A ralph.yml list of texts, or one text whose items are separated by spaces or commas
    (an environment variable, a flag, or a ralph.yml line)."""
    if isinstance(value, str) and _words(value):
        return _words(_plain(value))
    # a tuple: a flag's argument, read already (_FLAG_CONVERTERS)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and v.strip()
                                                          for v in value):
        return tuple(_plain(v.strip()) for v in value)
    raise Bad("a list of texts, or one text of items separated by spaces or commas")


def _lists(value: Any) -> tuple[str, ...] | dict[str, tuple[str, ...]]:
    """A list (as `list` reads it), or a ralph.yml mapping of names to such lists
    (`escalate: {claude: [haiku, opus], codex: [gpt-5-mini, gpt-5]}`)."""
    if not isinstance(value, dict):
        return _list(value)
    if not value:
        raise Bad("a list, or a mapping of names to lists")
    out = {}
    for name, items in value.items():
        if not isinstance(name, str) or not name.strip():
            raise Bad("a list, or a mapping of names to lists")
        if isinstance(items, str) or not isinstance(items, (list, tuple)):
            raise Bad(f"a list for {name.strip()!r} (e.g. {name.strip()}: [a, b])")
        out[_plain(name.strip())] = _list(items)
    return out


_READERS: dict[str, Callable[[Any], Any]] = {
    "int": _int, "bool": _bool, "number": _number, "duration": _duration, "text": _text,
    "list": _list, "lists": _lists}


def read(kind: str, value: Any) -> Any:
    """A value of `kind` from an environment string, a ralph.yml value or a flag's value."""
    return _READERS[kind](value)


def _decimal(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text):     # [SAFER] ralph.sh let `-n abc` reach bash arithmetic
        raise ValueError(text)
    return int(text)


# A flag's argument: ValueError means the flag's own "requires ..." message
# (docs/contract/ralph-cli.md s.3).
_FLAG_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "int": _decimal, "number": _float, "duration": parse_duration, "text": str,
    "list": _list, "lists": _list}


def from_flag(kind: str, text: str) -> Any:
    """The value of a flag's argument; ValueError when it does not parse."""
    return _FLAG_CONVERTERS[kind](text)


def at_least(low: float) -> Check:
    return lambda v: None if v >= low else f"at least {low:g}"


def between(low: float, high: float) -> Check:
    return lambda v: None if low <= v <= high else f"from {low:g} to {high:g}"


def positive(v: float) -> str | None:
    return None if v > 0 else "greater than 0"


def one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else "one of " + ", ".join(choices)


def fraction_of_percent(text: str) -> float | None:
    """`80%` -> 0.8: a whole percentage from 1% to 100%; None for anything else."""
    text = text.strip()
    digits = text[:-1].strip()
    if not text.endswith("%") or not digits.isascii() or not digits.isdigit():
        return None
    return int(digits) / 100 if 1 <= int(digits) <= 100 else None


def percentage(v: str) -> str | None:
    return None if fraction_of_percent(v) is not None else \
        "a percentage from 1% to 100% (e.g. 80%)"


__all__ = ["KINDS", "Bad", "Check", "read", "from_flag", "at_least", "between", "positive",
           "one_of", "percentage", "fraction_of_percent"]
