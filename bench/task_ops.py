#!/usr/bin/env python3
"""Whole-process timings of the task CLI (issue 2, "Benchmark").

Times `peek -n 10`, `claim`, `fail`, `plan-status`, `list --status active --markdown` and
`list --all --markdown` at 100, 1,000 and 10,000 tasks (median of --runs runs), for
scripts/task and, when RALPH_SH_TASK names ralph.sh's bash `lib/task` (the file, or a
checkout holding lib/task), for it too on the same database, printing ratios. Then checks
the targets: every command < 60 ms at 10,000 tasks, `list --all --markdown` < 1 s.

    python3 bench/task_ops.py [--sizes 100,1000,10000] [--runs 5] [--python PY]

The database is built with one plan-sync of generated JSONL (priorities, categories, specs,
a dependency chain every tenth task) plus a few active tasks. Bash timings of
`list --all --markdown` above 100 tasks take minutes; set RALPH_SH_FULL=1 to include them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "scripts" / "task"
TARGET_MS = 60.0
LIST_ALL_TARGET_MS = 1000.0
COMMANDS = ("peek -n 10", "claim", "fail", "plan-status", "list --status active --markdown",
            "list --all --markdown")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "GIT_"))}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C.UTF-8", "RALPH_AGENT_ID": "bench"})
    return env


def _make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", "https://github.com/bench/repo.git"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=_env())
    return repo


def _jsonl(n: int) -> str:
    lines = []
    for i in range(n):
        task = {"id": f"task-{i:05}", "t": f"Task number {i} with a realistic title",
                "d": "A description that is never rendered.", "p": i % 4, "cat": ("feat", "fix", "test")[i % 3],
                "spec": f"specs/spec-{i % 20}.md", "steps": ["write the code", "write the test"]}
        if i % 10 and i > 0:
            task["deps"] = [f"task-{i - 1:05}"]
        lines.append(json.dumps(task))
    return "\n".join(lines) + "\n"


def _run(argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    return (time.perf_counter() - started) * 1000, proc


def _time(cli: list[str], repo: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Median milliseconds per command; claim and fail pair up so the backlog is restored."""
    result = {}
    for command in ("peek -n 10", "plan-status", "list --status active --markdown", "list --all --markdown"):
        result[command] = statistics.median(_run(cli + command.split(), repo, env)[0] for _ in range(runs))
    claims, fails, claimed = [], [], []
    for _ in range(runs):
        ms, proc = _run(cli + ["claim"], repo, env)
        claims.append(ms)
        if proc.returncode == 0:
            claimed.append(proc.stdout.splitlines()[0].split()[-1])
    for slug in claimed:
        fails.append(_run(cli + ["fail", slug, "--reason", "bench"], repo, env)[0])
    result["claim"] = statistics.median(claims)
    result["fail"] = statistics.median(fails) if fails else float("nan")
    return result


def _ralph_sh() -> list[str] | None:
    path = os.environ.get("RALPH_SH_TASK", "")
    if not path:
        return None
    candidate = Path(path)
    if candidate.is_dir():
        candidate = candidate / "lib" / "task"
    return ["bash", str(candidate)] if candidate.is_file() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs scripts/task")
    opts = parser.parse_args()
    ours = [opts.python, str(TASK)]
    theirs = _ralph_sh()
    misses = []
    print(f"task CLI whole-process timings, median of {opts.runs} runs (ms)")
    for size in (int(s) for s in opts.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            repo = _make_repo(Path(tmp))
            env = _env()
            ms, proc = _run(ours + ["plan-sync"], repo, env, _jsonl(size))
            assert proc.returncode == 0, proc.stderr
            for i in range(0, 30, 10):  # a few tasks under a valid lease
                _run(ours + ["claim", f"task-{i:05}", "--agent", "other"], repo, env)
            print(f"\n{size} tasks (plan-sync build: {ms:.0f} ms)")
            mine = _time(ours, repo, env, opts.runs)
            other = None
            if theirs:
                env_sh = dict(env)
                if size > 100 and not os.environ.get("RALPH_SH_FULL"):
                    print("  (ralph.sh list --all --markdown skipped above 100 tasks; RALPH_SH_FULL=1 to run)")
                other = _time(theirs, repo, env_sh, opts.runs) if size <= 100 or os.environ.get("RALPH_SH_FULL") \
                    else {c: v for c, v in _time_no_list_all(theirs, repo, env_sh, opts.runs).items()}
            print(f"  {'command':34} {'ours':>9}" + (f" {'ralph.sh':>10} {'ratio':>8}" if other else ""))
            for command in COMMANDS:
                line = f"  {command:34} {mine[command]:9.1f}"
                if other:
                    ref = other.get(command)
                    line += (f" {ref:10.1f} {ref / mine[command]:7.1f}x" if ref else f" {'-':>10} {'-':>8}")
                print(line)
                limit = LIST_ALL_TARGET_MS if command == "list --all --markdown" else TARGET_MS
                if size >= 10000 and mine[command] >= limit:
                    misses.append(f"{command} at {size}: {mine[command]:.1f} ms >= {limit:.0f} ms")
    print("\ntargets at 10,000 tasks: every command < 60 ms, list --all --markdown < 1000 ms")
    print("  all met" if not misses else "  missed: " + "; ".join(misses))
    return 0


def _time_no_list_all(cli, repo, env, runs):
    result = {}
    for command in ("peek -n 10", "plan-status", "list --status active --markdown"):
        result[command] = statistics.median(_run(cli + command.split(), repo, env)[0] for _ in range(runs))
    claimed, claims, fails = [], [], []
    for _ in range(runs):
        ms, proc = _run(cli + ["claim"], repo, env)
        claims.append(ms)
        if proc.returncode == 0:
            claimed.append(proc.stdout.splitlines()[0].split()[-1])
    for slug in claimed:
        fails.append(_run(cli + ["fail", slug, "--reason", "bench"], repo, env)[0])
    result["claim"] = statistics.median(claims)
    result["fail"] = statistics.median(fails) if fails else None
    return result


if __name__ == "__main__":
    sys.exit(main())
