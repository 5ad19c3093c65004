"""Tests of ralphpy.tasks.sqlite_import in fresh interpreters (`python -S`, as scripts/task
starts): SQLite is loaded without importing functools, its statement cache works, and a later
`import functools` gets the real module."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LIB = Path(__file__).resolve().parents[3] / "lib"

# Runs one statement often enough to be served from the statement cache, more distinct ones
# than the cache holds, then reports what the process imported.
PROBE = f"""
import sys
sys.path.insert(0, {str(LIB)!r})
PRELOAD
before = sys.modules.get("functools")
from ralphpy.tasks.db import sqlite3
conn = sqlite3.connect(":memory:", cached_statements=4)
conn.execute("CREATE TABLE t (n INTEGER)")
for n in range(20):
    conn.execute("INSERT INTO t VALUES (?)", (n,))
    conn.execute(f"SELECT {{n}} FROM t LIMIT 1").fetchone()
print(conn.execute("SELECT count(*), sum(n) FROM t").fetchone())
print("functools" in sys.modules)
import functools
print(functools.reduce(lambda a, b: a + b, [1, 2, 3]), functools.lru_cache(2)(abs)(-4))
print(functools is before)
"""


def probe(preload: str = "") -> list[str]:
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE.replace("PRELOAD", preload)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_sqlite_loads_without_functools_and_functools_is_the_real_one_after():
    assert probe() == ["(20, 190)", "False", "6 4", "False"]


def test_a_process_that_has_functools_keeps_it():
    assert probe("import functools") == ["(20, 190)", "True", "6 4", "True"]
