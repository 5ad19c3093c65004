"""Owns the git steps of `--sync` on the checkout's working branch: which remote branch it shares
(its upstream, else origin/<branch>) and the start-up check that it can (a repository, a branch,
the remote, no rebase under way); fetching it; rebasing onto it with uncommitted changes kept
(git's --autostash; a stash that does not apply again stays in the stash list); pushing, a
rejection told apart from origin having moved; which commit a rebased one became; keeping the
branch's commits on another branch and resetting it to the remote's. Knows nothing of tasks, of
when each step runs (runner) or of printing; git runs through parallel.git."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy.errors import UsageError
from ralphpy.parallel.git import Git

NETWORK_TIMEOUT_S = 120.0           # a fetch or push from a server that hangs


@dataclass(frozen=True)
class Target:
    top: Path                       # the checkout's top level
    branch: str                     # the working branch
    remote: str                     # origin, unless the branch's upstream is on another remote
    remote_branch: str              # the shared branch on that remote

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.remote}/{self.remote_branch}"

    @property
    def shared(self) -> str:
        """How lines name the shared branch: origin/main."""
        return f"{self.remote}/{self.remote_branch}"


@dataclass(frozen=True)
class Update:
    """What a rebase onto the shared branch did."""

    before: str                     # HEAD before
    after: str                      # HEAD after
    incoming: int = 0               # commits of the shared branch the working branch lacked
    conflict: list[str] | None = None   # conflicting files: aborted, nothing changed
    error: str = ""                 # another failure: aborted, nothing changed
    stash_kept: bool = False        # uncommitted changes did not apply again: in the stash list


@dataclass(frozen=True)
class Push:
    ok: bool
    raced: bool = False             # rejected because the shared branch moved (fetched again)
    detail: str = ""                # git's last line when it failed
    head: str = ""                  # the commit pushed, when ok


def git_for(env: Mapping[str, str]) -> Git:
    # GIT_TERMINAL_PROMPT=0: an unattended run must fail on missing credentials, not wait.
    return Git({**env, "GIT_TERMINAL_PROMPT": "0"})


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no message"


def resolve(cwd: Path, env: Mapping[str, str]) -> Target:
    """The checkout's target, or UsageError (exit 1) naming what is missing and what to do;
    reads only (the start-up check, before anything is written)."""
    git = git_for(env)
    code, out, _ = git(cwd, "rev-parse", "--show-toplevel", check=False)
    if code != 0 or not out.strip():
        raise UsageError(f"--sync needs a git repository: {cwd} is not inside one")
    top = Path(out.strip())
    code, out, _ = git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if code != 0 or not out.strip():
        raise UsageError(f"--sync needs a branch: HEAD is detached in {top}. "
                         "Run: git checkout <branch>")
    branch = out.strip()
    remote = git(top, "config", "--get", f"branch.{branch}.remote", check=False)[1].strip()
    merge = git(top, "config", "--get", f"branch.{branch}.merge", check=False)[1].strip()
    if remote and remote != "." and merge.startswith("refs/heads/"):
        target = Target(top, branch, remote, merge[len("refs/heads/"):])
    else:                           # no upstream, or a local one: origin/<branch>
        target = Target(top, branch, "origin", branch)
    if git(top, "remote", "get-url", target.remote, check=False)[0] != 0:
        raise UsageError(f'--sync needs the git remote "{target.remote}": {top} has none. '
                         f"Run: git remote add {target.remote} <url>")
    if _rebasing(git, top):
        raise UsageError(f"--sync cannot start: a rebase is under way in {top}. "
                         "Run: git rebase --continue or git rebase --abort")
    return target


def _rebasing(git: Git, top: Path) -> bool:
    return any((top / git(top, "rev-parse", "--git-path", state)[1].strip()).exists()
               for state in ("rebase-merge", "rebase-apply"))


def left(git: Git, t: Target) -> str | None:
    """How a session left the checkout so that it cannot sync (HEAD off the working branch,
    a rebase under way), or None: every step here works on `t.branch`, and a push of it
    would not carry commits made elsewhere. One git call: it runs around every session."""
    out = git(t.top, "rev-parse", "--symbolic-full-name", "HEAD", "--git-path", "rebase-merge",
              "--git-path", "rebase-apply", check=False)[1].splitlines()
    ref, rebasing = (out[0] if out else ""), [p for p in out[1:] if (t.top / p).exists()]
    if rebasing:
        return "a rebase is under way"
    if not ref.startswith("refs/heads/"):
        return "HEAD is detached"
    ref = ref[len("refs/heads/"):]
    return None if ref == t.branch else f"HEAD is on branch {ref}"


def head(git: Git, t: Target) -> str:
    return git(t.top, "rev-parse", "HEAD")[1].strip()


def remote_head(git: Git, t: Target) -> str | None:
    """The shared branch as last fetched; None when it was never fetched (not on the remote)."""
    code, out, _ = git(t.top, "rev-parse", "-q", "--verify", f"{t.tracking}^{{commit}}",
                       check=False)
    return out.strip() if code == 0 else None


def ahead(git: Git, t: Target, since: str | None) -> int:
    """Commits of the working branch the shared branch lacks; `since` is the shared branch as
    the caller read it (remote_head), None before it exists (then all of them)."""
    span = f"{since}..HEAD" if since else "HEAD"
    return int(git(t.top, "rev-list", "--count", span)[1].strip() or 0)


def unpushed(git: Git, t: Target, since: str | None) -> list[str]:
    """The full ids of the commits `ahead` counts, oldest first."""
    span = f"{since}..HEAD" if since else "HEAD"
    return git(t.top, "rev-list", "--reverse", span)[1].split()


def fetch(git: Git, t: Target) -> str:
    """Fetch the shared branch into its tracking ref; "" when done (or when the remote has
    no such branch yet: the first push makes it), else git's last line."""
    code, out, err = git(t.top, "fetch", "-q", "--no-tags", t.remote,
                         f"+refs/heads/{t.remote_branch}:{t.tracking}", check=False,
                         timeout=NETWORK_TIMEOUT_S)
    if code == 0 or "couldn't find remote ref" in err:
        return ""
    return _last_line(err or out)


