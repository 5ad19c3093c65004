#!/usr/bin/env python3
"""Scope freeze speed (issue 5): 10,000 tasks, each with its own 5 KB spec file, in a temp
repo. Times ralph.py's freeze and unchanged check (median of several runs) and the bash
reference of seed 004 (bench/scope_reference.sh) in the same run, then prints the ratios
against the targets: unchanged check < 100 ms and >= 20x faster than bash.

    python bench/scope.py [--tasks N] [--runs R] [--no-per-task]

The spec files are written, then aged past the 2 s racy window (scope_hashing.RACY_NS):
files written a moment before a freeze are re-hashed until they age, by design.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from ralphkit import scope  # noqa: E402
from ralphkit import scope_hashing  # noqa: E402

REFERENCE = ROOT / "bench" / "scope_reference.sh"
CHECK_TARGET_MS = 100.0
RATIO_TARGET = 20.0


def make_backlog(repo: Path, n: int) -> list[dict]:
    (repo / "specs").mkdir(parents=True)
    filler = ("Lorem ipsum dolor sit amet, the widget must frobnicate. " * 100)[:5000]
    tasks = []
    for i in range(n):
        spec = f"specs/t{i:05d}.md"
        (repo / spec).write_text(f"# Spec {i}\n{filler}")
        tasks.append({
            "id": f"t-{i:05d}", "title": f"Implement part {i}",
            "description": f"Part {i} of the widget, see the spec.", "priority": i % 4,
            "status": "open", "category": "feat", "spec": spec, "ref": None, "assignee": None,
            "lease_expires_at": None, "retry_count": 0, "fail_reason": None,
            "steps": ["write the test", "make it pass"], "deps": [f"t-{i - 1:05d}"] if i else [],
            "result": None, "created_at": "2026-11-22 00:00:00",
            "updated_at": "2026-11-22 00:00:00", "deleted_at": None, "held": None})
    return tasks


def _cpu() -> float:
    """CPU seconds of this process and its finished children: fair on a loaded machine."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


CPU: dict[str, float] = {}


def ms(fn, runs: int, name: str = "") -> tuple[float, object]:
    """Median wall ms over runs (median CPU ms kept in CPU[name])."""
    times, cpus, result = [], [], None
    for _ in range(runs):
        start, cpu = time.perf_counter(), _cpu()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
        cpus.append((_cpu() - cpu) * 1000)
    CPU[name] = statistics.median(cpus)
    return statistics.median(times), result


def bash(*args: str) -> str:
    return subprocess.run(["bash", str(REFERENCE), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-per-task", action="store_true",
                        help="skip the seed's one-md5sum-per-task loop (slow)")
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-scope-"))
    try:
        repo = tmp / "repo"
        start = time.perf_counter()
        tasks = make_backlog(repo, opts.tasks)
        export = tmp / "export.jsonl"
        export.write_text("".join(json.dumps(t) + "\n" for t in tasks))
        print(f"scope bench: {opts.tasks} tasks, one 5 KB spec each "
              f"(built in {time.perf_counter() - start:.1f} s)")
        # Age the files past the racy window, as specs written before a run are.
        time.sleep(scope_hashing.RACY_NS / 1e9 + 0.2)

        runs = iter(range(10_000))
        freeze_ms, _ = ms(lambda: scope.freeze(tmp / f"run{next(runs)}", tasks, repo), 3, "freeze")
        run = tmp / "run0"
        check_ms, report = ms(lambda: scope.check_scope_integrity(run, tasks, repo), opts.runs,
                              "check")
        assert not report.changed and report.files_hashed == 0, report.lines()[:3]
        parse_ms, _ = ms(lambda: scope.check_scope_integrity(
            run, [json.loads(line) for line in export.read_text().splitlines()], repo), opts.runs,
            "parse")
        edited = [dict(t) for t in tasks]
        middle = opts.tasks // 2
        edited[middle]["title"] = "edited"
        slow_ms, report = ms(lambda: scope.check_scope_integrity(run, edited, repo), 3, "slow")
        assert report.definition_modified == [f"t-{middle:05d}"], report.lines()

        bash("freeze", str(tmp / "bash_run"), str(export), str(repo))
        b_freeze_ms, _ = ms(lambda: bash("freeze", str(tmp / "bash_run"), str(export),
                                         str(repo)), 3, "bfreeze")
        b_check_ms, out = ms(lambda: bash("check", str(tmp / "bash_run"), str(export),
                                          str(repo)), 3, "bcheck")
        assert out == "SCOPE_UNCHANGED", out
        rows = [("ralph.py freeze", "freeze", freeze_ms),
                ("ralph.py check, unchanged", "check", check_ms),
                ("ralph.py check, unchanged, + json.loads of the export", "parse", parse_ms),
                ("ralph.py check, one title edited (full compare)", "slow", slow_ms),
                ("bash batched (xargs md5sum) freeze", "bfreeze", b_freeze_ms),
                ("bash batched (xargs md5sum) check", "bcheck", b_check_ms)]
        if not opts.no_per_task:
            p_check_ms, out = ms(lambda: bash("check", str(tmp / "bash_run"), str(export),
                                              str(repo), "per-task"), 1, "pcheck")
            assert out == "SCOPE_UNCHANGED", out
            rows.append(("bash per-task loop (seed: md5sum per spec) check", "pcheck",
                         p_check_ms))
        print(f"  {'':<55} {'wall ms':>9} {'cpu ms':>9}")
        for name, key, value in rows:
            print(f"  {name:<55} {value:9.1f} {CPU[key]:9.1f}")
        verdict = "ok" if check_ms < CHECK_TARGET_MS else "MISSED"
        print(f"unchanged check: {check_ms:.1f} ms wall, target < {CHECK_TARGET_MS:.0f} ms: "
              f"{verdict}")
        print(f"freeze vs bash batched freeze: {b_freeze_ms / freeze_ms:.1f}x (wall), "
              f"{CPU['bfreeze'] / CPU['freeze']:.1f}x (cpu)")
        for label, key, ref in [("bash batched", "bcheck", b_check_ms)] + (
                [] if opts.no_per_task else [("bash per-task (seed)", "pcheck", p_check_ms)]):
            wall, cpu = ref / check_ms, CPU[key] / CPU["check"]
            verdict = "ok" if min(wall, cpu) >= RATIO_TARGET else "MISSED"
            print(f"unchanged check vs {label}: {wall:.1f}x faster (wall), {cpu:.1f}x (cpu); "
                  f"target >= {RATIO_TARGET:.0f}x: {verdict}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
