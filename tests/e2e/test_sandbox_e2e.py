"""Black-box: `--sandbox bwrap` with real bubblewrap, the real task CLI and a scripted stub
agent (docs/sandbox.md). A whole build session runs inside; each escape a session may try
fails, and each is named; `--parallel 2` runs two sandboxed sessions at once, each seeing only
its own worktree. Bad input (`--sandbox` that cannot start) is one `Error:` line, exit 1,
nothing written."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import RALPH, git, ignore_ralph_dir, install_stub, wait_for
from loophelp import Running, tasks  # noqa: F401  (fixtures)
from sandboxhelp import needs_bwrap


# One build session, as the agent: claim, commit its work, mark it done.
BUILD = ('id=$("$RALPH_TASK_SCRIPT" claim | sed -n "s/^id: //p"); '
         'echo "built $id" > "work-$id.txt"; git add "work-$id.txt"; '
         'git commit -qm "Build $id"; '
         '"$RALPH_TASK_SCRIPT" done "$id" --result "{\\"commit\\":\\"x\\"}" >/dev/null')


def _sync(run_task, *ids: str) -> None:
    rows = "".join(json.dumps({"id": i, "t": f"Task {i}"}) + "\n" for i in ids)
    assert run_task("plan-sync", input=rows).returncode == 0


@pytest.fixture
def repo(git_repo, base_env, bin_dir, run_task):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    _sync(run_task, "t-1")
    return git_repo


def _statuses(run_task) -> dict[str, str]:
    rows = map(json.loads, filter(str.strip, run_task("_export-json").stdout.splitlines()))
    return {r["id"]: r["status"] for r in rows}


@needs_bwrap
def test_a_whole_build_session_runs_inside_bwrap(repo, run_ralph, run_task, home):
    _sync(run_task, "t-2")
    (home / ".ssh").mkdir()
    seen = ('echo "IS_SANDBOX=$IS_SANDBOX pid1=$(cat /proc/1/comm) home=$(ls -A ~ | tr "\\n" " ")" '
            '>> .ralph-seen.txt; ')
    proc = run_ralph("build", "--sandbox", "bwrap",
                     env={"STUB_ACTION": seen + BUILD, "IS_SANDBOX": "host-set"})
    assert proc.returncode == 0, proc.stderr
    assert "\nSandbox: bwrap\n" in proc.stdout
    assert "All tasks complete. Exiting loop." in proc.stdout
    assert _statuses(run_task) == {"t-1": "done", "t-2": "done"}
    assert git(repo, "log", "--format=%s", "-2").splitlines() == ["Build t-2", "Build t-1"]
    status = run_ralph("status")
    assert "\nSandbox:    bwrap\n" in status.stdout          # ralph status names it
    lines = (repo / ".ralph-seen.txt").read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        # IS_SANDBOX=1 inside; the agent's own pid namespace (bwrap's init is its pid 1);
        # of $HOME only claude's state folder (made for it), no ~/.ssh
        assert line.startswith("IS_SANDBOX=1 pid1=bwrap home="), line
        assert line.split("home=")[1].split() == [".claude"]


@needs_bwrap
def test_without_sandbox_the_session_runs_on_the_host_as_before(repo, run_ralph, run_task):
    proc = run_ralph("build", env={"STUB_ACTION": 'echo "[$IS_SANDBOX]" > seen.txt; ' + BUILD,
                                   "IS_SANDBOX": "host-set"})
    assert proc.returncode == 0, proc.stderr
    assert "Sandbox:" not in proc.stdout
    assert (repo / "seen.txt").read_text() == "[host-set]\n"     # the user's own, untouched


# Each escape: the agent's attempt (its shell), and the host's proof that it failed.
KILL_RALPH = ('pid=$(python3 -c "import json;print(json.load(open(\'.ralph/run.lock\'))'
              '[\'pid\'])"); kill -TERM "$pid"; echo "kill exit $?" > kill.txt; ')
LINGER = 'setsid env -i sleep 86421 </dev/null >/dev/null 2>&1 & '


def _lingering() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == b"sleep\x0086421\x00":
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@needs_bwrap
@pytest.mark.parametrize("escape", ["write_outside_the_tree", "read_ssh_key", "kill_ralph",
                                    "leave_a_process_running"])
def test_an_escape_attempt_fails(repo, run_ralph, run_task, tmp_path, home, escape):
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    attempt = {
        "write_outside_the_tree": f'echo pwned > "{outside}/escaped"; echo pwned > ~/.bashrc; ',
        "read_ssh_key": 'cat ~/.ssh/id_ed25519 > stolen.txt 2>/dev/null; ',
        "kill_ralph": KILL_RALPH,
        "leave_a_process_running": LINGER,
    }[escape]
    proc = run_ralph("build", "--sandbox", "bwrap", env={"STUB_ACTION": attempt + BUILD})
    try:
        assert proc.returncode == 0, proc.stderr        # the run went on, as if nothing was tried
        assert "All tasks complete. Exiting loop." in proc.stdout
        assert _statuses(run_task) == {"t-1": "done"}
        if escape == "write_outside_the_tree":
            assert list(outside.iterdir()) == [] and not (home / ".bashrc").exists()
        elif escape == "read_ssh_key":
            assert (repo / "stolen.txt").read_text() == ""
        elif escape == "kill_ralph":
            assert (repo / "kill.txt").read_text() != "kill exit 0\n"
        else:
            wait_for(lambda: not _lingering())          # the pid namespace went with the agent
    finally:
        for pid in _lingering():
            os.kill(pid, 9)


def _parallel(repo: Path, base_env: dict, run_task, action: str, *args: str,
              timeout: float = 120) -> subprocess.CompletedProcess:
    for tid, comp in (("p-1", "a"), ("p-2", "b")):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{comp}").returncode == 0
    return subprocess.run([sys.executable, str(RALPH), "build", "--parallel", "2", "--sandbox",
                           "bwrap", *args], cwd=repo, env={**base_env, "STUB_ACTION": action},
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


# A --parallel session's work: its task is the frozen ids file's one id.
TID = 'tid=$(cat "$RALPH_FROZEN_IDS_FILE"); '
PARALLEL_WORK = (TID + 'echo "$tid" > "out-$tid.txt"; git add "out-$tid.txt"; '
                 'git commit -qm "work on $tid"; "$RALPH_TASK_SCRIPT" done "$tid" >/dev/null')


class Barrier:
    """A TCP barrier on 127.0.0.1: each session connects and is answered once `parties` have:
    the sessions ran at the same time (and the host's network is theirs)."""

    def __init__(self, parties: int):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.parties, self.conns = parties, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(60)
        try:
            while len(self.conns) < self.parties:
                self.conns.append(self.server.accept()[0])
        except OSError:
            return
        for conn in self.conns:
            conn.sendall(b"go")
            conn.close()

    def close(self) -> None:
        self.server.close()


@needs_bwrap
def test_parallel_2_runs_two_sandboxed_sessions_each_seeing_only_its_worktree(
        git_repo, base_env, bin_dir, run_task):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    barrier = Barrier(2)
    wait = (f'python3 -c "import socket;s=socket.create_connection((\'127.0.0.1\',{barrier.port}));'
            f'assert s.recv(2)==b\'go\'"; ')
    look = (f'ls -A "{git_repo}" | tr "\\n" " " > seen-$tid.txt; echo >> seen-$tid.txt; '
            f'ls -A "{git_repo}/.ralph/worktrees/"*/ | tr "\\n" " " >> seen-$tid.txt; '
            f'git add seen-$tid.txt; ')
    try:
        proc = _parallel(git_repo, base_env, run_task, TID + wait + look + PARALLEL_WORK)
    finally:
        barrier.close()
    assert proc.returncode == 0, proc.stderr
    assert len(barrier.conns) == 2                          # both sessions at once
    assert _statuses(run_task) == {"p-1": "done", "p-2": "done"}, proc.stdout + proc.stderr
    for tid in ("p-1", "p-2"):
        main_seen, worktrees_seen = (git_repo / f"seen-{tid}.txt").read_text().splitlines()
        # of the main checkout: its .git (what a commit needs) and .ralph's worktrees folder
        # it is mounted in; none of the checkout's files, no other session's worktree
        assert set(main_seen.split()) == {".git", ".ralph"}, main_seen
        assert worktrees_seen.split() == [tid], worktrees_seen


@needs_bwrap
def test_a_parallel_session_cannot_write_the_main_checkouts_git_hooks_or_config(
        git_repo, base_env, bin_dir, run_task):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    attack = ('common=$(git rev-parse --git-common-dir); '
              'printf "#!/bin/sh\\ntouch %s/pwned\\n" "$common" > "$common/hooks/post-merge"; '
              'chmod +x "$common/hooks/post-merge"; '
              'git config core.hooksPath /tmp/evil; ')
    proc = _parallel(git_repo, base_env, run_task, attack + PARALLEL_WORK)
    assert proc.returncode == 0, proc.stderr
    assert _statuses(run_task) == {"p-1": "done", "p-2": "done"}, proc.stdout + proc.stderr
    assert not (git_repo / ".git" / "hooks" / "post-merge").exists()
    hooks_path = subprocess.run(["git", "config", "--get", "core.hooksPath"], cwd=git_repo,
                                env=base_env, capture_output=True, text=True)
    assert (hooks_path.returncode, hooks_path.stdout) == (1, ""), (git_repo / ".git" / "config"
                                                                   ).read_text()
    assert not (git_repo / ".git" / "pwned").exists()


def test_ralphs_own_git_calls_run_no_hook_a_session_wrote(git_repo, base_env, bin_dir,
                                                          run_task):
    """Without a sandbox, a session may write a hook; ralph's merge must not run it."""
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    for tid, comp in (("p-1", "a"), ("p-2", "b")):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{comp}").returncode == 0
    hook = ('common=$(git rev-parse --git-common-dir); for h in post-checkout post-merge '
            'post-rewrite; do printf "#!/bin/sh\\necho $h >> %s/ran\\n" '
            '"$common" > "$common/hooks/$h"; chmod +x "$common/hooks/$h"; done; ')
    # the hook is written after the session's own commit: only ralph's git calls follow
    work = PARALLEL_WORK.replace('"$RALPH_TASK_SCRIPT" done', hook + '"$RALPH_TASK_SCRIPT" done')
    proc = subprocess.run([sys.executable, str(RALPH), "build", "--parallel", "2"],
                          cwd=git_repo, env={**base_env, "STUB_ACTION": work},
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert _statuses(run_task) == {"p-1": "done", "p-2": "done"}, proc.stdout + proc.stderr
    assert (git_repo / ".git" / "hooks" / "post-merge").exists()    # written, never run
    assert not (git_repo / ".git" / "ran").exists()


# ------------------------------------------------------------------- bad input, warnings

def _nothing_written(repo: Path) -> bool:
    return not (repo / ".ralph" / "runs").exists()


@pytest.mark.parametrize("args,fake,line", [
    (["--sandbox", "box"], None,
     "Error: --sandbox must be one of auto, bwrap, docker, podman, none, got 'box'"),
    (["--sandbox", "docker"], None,
     "Error: --sandbox docker needs an image with the agent CLI in it: set sandbox_image in "
     "ralph.yml or --sandbox-image"),
    (["--sandbox", "docker", "--sandbox-image", "agent:1"], "docker",
     "Error: --sandbox docker: no docker daemon answers (Cannot connect to the Docker daemon); "
     "start it, or choose another --sandbox"),
    (["--sandbox", "podman", "--sandbox-image", "agent:1"], None,
     "Error: --sandbox podman: 'podman' is not on PATH; install podman, or choose another "
     "--sandbox"),
    (["--sandbox", "auto"], None,
     "Error: --sandbox auto: no sandbox can start here; install bubblewrap (apt-get install "
     "bubblewrap), or choose --sandbox none"),
], ids=["unknown", "docker-no-image", "docker-no-daemon", "podman-missing", "auto-none"])
def test_a_sandbox_that_cannot_start_is_one_error_line_before_anything_is_written(
        git_repo, base_env, bin_dir, tmp_path, args, fake, line):
    install_stub(bin_dir)
    tools = tmp_path / "tools"              # a PATH with git, python and the agent, no sandbox
    tools.mkdir()
    for name in ("git", "python3", "sh"):
        (tools / name).symlink_to(shutil.which(name))
    if fake:                                # a client whose daemon does not answer
        (tools / fake).write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\n"
                                  "exit 1\n")
        (tools / fake).chmod(0o755)
    env = {**base_env, "PATH": f"{bin_dir}:{tools}"}
    proc = subprocess.run([sys.executable, str(RALPH), "build", *args], cwd=git_repo, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr, proc.stdout) == (1, line + "\n", "")
    assert _nothing_written(git_repo)


def test_danger_without_a_sandbox_in_a_run_with_no_terminal_warns_once(git_repo, base_env,
                                                                       bin_dir):
    install_stub(bin_dir)
    proc = subprocess.run([sys.executable, str(RALPH), "build", "--danger", "--dry-run"],
                          cwd=git_repo, env=base_env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("Warning: --danger in an unattended run without a sandbox: the agent "
                           "can read your keys and write anywhere you can (--sandbox auto, "
                           "docs/sandbox.md)\n")


@needs_bwrap
def test_danger_with_a_sandbox_or_without_danger_warns_of_nothing(git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    for args in (["--danger", "--sandbox", "bwrap"], []):
        proc = subprocess.run([sys.executable, str(RALPH), "build", *args, "--dry-run"],
                              cwd=git_repo, env=base_env, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, start_new_session=True)
        assert (proc.returncode, proc.stderr) == (0, ""), args


@needs_bwrap
def test_doctor_checks_the_sandbox_ralph_yml_names(git_repo, run_ralph, bin_dir):
    install_stub(bin_dir)
    (git_repo / "ralph.yml").write_text("sandbox: bwrap\n")
    doctor = run_ralph("doctor")
    assert f"ok       sandbox: bwrap starts a sandbox ({shutil.which('bwrap')})\n" in doctor.stdout
    (git_repo / "ralph.yml").write_text("sandbox: podman\n")
    doctor = run_ralph("doctor")
    assert doctor.returncode == 1                       # required: the run would not start
    assert ("missing  sandbox: --sandbox podman needs an image with the agent CLI in it: set "
            "sandbox_image in ralph.yml or --sandbox-image\n") in doctor.stdout


def _docker_image() -> str | None:
    """Why a docker sandbox cannot run a session here: no daemon, or no image holding git,
    python3 and this checkout at its own path (the task CLI's launcher names its interpreter),
    named by RALPH_TEST_SANDBOX_IMAGE."""
    if shutil.which("docker") is None:
        return "docker is not installed"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "no docker daemon runs on this machine"
    if not os.environ.get("RALPH_TEST_SANDBOX_IMAGE"):
        return ("no image with git, python3 and this checkout: set RALPH_TEST_SANDBOX_IMAGE")
    return None


@pytest.mark.skipif(_docker_image() is not None, reason=_docker_image() or "")
def test_a_whole_build_session_runs_inside_docker(repo, run_ralph, run_task):
    image = os.environ["RALPH_TEST_SANDBOX_IMAGE"]
    proc = run_ralph("build", "--sandbox", "docker", "--sandbox-image", image,
                     env={"STUB_ACTION": BUILD}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\nSandbox: docker (" in proc.stdout
    assert _statuses(run_task) == {"t-1": "done"}


@needs_bwrap
def test_a_plan_session_runs_inside_bwrap_too(repo, run_ralph):
    proc = run_ralph("plan", "--sandbox", "bwrap",
                     env={"STUB_ACTION": 'echo "$IS_SANDBOX $(cat /proc/1/comm)" > planned.txt'})
    assert proc.returncode == 0, proc.stderr
    assert "\nSandbox: bwrap\n" in proc.stdout
    assert (repo / "planned.txt").read_text() == "1 bwrap\n"


# ------------------------------------------------------------------- signals (s.16)

def _carrying(mark: str) -> list[int]:
    """Processes on the host whose environment holds `mark`, whatever namespace they are in."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _start_signal_run(git_repo, base_env, bin_dir, tasks, **extra):
    install_stub(bin_dir, "claude", "claude_signals")
    tasks.script(peek={"out": "## Task t\nid: t\n"},
                 plan_status={"out": "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"})
    files = {"STUB_PIDFILE": str(git_repo / "agent.pid"),    # in the tree: the agent writes them
             "STUB_SIGLOG": str(git_repo / "signals"),
             "STUB_CHILD_PIDFILE": str(git_repo / "child.pid")}
    mark = f"SANDBOX_TEST_MARK={os.getpid()}-{id(files)}"
    env = {**base_env, **tasks.env, **files, mark.split("=")[0]: mark.split("=")[1], **extra}
    run = Running(["build", "--sandbox", "bwrap"], cwd=git_repo, env=env)
    wait_for(lambda: (git_repo / "child.pid").exists() and (git_repo / "agent.pid").exists())
    return run, mark


@needs_bwrap
def test_the_first_ctrl_c_reaches_the_sandboxed_agent_once_and_waits_for_it(
        git_repo, base_env, bin_dir, tasks):
    run, mark = _start_signal_run(git_repo, base_env, bin_dir, tasks)
    try:
        os.killpg(run.proc.pid, signal.SIGINT)          # what Ctrl+C at a terminal does
        assert run.wait() == 130
        assert (git_repo / "signals").read_text().split() == ["SIGINT"]
        assert "\nWaiting for claude to finish cleanup... Press Ctrl+C again to force quit.\n" \
               "bye\n" in run.stdout
        wait_for(lambda: not _carrying(mark))          # its child went with the namespace
    finally:
        run.kill()


@needs_bwrap
def test_sigterm_kills_the_sandboxed_agent_and_all_it_started(git_repo, base_env, bin_dir, tasks):
    run, mark = _start_signal_run(git_repo, base_env, bin_dir, tasks, STUB_ON_INT="ignore")
    try:
        assert _carrying(mark)                          # the sandbox, the agent, its child
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.wait() == 130
        assert not (git_repo / "signals").exists()      # killed, not asked
        wait_for(lambda: not _carrying(mark))
    finally:
        run.kill()


@needs_bwrap
@pytest.mark.parametrize("given", [(), ("--sandbox", "none")], ids=["no-flag", "another"])
def test_a_resumed_run_keeps_its_sandbox(git_repo, base_env, bin_dir, tasks, given):
    """A sandboxed run stopped by SIGTERM and resumed without --sandbox (or with another) runs
    its next session in the sandbox it was started with: never the rest of it on the host."""
    run, _ = _start_signal_run(git_repo, base_env, bin_dir, tasks, STUB_ON_INT="ignore")
    try:
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.wait() == 130
    finally:
        run.kill()
    (bin_dir / "claude").unlink()
    install_stub(bin_dir)                               # an agent that says where it ran
    env = {**base_env, **tasks.env, "IS_SANDBOX": "host-set",
           "STUB_ACTION": 'echo "[$IS_SANDBOX]" >> seen.txt'}
    proc = subprocess.run([sys.executable, str(RALPH), "build", "--resume", *given],
                          cwd=git_repo, env=env, capture_output=True, text=True, timeout=120)
    assert "Resuming run" in proc.stderr, proc.stderr
    assert "\nSandbox: bwrap\n" in proc.stdout
    assert ("sandbox: this run keeps 'bwrap' (asked for 'none' now)" in proc.stderr) \
        == bool(given)
    seen = (git_repo / "seen.txt").read_text().splitlines()   # until its idle-session guard
    assert seen and set(seen) == {"[1]"}
