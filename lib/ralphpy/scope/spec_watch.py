"""Owns knowing which spec files may have changed since the last scope check without a stat of
every one (speed: "must not grow with the backlog's size when nothing changed"):
Linux inotify watches on the spec files and on their directories, read without blocking
before each check. Knows nothing of hashes, snapshots or reports (scope.hashing and scope.snapshot
compare what changed): it only narrows down which files they look at.

Why nothing that changes a spec's bytes through the kernel is missed:
- a watch on each regular spec file's inode sees every write, truncate, fallocate, chmod and
  touch of it, through any path (a hard link made later included);
- a watch on its directory sees the name being created, deleted or renamed over (an editor's
  atomic save), and the file watch is then armed again on the new inode before the caller
  looks at the file;
- before each check every watched directory's path is stat'ed again: a directory (or one of
  its parents) renamed, replaced or re-pointed by a symlink gives another inode, and all its
  files are looked at and watched again. One stat per directory, not per file;
- a newly armed watch cannot see what happened before it existed: the first answer after
  start() is None (look at everything) and a newly armed file is reported dirty once.
Files no watch can vouch for are reported on every check and so are stat'ed as before: a
symlink (its target's directory is not watched), a path that is not a regular file, a missing
directory, a filesystem where other machines or a host may write (NFS, FUSE, 9p, SMB: only
local filesystems are trusted, by statfs type), or a watch the kernel refused (the
max_user_watches limit). A lost event queue (overflow) answers None: look at everything.
What inotify cannot see at all: writes through a shared mmap. README: "Scope freeze".
"""
from __future__ import annotations

import ctypes
import os
import stat as stat_mod
import struct
import sys
from dataclasses import dataclass, field
from typing import Iterator, Mapping

# <sys/inotify.h>
_MODIFY, _ATTRIB, _MOVED_FROM, _MOVED_TO = 0x2, 0x4, 0x40, 0x80
_CREATE, _DELETE, _DELETE_SELF, _MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_UNMOUNT, _Q_OVERFLOW, _IGNORED, _ONLYDIR = 0x2000, 0x4000, 0x8000, 0x01000000
_FILE_MASK = _MODIFY | _ATTRIB | _DELETE_SELF | _MOVE_SELF
_DIR_MASK = _CREATE | _DELETE | _MOVED_FROM | _MOVED_TO | _ATTRIB | _DELETE_SELF | _MOVE_SELF \
    | _ONLYDIR
_CONTENT_ONLY = _MODIFY | _ATTRIB      # the same inode changed: no need to arm again
_EVENT = struct.Struct("iIII")          # wd, mask, cookie, len; then len bytes of name

# statfs f_type of filesystems whose every change goes through this kernel (statfs(2)).
_LOCAL_FS = frozenset({
    0xEF53,        # ext2/3/4
    0x58465342,    # xfs
    0x9123683E,    # btrfs
    0x01021994,    # tmpfs
    0x858458F6,    # ramfs
    0x794C7630,    # overlayfs (containers)
    0xF2F52010,    # f2fs
    0x2FC12FC1,    # zfs
    0xCA451A4E,    # bcachefs
})


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        return libc
    except (OSError, AttributeError):
        return None


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


@dataclass
class _Dir:
    path: str
    names: dict[str, list[str]] = field(default_factory=dict)   # entry name -> tracked keys
    wd: int | None = None
    ident: tuple[int, int] | None = None
    local: bool = False


