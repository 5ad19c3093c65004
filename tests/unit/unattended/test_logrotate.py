"""Bounding .ralph/logs/ on real files: keep-N newest, total size cap, per-file cap
(tail kept), protected and newest files never deleted."""
from __future__ import annotations

import os
from pathlib import Path

from ralphpy.unattended.logrotate import rotate


def make_logs(log_dir: Path, sizes: list[int]) -> list[Path]:
    """Files session-000.log ... oldest first, with distinct modification times."""
    log_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, size in enumerate(sizes):
        path = log_dir / f"session-{index:03d}.log"
        path.write_bytes(b"x" * size)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
        paths.append(path)
    return paths


def names(log_dir: Path) -> list[str]:
    return sorted(p.name for p in log_dir.iterdir())


def test_only_the_newest_n_files_are_kept(tmp_path):
    paths = make_logs(tmp_path, [10] * 6)
    report = rotate(tmp_path, keep=4, max_total_bytes=None, max_file_bytes=None)
    assert sorted(report.deleted) == paths[:2]
    assert names(tmp_path) == [p.name for p in paths[2:]]


def test_oldest_files_go_until_the_total_fits_the_cap(tmp_path):
    paths = make_logs(tmp_path, [400, 300, 200, 100])
    rotate(tmp_path, keep=0, max_total_bytes=350, max_file_bytes=None)
    assert names(tmp_path) == [paths[2].name, paths[3].name]


def test_the_newest_file_survives_even_when_alone_over_the_cap(tmp_path):
    paths = make_logs(tmp_path, [100, 1000])
    rotate(tmp_path, keep=0, max_total_bytes=10, max_file_bytes=None)
    assert names(tmp_path) == [paths[1].name]


def test_protected_files_are_never_deleted_or_trimmed(tmp_path):
    paths = make_logs(tmp_path, [500, 10, 10])
    report = rotate(tmp_path, keep=1, max_total_bytes=None, max_file_bytes=100, protect=[paths[0]])
    assert paths[0].stat().st_size == 500 and paths[0] not in report.deleted
    assert names(tmp_path) == [paths[0].name, paths[2].name]


def test_an_oversized_file_keeps_its_tail_from_a_line_start_and_its_age(tmp_path):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    big = log_dir / "session-000.log"
    big.write_bytes(b"".join(b'{"line": %d}\n' % i for i in range(1000)))
    os.utime(big, (1_700_000_000, 1_700_000_000))
    report = rotate(log_dir, max_file_bytes=200, keep=0, max_total_bytes=None)
    data = big.read_bytes()
    assert report.trimmed == [big]
    assert data.startswith(b"[ralph: log trimmed to its last 200 bytes by log rotation]\n")
    body = data.split(b"\n", 1)[1]
    assert body.endswith(b'{"line": 999}\n') and body.startswith(b'{"line": ')
    assert len(body) <= 200
    assert big.stat().st_mtime == 1_700_000_000


def test_subdirectories_symlinks_and_hidden_temp_files_are_left_alone(tmp_path):
    paths = make_logs(tmp_path, [10, 10])
    (tmp_path / "sub").mkdir()
    (tmp_path / ".session.tmp").write_bytes(b"y" * 10)
    (tmp_path / "link.log").symlink_to(paths[0])
    rotate(tmp_path, keep=1, max_total_bytes=None, max_file_bytes=None)
    assert names(tmp_path) == [".session.tmp", "link.log", paths[1].name, "sub"]


def test_a_missing_log_dir_is_nothing_to_do(tmp_path):
    report = rotate(tmp_path / "absent")
    assert report.deleted == [] and report.trimmed == []


def test_within_the_defaults_nothing_changes(tmp_path):
    make_logs(tmp_path, [1000] * 5)
    report = rotate(tmp_path)
    assert report.deleted == [] and report.trimmed == [] and len(names(tmp_path)) == 5
