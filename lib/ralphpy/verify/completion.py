"""Owns the verify gate around finished sessions: the verdict on each task a session marked
done (its verify command, the tamper check, the second run), acting on it (`_reopen`, so the
attempt counts; `_hold`), recording it (events.jsonl, the run state's `verify` map,
.ralph/verify/<task>.json), and the re-check of stale verifications. Knows nothing of the
loop's order, of reading the backlog (verify.reads), of git beyond HEAD, or of printing."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ralphpy import errors
from ralphpy.assign.task_files import safe_name
from ralphpy.atomic_file import write_atomic
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.backlog.calls import TaskCommand
from ralphpy.runs import progress
from ralphpy.verify import gate
from ralphpy.verify import options as verify_options
from ralphpy.verify import reads
from ralphpy.verify import verdicts

if TYPE_CHECKING:
    # The tamper check's rules and the second run (regexes, an XML parser) are imported
    # where a run reads a diff, not at every start of ralph: most runs verify nothing.
    from ralphpy.verify import as_they_stood, tamper

_HOLD_REASON_MAX = 1000
# The author of the diff's start made over remote commits: no ref names that commit and nobody
# reads its author, and one given here works where git has no user.email.
_AUTHOR = {"GIT_AUTHOR_NAME": "ralph", "GIT_AUTHOR_EMAIL": "ralph@localhost",
           "GIT_COMMITTER_NAME": "ralph", "GIT_COMMITTER_EMAIL": "ralph@localhost"}


class Gate:
    """One per run: `after_session` for the single loop, `judge_worktree` for --parallel,
    `recheck` before the run may end complete, `annotate` for the next session's task data."""

    def __init__(self, values: Any, task: TaskCommand, env: Mapping[str, str], cwd: Path,
                 run: Any, report: Callable[[str], None] = lambda line: None,
                 scratch: as_they_stood.Scratch | None = None) -> None:
        self.opts = verify_options.read(values)           # the settled options
        self.task, self.env, self.cwd, self.run = task, env, Path(cwd), run
        self.scratch, self.report = scratch, report   # second run's (None: none); verdict line
        # Each completion judged once: updated_at has whole seconds, so a task reopened and
        # done again within the second is told apart by its retry count (a reopen raises it).
        self.judged: set[tuple[str, str, str]] = set()     # (task, updated_at, retry_count)
        # A task created before `started` was there at the start (if not in `lines`, with
        # no `verify:` line); the rows touched since `checked` are read after the next session
        self.started = self.checked = backlog_readonly.since_now()
        start = reads.at_start(self.task, self.opts.armed, self.env, self.cwd, self.started)
        self.lines = reads.task_lines(start)
        # a resumed run's, never judged; a task CLI not ours gave the whole backlog already
        self.unjudged = self._unjudged(None if self.task.embedded else start)
        self._mark()
        if self.scratch is not None and self.head:        # judging: a killed run's scratch
            self.scratch.clean()                          # worktree goes first

    def _mark(self) -> None:
        """The next diff starts from the tree as found (uncommitted changes in a `git stash
        create` commit) and the files hidden from git now: not a session's doing."""
        self.base, self.head, self.hidden = "", "", frozenset()
        self.span_open = False                  # True: a session ran since, nothing judged
        if self.opts.armed or any(self.lines.values()):
            self.head = gate.git(self.cwd, "rev-parse", "HEAD", env=self.env)
            self.base = gate.git(self.cwd, "stash", "create", env=self.env) or self.head
            if self.opts.tamper != "off":               # only the tamper check reads it
                from ralphpy.verify.tamper import hidden_paths
                self.hidden = hidden_paths(self.cwd, self.env)

    def session_starts(self) -> None:
        """What a session that marked nothing done changed is judged with the next task done
        (a cheat split over sessions). Commits since from a remote branch (a --sync rebase)
        are not a session's: the diff's start takes them in."""
        if not (self.span_open and self.head):
            self._mark()
        elif (local := self._brought_in()) is not None and not self._take_in(local):
            self._mark()                        # git cannot tell them apart: start here

    def _brought_in(self) -> list[str] | None:
        """When HEAD holds commits since the mark that a remote-tracking branch holds too:
        the ones made here (no remote holds them), oldest first. Else None."""
        every = gate.git(self.cwd, "rev-list", "--count", "HEAD", f"^{self.head}", env=self.env)
        local = gate.git(self.cwd, "rev-list", "--reverse", "HEAD", f"^{self.head}", "--not",
                         "--remotes", env=self.env).split()
        return local if not every.isdigit() or int(every) != len(local) else None

    def _take_in(self, local: list[str]) -> bool:
        """Move the diff's start over what a remote brought in: base merged with the newest
        remote commit in HEAD (the parent of `local`'s oldest, else HEAD), in a commit no ref
        names. False when git cannot merge them (a conflict, git < 2.38)."""
        onto = gate.git(self.cwd, "rev-parse", f"{local[0]}^" if local else "HEAD",
                        env=self.env)
        tree = gate.git(self.cwd, "merge-tree", "--write-tree", self.base, onto, env=self.env)
        if not (onto and tree):
            return False
        base = gate.git(self.cwd, "commit-tree", tree.split()[0], "-p", onto, "-m",
                        "ralph: the verify diff's start, remote commits taken in",
                        env={**self.env, **_AUTHOR})
        if base:
            self.base, self.head = base, gate.git(self.cwd, "rev-parse", "HEAD", env=self.env)
        return bool(base)

    def _start_line(self, record: dict) -> str | None:
        """A task's line at the run's start: "" (there, none), None (created since)."""
        created_since = str(record.get("created_at") or "") >= self.started
        return self.lines.get(record["id"], None if created_since else "")

    def _unjudged(self, tasks: list[dict] | None = None) -> set[str]:
        """A resumed run: the tasks marked done during it that no verdict covers (ralph.py
        died meanwhile), judged after the first session as if it had marked them done."""
        if not getattr(self.run, "resumed", False):
            return set()
        since = self._run_since()
        if tasks is None:
            tasks = reads.tasks(self.task, self.opts.armed, self.env, self.cwd, "touched",
                                since=since)
        return {t["id"] for t in tasks if t.get("status") == "done"
                and t["id"] not in self._records() and str(t.get("updated_at")) >= since}

    def _run_since(self) -> str:                       # the store's datetime format
        return str(self.run.state.started_at or "").replace("T", " ").rstrip("Z")[:19]

    def _records(self) -> dict[str, dict]:
        return self.run.state.extra.setdefault("verify", {})

    def after_session(self, failed: list[str], reason: str) -> tuple[list[str], str]:
        """Judge every task the session marked done, then re-check stale ones when nothing is
        left to do. Returns the loop's failed list and reason, the reopened tasks added."""
        since = getattr(self.run, "session_since", "") or ""
        checked, self.checked = self.checked, backlog_readonly.since_now()
        # a resumed run's first session: since the run started, its unjudged tasks included
        frm = min(checked, since or checked, *([self._run_since()] if self.unjudged else []))
        tasks = reads.tasks(self.task, self.opts.armed, self.env, self.cwd, "touched", since=frm)
        reopened: list[verdicts.Verdict] = []
        judged = len(self.judged)
        # one diff for every task the session marked done, read before any verify command runs
        diff_findings = functools.cache(lambda: self._scan(self.cwd, self.base, self.hidden))
        test_side = functools.cache(lambda: self._test_side(self.cwd, self.base))
        for t in tasks:
            key = (t["id"], str(t.get("updated_at")), str(t.get("retry_count")))
            fresh = str(t.get("updated_at")) >= since or t["id"] in self.unjudged
            if t.get("status") != "done" or key in self.judged or not fresh:
                continue
            self.judged.add(key)
            self.unjudged.discard(t["id"])
            verdict = self.judge(t, self.cwd, self.base, diff_findings, test_side)
            if verdict is not None and not verdict.ok:
                reopened.append(verdict)
        if not reopened:                # a task CLI not ours: the whole backlog, read above
            reopened += self.recheck(None if self.task.embedded else tasks)
        # The lines the run first saw stay the judges: a line a session rewrote without
        # marking its task done is still a change when a later session marks it done.
        self.lines = {**reads.task_lines(tasks, self._start_line), **self.lines}
        self.unjudged.clear()           # a task reopened since is touched when done again
        if len(self.judged) > judged:   # else what this session changed is judged with the
            self._mark()                # next task marked done (a cheat split over sessions)
        else:
            self.span_open = True
        slugs = [v.task for v in reopened if v.task not in failed]
        return [*failed, *slugs], (reopened[0].reason.split("\n", 1)[0] if reopened else reason)

    def judge(self, record: dict, tree: Path, base: str,
              diff_findings: Callable[[], list[tamper.Finding]],
              test_side: Callable[[], dict[str, str]] | None = None
              ) -> verdicts.Verdict | None:
        """Verify one done task in tree (base: the diff's start; diff_findings and test_side
        read only when needed), act on the verdict. None when the gate does not apply."""
        slug = record["id"]
        own = verify_options.task_command(record.get("description")) or ""
        start = self._start_line(record)        # None: the task was created during the session
        changed = start is not None and own != start
        command = (own if start is None else start) or self.opts.command
        if not (command or self.opts.protect or changed):
            return None
        findings = list(diff_findings())        # a copy: they may serve other tasks too
        if changed:
            from ralphpy.verify.tamper import Finding
            findings.append(Finding("verify_line", f"task {slug}", None,
                                    "its verify: line changed during the session"))
        may_change = verify_options.tests_may_change(record.get("description"))
        # the test side the session touched, read before the command runs (a formatter's
        # changes are no session's)
        side = {} if (may_change or not command or self.scratch is None
                      or self.opts.tamper == "off") else \
            (test_side or (lambda: self._test_side(tree, base)))()
        check = self._run(command, tree) if command else None
        second = self._as_they_stood(command, tree, base, side) \
            if side and check is not None and check.passed else None
        verdict = verdicts.decide(slug, check, findings, self.opts.tamper, tree=str(tree),
                                  second=second, may_change=may_change)
        self._act(verdict)
        self._record(verdict, record.get("result"))
        return verdict

    def _run(self, command: str, tree: Path) -> gate.Check:
        """Run 1 or a re-check, the runner asked for its report as in run 2."""
        from ralphpy.verify import failures
        return failures.run(command, tree, self.env, self.opts.timeout_s)[0]

    def _as_they_stood(self, command: str, tree: Path, base: str, changed: dict[str, str]
                       ) -> as_they_stood.Second | None:
        """The second run, the session having touched the test side (docs/decisions/0038)."""
        from ralphpy.verify import as_they_stood
        try:
            return as_they_stood.run(command, tree, base, changed, self.env,
                                     self.opts.timeout_s, self.scratch)
        except (errors.EnvironmentFailure, OSError) as err:     # git or the disk failed
            self.report(f"Warning: verify: the second run could not start: {err}")
            return None

    def _test_side(self, tree: Path, base: str) -> dict[str, str]:
        from ralphpy.verify import as_they_stood
        return as_they_stood.touched(tree, base, self.env, self.opts.protect)

    def judge_worktree(self, record: dict, wt: Any) -> verdicts.Verdict | None:
        """--parallel, before the merge: the diff from the fork point of the run's branch."""
        base = gate.git(wt.path, "merge-base", "HEAD", wt.base_branch, env=self.env)
        return self.judge(record, wt.path, base, lambda: self._scan(wt.path, base))

    def _scan(self, tree: Path, base: str, hidden: frozenset[str] = frozenset()
              ) -> list[tamper.Finding]:
        if self.opts.tamper == "off":
            return []
        from ralphpy.verify.tamper import scan
        return scan(tree, base, self.opts.protect, env=self.env, hidden_before=hidden)

    def _act(self, v: verdicts.Verdict) -> None:
        if v.ok:
            return
        call = self.task.bound(self.env)
        call(["_reopen", v.task, "--reason", v.reason])         # done -> open, attempt + 1
        if v.verdict == "held":
            call(["_hold", v.task, "--reason", v.reason[:_HOLD_REASON_MAX]])

    def _record(self, v: verdicts.Verdict, result: str | None) -> None:
        check = asdict(v.check) if v.check else None
        kept = ("command", "exit_code", "duration_s", "commit", "dirty", "tree_id", "timed_out",
                "tail_sha256")
        fields = {"task": v.task, "verdict": v.verdict, "tree": v.tree,
                  **({k: check[k] for k in kept} if check else {}),
                  "findings": [f.text() for f in v.findings], "runs": 2 if v.second else 1}
        if v.second:                            # the runner's own time, for bench/verify.py
            fields["second"] = {k: v.second.as_record()[k]
                                for k in ("exit_code", "duration_s", "collect_s")}
        if v.reason:
            fields["reason"] = v.reason
        event = progress.append_event(self.run.ralph_dir, self.run.state.run_id, "verify",
                                      **fields)
        self._records()[v.task] = {**fields, "at": event["ts"]}
        body = {**fields, "at": event["ts"], "check": check,
                "second": v.second.as_record() if v.second else None,
                "findings": [asdict(f) for f in v.findings], "result": result}
        self.report(verdicts.line(v))
        write_atomic(Path(self.run.ralph_dir) / "verify" / f"{safe_name(v.task)}.json",
                     (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
        # the run state (and progress.md) is saved by the caller's next step

    def recheck(self, tasks: list[dict] | None = None) -> list[verdicts.Verdict]:
        """When no task is left to do: every task this run verified and that is still done,
        whose verification ran at another commit than HEAD, is verified again (each command
        once). A failure reopens all tasks of that command. Returns the reopened verdicts."""
        pending, tasks = (reads.settled(self.task, self.opts.armed, self.env, self.cwd,
                                        sorted(self._records()), tasks)
                          if self._records() else (True, []))
        if pending:                             # nothing verified yet, or work left to do
            return []
        done = {t["id"]: t for t in tasks if t.get("status") == "done"}
        head, dirty, tree = gate.tree_state(self.cwd, self.env)
        stale: dict[str, list[str]] = {}
        for slug, rec in self._records().items():
            if (slug in done and rec.get("verdict") in ("passed", "warned") and rec.get("command")
                    and (rec.get("commit") != head or rec.get("dirty") != dirty
                         or rec.get("tree_id", tree) != tree)):   # an older record has none
                stale.setdefault(rec["command"], []).append(slug)
        reopened = []
        for command, slugs in stale.items():
            check = self._run(command, self.cwd)
            for slug in slugs:
                verdict = verdicts.decide(slug, check, [], self.opts.tamper, recheck=True,
                                          tree=str(self.cwd))
                self._act(verdict)
                self._record(verdict, done[slug].get("result"))
                if not verdict.ok:
                    reopened.append(verdict)
        return reopened

    def annotate(self, task_data: str) -> str:
        """The task data with a `verify_failed:` block under each task that failed its last."""
        records = self._records()
        if not records or not task_data:
            return task_data
        out = []
        for part in re.split(r"(?m)^(?=## Task )", task_data):
            slug = part[8:].split("\n", 1)[0].strip() if part.startswith("## Task ") else None
            rec = records.get(slug or "")
            if rec and rec.get("verdict") in verdicts.FAILED and rec.get("reason"):
                body = part.rstrip("\n")
                block = "\n".join("  " + line for line in rec["reason"].split("\n"))
                part = f"{body}\nverify_failed: |\n{block}{part[len(body):]}"
            out.append(part)
        return "".join(out)


__all__ = ["Gate"]
