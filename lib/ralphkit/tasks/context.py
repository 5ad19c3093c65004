"""Owns what every task command receives: the open connection, the scope, the environment,
the working directory and stdin. A plain record; does not own how they are obtained."""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Mapping, TextIO

from ralphkit.tasks.git_scope import Scope


@dataclass
class Ctx:
    conn: sqlite3.Connection
    scope: Scope
    environ: Mapping[str, str]
    cwd: str
    stdin: TextIO


__all__ = ["Ctx"]
