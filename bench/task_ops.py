#!/usr/bin/env python3
"""Whole-process timings of the task CLI ("Benchmark").

Times `peek -n 10`, `claim`, `fail`, `plan-status`, `list --status active --markdown` and
`list --all --markdown` at 100, 1,000 and 10,000 tasks (median of --runs runs), for
scripts/task and, when RALPH_SH_TASK names ralph.sh's bash `lib/task` (the file, or a
checkout holding lib/task), for it too on the same database, printing ratios. Then checks
the targets: every command < 60 ms at 10,000 tasks, `list --all --markdown` < 1 s.

    python3 bench/task_ops.py [--sizes 100,1000,10000] [--runs 5] [--python PY]

Wall time is what the targets are about; CPU time (user + sys of the process and its git
children) is printed too because it barely moves when the machine is busy. The interpreter's
own start-up (`python -c pass`) is measured in the same run as the floor no CLI can beat.
The database is built with one plan-sync of generated JSONL (priorities, categories, specs,
steps, a dependency chain broken every tenth task) plus a few active tasks. Bash timings of
`list --all --markdown` above 100 tasks take minutes; set RALPH_SH_FULL=1 to include them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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
READS = ("peek -n 10", "plan-status", "list --status active --markdown", "list --all --markdown")
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


def jsonl(n: int) -> str:
    lines = []
    for i in range(n):
        task = {"id": f"task-{i:05}", "t": f"Task number {i} with a realistic title",
                "d": "A description that is never rendered.", "p": i % 4,
                "cat": ("feat", "fix", "test")[i % 3], "spec": f"specs/spec-{i % 20}.md",
                "steps": ["write the code", "write the test"]}
        if i % 10:
            task["deps"] = [f"task-{i - 1:05}"]
        lines.append(json.dumps(task))
    return "\n".join(lines) + "\n"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None):
    """-> (wall ms, cpu ms, CompletedProcess)"""
    cpu, started = _cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    return (time.perf_counter() - started) * 1000, (_cpu() - cpu) * 1000, proc


def _median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    if not samples:
        return float("nan"), float("nan")
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def _time(cli: list[str], repo: Path, env: dict[str, str], runs: int, skip_list_all: bool = False) -> dict:
    """command -> (median wall ms, median cpu ms); claims are failed again, restoring the backlog."""
    result = {}
    for command in READS:
        if skip_list_all and command == "list --all --markdown":
            continue
        result[command] = _median([_run(cli + command.split(), repo, env)[:2] for _ in range(runs)])
    claims, fails, claimed = [], [], []
    for _ in range(runs):
        wall, cpu, proc = _run(cli + ["claim"], repo, env)
        claims.append((wall, cpu))
        if proc.returncode == 0:
            claimed.append(proc.stdout.splitlines()[0].split()[-1])
    for slug in claimed:
        fails.append(_run(cli + ["fail", slug, "--reason", "bench"], repo, env)[:2])
    result["claim"], result["fail"] = _median(claims), _median(fails)
    return result


def _ralph_sh() -> list[str] | None:
    path = os.environ.get("RALPH_SH_TASK", "")
    if not path:
        return None
    candidate = Path(path)
    if candidate.is_dir():
        candidate = candidate / "lib" / "task"
    if not candidate.is_file():
        print(f"RALPH_SH_TASK={path}: no lib/task there; timing ours only")
        return None
    return ["bash", str(candidate)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs scripts/task")
    opts = parser.parse_args()
    # -S: as scripts/task's shebang (`env -S python3 -S`) starts it, so the interpreter that
    # runs it is the only thing --python changes.
    ours, theirs = [opts.python, "-S", str(TASK)], _ralph_sh()
    misses = []
    bare = _median([_run([opts.python, "-S", "-c", "pass"], ROOT, _env())[:2] for _ in range(opts.runs)])
    print(f"task CLI whole-process timings, median of {opts.runs} runs, ms")
    print(f"interpreter start-up alone ({opts.python} -S -c pass): wall {bare[0]:.1f}, cpu {bare[1]:.1f}")
    for size in (int(s) for s in opts.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            repo, env = _make_repo(Path(tmp)), _env()
            wall, _, proc = _run(ours + ["plan-sync"], repo, env, jsonl(size))
            assert proc.returncode == 0, proc.stderr
            for i in range(0, 30, 10):  # a few tasks under a valid lease
                _run(ours + ["claim", f"task-{i:05}", "--agent", "other"], repo, env)
            print(f"\n{size} tasks (built by one plan-sync in {wall:.0f} ms)")
            mine = _time(ours, repo, env, opts.runs)
            other = None
            if theirs:
                skip = size > 100 and not os.environ.get("RALPH_SH_FULL")
                if skip:
                    print("  (ralph.sh list --all --markdown skipped above 100 tasks; RALPH_SH_FULL=1 runs it)")
                other = _time(theirs, repo, env, opts.runs, skip_list_all=skip)
            print(f"  {'command':34} {'wall':>8} {'cpu':>8}" + (f" {'ralph.sh':>10} {'ratio':>7}" if other else ""))
            for command in COMMANDS:
                wall, cpu = mine[command]
                line = f"  {command:34} {wall:8.1f} {cpu:8.1f}"
                if other:
                    ref = other.get(command)
                    line += f" {ref[0]:10.1f} {ref[0] / wall:6.1f}x" if ref else f" {'-':>10} {'-':>7}"
                print(line)
                limit = LIST_ALL_TARGET_MS if command == "list --all --markdown" else TARGET_MS
                if size >= 10000 and wall >= limit:
                    misses.append(f"{command}: {wall:.1f} ms >= {limit:.0f} ms")
    print("\ntargets at 10,000 tasks: every command < 60 ms wall, list --all --markdown < 1000 ms")
    print("  all met" if not misses else "  missed: " + "; ".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
