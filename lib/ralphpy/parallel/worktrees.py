"""Owns the git worktrees of `--parallel N`: one worktree and branch
`ralph/<runId>/<task>` per session under `.ralph/worktrees/<runId>/<task>`, merging a finished
task's branch back into the run's branch (fast-forward, rebase then fast-forward, or left for
review), and removing a run's worktrees after it or on resume.

The run's branch is moved without disturbing anyone's work: when a checkout has it checked
out (usually the main checkout), the fast-forward runs there with `git merge --ff-only`, and
only when that checkout has no uncommitted changes to tracked files (else: not merged, the
reason says so); when no checkout has it, its ref is compare-and-swapped with `update-ref`.
A rebase runs inside the task's own worktree; a conflict aborts it and keeps the branch.
Branches that are not merged are never deleted.

Does not own running git (parallel.git), choosing tasks, sessions, the task store, or
printing. Not thread-safe: the loop merges one finished task at a time.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy.errors import UsageError
from ralphpy.parallel.git import Git

STRATEGIES = ("ff", "rebase", "none")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Worktree:
    repo: Path          # the main checkout (top level)
    path: Path
    branch: str         # ralph/<runId>/<safe task>
    base_branch: str    # the run's branch
    task: str           # the task slug as given
    previous_branch: str | None = None   # an unmerged earlier attempt, renamed and kept


@dataclass(frozen=True)
class MergeResult:
    merged: bool
    conflict: bool
    message: str


def branch_safe(name: str) -> str:
    """A git-ref-safe form of a task slug or run id (git check-ref-format). A slug that had to
    change gets a short hash of the original, so two slugs never share a branch."""
    safe = _UNSAFE.sub("-", name).strip(".-")
    safe = re.sub(r"\.{2,}", ".", safe)[:60].rstrip(".-")
    if safe.endswith(".lock"):
        safe = safe[:-5] + "-lock"
    if safe != name or not safe:
        safe = f"{safe or 'task'}-{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return safe


def _place(git: Git, repo: Path, run_id: str, task_slug: str) -> tuple[Path, Path, str]:
    top = git.toplevel(repo)
    safe = branch_safe(task_slug)
    return (top, top / ".ralph" / "worktrees" / branch_safe(run_id) / safe,
            f"ralph/{branch_safe(run_id)}/{safe}")


def planned(repo: Path, run_id: str, task_slug: str, base_branch: str, *,
            env: Mapping[str, str]) -> Worktree:
    """The worktree `create` makes for this task (nothing is created): the run state names it
    before it exists (write-ahead, so a recovery looks at it whatever happened next)."""
    top, path, branch = _place(Git(env), repo, run_id, task_slug)
    return Worktree(top, path, branch, base_branch, task_slug)


def branch_merged(wt: Worktree, *, env: Mapping[str, str]) -> bool | None:
    """None when the task's branch does not exist, True when the run's branch contains it
    (nothing of it left to merge), False when it holds commits the run's branch lacks."""
    git = Git(env)
    if not git.ref_exists(wt.repo, wt.branch):
        return None
    return git.is_ancestor(wt.repo, f"refs/heads/{wt.branch}", wt.base_branch)


def run_branches(repo: Path, run_id: str, *, env: Mapping[str, str]) -> list[str]:
    """Every branch `ralph/<runId>/<task>` of a run (not the kept `<branch>@<n>` ones)."""
    prefix = f"refs/heads/ralph/{branch_safe(run_id)}/"
    git = Git(env)
    refs = git(git.toplevel(repo), "for-each-ref", "--format=%(refname)", prefix)[1].split()
    return [ref[len("refs/heads/"):] for ref in refs if "@" not in ref[len(prefix):]]


def create(repo: Path, run_id: str, task_slug: str, base_branch: str, *,
           env: Mapping[str, str], start: str | None = None) -> Worktree:
    """A fresh worktree on a new branch from the tip of `base_branch`, or from the commit
    `start` (a feature's start point: a reopened pull request's tip). A stale worktree at the
    same place (a killed run) is removed; an existing branch of the same name is deleted when
    it is merged, else renamed to `<branch>@<n>` and kept (previous_branch)."""
    git = Git(env)
    top, path, branch = _place(git, repo, run_id, task_slug)
    if not git.ref_exists(top, base_branch):
        raise UsageError(f"run branch '{base_branch}' does not exist in {top}")
    # Each git call costs tens of ms in the run's serial part (bench/parallel): the stale
    # worktree check only runs when something is at the path; a registration whose directory
    # is gone is overridden by `add -f` (-f never allows a branch checked out twice: -b is new).
    if path.exists():
        for registered, _ in git.worktrees(top):
            if registered == path:
                git(top, "worktree", "remove", "--force", str(path))
        if path.exists():
            shutil.rmtree(path)
        git(top, "worktree", "prune")
    previous = None
    if git.ref_exists(top, branch):
        if git.is_ancestor(top, branch, base_branch):
            git(top, "branch", "-D", branch)
        else:
            previous = git.set_aside(top, branch)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(top, "worktree", "add", "-q", "-f", "-b", branch, str(path), start or base_branch)
    return Worktree(top, path, branch, base_branch, task_slug, previous)


