"""plan-status's counts (docs/contract/task-cli.md s.9.2) on backlogs of random statuses,
dependencies and holds, against the same counts made from `_export-json` in Python: the blocked
tasks are found by walking the dependencies and holds, which must give what testing every task
gave."""
from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path

import pytest

from ralphpy.tasks import cli


def call(environ, *argv: str, stdin: str = "", may_refuse: bool = False) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err,
                    environ=environ)
    assert code == 0 or may_refuse, (argv, err.getvalue())
    return out.getvalue() if code == 0 else ""


def expected(environ) -> str:
    tasks = [json.loads(line) for line in call(environ, "_export-json").splitlines()]
    status = {t["id"]: t["status"] for t in tasks}
    counts = dict.fromkeys(("open", "active", "done", "blocked", "deleted"), 0)
    for t in tasks:
        blocked = any(status.get(dep) not in ("done", "deleted") for dep in t["deps"]) or (
            t["held"] is not None and t["status"] in ("open", "active"))
        if blocked:
            counts["blocked"] += 1
        if not (blocked and t["status"] in ("open", "active")):
            counts[t["status"]] += 1
    return ", ".join(f"{n} {name}" for name, n in counts.items()) + "\n"


@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=lambda s: f"seed-{s}")
def test_plan_status_counts_what_a_walk_over_every_task_counts(git_repo: Path, base_env, seed):
    old = os.getcwd()
    os.chdir(git_repo)
    try:
        rnd = random.Random(seed)
        env = {**base_env, "RALPH_AGENT_ID": "w1"}
        n = 40
        lines = "".join(json.dumps({"id": f"t{i}", "t": f"T{i}", "deps": [
            f"t{j}" for j in rnd.sample(range(i), min(i, rnd.choice((0, 0, 1, 2))))]}) + "\n"
            for i in range(n))
        call(env, "plan-sync", stdin=lines)
        for i in rnd.sample(range(n), 25):
            slug, action = f"t{i}", rnd.choice(("done", "active", "delete", "hold", "open"))
            if action in ("done", "active"):
                if not call(env, "claim", slug, may_refuse=True):
                    continue                             # blocked, or held
                if action == "done":
                    call(env, "done", slug)
            elif action == "delete":
                call(env, "delete", slug)
            elif action == "hold":
                call(env, "_hold", slug, "--reason", "stuck")
        assert call(env, "plan-status") == expected(env)
    finally:
        os.chdir(old)
