"""sync.runner: what --sync does around sessions, on a real bare origin, real clones and the
real task CLI (in-process, as a run calls it) over one shared backlog. Origin is made to move
at the moment of a push by a git first on PATH that pushes from the other clone first (ralph's
own git calls run no hooks: a pre-push hook would not)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from fleethelp import Fleet, make_fleet
from ralphpy.backlog import calls
from ralphpy.parallel.git import Git
from ralphpy.parallel.worktrees import branch_safe
from ralphpy.sync import branch
from ralphpy.sync import runner

SINCE = "2000-01-01 00:00:00"


@pytest.fixture
def fleet(tmp_path: Path, base_env: dict, bin_dir: Path) -> Fleet:
    f = make_fleet(tmp_path, base_env, bin_dir, machines=2)
    f.env.update(RALPH_SCOPE_REPO="acme/fleet", RALPH_SCOPE_BRANCH="main")
    f.create("t1", "t2")
    return f


class Run:
    """One runner on machine 0, its lines, and the backlog as its agent sees it."""

    def __init__(self, fleet: Fleet, agent: str = "a1", carry: bool = False,
                 resumed: bool = False):
        self.fleet, self.agent, self.lines = fleet, agent, []
        env = fleet.env_for(0, RALPH_AGENT_ID=agent)
        call = calls.resolve(ROOT, env).bound(env)
        self.runner = runner.start(branch.resolve(fleet.clones[0], env), env, call, agent,
                                   lambda line, fields: self.lines.append((line, fields)), carry,
                                   resumed)

    def finish(self, tid: str, file: str | None = None, text: str | None = None) -> None:
        """What a session's agent does: claim, commit, done."""
        f = self.fleet
        assert f.task("claim", tid, "--agent", self.agent).returncode == 0
        f.commit(0, file or f"work-{tid}.txt", text or f"{tid}\n", message=f"{tid}: work")
        assert f.task("done", tid).returncode == 0

    def actions(self) -> list[str]:
        return [fields["action"] for _, fields in self.lines]


def origin_moves_on_push(fleet: Fleet, file: str = "other.txt", once: bool = True) -> Path:
    """Machine 0's next push (each push when not once) finds that machine 1 pushed first.
    Returns the script that does it: removed, pushes go through again."""
    clone, other = fleet.clones[0], fleet.clones[1]
    marker, mover = clone / ".git" / "moved-once", clone / ".git" / "move-origin.sh"
    mover.write_text(
        "#!/bin/sh\nunset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
        + (f"[ -e '{marker}' ] && exit 0\ntouch '{marker}'\n" if once else "")
        + f"cd '{other}' && git pull -q --rebase origin main && date +%s%N >> '{file}' && "
        f"git add '{file}' && git commit -qm 'host2 moves origin' && git push -q origin main\n")
    mover.chmod(0o755)
    wrapper = Path(fleet.env["PATH"].split(os.pathsep)[0]) / "git"
    real = shutil.which("git", path=os.environ["PATH"])
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$(pwd)" = "{clone}" ] && [ -x "{mover}" ]; then\n'
        '    case " $* " in *" push "*) ' + f'"{mover}" >/dev/null 2>&1 ;; esac\nfi\n'
        f'exec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return mover


def test_a_finished_task_is_pushed_and_a_session_that_finished_none_pushes_nothing(fleet):
    run = Run(fleet)
    assert run.actions() == ["start"]
    fleet.commit(0, "draft.txt", "draft\n", message="a draft, no task done")
    assert run.runner.after_session(SINCE) == ([], "")
    assert run.actions() == ["start"] and fleet.origin_subjects() == ["initial"]
    run.finish("t1")
    assert run.runner.after_session(SINCE) == ([], "")
    line, fields = run.lines[-1]
    assert line.startswith("sync: pushed main to origin/main: 2 commits (task t1), head ")
    assert (fields["tasks"], fields["commits"]) == (["t1"], 2)
    assert fleet.origin_subjects() == ["t1: work", "a draft, no task done", "initial"]
    assert run.runner.after_session(SINCE) == ([], "")      # t1 counted once
    assert run.actions() == ["start", "pushed"]


