"""Owns what a canary run of the tests keeps (a pytest plugin, `-p canary.record`): with
`RALPH_CANARY_EVENTS` set, the session logs each test's run left (`<tmp_path>/repo/.ralph/
logs/*.jsonl`, the agent CLI's raw stdout, ralph-cli.md s.20.3) are copied, in the order the
sessions ran, to `$RALPH_CANARY_EVENTS/<test id>/`. Knows nothing of what the events mean
(compare.py)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest


def record_dir(nodeid: str) -> str:
    """A test's node id as one directory name (the same on every run of the same test)."""
    return re.sub(r"[^\w.-]", "_", nodeid)[-200:]


@pytest.fixture(autouse=True)
def _canary_record(request: pytest.FixtureRequest, tmp_path: Path):
    yield
    out = os.environ.get("RALPH_CANARY_EVENTS")
    logs = tmp_path / "repo" / ".ralph" / "logs"
    if not out or not logs.is_dir():
        return
    dest = Path(out) / record_dir(request.node.nodeid)
    dest.mkdir(parents=True, exist_ok=True)
    ordered = sorted(logs.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    for i, log in enumerate(ordered):
        shutil.copyfile(log, dest / f"{i:04d}.jsonl")


__all__ = ["record_dir"]
