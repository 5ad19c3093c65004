"""Owns what `--pr` needs before any write (a GitHub repository and a token GitHub takes, the
base branch, no --parallel or --sync beside it) and building its runner. UsageError or
AuthFailed: one line, nothing written."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Mapping

from ralphpy import workspace
from ralphpy.backlog import readonly
from ralphpy.errors import UsageError
from ralphpy.github import client as api
from ralphpy.github import target as targets
from ralphpy.parallel.git import Git
from ralphpy.pulls.runner import Runner


def _target(env: Mapping[str, str], cwd: Path) -> targets.Target:
    tasks = env.get("RALPH_TASKS", "")
    return targets.parse(tasks if targets.is_github(tasks) else "github", env, cwd)


def check(opts, env: Mapping[str, str], cwd: Path) -> None:
    if opts.parallel > 1 and opts.source("merge") != "default" and opts.merge != "none":
        raise UsageError(f"--pr with --parallel: the pull request is the merge, so --merge "
                         f"{opts.merge} cannot apply (leave it out, or --merge none)")
    if opts.sync:
        raise UsageError("--pr and --sync both push: choose one")
    if not workspace.current_branch(env):
        raise UsageError("--pr needs a checked-out branch: the base of the pull requests")
    if Git(env)(cwd, "remote", "get-url", "origin", check=False)[0] != 0:
        raise UsageError("--pr pushes each task's branch to the remote 'origin', which this "
                         "checkout does not have")
    client = api.Client(_target(env, cwd), env)
    client.rest("GET", client.repo_path)            # the repository and the token, at once


def runner(opts, env: Mapping[str, str], cwd: Path, ralph_dir: Path, task_call,
           agent: str, say: Callable[[str, dict], None], *, ours: bool) -> Runner:
    top = Path(Git(env)(cwd, "rev-parse", "--show-toplevel")[1].strip())
    return Runner(api.Client(_target(env, cwd), env), Git(env), top,
                  workspace.current_branch(env), task_call, agent, say,
                  ralph_dir / "pulls.json", wait_checks=opts.pr_wait == "checks",
                  merge=opts.pr_merge, poll=opts.pr_poll,
                  closes_issues=targets.is_github(env.get("RALPH_TASKS", "")),
                  ours=ours, index=functools.partial(readonly.export_records, environ=env,
                                                     cwd=cwd) if ours else None)


__all__ = ["check", "runner"]