class CountedGit(Git):
    """The runner's git, each call's arguments kept."""

    def __init__(self, env: dict[str, str]):
        super().__init__(env)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, cwd: Path, *args: str, **kwargs) -> tuple[int, str, str]:
        self.calls.append(args)
        return super().__call__(cwd, *args, **kwargs)


def test_a_push_reads_the_head_and_the_shared_branch_once_each(fleet):
    run = Run(fleet)
    run.finish("t1")
    git = run.runner.git = CountedGit(run.runner.git.env)
    assert run.runner.after_session(SINCE) == ([], "")
    assert run.actions() == ["start", "pushed"]
    shared = ("rev-parse", "-q", "--verify", "refs/remotes/origin/main^{commit}")
    assert (git.calls.count(("rev-parse", "HEAD")), git.calls.count(shared)) == (1, 1)


def test_a_task_another_agent_finished_is_not_this_runner_s_to_push(fleet):
    run = Run(fleet)
    other = Run(fleet, agent="b2")
    other.finish("t1")
    assert run.runner.after_session(SINCE) == ([], "")
    assert fleet.origin_subjects() == ["initial"]


def test_before_a_session_origin_s_new_commits_come_in_with_one_line(fleet):
    run = Run(fleet)
    run.runner.before_session()
    assert run.actions() == ["start"]                       # nothing new: no line
    fleet.commit(1, "other.txt", "host2\n", push=True, message="host2 work")
    run.runner.before_session()
    line, fields = run.lines[-1]
    assert line.startswith("sync: main rebased onto origin/main: 1 commit from origin, head ")
    assert (fleet.clones[0] / "other.txt").read_text() == "host2\n"


def test_a_push_race_is_fetched_rebased_and_pushed_again(fleet):
    run = Run(fleet)
    origin_moves_on_push(fleet)
    run.finish("t1")
    assert run.runner.after_session(SINCE) == ([], "")
    assert run.actions() == ["start", "push_retry", "pushed"]
    assert run.lines[1][0] == ("sync: push of main rejected: origin/main moved; fetched and "
                               "rebased, pushing again (retry 1 of 5)")
    assert fleet.origin_subjects() == ["t1: work", "host2 moves origin", "initial"]


def test_a_conflict_keeps_the_commits_on_a_branch_resets_and_reopens_the_task(fleet):
    run = Run(fleet)
    origin_moves_on_push(fleet, file="shared.txt")
    run.finish("t1", file="shared.txt", text="t1's line\n")
    reopened, reason = run.runner.after_session(SINCE)
    keep = f"ralph/sync/{branch_safe(run.runner.host)}-a1/t1"
    assert reopened == ["t1"]
    assert reason == (f"sync: rebase of main onto origin/main conflicts in shared.txt; the "
                      f"commits are kept on branch {keep}; main was reset to origin/main")
    assert run.lines[-1][0] == f"sync: conflict: {reason[len('sync: '):]}; task t1 reopened"
    task = fleet.tasks()["t1"]
    assert (task["status"], task["fail_reason"], task["retry_count"]) == ("open", reason, 1)
    assert fleet.git(0, "log", "-1", "--format=%s", keep) == "t1: work"
    assert fleet.git(0, "rev-parse", "HEAD") == fleet.origin_git("rev-parse", "main")
    assert "t1: work" not in fleet.origin_subjects()
    assert run.runner.pending == []


def test_a_push_that_keeps_losing_the_race_gives_up_and_the_end_pushes_it(fleet):
    run = Run(fleet)
    mover = origin_moves_on_push(fleet, once=False)
    run.finish("t1")
    assert run.runner.after_session(SINCE) == ([], "")
    assert run.actions() == ["start"] + ["push_retry"] * runner.RETRIES + ["push_gave_up"]
    assert run.lines[-1][0] == ("sync: push of main to origin/main still rejected after 5 "
                                "retries (origin kept moving); its commits stay here and go "
                                "with the next push")
    assert run.runner.pending == ["t1"]
    os.unlink(mover)
    run.runner.end()
    assert run.actions()[-1] == "pushed" and fleet.origin_subjects()[0] == "t1: work"


