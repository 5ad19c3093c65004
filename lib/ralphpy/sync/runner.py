"""Owns what `--sync` does during a run and when (docs/fleet.md). Before each session: fetch the
shared branch and rebase the working branch onto it. After a build session: the tasks this run's
agent finished (asked through the task command, `_export-json`, so any task store answers) join
the ones not yet on the remote, and while there are any the branch is pushed; a push rejected
because the remote moved is fetched, rebased and pushed again, at most RETRIES times. A rebase
conflict keeps the commits on `ralph/sync/<host>-<agent>/<task>`, resets the working branch to
the remote's and reopens those tasks with a reason naming that branch. At the run's end, what is
still not pushed gets up to END_RETRIES retries. A resumed run starts owing what its branch
holds and the shared branch lacks (`carry`): commits of the run before it stopped that no push
took; a new run, those of them a done task's result names. A pushed task whose result names
a commit a rebase replaced gets the new id there (`_recommit`). Each step is reported as one
line with its event fields; never prints. Knows nothing of the loop's order, of runs (the
caller says when to `carry`) or of git's commands (branch)."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ralphpy.backlog import answers
from ralphpy.backlog import client
from ralphpy.errors import UsageError
from ralphpy.parallel.git import Git
from ralphpy.parallel.worktrees import branch_safe
from ralphpy.sync import branch
from ralphpy.tasks.agent_cmds import host_name

RETRIES = 5                         # pushes again after a race, each after a fetch and rebase
# At the run's end nothing comes after: a push still racing then is given more tries.
END_RETRIES = 20
Report = Callable[[str, dict[str, Any]], None]   # (line, event fields)


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def _tasks(tasks: list[str]) -> str:
    return ("task " if len(tasks) == 1 else "tasks ") + ", ".join(tasks)


@dataclass
class Runner:
    target: branch.Target
    git: Git
    task_call: client.TaskCall
    agent: str                      # this run's agent id ("" in plan mode)
    report: Report
    host: str
    pending: list[str] = field(default_factory=list)   # finished here, not on the remote yet
    handled: set[tuple[str, str, str]] = field(default_factory=set)   # (id, updated, retries)
    reason: str = ""                # the fail reason of the last conflict
    rebased: bool = False           # a rebase gave pending tasks' commits new ids
    carried: bool = False           # commits a resumed run found unpushed (carry), not pushed yet
    results: dict[str, Any] = field(default_factory=dict)  # task id -> result, last read

    def _say(self, line: str, action: str, **fields: Any) -> None:
        t = self.target
        self.report(line, {"action": action, "branch": t.branch, "shared": t.shared, **fields})

    # ------------------------------------------------------------------ before a session
    def _checkout_kept(self) -> None:
        """UsageError (exit 1, as at the start) when a session left the checkout where --sync
        cannot work: nothing of it is pushed or rebased; the person sorts it out."""
        if why := branch.left(self.git, self.target):
            t = self.target
            raise UsageError(f"--sync stopped: a session left {t.top} unable to sync ({why}; "
                             f"--sync works on {t.branch}); what it did is not pushed. Bring "
                             f"the commits to {t.branch}, then run again")

    def before_session(self) -> None:
        """Fetch and rebase (a conflict reopens the tasks not pushed yet, as after a push)."""
        self._checkout_kept()
        t = self.target
        failed = branch.fetch(self.git, t)
        if failed:
            self._say(f"sync: fetch of {t.shared} failed: {failed}; this session starts from "
                      f"the local {t.branch}", "fetch_failed", detail=failed)
        elif self._update(f"this session starts from the local {t.branch}")[0] and self.carried:
            self._push()            # the store says done already: the fleet sees it before
                                    # this run spends a session

    def _update(self, otherwise: str, quiet: bool = False) -> tuple[bool, list[str]]:
        """Rebase onto the shared branch as fetched: (done or nothing to do, the tasks a
        conflict reopened). quiet: a push retry's line says it instead."""
        t = self.target
        u = branch.rebase(self.git, t)
        if u.conflict:
            return False, self._conflict(u.conflict)
        if u.error:
            self._say(f"sync: rebase of {t.branch} onto {t.shared} failed: {u.error}; "
                      f"{otherwise}", "rebase_failed", detail=u.error)
            return False, []
        self.rebased = self.rebased or (u.after != u.before and bool(self.pending))
        if u.after != u.before and not quiet:
            self._say(f"sync: {t.branch} rebased onto {t.shared}: {_commits(u.incoming)} from "
                      f"{t.remote}, head {u.after[:12]}", "rebased", incoming=u.incoming,
                      head=u.after)
        if u.stash_kept:
            self._stash_kept()
        return True, []

    def _stash_kept(self) -> None:
        self._say(f"sync: uncommitted changes in {self.target.top} did not apply again on "
                  f"top of {self.target.shared}; they are kept in the stash (git stash list) "
                  "and the tree is clean", "stash_kept")

    # ------------------------------------------------------------------ after a session
    def after_session(self, since: str) -> tuple[list[str], str]:
        """Push when finished tasks are not on the remote yet: (tasks a conflict reopened,
        its reason). `since`: the session's start, as the task store writes updated_at. A
        checkout the session left off its branch is not pushed: the next step stops the run."""
        if branch.left(self.git, self.target):
            return [], ""
        finished = self._finished(since)
        if finished is None:                        # the task command cannot tell: push what
            t = self.target                         # the branch holds, if anything
            if branch.ahead(self.git, t, branch.remote_head(self.git, t)) == 0:
                return [], ""
        else:
            self.pending += [slug for slug in finished if slug not in self.pending]
            if not self.pending and not self.carried:
                return [], ""
        return self._push()

    def end(self) -> None:
        """The run ends: what it finished and did not push yet gets its last tries."""
        self._checkout_kept()
        if self.pending or self.carried:
            self._push(END_RETRIES)

    def carry(self, resumed: bool) -> None:
        """A build run's start: what its branch holds and the shared branch (as last fetched)
        lacks is owed now, in a resumed run all of it (a session's agent committed and marked
        its task done, then ralph.py was killed before the push, and `pending` died with it),
        in a new run when a done task's result names one of those commits (an earlier run's
        pushes failed to its end: the store says done, and no session of this run may come
        to push it; a person's own commits wait for a finished task, as ever). Pushed after
        the next fetch and
        rebase (before_session), else at the run's end; like any push, it takes every such
        commit. Named by the done tasks whose result names one of them, so a rebase's new ids
        reach those results (_recommit)."""
        t = self.target
        commits = branch.unpushed(self.git, t, branch.remote_head(self.git, t))
        if not commits:
            return
        records = client.export_tasks(self.task_call) or []
        self.results = {str(r.get("id")): r.get("result") for r in records}
        done = [(str(r.get("id")), (answers.result_commit(r.get("result")) or "").lower())
                for r in records if r.get("status") == "done"]
        # an agent may record an abbreviation; git's shortest is 4 hex digits
        self.pending = list(dict.fromkeys(slug for sha in commits for slug, named in done
                                          if len(named) >= 4 and sha.startswith(named)))
        if not (resumed or self.pending):
            return
        self.carried = True
        named = f" ({_tasks(self.pending)})" if self.pending else ""
        by = "when the run stopped" if resumed else "by an earlier run"
        self._say(f"sync: {t.branch} holds {_commits(len(commits))}{named} that {t.shared} "
                  f"lacks, left unpushed {by}; "
                  f"{'it goes' if len(commits) == 1 else 'they go'} with the next push",
                  "unpushed", tasks=list(self.pending), commits=len(commits))

    def _finished(self, since: str) -> list[str] | None:
        """Tasks this agent marked done since `since`, each once; None when unknown (a task
        command without `_export-json`, or no agent id)."""
        records = client.export_tasks(self.task_call) if self.agent else None
        if records is not None:      # done tasks' results stay as read here (_recommit)
            self.results = {str(r.get("id")): r.get("result") for r in records}
        if records is None:
            return None
        found = []
        for r in records:
            key = (str(r.get("id")), str(r.get("updated_at")), str(r.get("retry_count")))
            if (r.get("status") == "done" and r.get("assignee") == self.agent
                    and key[1] >= since and key not in self.handled):
                self.handled.add(key)
                found.append(key[0])
        return found

    def _push(self, retries: int = RETRIES) -> tuple[list[str], str]:
        t, tasks = self.target, list(self.pending)
        named = f" ({_tasks(tasks)})" if tasks else ""
        for attempt in range(retries + 1):
            since = branch.remote_head(self.git, t)      # before the push moves it: the count
                                                         # and _recommit both use it
            count = branch.ahead(self.git, t, since)
            if count == 0:
                self._say(f"sync: nothing to push{named}: {t.shared} has every commit of "
                          f"{t.branch}", "pushed", tasks=tasks, commits=0)
                self.pending.clear()
                self.carried = False
                return [], ""
            pushed = branch.push(self.git, t)
            if pushed.ok:
                head = pushed.head
                self._say(f"sync: pushed {t.branch} to {t.shared}: {_commits(count)}{named}, "
                          f"head {head[:12]}", "pushed", tasks=tasks, commits=count, head=head,
                          retries=attempt)
                if self.rebased:
                    self._recommit(tasks, since, head)
                self.pending.clear()
                self.rebased = self.carried = False
                return [], ""
            if not pushed.raced:
                self._say(f"sync: push of {t.branch} to {t.shared} failed: {pushed.detail}; "
                          "its commits stay here and go with the next push", "push_failed",
                          tasks=tasks, detail=pushed.detail)
                return [], ""
            if attempt == retries:
                self._say(f"sync: push of {t.branch} to {t.shared} still rejected after "
                          f"{retries} retries ({t.remote} kept moving); its commits stay here "
                          "and go with the next push", "push_gave_up", tasks=tasks)
                return [], ""
            done, reopened = self._update("its commits stay here and go with the next push",
                                          quiet=True)
            if not done:
                return reopened, self.reason if reopened else ""
            self._say(f"sync: push of {t.branch} rejected: {t.shared} moved; fetched and "
                      f"rebased, pushing again (retry {attempt + 1} of {retries})",
                      "push_retry", tasks=tasks, retry=attempt + 1)
            # Runners that raced tend to race again in step: a short random pause parts them.
            time.sleep(random.uniform(0, 0.05 * 2 ** min(attempt, 4)))
        return [], ""

    def _recommit(self, tasks: list[str], since: str | None, head: str) -> None:
        """A rebase gave a pushed task's commit a new id: its result names the new one, so
        the record (and the `blocker_results` the tasks after it see) points at a commit on
        the shared branch. The results are the ones the session's end read (_finished), or
        the resumed run's start (carry). One line and event per task changed."""
        for slug in tasks:
            commit = answers.result_commit(self.results.get(slug))
            found = commit and self.git.rebased_as(self.target.top, commit, since, head)
            if not found:
                continue
            old, new = found
            if self.task_call(["_recommit", slug, old, new])[1].startswith("recommitted"):
                self._say(f"sync: task {slug}'s result names commit {new[:12]}, its id after "
                          f"the rebase (it was {old[:12]})", "recommitted", task=slug, old=old,
                          new=new)

    # ------------------------------------------------------------------ a conflict
    def _keep_name(self, tasks: list[str]) -> str:
        who = branch_safe(self.host) + (f"-{branch_safe(self.agent)}" if self.agent else "")
        what = tasks[-1] if tasks else f"local-{branch.head(self.git, self.target)[:12]}"
        return f"ralph/sync/{who}/{branch_safe(what)}"

    def _conflict(self, files: list[str]) -> list[str]:
        """Keep the commits on a branch, reset to the shared branch, reopen the tasks whose
        commits they were; the tasks reopened."""
        t, tasks = self.target, list(self.pending)
        keep = self._keep_name(tasks)
        older, reset = branch.keep_and_reset(self.git, t, keep)
        after = (f"{t.branch} was reset to {t.shared}" if not reset.error else
                 f"{t.branch} could not be reset to {t.shared}: {reset.error}")
        self.reason = (f"sync: rebase of {t.branch} onto {t.shared} conflicts in "
                       f"{', '.join(files)}; the commits are kept on branch {keep}; {after}")
        reopened = [slug for slug in tasks
                    if self.task_call(["_reopen", slug, "--reason", self.reason])[0]]
        self.pending.clear()
        self.carried = False                        # they are on the kept branch now
        told = f"{_tasks(reopened)} reopened" if reopened else "no task reopened"
        self._say(f"sync: conflict: {self.reason[len('sync: '):]}; {told}", "conflict",
                  files=files, kept=keep, set_aside=older, tasks=reopened,
                  reset=not reset.error)
        if reset.stash_kept:
            self._stash_kept()
        return reopened


def start(target: branch.Target, env: Mapping[str, str], task_call: client.TaskCall,
          agent: str, report: Report, carry: bool = False, resumed: bool = False) -> Runner:
    """The run's sync on `target` (branch.resolve's, resolved once for the run), announced.
    carry: a build run, which owes what an earlier run left unpushed (Runner.carry; plan mode
    never pushes); resumed: that run was this one, stopped."""
    runner = Runner(target, branch.git_for(env), task_call, agent, report, host_name(env))
    runner._say(f"sync: {runner.target.branch} follows {runner.target.shared}", "start")
    if carry:
        runner.carry(resumed)
    return runner


__all__ = ["Runner", "Report", "start", "RETRIES", "END_RETRIES"]
