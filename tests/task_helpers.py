"""Helpers shared by the tests/test_task_*.py files (not fixtures: plain functions)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path


def jsonl(*tasks: dict) -> str:
    return "".join(json.dumps(t) + "\n" for t in tasks)


def ok(proc) -> str:
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr == ""
    return proc.stdout


def fails(proc, code: int, stderr: str) -> None:
    assert (proc.returncode, proc.stderr, proc.stdout) == (code, stderr, "")


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db, timeout=10)
    try:
        with conn:
            return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
