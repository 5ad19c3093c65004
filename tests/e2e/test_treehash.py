"""treehash: the dry-run helper must notice every kind of write, and only writes."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import treehash


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / ".ralph" / "logs").mkdir(parents=True)
    (root / "specs").mkdir()
    (root / "specs" / "a.md").write_text("spec\n")
    (root / ".ralph" / "tasks.db").write_bytes(b"\x00db")
    (root / "link").symlink_to("specs/a.md")
    return root


def _rewrite_same(root: Path) -> None:
    path = root / "specs" / "a.md"
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000_000))


def _temp_created_and_removed(root: Path) -> None:
    tmp = root / ".ralph" / ".state.json.tmp"
    tmp.write_text("x")
    tmp.unlink()
    os.utime(root / ".ralph", ns=(0, (root / ".ralph").stat().st_mtime_ns + 1_000_000_000))


WRITES = {
    "new-file": (lambda r: (r / ".ralph" / "run.lock").write_text("{}"), "added .ralph/run.lock"),
    "new-dir": (lambda r: (r / ".ralph" / "runs").mkdir(), "added .ralph/runs"),
    "content": (lambda r: (r / ".ralph" / "tasks.db").write_bytes(b"\x00dc"),
                "changed .ralph/tasks.db (content"),
    "mode": (lambda r: (r / "specs" / "a.md").chmod(0o600), "changed specs/a.md (mode"),
    "removed": (lambda r: (r / "specs" / "a.md").unlink(), "removed specs/a.md"),
    "relinked": (lambda r: ((r / "link").unlink(), (r / "link").symlink_to("x")),
                 "changed link (content)"),
    "same-content-rewritten": (_rewrite_same, "changed specs/a.md (mtime)"),
    "temp-file-created-and-removed": (_temp_created_and_removed, "changed .ralph (mtime)"),
}


@pytest.mark.parametrize("write,expected", WRITES.values(), ids=WRITES.keys())
def test_every_kind_of_write_changes_the_snapshot(tree: Path, write, expected: str):
    before, digest = treehash.snapshot(tree), treehash.tree_hash(tree)
    write(tree)
    lines = treehash.diff(before, treehash.snapshot(tree))
    assert any(line.startswith(expected) for line in lines), lines
    assert treehash.tree_hash(tree) != digest


def test_reading_everything_leaves_the_snapshot_equal(tree: Path):
    before = treehash.snapshot(tree)
    for path in tree.rglob("*"):
        if path.is_file():
            path.read_bytes()
    assert treehash.diff(before, treehash.snapshot(tree)) == []


def test_excluded_names_and_mtimes_can_be_left_out(tree: Path):
    before = treehash.snapshot(tree, mtimes=False, exclude=("logs",))
    (tree / ".ralph" / "logs" / "1.log").write_text("x")
    _rewrite_same(tree)
    assert treehash.diff(before, treehash.snapshot(tree, mtimes=False, exclude=("logs",))) == []
