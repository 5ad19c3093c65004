"""Owns what every task command receives: the open connection, the scope, the environment,
the working directory and stdin. A plain record; does not own how they are obtained."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Mapping, TextIO

    from ralphpy.tasks.git_scope import Scope


class Ctx:
    __slots__ = ("conn", "scope", "environ", "cwd", "stdin")

    def __init__(self, conn: sqlite3.Connection, scope: Scope, environ: Mapping[str, str],
                 cwd: str, stdin: TextIO) -> None:
        self.conn, self.scope, self.environ, self.cwd, self.stdin = (
            conn, scope, environ, cwd, stdin)


__all__ = ["Ctx"]
