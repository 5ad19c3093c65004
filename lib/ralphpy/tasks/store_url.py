"""Owns what a task store value names: a SQLite file path (ralph.sh's only kind) or, written
`scheme://...`, a server; which schemes are known (postgresql, postgres); and the one way a
store is shown to people, its password replaced by `***`. Does not open anything."""
from __future__ import annotations

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def scheme(value: str) -> str | None:
    """The lower-cased scheme of a `scheme://...` value, else None (a file path): an RFC 3986
    scheme (a letter, then letters, digits, `+`, `.`, `-`) before "://", so `./tasks.db` and
    `C:\\x` stay paths. No `re`: every task command asks, and importing it costs more than
    the rest of a command's start-up."""
    head, sep, _ = value.partition("://")
    if not sep or not head or not head[0].isalpha() or not _SCHEME_CHARS.issuperset(head):
        return None
    return head.lower()


def is_postgres(value: str) -> bool:
    return scheme(value) in POSTGRES_SCHEMES


def redact(text: str) -> str:
    """The value (or any text holding it) as it may be shown: passwords become `***`:
    user:password@ in the authority (up to its last "@": a password may hold an unencoded
    "@"), and password= in a query string or a key=value connection string."""
    import re

    def authority(match: re.Match) -> str:
        userinfo, at, host = match.group(2).rpartition("@")
        if not at or ":" not in userinfo:
            return match.group(0)
        return f"{match.group(1)}{userinfo.split(':', 1)[0]}:***@{host}"
    text = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)", authority, text)
    return re.sub(r"(?i)(\bpassword=)[^&\s]*", r"\1***", text)


def unknown_scheme_message(value: str) -> str:
    return (f"unknown task store '{redact(value)}': use a file path or "
            "postgresql://user@host/database")


__all__ = ["scheme", "is_postgres", "redact", "unknown_scheme_message", "POSTGRES_SCHEMES"]
