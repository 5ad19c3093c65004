"""Black-box: scope freeze through ralph.py, with stub agents over the real task CLI
in temp git repos (and the stub task CLI where the exact call list matters). A session's
STUB_ACTION plays the outside world: it adds, removes or edits tasks and specs mid-run."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import install_stub, read_jsonl, wait_for
from loophelp import killed_when, tasks  # noqa: F401  (fixture)

ONCE = '[ -e "$MARK" ] || {{ {action} ; touch "$MARK"; }}'   # the change happens in session 1 only
TASK = '"$RALPH_TASK_SCRIPT"'
COMMIT = '{"commit":"abc1234"}'


# ---------------------------------------------------------------------------- helpers

@pytest.fixture
def world(git_repo: Path, run_task, bin_dir: Path, tmp_path: Path):
    """A backlog of two open tasks (t-1 with specs/feature.md, t-2 without a spec), a stub
    agent on PATH that logs its calls and runs $STUB_ACTION."""
    assert run_task("create", "t-1", "First", "-r", "specs/feature.md", "-p", "1").returncode == 0
    assert run_task("create", "t-2", "Second", "-s", '["step one"]', "-p", "2").returncode == 0
    install_stub(bin_dir)
    return World(git_repo, tmp_path, run_task)


class World:
    def __init__(self, repo: Path, tmp: Path, run_task):
        self.repo, self.tmp, self.run_task = repo, tmp, run_task
        self.agent_log = tmp / "agent.jsonl"
        self.env = {"STUB_LOG": str(self.agent_log), "MARK": str(tmp / "changed.mark")}

    def act(self, action: str, once: bool = True) -> dict[str, str]:
        """The agent environment with STUB_ACTION set (run in session 1 only when once)."""
        return {**self.env, "STUB_ACTION": ONCE.format(action=action) if once else action}

    def prompts(self) -> list[str]:
        return [call["argv"][1] for call in read_jsonl(self.agent_log)]

    def agent_envs(self) -> list[dict]:
        return [call["env"] for call in read_jsonl(self.agent_log)]

    def run_dirs(self) -> list[Path]:
        return sorted((self.repo / ".ralph" / "runs").glob("*/"))

    def run_dir(self) -> Path:
        dirs = self.run_dirs()
        assert len(dirs) == 1, dirs
        return dirs[0]

    def events(self, name: str) -> list[dict]:
        return [e for e in read_jsonl(self.run_dir() / "events.jsonl") if e["event"] == name]

    def progress(self) -> str:
        return (self.repo / ".ralph" / "progress.md").read_text()

    def exported(self) -> dict[str, dict]:
        out = self.run_task("_export-json")
        return {t["id"]: t for t in map(json.loads, out.stdout.splitlines())}


def scope_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Scope changed: ")]


# ---------------------------------------------------------------------------- detection

CHANGES = {
    "add": (f"{TASK} create t-9 Added -p 0",
            "added task t-9: not in the frozen scope, it will not run"),
    "remove": (f"{TASK} delete t-2",
               "removed task t-2: dropped from the target"),
    "spec-edit": ("echo '- [ ] and more' >> specs/feature.md",
                  "modified spec specs/feature.md of task t-1: content changed"),
    "definition-edit": (f"{TASK} update t-2 --title Renamed",
                        "modified definition of task t-2: title changed"),
}


@pytest.mark.parametrize("kind", list(CHANGES), ids=list(CHANGES))
def test_each_kind_of_change_mid_run_is_reported_once_on_stderr_in_events_and_progress(
        run_ralph, world, kind):
    action, line = CHANGES[kind]
    proc = run_ralph("build", "-n", "3", "--freeze-scope", env=world.act(action))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    # Checked before sessions 2 and 3: the same change is named once, not before every session.
    assert scope_lines(proc.stderr) == [f"Scope changed: {line}"]
    changed = world.events("scope_changed")
    assert [e["changes"] for e in changed] == [[line]]
    assert "- Scope changed: " in world.progress() and line in world.progress()
    assert proc.stdout.endswith("Reached max iterations: 3\nderegistered "
                                + world.agent_envs()[0]["RALPH_AGENT_ID"] + "\n")


@pytest.mark.parametrize("how", ["flag", "env", "ralph.yml"])
def test_freezing_is_turned_on_by_the_flag_the_environment_or_ralph_yml(run_ralph, world, how):
    args, env = ["build", "-n", "2"], world.act(CHANGES["add"][0])
    if how == "flag":
        args.append("--freeze-scope")
    elif how == "env":
        env["FREEZE_SCOPE"] = "1"
    else:
        (world.repo / "ralph.yml").write_text("freeze_scope: true\n")
    proc = run_ralph(*args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Scope frozen: 2 tasks (" in proc.stderr
    assert scope_lines(proc.stderr) == [f"Scope changed: {CHANGES['add'][1]}"]
    run_dir = world.run_dir()
    assert (run_dir / "scope_task_ids.txt").read_text() == "t-1\nt-2\n"
    assert [e["tasks"] for e in world.events("scope_frozen")] == [2]


def test_status_changes_are_progress_not_a_scope_change(run_ralph, world):
    # Each session claims the next task and completes it: open -> active -> done.
    action = f'id=$({TASK} claim | sed -n "s/^id: //p"); {TASK} done "$id" --result \'{COMMIT}\''
    proc = run_ralph("build", "--freeze-scope", env=world.act(action, once=False))
    assert proc.returncode == 0, proc.stderr
    assert scope_lines(proc.stderr) == []
    assert world.events("scope_changed") == []
    assert len(world.prompts()) == 2
    assert "All tasks complete. Exiting loop.\n" in proc.stdout
    assert {t["status"] for t in world.exported().values()} == {"done"}


def test_an_edit_that_is_undone_before_the_next_check_is_no_change(run_ralph, world):
    spec = world.repo / "specs" / "feature.md"
    original = spec.read_text()
    action = f"printf 'changed' > specs/feature.md; printf '%s' '{original}' > specs/feature.md"
    proc = run_ralph("build", "-n", "2", "--freeze-scope", env=world.act(action))
    assert proc.returncode == 0 and scope_lines(proc.stderr) == []


EDITS_ONE_PER_SESSION = (
    'n=$(cat "$MARK" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$MARK"; case $n in '
    # 1: same size, mtime put back: only ctime (and the watch) can tell
    "1) cp -p specs/feature.md \"$MARK.ref\"; printf X | dd of=specs/feature.md bs=1 count=1 "
    "conv=notrunc 2>/dev/null; touch -r \"$MARK.ref\" specs/feature.md;; "
    # 2: an editor's atomic save (a new inode renamed over the spec)
    "2) printf '# A, saved\\n' > specs/.a.swp; mv specs/.a.swp specs/a.md;; "
    "3) sed -i 's/B/b/' specs/b.md;; esac")


@pytest.mark.parametrize("watch", ["watch", "SCOPE_WATCH=0"])
def test_spec_edits_to_files_past_the_racy_window_are_each_caught(run_ralph, world, watch):
    # Specs written more than 2 s before the freeze are not re-hashed on every check: an edit
    # is seen through the spec watch (inotify), or with SCOPE_WATCH=0 through a stat of each.
    for name, tid in (("a", "t-3"), ("b", "t-4")):
        (world.repo / "specs" / f"{name}.md").write_text(f"# {name.upper()}\n")
        assert world.run_task("create", tid, name, "-r", f"specs/{name}.md").returncode == 0
    specs = list((world.repo / "specs").glob("*.md"))
    wait_for(lambda: all(time.time() - p.stat().st_ctime > 2.2 for p in specs))
    env = world.act(EDITS_ONE_PER_SESSION, once=False)
    if watch != "watch":
        env["SCOPE_WATCH"] = "0"
    proc = run_ralph("build", "-n", "4", "--freeze-scope", env=env)
    assert proc.returncode == 0, proc.stderr
    assert scope_lines(proc.stderr) == [
        "Scope changed: modified spec specs/feature.md of task t-1: content changed",
        "Scope changed: modified spec specs/a.md of task t-3: content changed",
        "Scope changed: modified spec specs/b.md of task t-4: content changed"]
    [watch_event] = world.events("scope_watch")
    assert (watch_event["on"], watch_event["spec_files"], watch_event["stat_each_check"]) == (
        (True, 3, 0) if watch == "watch" else (False, 3, 3))


# ---------------------------------------------------------------------------- new tasks never run

def test_a_task_added_mid_run_never_reaches_an_agent_and_cannot_be_claimed(run_ralph, world):
    peeks, claim_rc = world.tmp / "peeks.txt", world.tmp / "claim-rc.txt"
    action = (f'[ -e "$MARK" ] || {{ {TASK} create t-9 Urgent -p 0; touch "$MARK"; }}; '
              f'{TASK} peek -n 10 >> {peeks}; '
              f'{TASK} claim t-9 >/dev/null 2>&1; echo $? >> {claim_rc}; '
              f'id=$({TASK} claim | sed -n "s/^id: //p"); '
              f'{TASK} done "$id" --result \'{COMMIT}\'')
    proc = run_ralph("build", "--freeze-scope", env=world.act(action, once=False))
    assert proc.returncode == 0, proc.stderr
    # Two frozen tasks, two sessions, then the frozen target is met while t-9 is still open.
    assert proc.stdout.count("All frozen tasks complete. Exiting loop.\n") == 1
    assert "No tasks available" not in proc.stdout
    assert len(world.prompts()) == 2
    assert not any("t-9" in prompt for prompt in world.prompts())
    assert "t-9" not in peeks.read_text() and "id: t-1" in peeks.read_text()
    assert claim_rc.read_text().split() == ["2", "2"]      # task-cli: not eligible
    tasks = world.exported()
    assert (tasks["t-9"]["status"], tasks["t-9"]["assignee"]) == ("open", None)
    assert tasks["t-1"]["status"] == tasks["t-2"]["status"] == "done"
    frozen_file = world.agent_envs()[0]["RALPH_FROZEN_IDS_FILE"]
    assert os.path.isabs(frozen_file) and Path(frozen_file).read_text() == "t-1\nt-2\n"


def test_a_removed_task_is_dropped_from_the_target(run_ralph, world):
    assert world.run_task("create", "t-3", "Third", "-p", "3").returncode == 0
    action = (f'[ -e "$MARK" ] || {{ {TASK} delete t-2; touch "$MARK"; }}; '
              f'id=$({TASK} claim | sed -n "s/^id: //p"); '
              f'[ -z "$id" ] || {TASK} done "$id" --result \'{COMMIT}\'')
    proc = run_ralph("build", "-n", "5", "--freeze-scope", env=world.act(action, once=False))
    assert proc.returncode == 0, proc.stderr
    assert len(world.prompts()) == 2                      # t-1, then t-3; t-2 left the target
    assert "All tasks complete. Exiting loop.\n" in proc.stdout
    assert scope_lines(proc.stderr) == ["Scope changed: removed task t-2: dropped from the target"]


def test_a_spec_change_is_not_reported_again_when_a_task_of_it_is_removed(run_ralph, world):
    """The spec line names the frozen tasks of that spec; removing one of them later changes
    that line's text, not the change: only the removal is new."""
    assert world.run_task("create", "t-3", "Third", "-r", "specs/feature.md").returncode == 0
    action = (f'if [ ! -e "$MARK" ]; then echo "- [ ] more" >> specs/feature.md; '
              f'touch "$MARK"; elif [ ! -e "$MARK.2" ]; then {TASK} delete t-3; '
              f'touch "$MARK.2"; fi')
    proc = run_ralph("build", "-n", "3", "--freeze-scope", env=world.act(action, once=False))
    assert proc.returncode == 0, proc.stderr
    assert scope_lines(proc.stderr) == [
        "Scope changed: modified spec specs/feature.md of tasks t-1, t-3: content changed",
        "Scope changed: removed task t-3: dropped from the target"]
    assert [e["new"] for e in world.events("scope_changed")] == [
        ["modified spec specs/feature.md of tasks t-1, t-3: content changed"],
        ["removed task t-3: dropped from the target"]]


