"""Shared fixtures: a temp git repo with a backlog, stub agents first on PATH, and run_ralph().

Every black-box test runs the real ralph.py / scripts/task as a process with an explicit
environment (no RALPH_* or CLAUDE_* variables leak in from the developer's shell), a private
HOME (so ~/.claude/settings.json is never read), cwd inside a temp git repo, and a timeout.
Module-specific fixtures live in their test module; add here only what several modules share.

PostgreSQL: `pg_server` (a throwaway server per session, tests/pgserver.py: restart(), stop(),
start()), `pg_url` / `pg_password_url` (a fresh database per test, as the socket superuser and
as the password role over TCP); `pgserver.pg_query(url, sql, params)` runs SQL through psycopg.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

import pgserver
import taskfork

# Fleet.assert_every_task_done_once_and_on_origin asserts for the tests that call it: rewritten
# (before any test module imports fleethelp), its asserts fail showing the values compared, as
# a test's own asserts do.
pytest.register_assert_rewrite("fleethelp")

ROOT = Path(__file__).resolve().parent.parent
RALPH = ROOT / "ralph.py"
TASK = ROOT / "scripts" / "task"
TASK_ARGV = [sys.executable, "-S", str(TASK)]   # -S, as its shebang runs it: no site start-up
STUBS = ROOT / "tests" / "stubs"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` first: a worker starts them at once, and the others share the
    rest (`--dist worksteal`), instead of one of them starting late and ending the run last."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def log_git_calls(bin_dir: Path, log: Path) -> None:
    """A git first on the tests' PATH (bin_dir) that appends each call's arguments to `log`,
    then runs the real git."""
    real = shutil.which("git", path=os.environ["PATH"])
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.01):
    """Poll predicate until it returns something truthy; fail the test at the deadline (30 s by
    default: CI is a loaded 2-core machine running four workers, and passing costs no more)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


