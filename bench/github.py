#!/usr/bin/env python3
"""bench/github: what a `peek` over `--tasks github` costs when nothing changed, at 10 issues
and at many, against the tests' stand-in of GitHub's REST API (tests/ghstandin.py, on
127.0.0.1). The first read lists every issue; after it, a peek asks what changed since with
the ETag of its last answer, so the target is the same cost at any size: one request (a 304)
and about the same milliseconds (ratio near 1). Run in one process, so the ratio compares like
with like.

    python bench/github.py [--issues 2000] [--peeks 10]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "lib"), str(ROOT / "tests")]

import ghstandin  # noqa: E402


def measure(issues: int, peeks: int) -> tuple[float, float]:
    """(ms per peek, requests per peek) once the cache is primed."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        bare, repo = base / "remote.git", base / "repo"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        standin = ghstandin.Standin(bare)
        try:
            for n in range(issues):
                standin.add_issue(f"Work item {n}", "", labels=("ralph",))
            env = {**os.environ, "GITHUB_API_URL": standin.url, "GH_TOKEN": ghstandin.TOKEN,
                   "RALPH_TASKS": "github:acme/widgets", "RALPH_TASKS_ROOT": str(repo)}
            argv = [sys.executable, "-S", str(ROOT / "scripts" / "task"), "peek", "-n", "10"]
            for _ in range(2):                        # the full listing, then the first since
                subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
            before = len(standin.requests)
            start = time.perf_counter()
            for _ in range(peeks):
                subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
            elapsed = time.perf_counter() - start
            return elapsed * 1000 / peeks, (len(standin.requests) - before) / peeks
        finally:
            standin.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--peeks", type=int, default=10)
    args = parser.parse_args()
    small_ms, small_req = measure(10, args.peeks)
    big_ms, big_req = measure(args.issues, args.peeks)
    print(f"peek, nothing changed:   10 issues {small_ms:7.1f} ms, {small_req:.1f} requests")
    print(f"peek, nothing changed: {args.issues:>4} issues {big_ms:7.1f} ms, {big_req:.1f} "
          f"requests  (ratio {big_ms / small_ms:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
