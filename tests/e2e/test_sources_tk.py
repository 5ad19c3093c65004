"""Black-box: `ralph build --tasks tk` over the real tk (wedow/ticket, vendored) with a stub
agent that claims and finishes through $RALPH_TASK_SCRIPT; tk itself reports the outcome."""
from __future__ import annotations

import subprocess
import sys

import pytest

import treehash
from conftest import TASK, install_stub, read_jsonl, run_process
from sourcehelp import (TK, agent_env, as_sessions,  # noqa: F401 (agent_env: a fixture)
                        assert_another_agents_calls_refused, claims, commit_all, need, tool)


@pytest.fixture
def tk_repo(git_repo, base_env, bin_dir):
    need(TK)
    (bin_dir / "tk").symlink_to(TK)
    (git_repo / ".gitignore").write_text(".ralph/\n")
    env = {**base_env, "TICKETS_DIR": ""}

    def tk(*args: str) -> str:
        proc = tool(["tk", *args], git_repo, base_env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()
    tk.env = env
    return tk


def backlog(tk, repo, env) -> dict[str, str]:
    """a <- b <- c (c needs b, b needs a), and d alone, committed as users keep them."""
    ids = {name: tk("create", f"Task {name}", "--tags", f"component:{name}") for name in "abcd"}
    tk("dep", ids["b"], ids["a"])
    tk("dep", ids["c"], ids["b"])
    commit_all(repo, env, "tickets")
    return ids


def status(tk, tid: str) -> str:
    return next(line.split(": ", 1)[1] for line in tk("show", tid).splitlines()
                if line.startswith("status: "))


def test_a_build_loop_closes_every_ticket_in_dependency_order(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    ids = backlog(tk_repo, git_repo, base_env)
    proc = run_ralph("build", "--tasks", "tk", env=agent_env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    assert {tid: status(tk_repo, tid) for tid in ids.values()} == dict.fromkeys(ids.values(),
                                                                                 "closed")
    order = claims(tmp_path)
    assert sorted(order) == sorted(ids.values())
    assert order.index(ids["a"]) < order.index(ids["b"]) < order.index(ids["c"])
    assert tk_repo("ready") == ""
    assert "ralph: done: " in tk_repo("show", ids["a"])          # the commit, as a note


def test_a_failing_session_leaves_its_ticket_open_with_the_reason_in_a_note(
        run_ralph, tk_repo, git_repo, base_env, agent_env):
    (only,) = [tk_repo("create", "Lonely task")]
    commit_all(git_repo, base_env, "ticket")
    proc = run_ralph("build", "--tasks", "tk", "-n", "1", env={**agent_env, "STUB_FAIL": "1"},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"failed {only}" in proc.stdout
    assert status(tk_repo, only) == "open"
    assert "ralph: failed: session exited without completing task" in tk_repo("show", only)


def test_tasks_tk_from_ralph_yml_and_a_missing_tk_is_one_line_before_any_session(
        run_ralph, git_repo, base_env, agent_env, tmp_path):
    (git_repo / "ralph.yml").write_text("tasks: tk\n")
    env = {**agent_env, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    proc = run_ralph("build", env=env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "Error: tk not found: install wedow/ticket (github.com/wedow/ticket) on PATH, "
        "or set TK to its path"]
    assert claims(tmp_path) == [] and not (git_repo / ".ralph").exists()


def test_ralph_task_answers_from_tk_when_ralph_yml_names_it(run_ralph, tk_repo, git_repo):
    ticket = tk_repo("create", "From the tracker")
    (git_repo / "ralph.yml").write_text("tasks: tk\n")
    proc = run_ralph("task", "show", ticket, env=tk_repo.env)
    assert proc.returncode == 0, proc.stderr
    assert "From the tracker" in proc.stdout
    assert not (git_repo / ".ralph" / "tasks.db").exists()      # not the embedded store


def test_a_tickets_escape_sequences_are_shown_escaped_by_ralph_task(run_ralph, tk_repo, git_repo):
    """A ticket is text from anyone who can push: `ralph task list` and `show` over tk show its
    control characters as the embedded store's commands do (ralphpy.inert), never raw."""
    ticket = tk_repo("create", "Red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07")
    (git_repo / "ralph.yml").write_text("tasks: tk\n")
    shown = "Red \\x1b[31mALERT\\x1b[0m \\x1b]0;pwned\\x07"
    for args in (("list",), ("list", "--markdown"), ("show", ticket)):
        proc = run_ralph("task", *args, env=tk_repo.env)
        assert proc.returncode == 0, proc.stderr
        assert shown in proc.stdout and not any(c in proc.stdout for c in "\x1b\x07"), args


def test_a_hold_on_a_ticket_is_not_released_from_an_agent_session(run_ralph, tk_repo, git_repo):
    ticket = tk_repo("create", "Parked")
    env = {**tk_repo.env, "RALPH_TASKS": "tk"}
    assert run_ralph("task", "_hold", ticket, "--reason", "x", env=env).returncode == 0
    proc = run_ralph("task", "_unhold", ticket, env={**env, "RALPH_SESSION_TAG": "1-a"})
    assert (proc.returncode, proc.stderr) == (1, "Error: _unhold is refused inside an agent "
                                              "session: a held task waits for a person (run "
                                              "`ralph task _unhold <id>` from your own shell)\n")
    assert f"\nHeld:        x; release it with: ralph task _unhold {ticket}\n" in run_ralph(
        "task", "show", ticket, env=env).stdout
    assert run_ralph("task", "_unhold", ticket, env=env).stdout == f"unheld {ticket}\n"


def test_an_unparseable_ticket_is_named_skipped_and_left_byte_for_byte(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    good = tk_repo("create", "Good ticket")
    bad = git_repo / ".tickets" / "broken.md"
    bad.write_bytes(b"no front matter here\n\xff\n")
    commit_all(git_repo, base_env, "tickets")
    proc = run_ralph("build", "--tasks", "tk", env=agent_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Warning: tk: .tickets/broken.md:" in proc.stderr
    assert claims(tmp_path) == [good] and status(tk_repo, good) == "closed"
    assert bad.read_bytes() == b"no front matter here\n\xff\n"


def test_dry_run_shows_the_tickets_and_leaves_the_tree_byte_identical(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    ids = backlog(tk_repo, git_repo, base_env)
    before = treehash.snapshot(git_repo)
    proc = run_ralph("build", "--tasks", "tk", "--dry-run", "--prompt", "/tf {id} --auto",
                     env=agent_env)
    assert proc.returncode == 0, proc.stderr
    assert f"id: {ids['a']}" in proc.stdout and f"id: {ids['c']}" not in proc.stdout
    assert "ralph would claim the first claimable task and send /tf {id} --auto" in proc.stdout
    assert treehash.diff(before, treehash.snapshot(git_repo)) == []
    assert claims(tmp_path) == []


def test_eight_concurrent_claims_take_each_ticket_exactly_once(tk_repo, git_repo, base_env):
    ids = [tk_repo("create", f"T{n}") for n in range(6)]
    env = {**base_env, "RALPH_TASKS": "tk"}
    procs = [subprocess.Popen([sys.executable, str(TASK), "claim", "--agent", f"a{n}"],
                              cwd=git_repo, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(8)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    won = [line[4:] for out, _ in outs for line in out.splitlines() if line.startswith("id: ")]
    assert sorted(won) == sorted(ids)                               # each once, none twice
    assert sorted(p.returncode for p in procs) == [0] * 6 + [2, 2]
    assert all(status(tk_repo, tid) == "in_progress" for tid in ids)


def test_a_sessions_done_or_fail_of_a_ticket_another_agent_holds_is_refused(
        tk_repo, git_repo, base_env, tmp_path):
    """As on the embedded store (docs/parallel.md): a call presenting a claims file, as each
    --parallel session's does, may not finish or fail a ticket another agent holds."""
    ticket = tk_repo("create", "First")
    task = as_sessions({**base_env, "RALPH_TASKS": "tk"}, git_repo, tmp_path)
    assert task("claim", ticket, agent="one").returncode == 0
    assert_another_agents_calls_refused(task, ticket)
    assert status(tk_repo, ticket) == "in_progress"
    assert task("done", ticket, agent="one").stdout == f"done {ticket}\n"
    assert status(tk_repo, ticket) == "closed"


def test_a_frozen_scope_names_a_ticket_added_mid_run(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    first = tk_repo("create", "First")
    commit_all(git_repo, base_env, "ticket")
    add = f'[ -f {tmp_path}/added ] || {{ touch {tmp_path}/added; tk create "Late" >/dev/null; }}\n'
    proc = run_ralph("build", "--tasks", "tk", env={**agent_env, "FREEZE_SCOPE": "1",
                                                    "STUB_ACTION": add + agent_env["STUB_ACTION"]},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Scope frozen: 1 tasks" in proc.stderr
    assert "Scope changed:" in proc.stderr and "added" in proc.stderr
    assert "All frozen tasks complete. Exiting loop." in proc.stdout
    assert claims(tmp_path) == [first]


def test_three_parallel_sessions_over_one_tickets_dir_take_each_ticket_once(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    ids = [tk_repo("create", f"P{n}", "--tags", f"component:c{n}") for n in range(6)]
    commit_all(git_repo, base_env, "tickets")
    action = (r'tid=$(cat "$RALPH_FROZEN_IDS_FILE"); echo "$tid" >> "$STUB_CLAIMS"; '
              r'echo "$tid" > "w-$tid.txt"; git add -A >/dev/null; git commit -qm "on $tid"; '
              r'"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null')
    proc = run_ralph("build", "--tasks", "tk", "--parallel", "3",
                     env={**agent_env, "STUB_ACTION": action},
                     timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert sorted(claims(tmp_path)) == sorted(ids)
    assert all(status(tk_repo, tid) == "closed" for tid in ids)
    assert all((git_repo / f"w-{tid}.txt").exists() for tid in ids)    # merged back


def test_ralph_plan_says_tk_has_no_plan_sync(run_ralph, tk_repo, git_repo, base_env, agent_env):
    tk_repo("create", "Existing")
    proc = run_ralph("plan", "--tasks", "tk", env={"STUB_ACTION": "true"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Note: the tk task source has no plan-sync" in proc.stderr
    env = {**base_env, "RALPH_TASKS": "tk"}
    sync = run_process([sys.executable, str(TASK), "plan-sync"], cwd=git_repo, env=env,
                       input='{"id": "x", "t": "X"}\n')
    assert (sync.returncode, sync.stderr) == (1, "Error: 'plan-sync' is not supported by the "
                                                 "tk task source; use tk create / tk dep / "
                                                 "tk close\n")


def test_a_prompt_template_hands_each_claimed_ticket_to_pi_as_pi_ticketflow_does(
        run_ralph, tk_repo, git_repo, base_env, bin_dir, tmp_path):
    install_stub(bin_dir, "pi", "agent_cli")
    ids = [tk_repo("create", f"Ticket {n}") for n in range(2)]
    commit_all(git_repo, base_env, "tickets")
    log = tmp_path / "pi.jsonl"
    # /tf closes the ticket with tk itself, not through $RALPH_TASK_SCRIPT; pi reads its
    # prompt on stdin
    action = (f"tid=$(tail -n 1 {log} | python3 -c 'import json,sys; "
              f"print(json.load(sys.stdin)[\"stdin\"].split()[1])'); tk close \"$tid\"")
    proc = run_ralph("build", "--tasks", "tk", "--agent", "pi", "--prompt", "/tf {id} --auto",
                     env={"STUB_LOG": str(log), "STUB_ACTION": action}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    prompts = [rec["stdin"] for rec in read_jsonl(log)]
    assert prompts == [f"/tf {tid} --auto" for tid in sorted(ids)]
    assert all(status(tk_repo, tid) == "closed" for tid in ids)


def test_assignment_mode_claims_each_ticket_and_a_give_up_leaves_it_open_with_the_reason(
        run_ralph, tk_repo, git_repo, base_env, bin_dir, tmp_path):
    install_stub(bin_dir, "claude", "claude-assigned")
    first, second = tk_repo("create", "First", "-p", "1"), tk_repo("create", "Second")
    commit_all(git_repo, base_env, "tickets")
    proc = run_ralph("build", "--tasks", "tk", "--assign", "-n", "1",
                     env={"STUB_ASSIGNED_MODE": "giveup"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert status(tk_repo, first) == "open"
    assert "ralph: failed: stub gave up" in tk_repo("show", first)
    proc = run_ralph("build", "--tasks", "tk", "--assign", env={"STUB_ASSIGNED_MODE": "finish"},
                     timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert status(tk_repo, first) == status(tk_repo, second) == "closed"


def test_a_ticket_whose_id_is_not_its_file_name_is_named_and_skipped_not_claimed(
        run_ralph, tk_repo, git_repo, base_env, agent_env, tmp_path):
    """tk finds a ticket by its file name (`tk start X` opens .tickets/X.md, else a file whose
    name contains X), so a ticket renamed by hand cannot be started: it was claimed first (its
    priority) and every claim failed with it. It is skipped like any ticket tk cannot use."""
    good = tk_repo("create", "Good ticket", "-p", "3")
    moved = tk_repo("create", "Renamed ticket", "-p", "0")
    renamed = git_repo / ".tickets" / "renamed-by-hand.md"
    (git_repo / ".tickets" / f"{moved}.md").rename(renamed)
    before = renamed.read_bytes()
    commit_all(git_repo, base_env, "tickets")
    proc = run_ralph("build", "--tasks", "tk", env=agent_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (f"Warning: tk: .tickets/renamed-by-hand.md: id '{moved}' is not its file name "
            "(tk finds a ticket by its file name); skipped") in proc.stderr
    assert claims(tmp_path) == [good] and status(tk_repo, good) == "closed"
    assert renamed.read_bytes() == before


def test_a_question_on_a_ticket_is_its_hold_and_ralph_answer_releases_it(
        run_ralph, tk_repo, git_repo):
    ticket = tk_repo("create", "Pick a store")
    env = {**tk_repo.env, "RALPH_TASKS": "tk"}
    proc = run_ralph("task", "ask", ticket, "Which database?", "--default", "SQLite", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / ".ralph/sources/tk/holds" / ticket).read_text() == \
        "question: Which database?\n"                   # the hold the source keeps
    assert (f'\nHeld:        question: Which database?; answer it with: ralph answer {ticket} '
            '"<answer>"\n') in run_ralph("task", "show", ticket, env=env).stdout
    assert run_ralph("task", "ask", "nope", "Which?", env=env).returncode == 2
    answered = run_ralph("answer", ticket, "PostgreSQL", env=env)
    assert answered.returncode == 0, answered.stderr
    assert not (git_repo / ".ralph/sources/tk/holds" / ticket).exists()
    assert "Held" not in run_ralph("task", "show", ticket, env=env).stdout
