"""sandbox.plan, sandbox.bwrap, sandbox.oci, sandbox.backends: the allow list as data and the
command lines each backend makes of it. docker and podman run only where a daemon does
(tests/e2e/test_sandbox_e2e.py): their command lines are proven here."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ralphpy.errors import UsageError
from ralphpy.sandbox import backends, bwrap, oci, plan
from ralphpy.sandbox.plan import RO, RW, TMPFS, Mount


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "home" / "src" / "app"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / ".ralph" / "prompts").mkdir(parents=True)
    return repo


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    bin_dir = tmp_path / "home" / ".local" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}:/usr/bin:/bin", **more}


def test_the_checkouts_plan_hides_home_and_tmp_and_shows_the_tree_without_its_git_hooks(
        tmp_path):
    repo = _repo(tmp_path)
    home = tmp_path / "home"
    (home / ".claude").mkdir()
    (home / ".ssh").mkdir()
    store = plan.store_files(None, repo)
    for path in store:
        path.write_bytes(b"")
    got = plan.build(plan.Tree(repo, repo), repo, _env(tmp_path),
                     state=(".claude/", ".claude.json"), store=store)
    assert got.mounts == (
        Mount(TMPFS, "/tmp"), Mount(TMPFS, str(home)),
        Mount(RO, str(home / ".local" / "bin")),            # a PATH folder the tmpfs hides
        Mount(RW, str(home / ".claude")),                   # the agent's state; .claude.json
        Mount(RW, str(repo)),                               # absent: not shown
        Mount(RO, str(repo / ".git" / "hooks")), Mount(RO, str(repo / ".git" / "config")),
        Mount(RO, str(repo / ".ralph")),
        *(Mount(RW, str(p)) for p in store))                # tasks.db, -wal, -shm
    assert [p.name for p in store] == ["tasks.db", "tasks.db-wal", "tasks.db-shm"]
    assert got.env == {"IS_SANDBOX": "1", "TMPDIR": "/tmp"} and got.cwd == str(repo)


def test_a_worktrees_plan_hides_the_main_checkout_but_for_what_a_commit_needs(tmp_path):
    repo = _repo(tmp_path)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "init"], cwd=repo, check=True)
    wt = repo / ".ralph" / "worktrees" / "run" / "t-1"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "t-1", str(wt)], cwd=repo, check=True)
    got = plan.build(plan.Tree(wt, repo), wt, _env(tmp_path))
    git = repo / ".git"
    assert Mount(TMPFS, str(repo)) in got.mounts
    assert got.mounts[got.mounts.index(Mount(TMPFS, str(repo))) + 1:] == (
        Mount(RO, str(tmp_path / "home" / ".local" / "bin")),
        Mount(RW, str(wt)), Mount(RW, str(git)), Mount(RO, str(git / "worktrees")),
        Mount(RW, str(git / "worktrees" / "t-1")),
        Mount(RO, str(git / "hooks")), Mount(RO, str(git / "config")),
        Mount(RO, str(repo / ".ralph" / "prompts")))


def test_a_server_store_has_no_files_to_bind_and_a_relative_one_is_ralphs():
    assert plan.store_files("postgresql://u@h/db", Path("/r")) == []
    assert plan.store_files("/data/t.db", Path("/r"))[1] == Path("/data/t.db-wal")


def test_bwrap_runs_the_plan_in_its_own_pid_namespace_dying_with_ralph_in_ralphs_group():
    p = plan.Plan((Mount(TMPFS, "/tmp"), Mount(RW, "/w"), Mount(RO, "/w/.git/hooks")), "/w",
                  {"IS_SANDBOX": "1"})
    argv = bwrap.argv(p, ["claude", "-p", "hi"], "/usr/bin/bwrap")
    assert argv == ["env", "--ignore-signal=INT,TERM",      # bwrap outlives the first Ctrl+C
                    "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                    "--unshare-pid", "--die-with-parent", "--tmpfs", "/tmp", "--bind", "/w", "/w",
                    "--ro-bind", "/w/.git/hooks", "/w/.git/hooks", "--setenv", "IS_SANDBOX", "1",
                    "--chdir", "/w", "--", "env", "--default-signal=INT,TERM", "--",
                    "claude", "-p", "hi"]
    assert "--new-session" not in argv and "--unshare-net" not in argv


@pytest.mark.parametrize("engine", oci.ENGINES)
def test_docker_and_podman_run_the_image_with_the_plans_mounts_and_the_variables_by_name(
        engine):
    p = plan.Plan((Mount(TMPFS, "/tmp"), Mount(RW, "/w"), Mount(RO, "/w/.git/config")), "/w",
                  {"IS_SANDBOX": "1"})
    argv = oci.argv(engine, "agent:1", p, ["claude", "-p", "hi"], ["PATH", "ANTHROPIC_API_KEY"],
                    "ralph-run-3")
    assert argv == [engine, "run", "--rm", "-i", "--init", "--name", "ralph-run-3",
                    "--network", "host", "--user", f"{os.getuid()}:{os.getgid()}", "--read-only",
                    "--tmpfs", "/tmp", "--mount", "type=bind,src=/w,dst=/w",
                    "--mount", "type=bind,src=/w/.git/config,dst=/w/.git/config,readonly",
                    "-e", "ANTHROPIC_API_KEY", "-e", "PATH",   # values never on a command line
                    "-e", "IS_SANDBOX=1", "-w", "/w", "agent:1", "claude", "-p", "hi"]
    assert oci.remove(engine, "ralph-run-3") == [engine, "rm", "-f", "ralph-run-3"]
    assert oci.probe(engine)[:2] == [engine, "info"]


def _fake(tmp_path: Path, name: str, code: int) -> dict[str, str]:
    tool = tmp_path / "tools" / name
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(f"#!/bin/sh\necho 'no daemon here' >&2\nexit {code}\n")
    tool.chmod(0o755)
    return {"PATH": str(tool.parent)}


def test_auto_takes_an_engine_only_with_an_image_and_only_when_its_daemon_answers(tmp_path):
    env = _fake(tmp_path, "docker", 0)
    assert backends.resolve("auto", "agent:1", env) == backends.Backend(
        "docker", str(tmp_path / "tools" / "docker"), "agent:1")
    with pytest.raises(UsageError, match="install bubblewrap"):
        backends.resolve("auto", None, env)              # no image: no engine
    with pytest.raises(UsageError, match="install bubblewrap"):
        backends.resolve("auto", "agent:1", _fake(tmp_path, "docker", 1))


def test_none_is_no_sandbox_and_the_wrap_of_each_backend_is_its_own():
    assert backends.resolve("none", None, {}) is None
    p = plan.Plan((), "/w")
    docker = backends.Backend("docker", "/usr/bin/docker", "img")
    assert backends.wrap(docker, p, ["a"], ["PATH"], "n")[:2] == ["/usr/bin/docker", "run"]
    assert backends.leftover(docker, "n") == ["/usr/bin/docker", "rm", "-f", "n"]
    bw = backends.Backend("bwrap", "/usr/bin/bwrap")
    assert backends.wrap(bw, p, ["a"], [], "n")[2] == "/usr/bin/bwrap"
    assert backends.leftover(bw, "n") is None and bw.shown == "bwrap"
    assert docker.shown == "docker (img)"


def test_ralphs_own_install_and_an_agent_linked_into_home_are_shown_read_only(tmp_path):
    """ralph and its interpreter installed under $HOME (pipx, pyenv) and a CLI whose PATH entry
    is a link into a package folder (npm's `.bin`), reached through a linked folder: the task
    CLI and the agent still start inside, and nothing more of $HOME is shown."""
    repo = _repo(tmp_path)
    home = tmp_path / "home"
    real = tmp_path / "elsewhere" / "node_modules"
    (real / "pkg").mkdir(parents=True)
    (real / ".bin").mkdir()
    (real / "pkg" / "cli.js").write_text("")
    (real / ".bin" / "agent").symlink_to("../pkg/cli.js")
    (home / "tools").mkdir()
    (home / "tools" / "node_modules").symlink_to(real)            # a linked install folder
    program = str(home / "tools" / "node_modules" / ".bin" / "agent")
    lib, venv = home / ".local" / "pipx" / "lib", home / ".pyenv" / "versions" / "3.11"
    lib.mkdir(parents=True)
    venv.mkdir(parents=True)
    got = plan.build(plan.Tree(repo, repo), repo, _env(tmp_path), program=program,
                     runs_from=[str(lib), str(venv)])
    shown = {m.path for m in got.mounts if m.kind == RO}
    assert {str(lib), str(venv), str(home / "tools" / "node_modules" / ".bin"),
            str(home / "tools" / "node_modules" / "pkg")} <= shown
    assert not any(p == str(home) or str(home / ".ssh") in p for p in shown)
