"""Owns what an agent CLI's own refusal of a session is, as its adapter reads it in what the
CLI printed (agents/amp.py): its kind, one waiting cannot fix (a login the CLI cannot get past,
an account without credit), and a one-line detail quoting the CLI. Knows nothing of which CLI
says what, nor of what the run does about it (unattended/outcome.py: exit 9, exit 7).
"""
from __future__ import annotations

from typing import NamedTuple

AUTH = "auth"                # the key is missing or refused: a person must log in or fix it
NO_CREDIT = "no_credit"      # the account has no credit left: a person must add some


class Refusal(NamedTuple):   # not a dataclass: one costs every start of ralph.py 1 ms
    kind: str                # AUTH or NO_CREDIT
    detail: str              # one line for events.jsonl and the run's last line


__all__ = ["Refusal", "AUTH", "NO_CREDIT"]