# ---------------------------------------------------------------------------- stop on change

@pytest.mark.parametrize("how", ["flag", "env", "ralph.yml"])
def test_stop_on_scope_change_stops_before_the_next_session_with_exit_4(run_ralph, world, how):
    args, env = ["build"], world.act(CHANGES["add"][0] + "; " + CHANGES["definition-edit"][0])
    if how == "flag":
        args.append("--stop-on-scope-change")
    elif how == "env":
        env["STOP_ON_SCOPE_CHANGE"] = "1"
    else:
        (world.repo / "ralph.yml").write_text("stop_on_scope_change: true\n")
    proc = run_ralph(*args, env=env)
    assert proc.returncode == 4, proc.stderr
    assert len(world.prompts()) == 1
    assert proc.stderr.splitlines()[-1] == (
        "Error: scope changed since the run started (2 changes): added task t-9: not in the "
        "frozen scope, it will not run; modified definition of task t-2: title changed")
    agent_id = world.agent_envs()[0]["RALPH_AGENT_ID"]
    assert proc.stdout.endswith(f"deregistered {agent_id}\n")        # exit cleanup still runs
    assert "LOOP 1" in proc.stdout and "LOOP 2" not in proc.stdout
    assert not (world.repo / ".ralph" / "run.lock").exists()
    assert len(world.events("scope_changed")) == 1


