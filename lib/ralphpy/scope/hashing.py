"""Owns the fingerprints scope freeze compares: the content state of a spec file (md5 hashed
in chunks, or why it has none), the stat cache that lets an unchanged file go un-hashed, and
the md5 of a task's own definition. Knows nothing of snapshots, reports or the loop
(scope.py owns those).

A spec state is a 32-hex md5, or one of `missing`, `unreadable`, `directory`, `not-a-file`.

Stat cache and the racy-file rule ("never miss a real edit"): an entry keeps the
file's (size, mtime_ns, ctime_ns, inode) next to the state found when it was hashed. A file
whose mtime or ctime lies within RACY_NS of the moment it was hashed may still change within
the same timestamp tick without changing its stat (Linux stamps files with a coarse clock:
a same-size rewrite a few ms later keeps the same mtime), so such an entry is stored with a
signature no stat can produce and is hashed again on every check until it has aged, as git
does for its index. ctime cannot be set by users, so `touch -d` after an edit is caught too.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import stat as stat_mod
import time
from typing import Mapping

CHUNK = 1 << 20                     # huge specs are hashed 1 MiB at a time, never read whole
RACY_NS = 2_000_000_000             # 2 s: above any filesystem's timestamp granularity we meet
PROBLEM_STATES = ("missing", "unreadable", "directory", "not-a-file")
_MISSING_SIG = (-1, -1, -1, -1)     # stat says ENOENT/ENOTDIR: stable while it stays missing
_NOSTAT_SIG = (-3, -3, -3, -3)      # stat itself failed (EACCES on a parent dir, ELOOP...)
_RACY_SIG = (-2, -2, -2, -2)        # never equal to a fresh stat: re-hash next time
DEF_FIELDS = ("title", "description", "steps", "deps", "priority")
_ROW_KEYS = ("id", "title", "description", "steps", "deps", "priority", "spec")
_ROW = operator.itemgetter(*_ROW_KEYS)
_STATUS = operator.itemgetter("status")
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _clock() -> int:
    """Wall clock in ns; a function so tests can age files without sleeping."""
    return time.time_ns()


def stat_sig(path: str) -> tuple[int, int, int, int]:
    """The signature compared against the cache: (size, mtime_ns, ctime_ns, inode)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _MISSING_SIG
    except OSError:
        return _NOSTAT_SIG
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def probe(path: str, now_ns: int) -> tuple[tuple[int, int, int, int], str]:
    """Hash one file: (signature to cache, state). Never raises for a file problem."""
    sig = stat_sig(path)
    if sig == _MISSING_SIG:
        return sig, "missing"
    if sig == _NOSTAT_SIG:
        return sig, "unreadable"
    try:
        # O_NONBLOCK: a FIFO put where a spec was must not hang the loop.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return _MISSING_SIG, "missing"
    except IsADirectoryError:
        return sig, "directory"
    except OSError:
        return sig, "unreadable"
    try:
        st = os.fstat(fd)
        if stat_mod.S_ISDIR(st.st_mode):
            return sig, "directory"
        if not stat_mod.S_ISREG(st.st_mode):
            return sig, "not-a-file"
        digest = hashlib.md5()
        try:
            while chunk := os.read(fd, CHUNK):
                digest.update(chunk)
        except OSError:
            return sig, "unreadable"
        sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if st.st_mtime_ns >= now_ns - RACY_NS or st.st_ctime_ns >= now_ns - RACY_NS:
            sig = _RACY_SIG
        return sig, digest.hexdigest()
    finally:
        os.close(fd)


