#!/usr/bin/env python3
"""bench/parallel: wall time of `ralph.py build --parallel P` over 12 stub tasks of a fixed
duration (near-linear speed-up up to the stub's duration bound).

Each P runs in a fresh temp git repo with 12 tasks of distinct components (so any P of them
may run together). The stub agent (tests/stubs/claude) sleeps D seconds, commits one file in
its worktree and runs `task done`. Printed per P: the wall time, the speed-up t1/tP, the ideal
speed-up 12 / ceil(12 / P) (12 tasks over P slots), and speed-up / ideal (1.0 = no overhead
beyond the sleeps).

    python bench/parallel.py [--duration 0.5] [--tasks 12] [--parallel 1 2 4]
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# --parallel 1 is the normal loop (the agent claims), above 1 ralph.py claims for the agent
ACTION = r"""
if [ -n "$RALPH_FROZEN_IDS_FILE" ]; then tid=$(cat "$RALPH_FROZEN_IDS_FILE")
else tid=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p'); fi
sleep "$STUB_SLEEP"
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def sh(argv, cwd, env, stdin=None) -> str:
    return subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          check=True).stdout


def make_repo(base: Path, tasks: int, env: dict[str, str]) -> Path:
    repo = base / "repo"
    repo.mkdir()
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh(["git", "remote", "add", "origin", "https://github.com/acme/bench.git"], repo, env)
    (repo / "specs").mkdir()
    (repo / "specs" / "bench.md").write_text("# Bench\n")
    (repo / ".gitignore").write_text(".ralph/\n")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-qm", "initial"], repo, env)
    for i in range(tasks):
        sh([sys.executable, str(ROOT / "scripts" / "task"), "create", f"t{i:02d}", f"Task {i}",
            "-c", f"component:c{i}"], repo, env)
    return repo


def one(parallel: int, tasks: int, duration: float, env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory(prefix="ralph-bench-par-") as tmp:
        repo = make_repo(Path(tmp), tasks, env)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(ROOT / "ralph.py"), "build", "--parallel",
                               str(parallel), "-n", str(2 * tasks)], cwd=repo, env={**env, "STUB_SLEEP": str(duration)},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0 or "All tasks complete" not in proc.stdout:
            sys.exit(f"run failed (P={parallel}): {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--parallel", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ralph-bench-bin-") as bindir:
        os.symlink(ROOT / "tests" / "stubs" / "claude", Path(bindir) / "claude")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "STUB_", "GIT_"))}
        env.update(PATH=f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                        f"{env.get('PATH', '')}", STUB_ACTION=ACTION, HOME=bindir,
                   GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
                   GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com",
                   GIT_CONFIG_NOSYSTEM="1")
        times = {p: one(p, args.tasks, args.duration, env) for p in args.parallel}
    base = times[args.parallel[0]]
    print(f"{args.tasks} stub tasks of {args.duration} s each; reference: "
          f"--parallel {args.parallel[0]} in the same run")
    print(f"{'parallel':>8} {'wall s':>8} {'speed-up':>9} {'ideal':>7} {'ratio':>6}")
    for p, t in times.items():
        speedup = base / t
        ideal = (args.tasks / math.ceil(args.tasks / p)) / (
            args.tasks / math.ceil(args.tasks / args.parallel[0]))
        print(f"{p:>8} {t:>8.2f} {speedup:>9.2f} {ideal:>7.2f} {speedup / ideal:>6.2f}")


if __name__ == "__main__":
    main()