def test_plan_mode_checks_and_logs_but_has_no_target(run_ralph, world):
    proc = run_ralph("plan", "-n", "2", "--freeze-scope", env=world.act(CHANGES["add"][0]))
    assert proc.returncode == 0, proc.stderr
    assert len(world.prompts()) == 2
    assert scope_lines(proc.stderr) == [f"Scope changed: {CHANGES['add'][1]}"]
    assert proc.stdout.count("Reached max iterations: 2\n") == 1
    assert "frozen tasks complete" not in proc.stdout


def test_plan_mode_stops_on_a_change_with_exit_4(run_ralph, world):
    proc = run_ralph("plan", "-n", "3", "--stop-on-scope-change",
                     env=world.act(CHANGES["spec-edit"][0]))
    assert proc.returncode == 4
    assert len(world.prompts()) == 1
    assert proc.stderr.splitlines()[-1] == (
        "Error: scope changed since the run started (1 change): "
        "modified spec specs/feature.md of task t-1: content changed")


# ---------------------------------------------------------------------------- spec file trouble

def _huge(repo: Path) -> str:
    return "python3 -c \"open('specs/feature.md','wb').write(b'x' * (24 << 20))\""


SPEC_TROUBLE = {
    "disappears": ("rm specs/feature.md", "file disappeared"),
    "unreadable": ("rm specs/feature.md; ln -s feature.md specs/feature.md",   # ELOOP, even as root
                   "file is no longer readable"),
    "directory": ("rm specs/feature.md; mkdir specs/feature.md", "path is now a directory"),
    "huge": (None, "content changed"),
    "binary": ("printf '\\000\\377\\376binary\\000' > specs/feature.md", "content changed"),
}


