#!/usr/bin/env python3
"""bench/github: what a whole-process `peek` over `--tasks github` costs when nothing changed,
at 10 issues and at many, against the tests' stand-in of GitHub's REST API (tests/ghstandin.py,
on 127.0.0.1), each issue with a body of about a kilobyte. The first read lists every issue;
after it, a peek asks what changed since with the ETag of its last answer and reads from the
cache only the issues it shows (decision 0047), so the target is the same cost at any size:
one request (a 304) and a ratio of at most 1.5, judged on each process's CPU time (its minimum
over the peeks: the wall time of a machine shared with other work measures the load, and the
stand-in's own work is in this process). The embedded store's `peek -n 10` in the same run
shows what the task CLI costs without GitHub. Run in one process, so the ratio compares like
with like.

    python bench/github.py [--issues 2000] [--peeks 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "lib"), str(ROOT / "tests")]

import ghstandin  # noqa: E402

RATIO_TARGET = 1.5
BUDGET_MS = 30          # every task command as an agent calls it, on a quiet machine
BODY = ("Steps to reproduce:\n\n1. Run `widgets --parse input.txt`\n2. See the traceback\n\n"
        "```\nTraceback (most recent call last):\n  File \"parse.py\", line 3\n```\n") * 6
ARGV = [sys.executable, "-S", str(ROOT / "scripts" / "task"), "peek", "-n", "10"]


def _timed(argv: list[str], cwd: Path, env: dict, peeks: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) of each run of argv."""
    wall, cpu = [], []
    for _ in range(peeks):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0, argv
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
    return wall, cpu


def measure(issues: int, peeks: int) -> tuple[tuple[list[float], list[float]], float]:
    """((wall ms, CPU ms) of each peek, requests per peek) once the cache is primed."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        bare, repo = base / "remote.git", base / "repo"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        standin = ghstandin.Standin(bare)
        try:
            for n in range(issues):
                standin.add_issue(f"Work item {n}", BODY, labels=("ralph",))
            env = {**os.environ, "GITHUB_API_URL": standin.url, "GH_TOKEN": ghstandin.TOKEN,
                   "RALPH_TASKS": "github:acme/widgets", "RALPH_TASKS_ROOT": str(repo)}
            for _ in range(2):                        # the full listing, then the first since
                subprocess.run(ARGV, cwd=repo, env=env, check=True, capture_output=True)
            before = len(standin.requests)
            times = _timed(ARGV, repo, env, peeks)
            return times, (len(standin.requests) - before) / peeks
        finally:
            standin.close()


def embedded(peeks: int) -> tuple[list[float], list[float]]:
    """The embedded store's peek over 10 tasks: the task CLI's cost without GitHub."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RALPH_")}
        for args in (["init", "-q"], ["remote", "add", "origin", "https://github.com/a/b"],
                     ["commit", "-q", "--allow-empty", "-m", "start"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        for n in range(10):
            subprocess.run([*ARGV[:3], "create", f"t{n}", f"Task {n}"], cwd=repo, env=env,
                           check=True, capture_output=True)
        return _timed(ARGV, repo, env, peeks)


def _ms(times: tuple[list[float], list[float]]) -> str:
    wall, cpu = times
    return (f"wall {statistics.median(wall):6.1f} ms (min {min(wall):5.1f}), "
            f"CPU min {min(cpu):5.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--peeks", type=int, default=20)
    args = parser.parse_args()
    small, small_req = measure(10, args.peeks)
    big, big_req = measure(args.issues, args.peeks)
    plain = embedded(args.peeks)
    ratio = min(big[1]) / min(small[1])
    print(f"peek, nothing changed:   10 issues {_ms(small)}, {small_req:.1f} requests")
    print(f"peek, nothing changed: {args.issues:>4} issues {_ms(big)}, {big_req:.1f} requests"
          f"  (CPU ratio {ratio:.2f}; wall, median "
          f"{statistics.median(big[0]) / statistics.median(small[0]):.2f})")
    print(f"embedded store's peek:   10 tasks  {_ms(plain)}")
    one_request = small_req == big_req == 1.0
    print(f"targets: one request per peek at both sizes: {'OK' if one_request else 'MISSED'}; "
          f"ratio {args.issues} vs 10 issues <= {RATIO_TARGET}: "
          f"{'OK' if ratio <= RATIO_TARGET else 'MISSED'}; whole process < {BUDGET_MS} ms on a "
          f"quiet machine: {min(small[0]):.1f} ms wall at best "
          f"({min(small[0]) - min(plain[0]):+.1f} ms beside the embedded store)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
