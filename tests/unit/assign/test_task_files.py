"""Task files: current-task.json, backlog.json, completed/<id>.json with artifacts
taken from a real git repository, safe file names, atomic writes."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from ralphpy.assign import task_files
from ralphpy.errors import EnvironmentFailure


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=Test",
                           "-c", "user.email=test@example.com", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, name: str, message: str) -> str:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{message}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("slug, name", [
    ("plain-01", "plain-01"), ("web/01", "web%2F01"), (".hidden", "%2Ehidden"),
    ("a b:c", "a%20b%3Ac"), ("é", "%C3%A9"), ("../up", "%2E.%2Fup"),
], ids=["plain", "slash", "leading-dot", "space-colon", "non-ascii", "dot-dot"])
def test_safe_names_are_plain_file_names_and_reversible(slug, name):
    assert task_files.safe_name(slug) == name
    assert "/" not in name and unquote(name) == slug


def test_current_task_records_the_session_start(git_repo: Path):
    ralph = git_repo / ".ralph"
    head = task_files.git_head(git_repo)
    task_files.write_current_task(ralph, {"id": "web/01", "title": "T", "objective": "T",
                                          "criteria": ["c"], "source": "task web/01"},
                                  agent="a1b2", baseline_status="open", head=head)
    data = json.loads((ralph / "current-task.json").read_text())
    assert data["status"] == "in_progress" and data["agent"] == "a1b2"
    assert data["baselineStatus"] == "open" and data["headAtStart"] == head and len(head) == 40
    assert data["startedAt"].endswith("Z") and data["criteria"] == ["c"]
    assert [p.name for p in ralph.iterdir()] == ["current-task.json"]   # no temp file left
    task_files.clear_current_task(ralph)
    task_files.clear_current_task(ralph)
    assert not (ralph / "current-task.json").exists()


def test_the_backlog_lists_claimable_tasks_by_priority_and_names_blocked_and_held(tmp_path):
    records = [
        {"id": "low", "title": "L", "priority": 3, "status": "open", "deps": []},
        {"id": "crit", "title": "C", "priority": 0, "status": "open", "deps": []},
        {"id": "waits", "title": "W", "priority": 0, "status": "open", "deps": ["low"]},
        {"id": "held", "title": "H", "priority": 0, "status": "open", "deps": [],
         "held": "respawned 3 times"},
        {"id": "fine", "title": "F", "priority": 1, "status": "open", "deps": ["gone"]},
        {"id": "gone", "title": "G", "priority": 1, "status": "done", "deps": []},
        {"id": "busy", "title": "B", "priority": 0, "status": "active", "deps": []},
    ]
    queue = task_files.write_backlog(tmp_path, records)
    data = json.loads((tmp_path / "backlog.json").read_text())
    assert [t["id"] for t in data["tasks"]] == ["crit", "fine", "low"] == [t["id"] for t in queue]
    assert data["blocked"] == ["waits"] and data["held"] == ["held"]


def test_the_archive_holds_the_sessions_commits_files_notes_and_timings(git_repo: Path):
    ralph = git_repo / ".ralph"
    start = task_files.git_head(git_repo)
    first = commit(git_repo, "src/app.py", "task web/01: implement")
    second = commit(git_repo, "unrelated/x.txt", "refactor: drive-by")
    (git_repo / "README.md").write_text("changed, not committed\n")
    (git_repo / "new.txt").write_text("untracked\n")
    current = {"id": "web/01", "title": "Web", "objective": "Web", "criteria": ["c"],
               "source": "task web/01", "startedAt": "2026-01-01T10:00:00Z",
               "headAtStart": start, "agent": "a1", "baselineStatus": "open",
               "verification_notes": "agent wrote this", "artifacts": ["src/app.py"]}
    result = json.dumps({"commit": first, "verification_notes": "tests pass",
                         "artifacts": ["commit " + first]})
    path = task_files.archive_completed(ralph, git_repo, current, result,
                                        ended_at="2026-01-01T10:05:30Z")
    assert path == ralph / "completed" / "web%2F01.json"
    record = json.loads(path.read_text())
    assert record["task"]["id"] == "web/01" and record["status"] == "completed"
    assert record["verification_notes"] == "tests pass\n\nagent wrote this"
    artifacts = record["artifacts"]
    assert artifacts["commits"] == [{"sha": first, "subject": "task web/01: implement"},
                                    {"sha": second, "subject": "refactor: drive-by"}]
    assert artifacts["filesChanged"] == [{"status": "A", "path": "src/app.py"},
                                         {"status": "A", "path": "unrelated/x.txt"}]
    assert {"status": "M", "path": "README.md"} in artifacts["uncommitted"]
    assert {"status": "??", "path": "new.txt"} in artifacts["uncommitted"]
    assert all(not f["path"].startswith(".ralph/") for f in artifacts["uncommitted"])
    assert artifacts["claimed"] == ["commit " + first, "src/app.py"]
    assert artifacts["headAtStart"] == start and artifacts["headAtEnd"] == second
    assert record["timings"] == {"startedAt": "2026-01-01T10:00:00Z",
                                 "endedAt": "2026-01-01T10:05:30Z", "durationSeconds": 330}


def test_a_session_without_commits_archives_empty_artifact_lists(git_repo: Path):
    head = task_files.git_head(git_repo)
    path = task_files.archive_completed(git_repo / ".ralph", git_repo,
                                        {"id": "t", "headAtStart": head}, None)
    record = json.loads(path.read_text())
    assert record["artifacts"]["commits"] == [] and record["artifacts"]["filesChanged"] == []
    assert record["verification_notes"] == "" and record["result"] is None


def test_a_result_that_is_not_json_is_kept_as_text(git_repo: Path):
    path = task_files.archive_completed(git_repo / ".ralph", git_repo, {"id": "t"}, "plain")
    assert json.loads(path.read_text())["result"] == "plain"


def test_an_unwritable_ralph_directory_raises_an_environment_failure(tmp_path: Path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(EnvironmentFailure, match=r"cannot write .*backlog.json"):
        task_files.write_backlog(tmp_path / "file", [])


def test_reading_a_corrupt_json_file_gives_none(tmp_path: Path):
    (tmp_path / "x.json").write_text("[1, 2")
    assert task_files.read_json(tmp_path / "x.json") is None
    (tmp_path / "y.json").write_text("[1, 2]")
    assert task_files.read_json(tmp_path / "y.json") is None


def test_changes_already_uncommitted_at_the_start_are_not_credited_to_the_session(git_repo):
    ralph = git_repo / ".ralph"
    (git_repo / "leftover.txt").write_text("from an earlier session\n")
    current = task_files.write_current_task(ralph, {"id": "t"}, agent="a", baseline_status="open",
                                            head=task_files.git_head(git_repo), repo=git_repo)
    assert current["dirtyAtStart"] == ["leftover.txt"]
    (git_repo / "mine.txt").write_text("this session\n")
    record = json.loads(task_files.archive_completed(ralph, git_repo, current, None).read_text())
    assert record["artifacts"]["uncommitted"] == [{"status": "??", "path": "mine.txt"}]
    assert record["artifacts"]["uncommittedBefore"] == [{"status": "??", "path": "leftover.txt"}]


@pytest.mark.parametrize("claimed,flagged", [
    (["src/app.py"], ["refactor: drive-by"]),                    # a named file covers its commit
    ([], []),                                                    # the agent named nothing: no claim
    (["src/app.py", "unrelated/x.txt"], []),
], ids=["named-file", "nothing-named", "both-named"])
def test_commits_touching_no_named_file_are_listed_as_unrelated(git_repo: Path, claimed, flagged):
    start = task_files.git_head(git_repo)
    first = commit(git_repo, "src/app.py", "task t: implement")
    commit(git_repo, "unrelated/x.txt", "refactor: drive-by")
    current = {"id": "t", "headAtStart": start, "artifacts": claimed}
    path = task_files.archive_completed(git_repo / ".ralph", git_repo, current, None)
    unrelated = json.loads(path.read_text())["artifacts"]["unrelated"]
    assert [c["subject"] for c in unrelated] == flagged
    # The commit the agent named in its `task done` result is never unrelated.
    path = task_files.archive_completed(git_repo / ".ralph", git_repo, {**current, "artifacts": []},
                                        json.dumps({"commit": first}))
    assert [c["subject"] for c in json.loads(path.read_text())["artifacts"]["unrelated"]] == [
        "refactor: drive-by"]
