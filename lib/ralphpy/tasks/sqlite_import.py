"""Owns importing SQLite's C module, `_sqlite3`, at the least start-up cost (decisions/0002):
without dbapi2's datetime adapters (the Python half of the `sqlite3` package, never used here)
and, in a process that has not imported `functools` yet (the task CLI's), without importing it.
_sqlite3 takes one name from functools at import, `lru_cache` for its statement cache, and
functools' own imports cost a task command about a fifth of its instructions. Does not own
connections (db.py)."""
from __future__ import annotations

import sys


def _functools_stand_in():
    """A `functools` holding only `lru_cache`, made of the same C cache as the real one."""
    import _functools

    def lru_cache(maxsize=128, typed=False):
        return lambda function: _functools._lru_cache_wrapper(function, maxsize, typed, tuple)
    module = type(sys)("functools")
    module.lru_cache = lru_cache
    return module


def _without_functools():
    stand_in = _functools_stand_in()
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3
    finally:  # the next `import functools` anywhere gets the real module
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]
    return _sqlite3


def _load():
    if "functools" not in sys.modules:
        try:
            return _without_functools()
        except Exception:  # another Python's _sqlite3 wants more of functools: the usual import
            pass
    try:
        import _sqlite3
    except ImportError:
        import sqlite3 as _sqlite3
    return _sqlite3


sqlite3 = _load()

__all__ = ["sqlite3"]