def rebase(git: Git, t: Target) -> Update:
    """Rebase the working branch onto the shared branch as last fetched, uncommitted changes
    stashed around it. Nothing to do when the shared branch is already in it."""
    before = head(git, t)
    onto = remote_head(git, t)
    if onto is None or git.is_ancestor(t.top, onto, before):
        return Update(before, before)
    incoming = int(git(t.top, "rev-list", "--count", f"HEAD..{onto}")[1].strip() or 0)
    failed = git.rebase(t.top, t.tracking, "--autostash")
    if failed is not None:
        files, said = failed
        return Update(before, before, incoming, conflict=files or None,
                      error="" if files else _last_line(said))
    return Update(before, head(git, t), incoming, stash_kept=_stash_conflict(git, t))


def _stash_conflict(git: Git, t: Target) -> bool:
    """After --autostash: changes that did not apply again on the new commits leave conflict
    markers in the tree and stay in the stash list (git says so). The tree goes back to the
    commits, so the next session starts clean; the changes are not lost."""
    if not git.unmerged(t.top):
        return False
    git(t.top, "reset", "-q", "--hard")
    return True


def push(git: Git, t: Target) -> Push:
    """Push the working branch to the shared one (never forced). A rejection is a race when a
    fetch then shows the shared branch holding commits the working branch lacks (it moved
    since the last rebase); anything else is a failure."""
    code, out, err = git(t.top, "push", "-q", t.remote,
                         f"refs/heads/{t.branch}:refs/heads/{t.remote_branch}", check=False,
                         timeout=NETWORK_TIMEOUT_S)
    if code == 0:
        pushed = head(git, t)
        git(t.top, "update-ref", t.tracking, pushed, check=False)
        return Push(True, head=pushed)
    # git's last line only says "failed to push some refs"; its "! [rejected] ..." line why
    said = [line.strip().lstrip("! ") for line in (err or out).splitlines() if "rejected]" in line]
    detail = said[0][:200] if said else _last_line(err or out)
    if fetch(git, t) == "":
        now = remote_head(git, t)
        if now is not None and not git.is_ancestor(t.top, now, "HEAD"):
            return Push(False, raced=True, detail=detail)
    return Push(False, detail=detail)


def keep_and_reset(git: Git, t: Target, keep: str) -> tuple[str | None, Update]:
    """Keep the working branch's commits on branch `keep` (an older `keep` is set aside as
    `keep@n`), then reset the working branch to the shared one, uncommitted changes stashed
    around the reset. Returns (the name an older branch was given, the reset)."""
    older = git.set_aside(t.top, keep)
    git(t.top, "branch", keep, "HEAD")
    before = head(git, t)
    # `rebase --onto <shared> HEAD` replays HEAD..HEAD, nothing: the branch lands on the
    # shared branch, with rebase's --autostash and its care for untracked files.
    failed = git.rebase(t.top, "HEAD", "--autostash", "--onto", t.tracking)
    if failed is not None:
        return older, Update(before, before, error=_last_line(failed[1]))
    return older, Update(before, head(git, t), stash_kept=_stash_conflict(git, t))


__all__ = ["Target", "Update", "Push", "resolve", "git_for", "head", "remote_head", "ahead",
           "unpushed", "fetch", "rebase", "push", "keep_and_reset", "left",
           "NETWORK_TIMEOUT_S"]