class SpecWatch:
    """Watches a set of files, each named by a key (the caller's own name for it).
    changed() answers which keys may have changed since the previous call."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc, self._fd = libc, fd
        self._paths: dict[str, str] = {}            # key -> absolute path
        self._dirs: dict[str, _Dir] = {}            # directory path -> its watch
        self._dir_of_wd: dict[int, list[_Dir]] = {}
        self._file_wd: dict[str, int] = {}          # key -> wd of its inode watch
        self._keys_of_wd: dict[int, set[str]] = {}
        self._always: set[str] = set()              # keys no watch vouches for
        self._pending: set[str] | None = None       # None: everything (start, overflow)

    # -- public ---------------------------------------------------------------------------

    def track(self, paths: Mapping[str, str]) -> None:
        """Watch these key -> absolute path entries too (known keys are left alone). A new key
        is reported by the next changed(): its watch did not exist before."""
        for key, path in paths.items():
            if key in self._paths:
                continue
            self._paths[key] = path
            parent, name = os.path.split(path)
            folder = self._dirs.get(parent)
            if folder is None:
                folder = self._dirs[parent] = _Dir(parent)
                self._arm_dir(folder)
            folder.names.setdefault(name, []).append(key)
            self._arm_file(key, folder)
            if self._pending is not None:
                self._pending.add(key)

    def changed(self) -> set[str] | None:
        """Keys that may have changed since the previous call (each one must be looked at),
        or None: anything may have changed (the first call, a lost event queue)."""
        dirty, everything = self._drain()
        for folder in self._dirs.values():
            if folder.wd is None or _ident(folder.path) != folder.ident:
                self._arm_dir(folder)              # renamed, replaced, re-pointed, or missing
                for keys in folder.names.values():
                    for key in keys:
                        self._arm_file(key, folder)
                        dirty.add(key)
        pending, self._pending = self._pending, set()
        if everything or pending is None:
            if everything:                         # events were lost: arm every watch again
                for folder in self._dirs.values():
                    self._arm_dir(folder)
                for key in self._paths:
                    self._arm_file(key, self._dirs[os.path.dirname(self._paths[key])])
            return None
        return dirty | pending | self._always

    @property
    def unwatched(self) -> int:
        """How many tracked files are looked at on every check (no watch vouches for them)."""
        return len(self._always)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # -- watches --------------------------------------------------------------------------

    def _add(self, path: str, mask: int) -> int | None:
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask)
        return wd if wd >= 0 else None

    def _arm_dir(self, folder: _Dir) -> None:
        """Watch the directory's current inode; its identity is taken on both sides of the
        add, so a directory swapped meanwhile is never taken for the watched one."""
        before = _ident(folder.path)
        wd = self._add(folder.path, _DIR_MASK) if before is not None else None
        if wd is not None and _ident(folder.path) != before:
            wd = None                               # swapped under us: try again next check
        if folder.wd is not None and folder.wd != wd:
            users = self._dir_of_wd.get(folder.wd, [])
            if folder in users:
                users.remove(folder)
            if not users:
                self._dir_of_wd.pop(folder.wd, None)
                self._libc.inotify_rm_watch(self._fd, folder.wd)   # fails harmlessly if gone
        folder.wd, folder.ident = wd, (before if wd is not None else None)
        folder.local = wd is not None and self._local(folder.path)
        if wd is not None and folder not in self._dir_of_wd.setdefault(wd, []):
            self._dir_of_wd[wd].append(folder)

    def _arm_file(self, key: str, folder: _Dir) -> None:
        """Watch the file's current inode, or put it among the always looked-at files. A
        missing file needs neither: its directory's watch sees it come back."""
        path = self._paths[key]
        wd, missing = None, False
        if folder.wd is not None and folder.local:
            try:
                regular = stat_mod.S_ISREG(os.lstat(path).st_mode)   # a symlink is not
            except (FileNotFoundError, NotADirectoryError):
                missing = True
            except OSError:
                pass                                # unreadable directory: always looked at
            else:
                wd = self._add(path, _FILE_MASK) if regular else None
        if self._file_wd.get(key, wd) != wd:
            self._drop_file(key)                    # the name now holds another inode
        if wd is None:
            (self._always.discard if missing else self._always.add)(key)
            return
        self._always.discard(key)
        self._file_wd[key] = wd
        self._keys_of_wd.setdefault(wd, set()).add(key)

    def _drop_file(self, key: str) -> None:
        wd = self._file_wd.pop(key, None)
        if wd is None:
            return
        keys = self._keys_of_wd.get(wd, set())
        keys.discard(key)
        if not keys:
            self._keys_of_wd.pop(wd, None)
            self._libc.inotify_rm_watch(self._fd, wd)   # fails harmlessly if already gone

    def _local(self, path: str) -> bool:
        buf = ctypes.create_string_buffer(512)       # struct statfs: f_type comes first
        if self._libc.statfs(os.fsencode(path), buf) != 0:
            return False
        return (ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF) in _LOCAL_FS

    # -- events ---------------------------------------------------------------------------

    def _events(self) -> Iterator[tuple[int, int, str]]:
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                name = data[offset + 16:offset + 16 + size].rstrip(b"\0")
                offset += 16 + size
                yield wd, mask, os.fsdecode(name)

    def _drain(self) -> tuple[set[str], bool]:
        """(keys touched by the queued events, whether events were lost)."""
        dirty: set[str] = set()
        rearm: set[str] = set()
        lost = False
        for wd, mask, name in self._events():
            if mask & _Q_OVERFLOW:
                lost = True
                continue
            for key in self._keys_of_wd.get(wd, ()):
                dirty.add(key)
                if mask & ~_CONTENT_ONLY:           # gone, moved, unmounted: a new inode
                    rearm.add(key)
            for folder in self._dir_of_wd.get(wd, ()):
                if name:
                    for key in folder.names.get(name, ()):
                        dirty.add(key)
                        rearm.add(key)
                elif mask & (_DELETE_SELF | _MOVE_SELF | _IGNORED | _UNMOUNT | _ATTRIB):
                    folder.ident = None             # the identity check arms it again
            if mask & _IGNORED:                     # the kernel dropped this watch
                for key in self._keys_of_wd.pop(wd, set()):
                    self._file_wd.pop(key, None)
                    rearm.add(key)
                for folder in self._dir_of_wd.pop(wd, []):
                    folder.wd = folder.ident = None
        for key in rearm:
            self._arm_file(key, self._dirs[os.path.dirname(self._paths[key])])
        return dirty, lost


def start(paths: Mapping[str, str]) -> SpecWatch | None:
    """A watch over key -> absolute path entries, or None where inotify is not available (not
    Linux, no watches left, ...). Its first changed() answers None: look at everything."""
    libc = _libc()
    if libc is None:
        return None
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    watch = SpecWatch(libc, fd)
    watch.track(paths)
    return watch


__all__ = ["SpecWatch", "start"]
