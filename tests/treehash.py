"""Test helper for `--dry-run writes nothing at all`: a snapshot of a whole tree
(paths, types, modes, contents, and by default modification times, so that a file written
back unchanged or a temp file created and removed is caught too), and a readable diff.

    before = treehash.snapshot(git_repo)
    run_ralph("build", "--dry-run")
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
"""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

Entry = tuple


def snapshot(root: Path, *, mtimes: bool = True, exclude: tuple[str, ...] = ()) -> dict[str, Entry]:
    """{relative path: (kind, mode, content sha256 or link target, mtime_ns or None)}.
    Symlinks are recorded, never followed; names in exclude are skipped at any depth."""
    root = Path(root)
    found: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in exclude)
        for name in [".", *dirnames, *sorted(f for f in filenames if f not in exclude)]:
            path = Path(dirpath) / name if name != "." else Path(dirpath)
            st = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            when = st.st_mtime_ns if mtimes else None
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", None, os.readlink(path), None)
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode), None, when)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", stat.S_IMODE(st.st_mode), digest, when)
    return found


def tree_hash(root: Path, **options) -> str:
    """One hex digest for the whole snapshot."""
    items = sorted(snapshot(root, **options).items())
    return hashlib.sha256(repr(items).encode()).hexdigest()


def diff(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    """Lines like 'added .ralph/run.lock', 'changed tasks.db (content)': empty when equal."""
    lines = [f"added {p}" for p in sorted(after.keys() - before.keys())]
    lines += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    fields = ("kind", "mode", "content", "mtime")
    for path in sorted(before.keys() & after.keys()):
        changed = [f for f, a, b in zip(fields, before[path], after[path]) if a != b]
        if changed:
            lines.append(f"changed {path} ({', '.join(changed)})")
    return lines