def test_a_refused_push_keeps_the_task_for_the_next_push(fleet):
    hook = fleet.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    run = Run(fleet)
    run.finish("t1")
    run.runner.after_session(SINCE)
    line, fields = run.lines[-1]
    assert line == ("sync: push of main to origin/main failed: [remote rejected] main -> main "
                    "(pre-receive hook declined); its commits stay here and go with the next push")
    hook.unlink()
    run.runner.after_session(SINCE)                          # the next session finished none
    assert run.lines[-1][1]["tasks"] == ["t1"] and run.actions()[-1] == "pushed"


def test_a_fetch_that_fails_is_a_line_and_the_session_starts_from_the_local_branch(fleet):
    run = Run(fleet)
    fleet.git(0, "remote", "set-url", "origin", str(fleet.origin.parent / "gone.git"))
    head = fleet.git(0, "rev-parse", "HEAD")
    run.runner.before_session()
    line, fields = run.lines[-1]
    assert fields["action"] == "fetch_failed"
    assert line.startswith("sync: fetch of origin/main failed: ")
    assert line.endswith("; this session starts from the local main")
    assert fleet.git(0, "rev-parse", "HEAD") == head


def test_a_resumed_run_owes_what_its_branch_holds_and_the_end_pushes_it(fleet):
    assert fleet.task("claim", "t1", "--agent", "dead").returncode == 0
    fleet.commit(0, "work-t1.txt", "t1\n", message="t1: work")
    short = fleet.git(0, "rev-parse", "--short", "HEAD")      # an agent may record this
    assert fleet.task("done", "t1", "--result", f'{{"commit":"{short}"}}').returncode == 0
    fleet.git(0, "commit", "-q", "--allow-empty", "-m", "no task's")
    run = Run(fleet, carry=True, resumed=True)
    assert run.actions() == ["start", "unpushed"]
    assert run.lines[-1][0] == ("sync: main holds 2 commits (task t1) that origin/main lacks, "
                                "left unpushed when the run stopped; they go with the next push")
    assert run.runner.pending == ["t1"] and fleet.origin_subjects() == ["initial"]
    run.runner.end()                                        # no session ran
    assert (run.actions()[-1], run.lines[-1][1]["tasks"], run.lines[-1][1]["commits"]) == (
        "pushed", ["t1"], 2)
    assert fleet.origin_subjects() == ["no task's", "t1: work", "initial"]
    assert not run.runner.carried


def test_a_new_run_owes_the_commits_a_done_task_names_and_the_end_pushes_them(fleet):
    assert fleet.task("claim", "t1", "--agent", "earlier").returncode == 0
    fleet.commit(0, "work-t1.txt", "t1\n", message="t1: work")
    head = fleet.git(0, "rev-parse", "HEAD")
    assert fleet.task("done", "t1", "--result", f'{{"commit":"{head}"}}').returncode == 0
    run = Run(fleet, carry=True)
    assert run.actions() == ["start", "unpushed"]
    assert run.lines[-1][0] == ("sync: main holds 1 commit (task t1) that origin/main lacks, "
                                "left unpushed by an earlier run; it goes with the next push")
    assert run.runner.pending == ["t1"] and run.runner.carried
    run.runner.end()                                        # no session ran
    assert run.actions()[-1] == "pushed" and fleet.origin_subjects() == ["t1: work", "initial"]


def test_a_new_run_does_not_owe_a_person_s_own_commits(fleet):
    fleet.commit(0, "notes.txt", "mine\n")                  # no done task names it
    run = Run(fleet, carry=True)
    assert run.actions() == ["start"] and not run.runner.carried and not run.runner.pending
    run.runner.end()
    assert run.actions() == ["start"] and fleet.origin_subjects() == ["initial"]


def test_a_resumed_run_whose_branch_origin_has_owes_nothing(fleet):
    run = Run(fleet, carry=True, resumed=True)
    assert run.actions() == ["start"] and not run.runner.carried
    run.runner.end()
    assert run.actions() == ["start"]