def _advance_base(git: Git, wt: Worktree) -> MergeResult:
    """Fast-forward the run's branch to the task branch, wherever it is checked out."""
    top, base = wt.repo, wt.base_branch
    if not git.is_ancestor(top, base, wt.branch):
        return MergeResult(False, True, f"branch {wt.branch} is not a fast-forward of {base} "
                                        f"({base} moved on); branch kept")
    old = git(top, "rev-parse", f"refs/heads/{base}")[1].strip()
    new = git(top, "rev-parse", f"refs/heads/{wt.branch}")[1].strip()
    if old == new:
        return MergeResult(True, False, f"task {wt.task}: no new commits")
    holders = [p for p, b in git.worktrees(top) if b == base]
    if holders:
        checkout = holders[0]
        if git.dirty(checkout):
            return MergeResult(False, False, f"{checkout} has uncommitted changes to tracked "
                                             f"files; {base} not moved, branch {wt.branch} kept")
        code, out, err = git(checkout, "merge", "--ff-only", "-q", wt.branch, check=False)
        if code != 0:
            return MergeResult(False, True, f"fast-forward of {base} in {checkout} failed: "
                                            f"{(err or out).strip()}; branch {wt.branch} kept")
    else:
        code, _, err = git(top, "update-ref", f"refs/heads/{base}", new, old, check=False)
        if code != 0:
            return MergeResult(False, True, f"{base} moved during the merge: {err.strip()}; "
                                            f"branch {wt.branch} kept")
    return MergeResult(True, False, f"merged {wt.branch} into {base} ({new[:12]})")


def merge_back(wt: Worktree, strategy: str = "rebase", *,
               env: Mapping[str, str]) -> MergeResult:
    """Bring a finished task's commits into the run's branch. Commits only: uncommitted
    changes left in the worktree are not merged (the message says so)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown merge strategy '{strategy}' (known: {', '.join(STRATEGIES)})")
    git = Git(env)
    note = "; uncommitted changes in the worktree were not merged" if (
        wt.path.exists() and git.dirty(wt.path)) else ""
    left = _untracked(git, wt)
    if strategy == "none":
        return MergeResult(False, False, f"branch {wt.branch} left for review{note}{left}")
    if strategy == "rebase" and not git.is_ancestor(wt.repo, wt.base_branch, wt.branch):
        if not wt.path.is_dir():
            return MergeResult(False, True, f"cannot rebase {wt.branch}: its worktree "
                                            f"{wt.path} is gone; branch kept")
        if note:
            return MergeResult(False, True, f"cannot rebase {wt.branch}: the worktree has "
                                            f"uncommitted changes; branch kept")
        failed = git.rebase(wt.path, wt.base_branch)
        if failed is not None:
            files, said = failed
            where = f" in {', '.join(files)}" if files else f": {said[:200]}"
            return MergeResult(False, True, f"rebase of {wt.branch} onto {wt.base_branch} "
                                            f"conflicts{where}; branch kept")
    result = _advance_base(git, wt)
    return MergeResult(result.merged, result.conflict, result.message + note + left)


def _untracked(git: Git, wt: Worktree) -> str:
    """The note for files the session created and never added: they go with the worktree."""
    if not wt.path.is_dir():
        return ""
    out = git(wt.path, "status", "--porcelain", "--untracked-files=all", check=False)[1]
    files = [line[3:] for line in out.splitlines() if line.startswith("?? ")]
    if not files:
        return ""
    shown = ", ".join(files[:5]) + (f" (+{len(files) - 5} more)" if len(files) > 5 else "")
    return f"; untracked files in the worktree were not merged and are gone with it: {shown}"


def keep_stray_head(wt: Worktree, *, env: Mapping[str, str]) -> str | None:
    """The worktree's HEAD left its task branch (detached, another branch, a rebase left
    under way) with commits the task branch lacks: a merge of the branch would leave them on
    no branch, and removing the worktree would lose them. They are kept on branch
    `<task branch>@stray` (an older one set aside as `@stray@n`); the line saying so, or None."""
    git = Git(env)
    if not wt.path.is_dir():
        return None
    code, ref, _ = git(wt.path, "symbolic-ref", "-q", "HEAD", check=False)
    if code == 0 and ref.strip() == f"refs/heads/{wt.branch}":
        return None
    head = git(wt.path, "rev-parse", "-q", "--verify", "HEAD", check=False)[1].strip()
    if not head or git.is_ancestor(wt.repo, head, f"refs/heads/{wt.branch}"):
        return None
    where = f"on branch {ref.strip()[len('refs/heads/'):]}" if code == 0 else "detached"
    keep = f"{wt.branch}@stray"
    git.set_aside(wt.repo, keep)
    git(wt.repo, "branch", keep, head)
    return (f"the session left its worktree off branch {wt.branch} ({where} at {head[:12]}); "
            f"its commits are kept on branch {keep}; branch kept")


def remove(wt: Worktree, *, env: Mapping[str, str]) -> None:
    """Remove the worktree (even with uncommitted changes) and delete its branch only when
    the run's branch contains it."""
    git = Git(env)
    removed = False
    if wt.path.exists():
        removed = git(wt.repo, "worktree", "remove", "--force", str(wt.path), check=False)[0] == 0
        shutil.rmtree(wt.path, ignore_errors=True)
    if not removed:
        git(wt.repo, "worktree", "prune")
    # --is-ancestor fails for a branch that does not exist: nothing to delete then
    if git.is_ancestor(wt.repo, f"refs/heads/{wt.branch}", wt.base_branch):
        git(wt.repo, "branch", "-D", wt.branch, check=False)


