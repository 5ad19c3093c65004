"""Owns the PostgreSQL task store's dialect: the commands' SQLite text as PostgreSQL text,
translated once per statement (placeholders, `json_each`, `INSERT OR IGNORE`, `IS NOT`, index
hints; literals left alone), and rows that answer by index and by column name as
`sqlite3.Row` does, so one SQL text and one way of reading rows serve both stores. Not the
connection (pg.py)."""
from __future__ import annotations

import re

_TOKENS = re.compile(r"'(?:[^']|'')*'|%|\?|(?<!:):([A-Za-z_]\w*)|json_each\((\?|:\w+)\)"
                     r"|\+t\.|\bIS NOT '|\bINDEXED BY \w+ ?|\bNOT INDEXED ?")
_translated: dict[str, str] = {}


def translate(sql: str) -> str:
    """SQLite text as PostgreSQL text; literals are left alone (but for psycopg's "%%")."""
    found = _translated.get(sql)
    if found is not None:
        return found

    def token(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("'"):  # psycopg reads "%" inside literals too
            return text.replace("%", "%%")
        if text == "%":
            return "%%"
        if text == "?":
            return "%s"
        if match.group(1):
            return f"%({match.group(1)})s"
        if match.group(2):
            inner = "%s" if match.group(2) == "?" else f"%({match.group(2)[1:]})s"
            return f"json_array_elements_text({inner}::json)"
        if text == "+t.":
            return "t."
        if "INDEXED" in text:  # SQLite's index hints: PostgreSQL's planner chooses alone
            return ""
        return "IS DISTINCT FROM '"
    out = _TOKENS.sub(token, sql)
    if out.startswith("INSERT OR IGNORE "):
        out = "INSERT " + out[len("INSERT OR IGNORE "):] + " ON CONFLICT DO NOTHING"
    _translated[sql] = out
    return out


class Row(tuple):
    """A row by index and by column name, as sqlite3.Row."""
    __slots__ = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


_row_types: dict[tuple[bytes, ...], type] = {}


def rows(cursor):
    """psycopg's row factory of the store's connections: each row a Row."""
    # The names straight from the result: cursor.description builds a Column object for each
    # column of each statement, a tenth of a claim's time in the client.
    result = cursor.pgresult
    names = tuple(result.fname(i) for i in range(result.nfields)) if result is not None else ()
    found = _row_types.get(names)
    if found is None:
        index = {name.decode(): i for i, name in enumerate(names)}
        found = _row_types[names] = type("Row", (Row,), {"__slots__": (), "_index": index})
    return found


__all__ = ["translate", "Row", "rows"]
