#!/usr/bin/env python3
"""bench/sandbox: what `--sandbox bwrap` adds to the start of one session.

A temp git checkout with a SQLite task store; one session's sandbox is planned and wrapped
(sandbox.one_session.wrap, as the Sandbox feature does before each session) around `true`, and
run; the same `true` is run without it. The cost per session is the difference: planning plus
bubblewrap's namespaces and mounts, start to exit. N runs each, R rounds; min and median of the
rounds' means are printed, as wall time (a session's start waits for it).

    python bench/sandbox.py [--runs 50] [--repeat 3]

Target (met / MISSED): < 50 ms per session (docs/sandbox.md). Skipped, not failed, without a
working bwrap.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from ralphpy.sandbox import backends, one_session, store_keeper  # noqa: E402

TARGET_MS = 50.0


def checkout(base: Path, env: dict[str, str]) -> Path:
    repo = base / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env, check=True)
    (repo / ".ralph").mkdir()
    conn = sqlite3.connect(repo / ".ralph" / "tasks.db")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    return repo


def mean_ms(make_argv, runs: int, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(make_argv(), cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000 / runs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = dict(os.environ)
    try:
        backend = backends.resolve("bwrap", None, env)
    except Exception as err:                     # noqa: BLE001 - a bench reports, never fails
        print(f"skipped: {err}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        (home / ".claude").mkdir(parents=True)
        env["HOME"] = str(home)
        repo = checkout(Path(tmp), env)
        keeper = store_keeper.Keeper()
        true = shutil.which("true")

        def sandboxed() -> list[str]:
            return one_session.wrap(backend, keeper, [true], top=repo, main=repo, cwd=repo,
                                    ralph_cwd=repo, env=env, state=(".claude/", ".claude.json"),
                                    name="bench")
        plain, boxed = [], []
        for _ in range(args.repeat):
            plain.append(mean_ms(lambda: [true], args.runs, repo, env))
            boxed.append(mean_ms(sandboxed, args.runs, repo, env))
        keeper.release()
    diffs = [b - p for b, p in zip(boxed, plain)]
    print(f"true alone:        min {min(plain):6.2f} ms, median {statistics.median(plain):6.2f} ms")
    print(f"true in bwrap:     min {min(boxed):6.2f} ms, median {statistics.median(boxed):6.2f} ms")
    cost = min(diffs)
    verdict = "met" if cost < TARGET_MS else "MISSED"
    print(f"sandbox per session: {cost:.2f} ms (median {statistics.median(diffs):.2f} ms); "
          f"target < {TARGET_MS:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