def session_env(wt: Worktree, environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """Variables a session in `wt` needs on top of `environ` (ralph.py's, s.9 exports) so its
    task calls reach the run's backlog, not the worktree's: the database of the main checkout
    (a relative RALPH_TASKS_DB is made absolute from ralph.py's `cwd`,
    docs/contract/task-cli.md s.3; a server's URL is passed as it is), and the run's scope branch
    (git would say `ralph/<runId>/<task>` inside the worktree, s.7)."""
    from ralphpy.tasks import store_url
    extra = {}
    db = environ.get("RALPH_TASKS_DB")
    if db and store_url.scheme(db) is not None:
        extra["RALPH_TASKS_DB"] = db
    else:
        extra["RALPH_TASKS_DB"] = str((Path(cwd) / db) if db else wt.repo / ".ralph" / "tasks.db")
    if not environ.get("RALPH_SCOPE_BRANCH"):
        extra["RALPH_SCOPE_BRANCH"] = wt.base_branch
    return extra


def cleanup_run(repo: Path, run_id: str, base_branch: str | None = None, *,
                env: Mapping[str, str]) -> list[Path]:
    """Remove every worktree of a run (after it, or on resume) and prune. With `base_branch`,
    the run's branches it contains are deleted; the others are kept. Returns the paths."""
    git = Git(env)
    top = git.toplevel(repo)
    removed = _remove_under(git, top, top / ".ralph" / "worktrees" / branch_safe(run_id))
    if base_branch:
        prefix = f"refs/heads/ralph/{branch_safe(run_id)}/"
        for ref in git(top, "for-each-ref", "--format=%(refname)", prefix)[1].split():
            branch = ref[len("refs/heads/"):]
            if git.is_ancestor(top, branch, base_branch):
                git(top, "branch", "-D", branch, check=False)
    return removed


# The verify gate's scratch worktrees (its second run) live outside the checkout: test runners
# look for their configuration in the folders above them (vitest, pytest's rootdir), and would
# find the session's own files there. One folder per checkout, at a path the next run finds
# again, so a run killed during the second run leaves nothing behind for long.
def scratch_root(top: Path) -> Path:
    digest = hashlib.sha1(str(Path(top).resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "ralph-verify" / digest


def scratch(repo: Path, commit: str, *, env: Mapping[str, str]) -> Path:
    """A detached worktree of `commit` in the checkout's scratch folder (one at a time: any
    left there by a killed run is removed first)."""
    git = Git(env)
    top = git.toplevel(repo)
    path = scratch_root(top) / commit[:12]
    remove_scratch(top, env=env)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(top, "worktree", "add", "-q", "-f", "--detach", str(path), commit)
    return path


def remove_scratch(top: Path, *, env: Mapping[str, str]) -> list[Path]:
    """Remove the verify gate's scratch worktrees of the checkout `top`, if any (a stat when
    there are none: no git call at a run's start)."""
    root = scratch_root(top)
    return _remove_under(Git(env), Path(top), root) if root.exists() else []


def _remove_under(git: Git, top: Path, root: Path) -> list[Path]:
    """Remove every worktree of `top` under `root`, and root, and prune."""
    removed = [p for p, _ in git.worktrees(top) if root in p.parents]
    for path in removed:
        git(top, "worktree", "remove", "--force", str(path), check=False)
    if root.exists():
        removed += [p for p in root.iterdir() if p not in removed]
        shutil.rmtree(root, ignore_errors=True)
    git(top, "worktree", "prune")
    return removed


__all__ = ["scratch", "remove_scratch", "scratch_root", "Worktree", "MergeResult", "create", "planned", "merge_back", "branch_merged",
           "run_branches", "keep_stray_head", "remove", "cleanup_run", "session_env",
           "branch_safe", "STRATEGIES"]