class StatCache:
    """path -> (signature, state) for the spec files of one snapshot, plus the digest of the
    task rows and the report of the last check (so a scope that stays the same, changed or
    not, is answered from the cache). `hashed` counts the files read by this object.
    A loaded cache stays in its flat on-disk form until an entry is needed (speed: bench/scope.py)."""

    def __init__(self, root: str, rows_digest: str = "", report: dict | None = None,
                 flat: tuple[list[str], list[int], list[str]] | None = None) -> None:
        self._prefix = root.rstrip("/") + "/"
        self._flat = flat
        self._entries: dict[str, tuple[tuple, str]] | None = None if flat else {}
        self.rows_digest = rows_digest
        self.report = report
        self.hashed = 0
        self._seen: dict[str, str] = {}   # states looked up in this check: once per check
        self._racy: set[str] | None = None   # paths whose entry is racy (built when needed)

    def begin(self) -> None:
        """Start a new check with a cache kept in memory since the last one (scope.Memory)."""
        self.hashed = 0
        self._seen = {}

    def tracked(self) -> dict[str, str]:
        """spec path as the tasks name it -> the absolute path stat'ed (spec_watch's keys)."""
        return {rel: self._abs(rel) for rel in self.entries}

    def _abs(self, rel: str) -> str:
        return rel if rel.startswith("/") else self._prefix + rel

    @property
    def entries(self) -> dict[str, tuple[tuple, str]]:
        if self._entries is None:
            paths, flat, states = self._flat
            self._entries = {p: (tuple(flat[4 * i:4 * i + 4]), states[i])
                             for i, p in enumerate(paths)}
        return self._entries

    def state(self, rel: str, now_ns: int) -> str:
        """The current state of spec `rel`, hashing it only when its stat moved or is racy."""
        if rel in self._seen:
            return self._seen[rel]
        path = self._abs(rel)
        cached = self.entries.get(rel)
        if cached is not None and cached[0] != _RACY_SIG and stat_sig(path) == cached[0]:
            self._seen[rel] = cached[1]
            return cached[1]
        sig, state = probe(path, now_ns)
        if state not in PROBLEM_STATES:
            self.hashed += 1
        self.entries[rel] = (sig, state)
        if self._racy is not None:
            (self._racy.add if sig == _RACY_SIG else self._racy.discard)(rel)
        self._seen[rel] = state
        return state

    def refresh(self, now_ns: int, only: set[str] | None = None) -> bool:
        """Stat every cached file, or only those in `only` (spec_watch: the others cannot have
        changed) and the racy ones; re-hash those whose stat moved (or that are racy). True
        when every state is still the cached one, i.e. the cached report still holds."""
        if only is not None:
            if self._racy is None:
                self._racy = {rel for rel, (sig, _) in self.entries.items() if sig == _RACY_SIG}
            entries = self.entries
            looked = [(rel, entries[rel][1]) for rel in only | self._racy if rel in entries]
            # a list, not a generator: every file looked at gets its fresh state cached
            return all([self.state(rel, now_ns) == state for rel, state in looked])
        if self._entries is None and self._flat_unchanged():
            return True
        same = True
        for rel, (sig, state) in list(self.entries.items()):
            if sig != _RACY_SIG and stat_sig(self._abs(rel)) == sig:
                continue
            if self.state(rel, now_ns) != state:
                same = False
        return same

    def _flat_unchanged(self) -> bool:
        """One stat per file and one list compare: the whole cost of an unchanged check."""
        paths, flat, _ = self._flat
        prefix = self._prefix
        absolute = [p if p[:1] == "/" else prefix + p for p in paths]
        try:
            fresh = [(s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)
                     for s in map(os.stat, absolute)]
        except OSError:   # a spec is missing or unstattable: classify each one
            fresh = [stat_sig(p) for p in absolute]
        return list(itertools.chain.from_iterable(fresh)) == flat

    def dumps(self) -> str:
        entries = self.entries
        paths = sorted(entries)
        flat = [n for p in paths for n in entries[p][0]]
        return json.dumps({"version": 1, "rows_digest": self.rows_digest, "report": self.report,
                           "paths": paths, "sigs": flat,
                           "states": [entries[p][1] for p in paths]},
                          separators=(",", ":"))

    @classmethod
    def loads(cls, root: str, text: str) -> "StatCache":
        """Parse a cache file; raises ValueError/KeyError/TypeError when it is not one."""
        data = json.loads(text)
        if data.get("version") != 1:
            raise ValueError("unknown stat cache version")
        paths, flat, states = data["paths"], data["sigs"], data["states"]
        if len(flat) != 4 * len(paths) or len(states) != len(paths):
            raise ValueError("stat cache lengths differ")
        return cls(root, data["rows_digest"], data["report"], (paths, flat, states))


def _norm_list(value: object, *, sort: bool) -> object:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        # markdown-KV gives `deps: a, b`; JSON gives a list: both mean the same deps.
        value = [v.strip() for v in value.split(",") if v.strip()] if sort else [value]
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
        return sorted(items) if sort else items
    return value


def _norm_priority(value: object) -> object:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def definition(task: Mapping) -> dict:
    """The normalised definition of a task: title, description, steps, deps, priority.
    Missing keys, None, "" and [] are the same (the store keeps them all as NULL)."""
    return {
        "title": task.get("title") or None,
        "description": task.get("description") or None,
        "steps": _norm_list(task.get("steps"), sort=False),
        "deps": _norm_list(task.get("deps"), sort=True),
        "priority": _norm_priority(task.get("priority")),
    }


def definition_md5(task: Mapping) -> str:
    d = definition(task)
    return hashlib.md5(_encode([d[f] for f in DEF_FIELDS]).encode("utf-8", "surrogatepass")
                       ).hexdigest()


def rows_digest(tasks: list[Mapping]) -> str:
    """md5 over the raw id/definition/spec of every task and which ones are deleted, in the
    order given.
    Equal digests mean nothing the scope tracks changed (statuses are left out); any
    difference, even a harmless one such as a reordered deps list, only costs a full compare.
    repr is deterministic for the JSON types we get, and as fast as json's C encoder."""
    try:   # map over itemgetters runs in C: this pass is half of an unchanged check
        rows = list(map(_ROW, tasks))
        deleted = bytes(map(operator.eq, itertools.repeat("deleted"), map(_STATUS, tasks)))
    except KeyError:   # markdown-KV dicts lack keys: the slower, tolerant way
        rows = [tuple(t.get(k) for k in _ROW_KEYS) for t in tasks]
        deleted = bytes(t.get("status") == "deleted" for t in tasks)
    # Deleted tasks' rows stay in: editing one then only costs a full compare.
    text = repr(rows) + deleted.hex()
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = ["StatCache", "definition", "definition_md5", "rows_digest", "PROBLEM_STATES"]