@pytest.mark.parametrize("kind", list(SPEC_TROUBLE), ids=list(SPEC_TROUBLE))
def test_a_spec_file_in_trouble_is_reported_never_a_traceback(run_ralph, world, kind):
    action, detail = SPEC_TROUBLE[kind]
    proc = run_ralph("build", "-n", "2", "--freeze-scope",
                     env=world.act(action or _huge(world.repo)))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert scope_lines(proc.stderr) == [
        f"Scope changed: modified spec specs/feature.md of task t-1: {detail}"]


def test_a_spec_missing_at_freeze_is_a_warning_and_not_a_change(run_ralph, world):
    (world.repo / "specs" / "feature.md").unlink()
    (world.repo / "specs" / "other.md").write_text("other\n")      # preflight needs specs/
    proc = run_ralph("build", "-n", "2", "--freeze-scope", env=world.env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("Warning: scope: spec file specs/feature.md of task(s) t-1 is missing, as it was "
            "when the scope was frozen") in proc.stderr
    assert scope_lines(proc.stderr) == []


# ---------------------------------------------------------------------------- resume

def test_a_resumed_run_compares_against_its_original_snapshot(run_ralph, world, base_env):
    ready, release = world.tmp / "ready", world.tmp / "release"
    # Session 1 adds t-8 (reported before session 2); session 2 hangs until ralph.py is killed.
    action = (f'if [ ! -e "$MARK" ]; then {TASK} create t-8 Early; touch "$MARK"; '
              f'else touch {ready}; while [ ! -e {release} ]; do sleep 0.05; done; fi')
    env = {**base_env, **world.act(action, once=False)}
    first, _ = killed_when(["build", "-n", "3", "--freeze-scope"], cwd=world.repo, env=env,
                           ready=ready.exists, release=release)      # ralph.py dies mid-session
    assert scope_lines(first.stderr) == [
        "Scope changed: added task t-8: not in the frozen scope, it will not run"]
    run_dir = world.run_dir()
    snapshot = {p.name: p.read_bytes() for p in run_dir.glob("scope*") if "cache" not in p.name}
    # While the run is dead, the backlog changes again.
    assert world.run_task("create", "t-9", "Added while stopped").returncode == 0
    assert world.run_task("update", "t-2", "--title", "Renamed").returncode == 0
    proc = run_ralph("build", env=world.env)          # resumed: its persisted settings hold
    assert proc.returncode == 0, proc.stderr
    assert world.run_dirs() == [run_dir]                           # same run, same snapshot
    assert "Resuming run " in proc.stderr and "Scope kept from " in proc.stderr
    assert proc.stdout.count("Reached max iterations: 3\n") == 1
    # Against the original snapshot; t-8 was reported before the crash and is not repeated.
    assert scope_lines(proc.stderr) == [
        "Scope changed: added task t-9: not in the frozen scope, it will not run",
        "Scope changed: modified definition of task t-2: title changed"]
    assert [e["new"] for e in world.events("scope_changed")] == [
        ["added task t-8: not in the frozen scope, it will not run"],
        ["added task t-9: not in the frozen scope, it will not run",
         "modified definition of task t-2: title changed"]]
    assert {p.name: p.read_bytes() for p in run_dir.glob("scope*")
            if "cache" not in p.name} == snapshot
    assert not any(t in "".join(world.prompts()) for t in ("t-8", "t-9"))



def test_a_resumed_run_does_not_report_a_spec_change_again_when_a_task_of_it_is_removed(
        run_ralph, world, base_env):
    """What the last changes were is kept in the run state: the resumed run tells the spec
    change it already reported from the removal made while it was dead."""
    assert world.run_task("create", "t-3", "Third", "-r", "specs/feature.md").returncode == 0
    ready, release = world.tmp / "ready", world.tmp / "release"
    action = (f'if [ ! -e "$MARK" ]; then echo "- [ ] more" >> specs/feature.md; '
              f'touch "$MARK"; else touch {ready}; '
              f'while [ ! -e {release} ]; do sleep 0.05; done; fi')
    first, _ = killed_when(["build", "-n", "3", "--freeze-scope"], cwd=world.repo,
                           env={**base_env, **world.act(action, once=False)},
                           ready=ready.exists, release=release)
    spec_line = "modified spec specs/feature.md of tasks t-1, t-3: content changed"
    assert scope_lines(first.stderr) == [f"Scope changed: {spec_line}"]
    assert world.run_task("delete", "t-3").returncode == 0
    proc = run_ralph("build", env=world.env)
    assert proc.returncode == 0 and "Resuming run " in proc.stderr, proc.stderr
    assert scope_lines(proc.stderr) == ["Scope changed: removed task t-3: dropped from the target"]
    assert [e["new"] for e in world.events("scope_changed")] == [
        [spec_line], ["removed task t-3: dropped from the target"]]


# ---------------------------------------------------------------------------- defaults off

DEFAULT_CALLS = [["_get-scope"], ["agent", "register"], ["peek", "-n", "10"],
                 ["list", "--status", "active", "--assignee", "ab12", "--markdown"],
                 ["plan-status"], ["peek", "-n", "10"], ["agent", "deregister", "ab12"]]
TASK_MD = "## Task t-1\nid: t-1\ntitle: One\npriority: 1\nstatus: open\n"


@pytest.mark.parametrize("setting", ["absent", "env-0", "ralph.yml-false"])
def test_with_the_freeze_off_the_task_calls_are_exactly_the_specs(
        run_ralph, tasks, world, setting):
    tasks.script(peek=[{"out": TASK_MD}, {"out": ""}],
                 plan_status={"out": "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"})
    env = {**tasks.env, **world.env}
    if setting == "env-0":
        env.update(FREEZE_SCOPE="0", STOP_ON_SCOPE_CHANGE="0")
    elif setting == "ralph.yml-false":
        (world.repo / "ralph.yml").write_text("freeze_scope: false\nstop_on_scope_change: no\n")
    proc = run_ralph("build", env=env)
    assert proc.returncode == 0
    assert tasks.calls() == DEFAULT_CALLS
    assert "RALPH_FROZEN_IDS_FILE" not in world.agent_envs()[0]
    assert proc.stderr == ""
    assert not (world.repo / ".ralph" / "runs").exists() or not any(
        (world.repo / ".ralph" / "runs").glob("*/scope.json"))


def test_an_external_task_command_is_frozen_from_list_all_markdown(run_ralph, tasks, world):
    two = TASK_MD + "\n## Task t-2\nid: t-2\ntitle: Two\npriority: 2\nstatus: open\n"
    added = two + "\n## Task t-3\nid: t-3\ntitle: Three\npriority: 0\nstatus: open\n"
    tasks.script(list=[{"out": two}, {"out": added}],
                 peek={"out": TASK_MD},
                 plan_status={"out": "3 open, 0 active, 0 done, 0 blocked, 0 deleted\n"})
    proc = run_ralph("build", "-n", "2", "--stop-on-scope-change", env={**tasks.env, **world.env})
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "Error: scope changed since the run started (1 change): "
        "added task t-3: not in the frozen scope, it will not run")
    calls = tasks.calls()
    assert calls[:3] == [["_get-scope"], ["agent", "register"], ["list", "--all", "--markdown"]]
    # Freeze (its listing serves the check before session 1), then the check before session 2.
    assert calls.count(["list", "--all", "--markdown"]) == 2
    frozen = {rec["env"].get("RALPH_FROZEN_IDS_FILE") for rec in tasks.records()[3:]}
    assert len(frozen) == 1 and os.path.isabs(frozen.pop())


