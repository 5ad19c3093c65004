#!/usr/bin/env python3
"""bench/verify: what the verify gate adds per verified task beyond the verify command's own
time (target: no more than the command's own time, i.e. overhead well under it), with one run
of the command and, separately, with two (docs/verify.md: a session that touched the test side).

In one temp git repository with N open tasks, a stub agent claims one task per session,
commits a file and marks it done. The same build runs three times, on fresh copies of the
repository: without --verify; with --verify CMD; and with --verify CMD where each session also
adds a test file, so each task gets the second run (the tests as they stood, in a scratch
worktree) and pytest is asked for its tests at both ends. The command alone is also timed N
times (`sh -c CMD` from Python, as the gate starts it). Overhead per verified task, one run =
(T_verify - T_plain - runs x the command's own mean time) / N, where runs counts the
command's runs in the gated build (one per task, one for the re-check at the end); with two,
the runner's own time is what the records say both runs and the collections took.

    python bench/verify.py [--tasks 30] [--command 'python -m pytest -q -p no:cacheprovider']

The default command is a real test runner over the repository's one small test file.
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
AGENT = """#!/bin/sh
tid=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1)
[ -n "$tid" ] || exit 0
echo "$tid" > "work-$tid.txt"
[ -z "$BENCH_TOUCH_TESTS" ] || printf 'def test_%s():\n    assert True\n' "$tid" > "test_$tid.py"
git add -A >/dev/null && git commit -qm "$tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def sh(argv, cwd, env, stdin=None) -> str:
    return subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          check=True).stdout


def make_repo(path: Path, tasks: int, env: dict[str, str]) -> None:
    path.mkdir()
    sh(["git", "init", "-q", "-b", "main"], path, env)
    sh(["git", "remote", "add", "origin", "https://github.com/acme/bench.git"], path, env)
    (path / "specs").mkdir()
    (path / "specs" / "bench.md").write_text("# Bench\n")
    (path / ".gitignore").write_text(".ralph/\n")
    (path / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    sh(["git", "add", "-A"], path, env)
    sh(["git", "commit", "-qm", "init"], path, env)
    lines = "".join(json.dumps({"id": f"t{i:03d}", "t": f"Task {i}"}) + "\n" for i in range(tasks))
    sh([sys.executable, str(ROOT / "scripts" / "task"), "plan-sync"], path, env, lines)


def build(repo: Path, env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "ralph.py"), "build",
                           "--max-consecutive-failures", "0", *args], cwd=repo,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "All tasks complete" not in proc.stdout:
        raise SystemExit(f"build {args} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--command", default="python -m pytest -q -p no:cacheprovider")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ralph-bench-verify-") as tmp:
        base = Path(tmp)
        bin_dir = base / "bin"
        bin_dir.mkdir()
        (bin_dir / "claude").write_text(AGENT)
        (bin_dir / "claude").chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "CLAUDE"))}
        env.update({"HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
                    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com",
                    "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                             env.get("PATH", "")])})
        template = base / "template"
        make_repo(template, args.tasks, env)
        plain, gated, twice = base / "plain", base / "gated", base / "twice"
        for copy in (plain, gated, twice):
            shutil.copytree(template, copy, symlinks=True)
        t_plain = build(plain, env)
        t_gated = build(gated, env, "--verify", args.command)
        t_twice = build(twice, {**env, "BENCH_TOUCH_TESTS": "1"}, "--verify", args.command)
        start = time.perf_counter()
        for _ in range(args.tasks):
            subprocess.run(["sh", "-c", args.command], cwd=gated, env=env, check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)
        own = (time.perf_counter() - start) / args.tasks
        events = [json.loads(line) for path in (gated / ".ralph" / "runs").glob("*/events.jsonl")
                  for line in path.read_text().splitlines()]
        verdicts = [e for e in events if e.get("event") == "verify"]
        assert len(verdicts) >= args.tasks and all(e["verdict"] == "passed" for e in verdicts)
        n = args.tasks
        # the command's runs: one per task, plus one for the re-check of the stale ones at the
        # end (tasks re-checked together share the run: same commit, same duration)
        runs = len({(e["commit"], e["duration_s"]) for e in verdicts})
        per_plain, per_gated = t_plain / n * 1000, t_gated / n * 1000
        overhead = (t_gated - t_plain - runs * own) / n * 1000
        print(f"{n} tasks, one session each; verify command: {args.command!r}")
        print(f"without --verify: {t_plain:6.2f} s  {per_plain:7.1f} ms/task")
        print(f"with --verify:    {t_gated:6.2f} s  {per_gated:7.1f} ms/task "
              f"({len(verdicts)} verdicts, {runs} runs of the command)")
        print(f"command alone:    {own * 1000:7.1f} ms/run")
        print(f"gate overhead:    {overhead:7.1f} ms per verified task beyond the command "
              f"({overhead / (own * 1000):.2f}x the command's own time)")
        print(f"target: overhead <= the command's own time -> "
              f"{'met' if overhead <= own * 1000 else 'NOT met'}")
        events2 = [json.loads(line) for path in (twice / ".ralph" / "runs").glob("*/events.jsonl")
                   for line in path.read_text().splitlines()]
        verdicts2 = [e for e in events2 if e.get("event") == "verify"]
        seconds = [e["second"] for e in verdicts2 if e.get("second")]
        assert len(seconds) == n and all(e["verdict"] == "passed" for e in verdicts2)
        # the runner's own time: every verdict's first run (a re-check shares one), and each
        # second run with the collections it asked for at both ends
        first = sum(d for _, d in {(e["commit"], e["duration_s"]) for e in verdicts2})
        runner = first + sum(s["duration_s"] + s["collect_s"] for s in seconds)
        overhead2 = (t_twice - t_plain - runner) / n * 1000
        print(f"with two runs:    {t_twice:6.2f} s  {t_twice / n * 1000:7.1f} ms/task "
              f"(runner's own time {runner / n * 1000:.1f} ms/task: both runs, collections)")
        print(f"gate overhead, two runs: {overhead2:7.1f} ms per verified task beyond the "
              f"runner's own time (the scratch worktree, its set-up, the diff)")


if __name__ == "__main__":
    main()
