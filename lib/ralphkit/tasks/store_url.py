"""Owns what a task store value names: a SQLite file path (ralph.sh's only kind) or, written
`scheme://...`, a server; which schemes are known (postgresql, postgres); and the one way a
store is shown to people, its password replaced by `***`. Does not open anything."""
from __future__ import annotations

import re

# RFC 3986 scheme, then "://": `./tasks.db` and `C:\x` stay paths; `foo://x` is a URL.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
POSTGRES_SCHEMES = ("postgresql", "postgres")
# user:password@ in the authority (up to its last "@": a password may hold an unencoded "@"),
# and password= in the query string or in a key=value connection string
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)")
_PASSWORD_PARAM = re.compile(r"(?i)(\bpassword=)[^&\s]*")


def scheme(value: str) -> str | None:
    """The lower-cased scheme of a `scheme://...` value, else None (a file path)."""
    match = _URL.match(value)
    return match.group(1).lower() if match else None


def is_postgres(value: str) -> bool:
    return scheme(value) in POSTGRES_SCHEMES


def redact(text: str) -> str:
    """The value (or any text holding it) as it may be shown: passwords become `***`."""
    def authority(match: re.Match) -> str:
        userinfo, at, host = match.group(2).rpartition("@")
        if not at or ":" not in userinfo:
            return match.group(0)
        return f"{match.group(1)}{userinfo.split(':', 1)[0]}:***@{host}"
    text = _AUTHORITY.sub(authority, text)
    return _PASSWORD_PARAM.sub(r"\1***", text)


def unknown_scheme_message(value: str) -> str:
    return (f"unknown task store '{redact(value)}': use a file path or "
            "postgresql://user@host/database")


__all__ = ["scheme", "is_postgres", "redact", "unknown_scheme_message", "POSTGRES_SCHEMES"]
