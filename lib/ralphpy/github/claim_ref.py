"""Owns the claim of an issue that holds across machines (docs/decisions/0048): the ref
`refs/ralph/claims/<issue>`, created through `POST /git/refs` (GitHub answers 422 when it
exists, so of any number of claimers exactly one creates it) and deleted when the claim ends.
The ref points at a commit made for the claim (its message names the claimer), a child of the
default branch's head, so each claim has its own commit: a clone keeps the one it made and
tells its own claim from a later one of another machine. The ref is outside refs/heads/: no
branch appears. Does not own the issue's labels or assignee (sources/github_issues.py) nor
the requests (client.py)."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ralphpy import atomic_file
from ralphpy.github.client import Client, GitHubError

NAMESPACE = "refs/ralph/claims/"
_TAKEN = "Reference already exists"


def name(number: str) -> str:
    return NAMESPACE + number


def _base(client: Client, saved: Path | None, fresh: bool) -> tuple[str, str]:
    """(commit, its tree): the default branch's head (2 requests), else the pair kept in
    `saved` from an earlier claim (none). A commit once on the default branch stays."""
    if saved is not None and not fresh:
        with contextlib.suppress(OSError, ValueError):
            sha, tree = saved.read_text(encoding="utf-8").split()
            return sha, tree
    _, _, repo = client.rest("GET", client.repo_path)
    branch = (repo or {}).get("default_branch") or "main"
    status, _, head = client.rest("GET", f"{client.repo_path}/commits/{branch}",
                                  ok=(404, 409, 422))
    sha = (head or {}).get("sha") if status == 200 else None
    tree = (((head or {}).get("commit") or {}).get("tree") or {}).get("sha") if sha else None
    if not sha or not tree:
        # GitHub answers 409 "Git Repository is empty." (404, 422 for a missing branch): a
        # ref needs a commit, so there is nothing to claim with until one is pushed.
        raise GitHubError(f"GitHub: {client.target.full_name} has no commit on {branch}: a "
                          "claim is a ref at a commit; push a first commit")
    if saved is not None:
        atomic_file.write_atomic(saved, f"{sha} {tree}\n".encode())
    return sha, tree


def _claim_commit(client: Client, number: str, saved: Path | None) -> str:
    """A commit of the base's tree whose message names this claim: unique to it."""
    import secrets                  # only a claim needs these two: every command's start
    import socket                   # paid for them otherwise (bench/github.py)
    who = f"{socket.gethostname()} pid {os.getpid()} at {time.time():.6f} {secrets.token_hex(4)}"
    for fresh in (False, True):
        sha, tree = _base(client, saved, fresh)
        status, _, made = client.rest("POST", f"{client.repo_path}/git/commits", body={
            "message": f"ralph claim #{number}\n\n{who}\n", "tree": tree, "parents": [sha]},
            ok=(422,))
        if status != 422:
            return made["sha"]
    raise GitHubError(f"GitHub POST {client.repo_path}/git/commits: 422 "
                      f"{(made or {}).get('message', '')}".rstrip())


def take(client: Client, number: str, folder: Path | None) -> bool:
    """Create the issue's claim ref: True when this call created it (its commit kept in
    folder/<number>), False when the ref exists (another claimer holds the issue). Two
    requests; the first claim of a clone reads the default branch's head too (folder/base)."""
    base = folder / "base" if folder is not None else None
    commit = _claim_commit(client, number, base)
    status, _, data = client.rest("POST", f"{client.repo_path}/git/refs",
                                  body={"ref": name(number), "sha": commit}, ok=(422,))
    if status != 422:
        if folder is not None:
            atomic_file.write_atomic(folder / number, commit.encode() + b"\n")
        return True
    message = data.get("message", "") if isinstance(data, dict) else ""
    if message == _TAKEN:
        return False
    raise GitHubError(f"GitHub POST {client.repo_path}/git/refs: 422 {message}".rstrip())


def still_ours(client: Client, number: str, folder: Path | None) -> bool:
    """False when this clone claimed the issue and another claim holds it now (a person freed
    this clone's claim and another machine took the issue): its release must not touch it,
    and this clone's note of its claim is dropped. True otherwise, also for a call that never
    claimed it here (a person freeing a dead machine's claim). One request when this clone
    claimed it, else none."""
    try:
        mine = (folder / number).read_text(encoding="utf-8").strip() if folder else ""
    except OSError:
        mine = ""
    if not mine:
        return True
    status, _, data = client.rest("GET", f"{client.repo_path}/git/ref/{name(number)[5:]}",
                                  ok=(404,))
    now = ((data or {}).get("object") or {}).get("sha") if status == 200 else None
    if now in (None, mine):
        return True
    with contextlib.suppress(FileNotFoundError):
        (folder / number).unlink()
    return False


def give_back(client: Client, number: str, folder: Path | None) -> None:
    """Delete the claim ref (one already gone, 422 "Reference does not exist", is fine) and
    this clone's note of it."""
    client.rest("DELETE", f"{client.repo_path}/git/{name(number)}", ok=(422,))
    if folder is not None:
        with contextlib.suppress(FileNotFoundError):
            (folder / number).unlink()


__all__ = ["NAMESPACE", "name", "take", "still_ours", "give_back"]
