"""pg_dialect.translate: the commands' SQLite text as PostgreSQL text (literals untouched)."""
from __future__ import annotations

import pytest

from ralphpy.tasks.pg_dialect import Row, translate


@pytest.mark.parametrize("sqlite, postgres", [
    ("SELECT 1 FROM t WHERE a = ? AND b = ?", "SELECT 1 FROM t WHERE a = %s AND b = %s"),
    ("WHERE t.repo = :repo AND x = :x_1", "WHERE t.repo = %(repo)s AND x = %(x_1)s"),
    ("WHERE s IN (SELECT value FROM json_each(:slugs))",
     "WHERE s IN (SELECT value FROM json_array_elements_text(%(slugs)s::json))"),
    ("IN (SELECT value FROM json_each(?))", "IN (SELECT value FROM json_array_elements_text(%s::json))"),
    ("WHERE +t.scope_repo = :r", "WHERE t.scope_repo = %(r)s"),
    ("WHERE t.status IS NOT 'deleted'", "WHERE t.status IS DISTINCT FROM 'deleted'"),
    ("INSERT OR IGNORE INTO d (a, b) VALUES (?, ?)",
     "INSERT INTO d (a, b) VALUES (%s, %s) ON CONFLICT DO NOTHING"),
    ("SELECT 'a ? b :c 50%' , ? , x::json", "SELECT 'a ? b :c 50%%' , %s , x::json"),
    ("SELECT 'it''s ?', 5 % 2", "SELECT 'it''s ?', 5 %% 2"),
    ("FROM tasks t INDEXED BY idx_x WHERE a", "FROM tasks t WHERE a"),
    ("FROM tasks t NOT INDEXED WHERE a", "FROM tasks t WHERE a"),
])
def test_translate(sqlite, postgres):
    assert translate(sqlite) == postgres


def test_rows_answer_by_index_and_by_name():
    row = type("R", (Row,), {"__slots__": (), "_index": {"id": 0, "slug": 1}})(("u1", "a"))
    assert (row[0], row["slug"], tuple(row), row.keys()) == ("u1", "a", ("u1", "a"), ["id", "slug"])
    assert dict(zip(row.keys(), row)) == {"id": "u1", "slug": "a"}