def test_a_backlog_that_cannot_be_listed_refuses_to_freeze_before_any_session(
        run_ralph, tasks, world):
    tasks.script(list={"out": "", "rc": 1})
    proc = run_ralph("build", "--freeze-scope", env={**tasks.env, **world.env})
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "Error: cannot freeze the scope: `task list --all --markdown` failed; check the task "
        "command or run without FREEZE_SCOPE")
    assert world.prompts() == []
    assert proc.stdout.endswith("deregistered ab12\n")


@pytest.mark.parametrize("mode", ["plan", "build"])
def test_the_mode_help_lists_the_scope_flags_just_before_help(run_ralph, mode):
    lines = run_ralph(mode, "--help").stdout.splitlines()
    at = lines.index("  --help, -h                  Show this help")
    assert "  --freeze-scope              Run only the tasks that exist at start" in lines[:at]
    assert ("  --stop-on-scope-change      Stop (exit 4) when the frozen scope changes"
            in lines[:at])


@pytest.mark.parametrize("name", ["FREEZE_SCOPE", "SCOPE_WATCH"])
def test_a_bad_freeze_scope_value_is_a_usage_error(run_ralph, tasks, name):
    proc = run_ralph("build", env={**tasks.env, name: "maybe"})
    assert proc.returncode == 1
    assert proc.stderr == (f"Error: environment variable {name} must be a boolean "
                           "(1/0, true/false, yes/no), got 'maybe'\n")
    assert tasks.calls() == []


def test_a_task_text_holding_a_unicode_line_separator_is_frozen_and_checked(run_ralph, world):
    # JSON keeps U+2028 raw inside a string: the listing is split on "\n" only.
    assert world.run_task("create", "t-3", "Line\u2028separated\u2029title").returncode == 0
    proc = run_ralph("build", "-n", "2", "--freeze-scope", env=world.env)
    assert proc.returncode == 0, proc.stderr
    assert "Scope frozen: 3 tasks (" in proc.stderr
    assert "scope check skipped" not in proc.stderr and scope_lines(proc.stderr) == []
