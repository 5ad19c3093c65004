"""--pr's single-loop session path reads the tasks a session finished by the store's index,
never the whole backlog (the hot path costs the same at 10 tasks and at 100,000); a task CLI
that is not ralph's own is asked for the whole backlog, as before."""
import functools
import subprocess
from pathlib import Path

from conftest import git
from ralphpy.backlog import answers, readonly
from ralphpy.parallel.git import Git
from ralphpy.pulls.runner import Runner


def _runner(repo: Path, env: dict, calls: list, lines: list, index) -> Runner:
    def task_call(argv: list[str]) -> tuple[bool, str]:
        calls.append(argv[0])
        return True, "[]"
    return Runner(client=None, git=Git(env), top=repo, base="main", task_call=task_call,
                  agent="agent-1", say=lambda line, fields: lines.append(line),
                  record_file=repo / ".ralph" / "pulls.json", ours=index is not None,
                  index=index)


def _world(tmp_path: Path, git_repo: Path, base_env: dict, run_task) -> dict:
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(git_repo, "remote", "set-url", "origin", str(origin), env=base_env)
    git(git_repo, "push", "-q", "origin", "main", env=base_env)
    for n in range(30):
        assert run_task("create", f"t{n}", f"Task {n}").returncode == 0
    assert run_task("claim", "t0", "--agent", "old").returncode == 0
    assert run_task("done", "t0").returncode == 0
    return {**base_env, "RALPH_TASKS_ROOT": str(git_repo)}


def test_a_session_s_finished_tasks_are_read_by_index(tmp_path, git_repo, base_env, run_task,
                                                       monkeypatch):
    env = _world(tmp_path, git_repo, base_env, run_task)
    monkeypatch.chdir(git_repo)                  # the store of the checkout ralph runs in
    scope = answers.scope(run_task("_get-scope").stdout)     # as ralph exports it
    session = {"RALPH_SCOPE_REPO": scope.repo, "RALPH_SCOPE_BRANCH": scope.branch}
    calls, lines = [], []
    index = functools.partial(readonly.export_records, environ={**env, **session},
                              cwd=git_repo)
    runner = _runner(git_repo, env, calls, lines, index)
    runner.place()                                  # the checkout detached at origin/main
    assert run_task("claim", "t5", "--agent", "agent-1", env=session).returncode == 0
    assert run_task("done", "t5", env=session).returncode == 0
    runner.after_session(None)
    # t5 was found (no commit: no pull request), t0 done before the session was not, and
    # the whole backlog was never exported
    assert [line for line in lines if "finished without a commit" in line] == \
        ["pr: task t5 finished without a commit: no pull request"]
    assert "_export-json" not in calls


def test_a_task_cli_not_ralph_s_own_is_asked_for_the_whole_backlog(
        tmp_path, git_repo, base_env, run_task):
    env = _world(tmp_path, git_repo, base_env, run_task)
    calls, lines = [], []
    runner = _runner(git_repo, env, calls, lines, None)
    runner.place()
    runner.after_session(None)
    assert calls.count("_export-json") == 2