def _clean_environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RALPH_", "CLAUDE", "GIT_", "STUB_", "PYTEST_"))
           and k not in ("FREEZE_SCOPE", "STOP_ON_SCOPE_CHANGE", "SCRIPT_DIR", "VIRTUAL_ENV")}
    env.update({
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    })
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A directory first on PATH: put stub agents here (see install_stub)."""
    path = tmp_path / "bin"
    path.mkdir()
    return path


@pytest.fixture
def base_env(home: Path, bin_dir: Path) -> dict[str, str]:
    env = _clean_environ()
    env["HOME"] = str(home)
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env or _clean_environ(), check=True,
                          capture_output=True, text=True).stdout


def ignore_ralph_dir(repo: Path, env: dict[str, str]) -> None:
    """Commit a .gitignore holding `.ralph/`, as a project set up for ralph has it: the tree
    stays clean while a run writes its files there."""
    (repo / ".gitignore").write_text(".ralph/\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "ignore .ralph", env=env)


@pytest.fixture(params=("sqlite", "postgresql"))
def any_store(request, base_env: dict[str, str], git_repo: Path):
    """The backlog a task CLI test runs against, once per store: the repo's SQLite file, or a
    fresh PostgreSQL store (RALPH_TASKS_DB in base_env). Restrict a test that is about one
    store with @pytest.mark.parametrize("any_store", ["sqlite"], indirect=True)."""
    if request.param == "sqlite":
        return git_repo / ".ralph" / "tasks.db"
    from task_helpers import PgStore
    url = request.getfixturevalue("pg_url")
    base_env["RALPH_TASKS_DB"] = url
    return PgStore(url)


@pytest.fixture(scope="session")
def _git_repo_template(tmp_path_factory) -> Path:
    """git_repo as git made it, once per worker: each test gets a copy (four git processes
    a test, over a thousand tests, were a few percent of the suite's CPU)."""
    repo = tmp_path_factory.mktemp("template") / "repo"
    repo.mkdir()
    env = {**_clean_environ(), "HOME": str(repo.parent)}
    git(repo, "init", "-q", "-b", "main", env=env)
    git(repo, "remote", "add", "origin", "https://github.com/acme/widgets.git", env=env)
    (repo / "specs").mkdir()
    (repo / "specs" / "feature.md").write_text("# Feature\n\n- [ ] it works\n")
    (repo / "README.md").write_text("demo\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "initial", env=env)
    return repo


@pytest.fixture
def git_repo(tmp_path: Path, _git_repo_template: Path) -> Path:
    """A git repo on branch main with an origin remote, one spec and one commit."""
    return Path(shutil.copytree(_git_repo_template, tmp_path / "repo", symlinks=True))


def install_stub(bin_dir: Path, name: str = "claude", stub: str = "claude") -> Path:
    """Link tests/stubs/<stub> into bin_dir as <name>."""
    target = bin_dir / name
    target.symlink_to(STUBS / stub)
    return target


def run_process(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 60,
                input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True,
                          encoding="utf-8", errors="surrogateescape", timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


@pytest.fixture
def run_ralph(git_repo: Path, base_env: dict[str, str]):
    """run_ralph(*args, env=extra_env, cwd=dir, timeout=s, input=text) -> CompletedProcess."""
    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess:
        full_env = {**base_env, **(env or {})}
        return run_process([sys.executable, str(RALPH), *args], cwd=cwd or git_repo,
                           env=full_env, timeout=timeout, input=input)
    return run


@pytest.fixture(scope="session")
def task_forker(tmp_path_factory) -> Iterator[taskfork.Forker]:
    """The warm process run_task forks a PostgreSQL store's task calls from (tests/taskfork.py),
    started at its first call."""
    forker = taskfork.Forker(tmp_path_factory.mktemp("taskfork"))
    yield forker
    forker.close()


@pytest.fixture
def run_task(git_repo: Path, base_env: dict[str, str], task_forker: taskfork.Forker):
    """run_task(*args, env=extra_env, cwd=dir, input=stdin_text) -> CompletedProcess. A call on
    a PostgreSQL store is a fork of a process that imported the driver once (tests/taskfork.py)."""
    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess:
        full_env = {**base_env, **(env or {})}
        spawn = task_forker.run if taskfork.names_postgres(full_env) else run_process
        return spawn([*TASK_ARGV, *args], cwd=cwd or git_repo, env=full_env, timeout=timeout,
                     input=input)
    return run


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def pg_server() -> pgserver.Cluster:
    """A throwaway PostgreSQL server (tests/pgserver.py) for this session, without fsync
    (pgserver.start_cluster). Each xdist worker starts its own: about 1 s (initdb 0.8 s,
    start 0.1 s), and a test that restarts or stops the server disturbs no other worker's
    tests. Skips, naming what is missing, when the server binaries or psycopg are not
    installed."""
    reason = pgserver.missing()
    if reason:
        pytest.skip(reason)
    cluster = pgserver.start_cluster(durable=False)
    yield cluster
    cluster.destroy()


@pytest.fixture
def pg_database(pg_server: pgserver.Cluster) -> str:
    """A fresh empty database of pg_server for one test, dropped after it."""
    name = pg_server.create_database()
    yield name
    if pg_server.postmaster_pid() is None:     # the test stopped the server: the next test
        pg_server.start()                      # needs it running
    pg_server.drop_database(name)


@pytest.fixture
def pg_url(pg_server: pgserver.Cluster, pg_database: str) -> str:
    """The test's database as the superuser over the unix socket:
    postgresql://ralph@/<db>?host=<socket dir>&port=<port>."""
    return pg_server.url(pg_database)


@pytest.fixture
def pg_password_url(pg_server: pgserver.Cluster, pg_database: str) -> str:
    """The same database as the password role over TCP:
    postgresql://ralph_pw:secret@127.0.0.1:<port>/<db>."""
    return pg_server.password_url(pg_database)
