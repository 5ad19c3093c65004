#!/usr/bin/env python3
"""bench/loop: the build loop's own cost per iteration, at 1,000 and at 10,000 open tasks.

A do-nothing stub agent (`#!/bin/sh` + `exit 0` as `claude`) over a backlog whose tasks stay
open, in a temp git repo. The marginal cost of one iteration is (T(-n N) - T(-n 1)) / (N - 1):
start-up and the run's end excluded. Each figure is measured R times; min and median are
printed, as CPU time (user + system of ralph and every process it started: the agent, git, a
verify command) and as wall time. The targets are judged on the CPU minimum: on a machine
shared with other work, wall time measures the neighbours too.

    python bench/loop.py [--iterations 20] [--repeat 3] [--sizes 1000 10000]

Also measured, at both sizes:
  - `--verify true`: the verify gate on. The agent marks nothing done, so the command never
    runs: the difference to the plain loop is the gate's own cost per session.
  - ralph.sh, when RALPH_SH names its checkout (or its ralph.sh): same backlog, same run.

Targets (met / MISSED):
  - < 20 ms per iteration at 1,000 and at 10,000 tasks;
  - flat: the cost at 10,000 within 1.5x of the cost at 1,000;
  - at least 20x less than ralph.sh in the same run (when RALPH_SH is set);
  - the verify gate's cost no worse than before the loop stopped reading the whole backlog
    per session. Reference: this script on that code (commit f14122b, 2026-11-28 15:10 to
    15:30 UTC, 2 cores shared with other work, load average 16 to 22, --iterations 20
    --repeat 3), CPU minimum. That code read the whole backlog after every session for the
    gate whether or not it was configured, so its cost shows in the plain loop too: the
    difference was 10.2 ms at 1,000 tasks and 0.4 ms at 10,000, the loop with the gate on
    69.5 and 320.9 ms. The target compares the loop with the gate on (REFERENCE_GATE_MS);
    the difference is printed beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The loop with the verify gate on (ms of CPU per iteration, minimum) at 1,000 and 10,000
# tasks, measured on the code before the loop stopped reading the whole backlog (docstring).
REFERENCE_GATE_MS = {1000: 69.5, 10000: 320.9}
TARGET_MS, FLAT, RATIO = 20.0, 1.5, 20.0


def sh(argv, cwd, env, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          check=True)


def make_repo(base: Path, tasks: int, env: dict[str, str]) -> Path:
    repo = base / f"repo-{tasks}"
    repo.mkdir()
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    sh(["git", "remote", "add", "origin", "https://github.com/acme/bench.git"], repo, env)
    (repo / "specs").mkdir()
    (repo / "specs" / "bench.md").write_text("# Bench\n")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "init"], repo, env)
    lines = "".join(json.dumps({"id": f"bench-{i:05d}", "t": f"Benchmark task {i}", "p": i % 4,
                                "cat": "bench", "spec": "bench.md", "d": "x" * 200,
                                "steps": ["do it"]}) + "\n"
                    for i in range(tasks))
    out = sh([sys.executable, str(ROOT / "scripts" / "task"), "plan-sync"], repo, env, lines).stdout
    assert out.startswith(f"inserted: {tasks},"), out
    return repo


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run: CPU is user + system of every process it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def marginal(argv: list[str], repo: Path, env: dict[str, str], n: int, repeat: int,
             clean=None) -> dict[str, list[float]]:
    """Marginal ms per iteration, `repeat` times: {"cpu": [...], "wall": [...]}."""
    got: dict[str, list[float]] = {"cpu": [], "wall": []}
    for _ in range(repeat):
        if clean:
            clean()
        wall_n, cpu_n = timed([*argv, "-n", str(n)], repo, env)
        wall_1, cpu_1 = timed([*argv, "-n", "1"], repo, env)
        got["cpu"].append((cpu_n - cpu_1) / (n - 1) * 1000)
        got["wall"].append((wall_n - wall_1) / (n - 1) * 1000)
    return got


def show(name: str, size: int, got: dict[str, list[float]]) -> None:
    cpu, wall = got["cpu"], got["wall"]
    print(f"  {name:22s} {size:>6,} tasks: CPU min {min(cpu):6.1f} median "
          f"{statistics.median(cpu):6.1f} ms | wall min {min(wall):6.1f} median "
          f"{statistics.median(wall):6.1f} ms")


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    ralph_sh = os.environ.get("RALPH_SH")
    script = None
    if ralph_sh:
        script = Path(ralph_sh)
        script = script / "ralph.sh" if script.is_dir() else script
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
        env.update({"HOME": str(base), "PATH": path, "GIT_CONFIG_NOSYSTEM": "1"})
        ralph = [sys.executable, str(ROOT / "ralph.py"), "build"]
        print(f"marginal cost per iteration: (T(-n {args.iterations}) - T(-n 1)) / "
              f"{args.iterations - 1}, {args.repeat} times; load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        plain, gate, theirs, verify_runs = {}, {}, {}, {}
        for size in args.sizes:
            repo = make_repo(base, size, env)
            plain[size] = marginal(ralph, repo, env, args.iterations, args.repeat)
            show("ralph.py", size, plain[size])
            verify = marginal([*ralph, "--verify", "true"], repo, env, args.iterations,
                              args.repeat)
            show("ralph.py --verify true", size, verify)
            verify_runs[size] = verify
            gate[size] = min(verify["cpu"]) - min(plain[size]["cpu"])
            print(f"  {'verify gate alone':22s} {size:>6,} tasks: CPU {gate[size]:6.1f} ms "
                  "per session (min against min)")
            if script is not None:
                # ralph.sh's task CLI keeps its database beside its own checkout unless told
                sh_env = {**env, "RALPH_DB_PATH": str(repo / ".ralph" / "tasks.db")}
                theirs[size] = marginal(["bash", str(script), "build"], repo, sh_env,
                                        args.iterations, args.repeat,
                                        clean=lambda: shutil.rmtree(repo / ".ralph" / "logs",
                                                                    ignore_errors=True))
                show("ralph.sh", size, theirs[size])
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        print("targets (CPU minimum):")
        for size in args.sizes:
            cost = min(plain[size]["cpu"])
            print(f"  < {TARGET_MS:g} ms per iteration at {size:,} tasks: {cost:.1f} ms -> "
                  f"{verdict(cost < TARGET_MS)}")
        if len(args.sizes) > 1:
            low, high = (min(plain[s]["cpu"]) for s in (min(args.sizes), max(args.sizes)))
            print(f"  flat: {max(args.sizes):,} within {FLAT}x of {min(args.sizes):,}: "
                  f"{high / low:.2f}x -> {verdict(high <= FLAT * low)}")
        for size in args.sizes:
            if size in theirs:
                ratio = min(theirs[size]["cpu"]) / min(plain[size]["cpu"])
                print(f"  >= {RATIO:g}x less than ralph.sh at {size:,} tasks: {ratio:.1f}x -> "
                      f"{verdict(ratio >= RATIO)}")
            elif script is None:
                print(f"  >= {RATIO:g}x less than ralph.sh: not measured (set RALPH_SH to a "
                      "ralph.sh checkout)")
                break
        for size in args.sizes:
            ref, cost = REFERENCE_GATE_MS.get(size), min(verify_runs[size]["cpu"])
            if ref is None:
                print(f"  verify gate at {size:,} tasks: {cost:.1f} ms (no reference)")
            else:
                print(f"  the loop with the verify gate no worse than before at {size:,} tasks: "
                      f"{cost:.1f} ms against {ref:.1f} ms (the gate alone: {gate[size]:.1f} ms) "
                      f"-> {verdict(cost <= ref)}")

if __name__ == "__main__":
    main()
