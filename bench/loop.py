#!/usr/bin/env python3
"""bench/loop: per-iteration overhead of the build loop (target < 100 ms, and at
least 5x less than ralph.sh).

Runs `ralph.py build -n 50` with a do-nothing stub agent (`#!/bin/sh` + `exit 0`) over a
1,000-task backlog whose tasks stay open (so all 50 iterations run), in a temp git repo, and
reports ms per iteration: the whole run / 50, and the marginal cost ((T50 - T1) / 49, start-up
excluded). With RALPH_SH=<ralph.sh checkout or file>, ralph.sh runs the same backlog in the
same run and the ratio is printed.

    python bench/loop.py [--iterations 50] [--tasks 1000]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(argv, cwd, env, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=True)


def make_repo(base: Path, tasks: int, env: dict[str, str]) -> Path:
    repo = base / "repo"
    repo.mkdir()
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh(["git", "remote", "add", "origin", "https://github.com/acme/bench.git"], repo, env)
    (repo / "specs").mkdir()
    (repo / "specs" / "bench.md").write_text("# Bench\n")
    lines = "".join(json.dumps({"id": f"bench-{i:04d}", "t": f"Benchmark task {i}", "p": i % 4,
                                "cat": "bench", "spec": "bench.md", "steps": ["do it"]}) + "\n"
                    for i in range(tasks))
    out = sh([sys.executable, str(ROOT / "scripts" / "task"), "plan-sync"], repo, env, lines).stdout
    assert out.startswith(f"inserted: {tasks},"), out
    return repo


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    return elapsed


def measure(name: str, argv: list[str], repo: Path, env: dict[str, str], n: int) -> dict:
    t_n = timed([*argv, "build", "-n", str(n)], repo, env)
    t_1 = timed([*argv, "build", "-n", "1"], repo, env)
    per, marginal = t_n / n * 1000, (t_n - t_1) / (n - 1) * 1000
    print(f"{name:9s} build -n {n}: {t_n:7.2f} s  {per:7.1f} ms/iteration  "
          f"(marginal {marginal:6.1f} ms/iteration, -n 1 run {t_1 * 1000:6.0f} ms)")
    return {"per": per, "marginal": marginal}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ralph-bench-") as tmp:
        base = Path(tmp)
        bin_dir = base / "bin"
        bin_dir.mkdir()
        (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / "claude").chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "CLAUDE"))}
        # This interpreter's directory next: `#!/usr/bin/env python3` scripts (the task CLI)
        # must not go through a slow shim (pyenv's is a bash script).
        path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
        env.update({"HOME": str(base), "PATH": path,
                    "GIT_CONFIG_NOSYSTEM": "1"})
        repo = make_repo(base, args.tasks, env)
        agent = timed(["sh", "-c", f"for i in $(seq {args.iterations}); do claude -p x; done"], repo, env)
        print(f"backlog: {args.tasks} open tasks; stub agent alone: "
              f"{agent / args.iterations * 1000:.1f} ms/session")
        py = measure("ralph.py", [sys.executable, str(ROOT / "ralph.py")], repo, env, args.iterations)
        measure("  via cmd", [sys.executable, str(ROOT / "ralph.py")], repo,
                {**env, "RALPH_TASK_CMD": str(ROOT / "scripts" / "task")}, args.iterations)
        print("          (`via cmd`: RALPH_TASK_CMD set, each task call a process)")
        ralph_sh = os.environ.get("RALPH_SH")
        if ralph_sh:
            script = Path(ralph_sh)
            script = script / "ralph.sh" if script.is_dir() else script
            shutil.rmtree(repo / ".ralph" / "logs", ignore_errors=True)
            ref = measure("ralph.sh", ["bash", str(script)], repo, env, args.iterations)
            print(f"ratio ralph.sh / ralph.py: {ref['per'] / py['per']:.1f}x per iteration, "
                  f"{ref['marginal'] / py['marginal']:.1f}x marginal")
        else:
            print("ralph.sh: not measured (set RALPH_SH to a ralph.sh checkout)")
        print(f"target: < 100 ms/iteration -> {'met' if py['per'] < 100 else 'NOT met'}")


if __name__ == "__main__":
    main()
