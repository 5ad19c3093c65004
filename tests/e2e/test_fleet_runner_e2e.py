"""Black-box tests of ralph.py on a PostgreSQL task store (docs/fleet.md): selecting the store
(--tasks postgresql://, RALPH_TASKS_DB, an unknown scheme), each agent's claims file and the
fencing of a late `done`, the heartbeat that renews a long session's claim, `ralph status`'s
fleet, a store that goes away between sessions, and a password that never shows. Real ralph.py
and task CLI processes, stub agents, a real throwaway PostgreSQL server (conftest's pg_url)."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import ignore_ralph_dir, install_stub, read_jsonl, wait_for
from loophelp import Running
from task_helpers import REFUSALS, PgStore, ok, query, refused_url

DONE_FIRST = r"""
out=$("$RALPH_TASK_SCRIPT" claim) || exit 0
id=$(printf '%s\n' "$out" | sed -n 's/^id: //p' | head -n 1)
echo "$id" >> work.txt && git add work.txt && git commit -qm "$id: work" >/dev/null
"$RALPH_TASK_SCRIPT" done "$id" --result "{\"commit\":\"$(git rev-parse HEAD)\"}" >/dev/null
"""

# Claims, then waits for $RELEASE before marking the task done (its exit status in $DONE_RC).
HOLD_THEN_DONE = r"""
out=$("$RALPH_TASK_SCRIPT" claim) || exit 0
id=$(printf '%s\n' "$out" | sed -n 's/^id: //p' | head -n 1)
echo "$id" > "$CLAIMED"
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"none"}' >/dev/null 2>"$DONE_ERR"
echo $? > "$DONE_RC"
"""


@pytest.fixture
def repo(git_repo: Path, base_env: dict[str, str], bin_dir: Path) -> Path:
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    return git_repo


def create(run_task, url: str, *ids: str) -> None:
    for tid in ids:
        ok(run_task("create", tid, f"Task {tid}", env={"RALPH_TASKS_DB": url}))


def statuses(url: str) -> dict[str, tuple]:
    rows = query(PgStore(url), "SELECT slug, status, assignee FROM tasks ORDER BY slug")
    return {slug: (status, assignee) for slug, status, assignee in rows}


def run_dir(repo: Path) -> Path:
    (found,) = (repo / ".ralph" / "runs").iterdir()
    return found


def every_file(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]


# --- selecting the store ----------------------------------------------------------------------

def test_build_with_tasks_postgresql_runs_every_task_to_done(run_ralph, run_task, repo, pg_url):
    create(run_task, pg_url, "t1", "t2")
    proc = run_ralph("build", "--tasks", pg_url, env={"STUB_ACTION": DONE_FIRST})
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    assert f"Tasks:  {pg_url}" in proc.stdout.splitlines()          # no password to hide
    assert {k: v[0] for k, v in statuses(pg_url).items()} == {"t1": "done", "t2": "done"}
    assert not (repo / ".ralph" / "tasks.db").exists()             # nothing went to SQLite
    state = json.loads((run_dir(repo) / "state.json").read_text())
    assert state["extra"]["fleet"] == {"store": pg_url, "leaseS": 600.0}
    claims = list(run_dir(repo).glob("claims-*.txt"))
    assert len(claims) == 1                                       # the run's one agent
    assert sorted(line.split()[1] for line in claims[0].read_text().splitlines()) == ["t1", "t2"]


@pytest.mark.parametrize("variable, other_db", [
    pytest.param("RALPH_TASKS_DB", False, id="RALPH_TASKS_DB"),
    pytest.param("RALPH_TASKS", False, id="RALPH_TASKS"),
    # the `tasks` setting names the store (docs/fleet.md)
    pytest.param("RALPH_TASKS", True, id="RALPH_TASKS over RALPH_TASKS_DB"),
])
def test_the_environment_selects_the_store_too(run_ralph, run_task, repo, pg_url, variable,
                                               other_db, tmp_path):
    create(run_task, pg_url, "t1")
    log = tmp_path / "agent.jsonl"
    env = {variable: pg_url, "STUB_ACTION": DONE_FIRST, "STUB_LOG": str(log)}
    if other_db:
        env["RALPH_TASKS_DB"] = str(tmp_path / "other.db")
    proc = run_ralph("build", env=env)
    assert proc.returncode == 0, proc.stderr
    assert statuses(pg_url)["t1"][0] == "done"
    assert list(run_dir(repo).glob("claims-*.txt"))
    seen = read_jsonl(log)[0]["env"]                 # what the agent's task calls see
    assert seen["RALPH_TASKS_DB"] == pg_url
    assert seen.get("RALPH_TASKS") == (pg_url if variable == "RALPH_TASKS" else None)
    assert not (tmp_path / "other.db").exists()


@pytest.mark.parametrize("yml", ["another store", "tk"])
def test_ralph_task_in_a_session_reaches_the_runs_store_not_ralph_yml(
        run_ralph, run_task, repo, pg_server, pg_url, tmp_path, yml):
    # The run's --tasks wins over ralph.yml's tasks: (docs/fleet.md); an agent's `ralph task`
    # must answer from the store its session works on, not from the one ralph.yml names.
    other = pg_server.create_database()
    try:
        named = pg_server.url(other) if yml == "another store" else "tk"
        (repo / "ralph.yml").write_text(f"tasks: {named}\n")
        create(run_task, pg_url, "t1")
        log = tmp_path / "agent.jsonl"
        proc = run_ralph("build", "--tasks", pg_url, env={"STUB_ACTION": DONE_FIRST,
                                                          "STUB_LOG": str(log)})
        assert proc.returncode == 0, proc.stderr
        session_env = read_jsonl(log)[0]["env"]
        listed = run_ralph("task", "list", "--all", env=session_env)
        assert listed.returncode == 0, listed.stderr
        assert "t1" in listed.stdout
        status = run_ralph("status", "--json", env=session_env)
        assert json.loads(status.stdout)["fleet"]["store"] == pg_url, status.stderr
        if yml == "another store":
            assert query(PgStore(pg_server.url(other)),
                         "SELECT count(*) FROM pg_tables WHERE tablename = 'tasks'") == [(0,)]
    finally:
        pg_server.drop_database(other)


@pytest.mark.parametrize("how", ["flag", "ralph.yml", "RALPH_TASKS", "RALPH_TASKS_DB"])
def test_an_unknown_store_scheme_is_one_line_exit_1_and_creates_nothing(run_ralph, repo,
                                                                         tmp_path, how):
    value = "foo://u:hunter2@db/tasks"
    args, env = ["build"], {}
    if how == "flag":
        args += ["--tasks", value]
    elif how == "ralph.yml":
        (repo / "ralph.yml").write_text(f"tasks: {value}\n")
    else:
        env[how] = value
    before = sorted(p.name for p in repo.iterdir())
    proc = run_ralph(*args, env=env)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.count("\n") == 1 and "hunter2" not in proc.stderr
    assert "foo://u:***@db/tasks" in proc.stderr
    assert sorted(p.name for p in repo.iterdir()) == before       # no .ralph/
    assert not [p for p in tmp_path.rglob("*") if p.name in ("foo:", "postgresql:")]


@pytest.mark.parametrize("case", [*REFUSALS, "newer schema"])
def test_a_store_that_refuses_the_run_is_one_line_exit_1_before_anything_is_written(
        run_ralph, run_task, repo, pg_server, pg_database, case):
    if case == "newer schema":
        url = pg_server.password_url(pg_database)
        create(run_task, url, "t1")
        query(PgStore(url), "INSERT INTO ralph_schema (version) VALUES (99)")
        answer = "the task store's schema is version 99, newer than this ralph.py knows"
    else:
        url, answer = refused_url(pg_server, pg_database, case)
    before = sorted(p.name for p in repo.iterdir())
    proc = run_ralph("build", "--tasks", url)
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
    assert proc.stderr.count("\n") == 1 and answer in proc.stderr, proc.stderr
    assert "hunter2" not in proc.stderr and "secret" not in proc.stderr
    assert sorted(p.name for p in repo.iterdir()) == before       # no .ralph/


def test_the_dry_run_reads_the_store_without_creating_its_tables(run_ralph, run_task, repo,
                                                                  pg_url):
    proc = run_ralph("build", "--dry-run", "--tasks", pg_url)
    assert proc.returncode == 0, proc.stderr
    assert f"Task data: none: {pg_url} has no ralph tables yet" in proc.stdout
    assert query(PgStore(pg_url), "SELECT to_regclass('tasks')") == [(None,)]
    create(run_task, pg_url, "t1")
    proc = run_ralph("build", "--dry-run", "--tasks", pg_url)
    assert f"Task data (task peek -n 10, read-only, {pg_url}):" in proc.stdout
    assert "id: t1" in proc.stdout


# --- claims files and fencing -------------------------------------------------------------------

def test_a_late_done_is_refused_after_another_host_took_the_task(repo, base_env, run_task,
                                                                 pg_url, tmp_path):
    """The run's agent claims t1 (its token in the claims file ralph gives it); its lease runs
    out (the host was cut off: no heartbeat landed) and another host's agent claims t1; the
    first agent's `done` is refused, nothing written, and ralph leaves t1 to its new holder."""
    create(run_task, pg_url, "t1")
    files = {name: tmp_path / name for name in ("CLAIMED", "RELEASE", "DONE_RC", "DONE_ERR")}
    env = {**base_env, "STUB_ACTION": HOLD_THEN_DONE, **{k: str(v) for k, v in files.items()}}
    run = Running(["build", "-n", "1", "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for(lambda: files["CLAIMED"].exists() and files["CLAIMED"].read_text().strip(), 30)
        store = PgStore(pg_url)
        query(store, "UPDATE tasks SET lease_expires_at = '2000-01-01 00:00:00'")
        other = {"RALPH_TASKS_DB": pg_url, "RALPH_HOSTNAME": "host-b",
                 "RALPH_CLAIMS_FILE": str(tmp_path / "claims-b")}
        agent_b = ok(run_task("agent", "register", env=other)).strip()
        assert "id: t1" in ok(run_task("claim", "--agent", agent_b, env=other))
        before = query(store, "SELECT * FROM tasks")
        files["RELEASE"].touch()
        assert run.wait(60) == 0, run.stderr
    finally:
        run.kill()
    assert files["DONE_RC"].read_text().strip() == "1"
    assert "is no longer held by this claim" in files["DONE_ERR"].read_text()
    assert "nothing written" in files["DONE_ERR"].read_text()
    assert query(store, "SELECT * FROM tasks") == before          # neither done nor failed
    assert statuses(pg_url)["t1"] == ("active", agent_b)
    (claims,) = run_dir(repo).glob("claims-*.txt")
    assert claims.read_text() == "1 t1\n"


def test_parallel_sessions_each_get_their_agents_claims_file(run_ralph, run_task, repo, pg_url):
    create(run_task, pg_url, "t1", "t2", "t3")
    action = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); echo "$tid" > "out-$tid.txt"; '
              'git add -A && git commit -qm "$tid" && '
              '"$RALPH_TASK_SCRIPT" done "$tid" --result "{\\"commit\\":1}" >/dev/null && '
              'echo "$RALPH_AGENT_ID $RALPH_CLAIMS_FILE" >> "$CLAIMS_LOG"')
    log = repo.parent / "claims.log"
    proc = run_ralph("build", "--parallel", "2", "--tasks", pg_url,
                     env={"STUB_ACTION": action, "CLAIMS_LOG": str(log)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {v[0] for v in statuses(pg_url).values()} == {"done"}
    seen = [line.split() for line in log.read_text().splitlines()]
    assert len(seen) == 3
    for agent, path in seen:
        assert Path(path).parent == run_dir(repo) and Path(path).name == f"claims-{agent}.txt"
        assert Path(path).exists()
    assert len({agent for agent, _ in seen}) == len({path for _, path in seen})


def test_in_assignment_mode_ralphs_own_claim_goes_to_the_agents_claims_file(
        run_ralph, run_task, repo, pg_url, bin_dir):
    (bin_dir / "claude").unlink()
    install_stub(bin_dir, "claude", "claude-assigned")
    create(run_task, pg_url, "t1", "t2")
    proc = run_ralph("build", "--assign", "--tasks", pg_url)
    assert proc.returncode == 0, proc.stderr
    assert {k: v[0] for k, v in statuses(pg_url).items()} == {"t1": "done", "t2": "done"}
    (claims,) = run_dir(repo).glob("claims-*.txt")
    assert claims.read_text() == "1 t1\n1 t2\n"          # ralph claimed, the agent's done was fenced


# --- the heartbeat ------------------------------------------------------------------------------

def test_the_heartbeat_renews_a_long_sessions_lease(repo, base_env, run_task, run_ralph, pg_url,
                                                    tmp_path):
    """`lease: 3`: a beat every second renews the claim to 3 s from then; without it the
    agent's own claim (600 s) would never move. `ralph status` meanwhile shows the fleet."""
    create(run_task, pg_url, "t1")
    (repo / "ralph.yml").write_text("lease: 3s\n")
    files = {name: tmp_path / name for name in ("CLAIMED", "RELEASE", "DONE_RC", "DONE_ERR")}
    env = {**base_env, "STUB_ACTION": HOLD_THEN_DONE,
           "RALPH_HOSTNAME": "runner-1", **{k: str(v) for k, v in files.items()}}
    store = PgStore(pg_url)

    def lease() -> str:
        return query(store, "SELECT lease_expires_at FROM tasks WHERE slug = 't1'")[0][0]

    run = Running(["build", "-n", "1", "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for(lambda: files["CLAIMED"].exists() and files["CLAIMED"].read_text().strip(), 30)
        claimed = lease()
        first = wait_for(lambda: (value := lease()) < claimed and value, 30)   # 600 s -> 3 s
        wait_for(lambda: lease() > first, 30)                              # and again, later
        status = run_ralph("status", env={"RALPH_TASKS_DB": pg_url})
        files["RELEASE"].touch()
        assert run.wait(60) == 0, run.stderr
    finally:
        run.kill()
    assert files["DONE_RC"].read_text().strip() == "0"
    assert statuses(pg_url)["t1"][0] == "done"
    assert f"Fleet:      {pg_url}: 1 agent(s) on 1 host(s)" in status.stdout
    assert "  runner-1\n" in status.stdout and "      t1: Task t1 (lease until " in status.stdout
    assert "heartbeat" in status.stdout.split("runner-1", 1)[1]
    beats = query(store, "SELECT last_heartbeat FROM agents")
    assert beats and beats[0][0] is not None



def _heartbeats(run: Running) -> set[int]:
    """The beats `run` has going: other tests' runs beat on their own servers, beside this one."""
    import psutil
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if ("_heartbeat" in (proc.info["cmdline"] or [])
                    and any(p.pid == run.proc.pid for p in proc.parents())):
                found.add(proc.pid)
        except psutil.NoSuchProcess:
            pass                                       # ended while being looked at
    return found


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_beats_that_failed_while_the_store_was_down_are_reported_at_the_sessions_end(
        repo, base_env, run_task, pg_url, pg_server, tmp_path, loop):
    """The server stops mid-session: the beats started then fail (their retry budget is one
    interval). The session's end says so on stderr and in a `heartbeat` log event, in both
    loops; the task is still done once the server is back."""
    create(run_task, pg_url, "t1")
    (repo / "ralph.yml").write_text("lease: 3s\n")
    files = {name: tmp_path / name for name in ("CLAIMED", "RELEASE", "DONE_RC", "DONE_ERR")}
    # a --parallel session's task is claimed for it already: its id is the frozen ids file's
    action = HOLD_THEN_DONE.replace('out=$("$RALPH_TASK_SCRIPT" claim) || exit 0', (
        'out=$(if [ -n "$RALPH_FROZEN_IDS_FILE" ]; then sed "s/^/id: /" "$RALPH_FROZEN_IDS_FILE"; '
        'else "$RALPH_TASK_SCRIPT" claim; fi) || exit 0'))
    env = {**base_env, "STUB_ACTION": action, **{k: str(v) for k, v in files.items()}}
    store = PgStore(pg_url)
    run = Running(["build", "-n", "1", *loop, "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for(lambda: files["CLAIMED"].exists() and files["CLAIMED"].read_text().strip(), 30)
        claimed = query(store, "SELECT lease_expires_at FROM tasks WHERE slug = 't1'")[0][0]
        wait_for(lambda: query(store, "SELECT lease_expires_at FROM tasks")[0][0] != claimed,
                 30)                                       # a beat renewed the claim
        pg_server.stop()
        # Only a beat forked after the stop has returned surely failed: one forked while the
        # server was shutting down may have renewed the claim before it went.
        before = _heartbeats(run)
        later: set[int] = set()

        def one_ended_while_down() -> bool:        # started with the server down: it failed
            running = _heartbeats(run)
            later.update(running - before)
            return bool(later - running)
        wait_for(one_ended_while_down, 30)
        pg_server.start()
        files["RELEASE"].touch()
        assert run.wait(120) == 0, run.stderr
    finally:
        run.kill()
    assert files["DONE_RC"].read_text().strip() == "0"
    assert statuses(pg_url)["t1"][0] == "done"
    line = next(x for x in run.stderr.splitlines() if "heartbeat: " in x)
    assert " beats failed (last: " in line
    events = [e for e in read_jsonl(run_dir(repo) / "events.jsonl") if e.get("kind") == "heartbeat"]
    assert len(events) == 1 and events[0]["message"] in line


def test_a_crashed_run_is_resumed_only_on_the_task_source_it_worked_on(
        repo, base_env, run_task, run_ralph, pg_url, tmp_path):
    """`ralph build` after a kill -9, without --tasks again: the run would fail its dead
    session's task in the embedded SQLite backlog and find nothing to do; it is refused
    instead, and the same command with --tasks resumes it and settles that task."""
    create(run_task, pg_url, "t1")
    files = {name: tmp_path / name for name in ("CLAIMED", "RELEASE", "DONE_RC", "DONE_ERR")}
    env = {**base_env, "STUB_ACTION": HOLD_THEN_DONE, **{k: str(v) for k, v in files.items()}}
    run = Running(["build", "-n", "3", "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for(lambda: files["CLAIMED"].exists() and files["CLAIMED"].read_text().strip(), 30)
        os.kill(run.proc.pid, signal.SIGKILL)
        run.proc.wait(10)
    finally:
        run.kill()
        files["RELEASE"].touch()
    run_id = run_dir(repo).name
    before = sorted(p.relative_to(repo) for p in (repo / ".ralph").rglob("*"))
    plain = run_ralph("build", env={"STUB_ACTION": "true"})
    assert (plain.returncode, plain.stdout) == (1, "")
    assert plain.stderr == (f"Error: run {run_id} works on --tasks {pg_url}: give it again to "
                            "resume the run (given now: sqlite)\n")
    assert sorted(p.relative_to(repo) for p in (repo / ".ralph").rglob("*")) == before
    again = run_ralph("build", "--tasks", pg_url, env={"STUB_ACTION": DONE_FIRST})
    assert again.returncode == 0, again.stderr
    assert f"Resuming run {run_id}" in again.stderr
    assert statuses(pg_url)["t1"][0] == "done"

# --- ralph status -------------------------------------------------------------------------------

def test_status_shows_each_hosts_agents_and_their_tasks(run_ralph, run_task, repo, pg_url):
    create(run_task, pg_url, "t1", "t2")
    agents = {}
    for host in ("host-a", "host-b"):
        env = {"RALPH_TASKS_DB": pg_url, "RALPH_HOSTNAME": host}
        agents[host] = ok(run_task("agent", "register", env=env)).strip()
    ok(run_task("claim", "t2", "--agent", agents["host-b"], env={"RALPH_TASKS_DB": pg_url}))
    proc = run_ralph("status", env={"RALPH_TASKS_DB": pg_url})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index(f"Fleet:      {pg_url}: 2 agent(s) on 2 host(s)")
    assert lines[start + 1] == "  host-a"
    assert lines[start + 2].startswith(f"    {agents['host-a']} (pid ")
    assert "heartbeat " in lines[start + 2] and lines[start + 2].endswith(" ago)")
    assert lines[start + 3] == "  host-b"
    assert lines[start + 5].startswith("      t2: Task t2 (lease until ")
    data = json.loads(run_ralph("status", "--json", env={"RALPH_TASKS_DB": pg_url}).stdout)
    fleet = data["fleet"]
    assert (fleet["store"], fleet["error"]) == (pg_url, None)
    assert {a["host"]: [t["id"] for t in a["tasks"]] for a in fleet["agents"]} == {
        "host-a": [], "host-b": ["t2"]}
    assert all(isinstance(a["heartbeatAgeS"], float) for a in fleet["agents"])


def test_status_names_an_unreachable_store_at_once(run_ralph, repo):
    url = "postgresql://ralph_pw:hunter2@127.0.0.1:9/nowhere?connect_timeout=1"
    proc = run_ralph("status", env={"RALPH_TASKS_DB": url}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "Fleet:      postgresql://ralph_pw:***@127.0.0.1:9/nowhere" in proc.stdout
    assert "task store unreachable" in proc.stdout and "hunter2" not in proc.stdout


# --- a lost store -------------------------------------------------------------------------------

def test_a_store_stopped_between_sessions_is_waited_out(repo, base_env, run_task, pg_url,
                                                        pg_server, tmp_path):
    """The server stops while the first session ends: ralph's calls find it gone (the task
    CLI gives up after RALPH_STORE_RETRY=1 s), ralph waits and says so, the server comes back,
    the run goes on and ends with both tasks done, each once."""
    create(run_task, pg_url, "t1", "t2")
    go = tmp_path / "go"
    first = ('if [ ! -e "$GO" ]; then ' + DONE_FIRST.strip().replace("\n", "; ")
             + '; touch "$GO.ready"; while [ ! -e "$GO" ]; do sleep 0.05; done; exit 0; fi; '
             + DONE_FIRST.strip().replace("\n", "; "))
    env = {**base_env, "STUB_ACTION": first, "GO": str(go), "RALPH_STORE_RETRY": "1"}
    run = Running(["build", "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for(lambda: Path(f"{go}.ready").exists(), 30)
        pg_server.stop()
        go.touch()
        wait_for(lambda: "Task store unreachable (" in run.stderr, 60)
        pg_server.start()
        assert run.wait(120) == 0, run.stderr
    finally:
        run.kill()                                # a stopped server: pg_database restarts it
    assert "All tasks complete. Exiting loop." in run.stdout
    assert "Traceback" not in run.stderr
    assert {k: v[0] for k, v in statuses(pg_url).items()} == {"t1": "done", "t2": "done"}
    waits = [e for e in read_jsonl(run_dir(repo) / "events.jsonl")
             if e.get("kind") == "store_wait"]
    assert waits and waits[0]["attempt"] == 1
    state = json.loads((run_dir(repo) / "state.json").read_text())
    assert sorted(c["task"] for c in state["completed"]) == ["t1", "t2"]


# --- the password -------------------------------------------------------------------------------

def test_the_password_never_shows_in_output_or_any_file_ralph_writes(run_ralph, run_task, repo,
                                                                     pg_password_url):
    url = pg_password_url
    assert ":secret@" in url
    create(run_task, url, "t1")
    outputs = [run_ralph("build", "--dry-run", "--tasks", url),
               run_ralph("build", "--tasks", url, env={"STUB_ACTION": DONE_FIRST}),
               run_ralph("status", env={"RALPH_TASKS_DB": url}),
               run_ralph("status", "--json", env={"RALPH_TASKS_DB": url}),
               run_ralph("report", env={"RALPH_TASKS_DB": url}),
               run_ralph("build", "--tasks", url.replace("postgresql", "pg"))]  # unknown scheme
    assert [p.returncode for p in outputs] == [0, 0, 0, 0, 0, 1], [p.stderr for p in outputs]
    shown = url.replace(":secret@", ":***@")
    assert f"Tasks:  {shown}" in outputs[1].stdout
    assert "Fleet:      " + shown in outputs[2].stdout
    for proc in outputs:
        assert "secret" not in proc.stdout + proc.stderr
    written = every_file(repo / ".ralph")
    assert any(p.name == "events.jsonl" for p in written) and len(written) > 5
    for path in written:
        assert b"secret" not in path.read_bytes(), path


def test_ctrl_c_during_a_store_wait_ends_the_run_without_another_try(repo, base_env):
    """fleet.md: Ctrl+C stops a wait at once. The pause between two tries to reach a server
    held the signal until the whole retry budget was spent, and the end-of-run report then
    waited up to 10 s more for the store. A loopback listener that closes every connection
    counts the tries: after the signal, at most one more look, never a retry. A store never
    reached is waited for at start (store_connect_timeout, here longer than the test)."""
    listener = socket.create_server(("127.0.0.1", 0))
    tries: list[float] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            tries.append(time.monotonic())
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    url = f"postgresql://u:pw@127.0.0.1:{listener.getsockname()[1]}/db"
    run = Running(["build", "-n", "1", "--tasks", url, "--store-connect-timeout", "120"],
                  cwd=repo, env={**base_env, "RALPH_STORE_RETRY": "120"})
    try:
        wait_for(lambda: "waiting up to 2m 00s for " in run.stderr and len(tries) >= 3,
                 timeout=60)
        before = len(tries)
        os.kill(run.proc.pid, signal.SIGINT)
        assert run.wait(timeout=60) == 130, run.stderr
    finally:
        run.kill()
        listener.close()
    assert len(tries) - before <= 1, run.stderr
