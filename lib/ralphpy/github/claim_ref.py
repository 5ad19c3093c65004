"""Owns the claim of an issue that holds across machines (docs/decisions/0048): the ref
`refs/ralph/claims/<issue>`, created through `POST /git/refs` (GitHub answers 422 when it
exists, so of any number of claimers exactly one creates it) and deleted when the claim ends.
The ref points at a commit the repository has (the default branch's head, looked up once and
kept in a file); it is outside refs/heads/, so no branch appears. Does not own the issue's
labels or assignee (sources/github_issues.py) nor the requests (client.py)."""
from __future__ import annotations

from pathlib import Path

from ralphpy import atomic_file
from ralphpy.github.client import Client, GitHubError

NAMESPACE = "refs/ralph/claims/"
_TAKEN = "Reference already exists"


def name(number: str) -> str:
    return NAMESPACE + number


def _base(client: Client, saved: Path | None, fresh: bool) -> str:
    """A commit the repository has: the default branch's head (2 requests), else the one kept
    in `saved` from an earlier claim (none). A commit once on the default branch stays."""
    if saved is not None and not fresh:
        try:
            sha = saved.read_text(encoding="utf-8").strip()
        except OSError:
            sha = ""
        if len(sha) == 40:
            return sha
    _, _, repo = client.rest("GET", client.repo_path)
    branch = (repo or {}).get("default_branch") or "main"
    status, _, ref = client.rest("GET", f"{client.repo_path}/git/ref/heads/{branch}",
                                 ok=(404, 409))
    sha = ((ref or {}).get("object") or {}).get("sha") if status == 200 else None
    if not sha:
        # GitHub answers 409 "Git Repository is empty." (404 for a missing branch): a ref
        # needs a commit, so there is nothing to claim with until one is pushed.
        raise GitHubError(f"GitHub: {client.target.full_name} has no commit on {branch}: a "
                          "claim is a ref at a commit; push a first commit")
    if saved is not None:
        atomic_file.write_atomic(saved, sha.encode() + b"\n")
    return sha


def take(client: Client, number: str, saved: Path | None) -> bool:
    """Create the issue's claim ref: True when this call created it, False when it exists
    (another claimer holds the issue). One request, two when the kept commit is gone."""
    for fresh in (False, True):
        sha = _base(client, saved, fresh)
        status, _, data = client.rest("POST", f"{client.repo_path}/git/refs",
                                      body={"ref": name(number), "sha": sha}, ok=(422,))
        if status != 422:
            return True
        message = (data or {}).get("message", "") if isinstance(data, dict) else ""
        if message == _TAKEN:
            return False
    raise GitHubError(f"GitHub POST {client.repo_path}/git/refs: 422 {message}")


def give_back(client: Client, number: str) -> None:
    """Delete the claim ref; one already gone (422 "Reference does not exist") is fine."""
    client.rest("DELETE", f"{client.repo_path}/git/{name(number)}", ok=(422,))


__all__ = ["NAMESPACE", "name", "take", "give_back"]
