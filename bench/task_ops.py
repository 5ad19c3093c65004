#!/usr/bin/env python3
"""Whole-process timings of the task CLI ("Benchmark").

Times the commands of the loop and the skills (`peek -n 10`, `claim`, `renew`, `done`,
`fail`, `plan-status`, `list --status active --markdown`, `show <id> --with-deps`) and
`list --all --markdown` at 100, 1,000 and 10,000 tasks (median of --runs runs), as an agent
calls them: through the launcher a run writes for its agents (`.ralph/bin/task`, the path in
RALPH_TASK_SCRIPT, whose first line names the interpreter: docs/decisions/0035), and, when RALPH_SH_TASK names ralph.sh's bash `lib/task` (the file, or a
checkout holding lib/task), for it too on the same database in the same run, each run of
ours next to one of theirs, printing ratios. Then checks the targets at 10,000 tasks: each of
the eight commands under 30 ms wall and at least 2x faster than ralph.sh; `list --all
--markdown` under 1 s.

    python3 bench/task_ops.py [--sizes 100,1000,10000] [--runs 7] [--python PY]

The launcher names --python (default: the interpreter running this script, as a run's
launcher names the one ralph runs under); one that a first line cannot name (a blank in its
path) is timed as `PY -S scripts/task` instead.

Wall time is what the targets are about, on a quiet machine: the load average is printed
before and after. CPU time (user + sys of the process and its children: git, sqlite3, jq)
and its ratio are printed too because they move less when the machine is busy. The interpreter's own start-up
(`python -S -c pass`) is measured in the same run as the floor no Python CLI can beat.
The database is built with one plan-sync of generated JSONL (priorities, categories, specs,
steps, a dependency chain broken every tenth task) plus a few active tasks; `done` is undone
with SQL after each run so every run sees the same backlog. Bash timings of
`list --all --markdown` above 100 tasks take minutes; set RALPH_SH_FULL=1 to include them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "scripts" / "task"
sys.path.insert(0, str(ROOT / "lib"))
from ralphpy.sources import entry  # noqa: E402
TARGET_MS = 30.0
TARGET_RATIO = 2.0
LIST_ALL_TARGET_MS = 1000.0
SHOWN = "task-00005"  # has a blocker, steps, a spec: a full `show --with-deps`
READS = ("peek -n 10", "plan-status", "list --status active --markdown",
         f"show {SHOWN} --with-deps", "list --all --markdown")
COMMANDS = ("peek -n 10", "claim", "renew", "done", "fail", "plan-status",
            "list --status active --markdown", f"show {SHOWN} --with-deps")
LABELS = {f"show {SHOWN} --with-deps": "show <id> --with-deps", "renew": "renew <id>",
          "done": "done <id> --result ...", "fail": "fail <id> --reason ..."}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "GIT_"))}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C.UTF-8", "RALPH_AGENT_ID": "bench"})
    return env


def make_repo(path: Path) -> Path:
    """A git repo at path, on branch main with an origin remote and no commit: what the task
    CLI needs to resolve a backlog's scope (bench/fleet.py makes its repos here too)."""
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", "https://github.com/bench/repo.git"]):
        subprocess.run(["git", *args], cwd=path, check=True, env=_env())
    return path


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


def _checked(sample, what: str):
    wall, cpu, proc = sample
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, cpu, proc


def _cycle(cli: list[str], repo: Path, env: dict[str, str], db: Path, samples: dict) -> None:
    """claim, renew, fail; claim, done, and the done undone: the backlog as before."""
    for last in ("fail", "done"):
        wall, cpu, proc = _checked(_run(cli + ["claim"], repo, env), f"{cli[-1]} claim")
        samples["claim"].append((wall, cpu))
        slug = proc.stdout.splitlines()[0].split()[-1]
        if last == "fail":
            samples["renew"].append(_checked(_run(cli + ["renew", slug], repo, env), "renew")[:2])
            argv = ["fail", slug, "--reason", "bench"]
        else:
            argv = ["done", slug, "--result", '{"commit":"abc1234"}']
        samples[last].append(_checked(_run(cli + argv, repo, env), last)[:2])
        if last == "done":
            with sqlite3.connect(db) as conn:
                conn.execute("UPDATE tasks SET status = 'open', assignee = NULL, result = NULL, "
                             "lease_expires_at = NULL WHERE slug = ?", (slug,))
            conn.close()


def _time(clis: dict[str, list[str]], repo: Path, env: dict[str, str], runs: int,
          skip: set[tuple[str, str]]) -> dict[str, dict]:
    """name -> command -> (median wall ms, median cpu ms); the CLIs take turns run by run."""
    samples = {name: {c: [] for c in (*COMMANDS, *READS)} for name in clis}
    db = repo / ".ralph" / "tasks.db"
    for command in READS:
        for _ in range(runs):
            for name, cli in clis.items():
                if (name, command) not in skip:
                    sample = _checked(_run(cli + command.split(), repo, env), f"{name} {command}")
                    samples[name][command].append(sample[:2])
    for _ in range(runs):
        for name, cli in clis.items():
            _cycle(cli, repo, env, db, samples[name])
    return {name: {c: _median(s) for c, s in by_command.items()} for name, by_command in samples.items()}


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


def _verdict(wall: float, ratio: float | None) -> str:
    missed = []
    if not wall < TARGET_MS:
        missed.append(f">= {TARGET_MS:.0f} ms")
    if ratio is not None and not ratio >= TARGET_RATIO:
        missed.append(f"< {TARGET_RATIO:.0f}x")
    return "met" if not missed else "MISSED (" + ", ".join(missed) + ")"


def _table(size: int, results: dict[str, dict], theirs: bool) -> list[str]:
    """Prints one size's table; returns the misses (checked at 10,000 tasks and more)."""
    mine, other = results["ours"], results.get("ralph.sh")
    head = f"  {'command':32} {'wall':>7} {'cpu':>7}"
    if theirs:
        head += f" {'ralph.sh':>9} {'sh cpu':>7} {'ratio':>6} {'cpu':>6}"
    print(head + ("   target (< 30 ms" + (", >= 2x" if theirs else "") + ")" if size >= 10000 else ""))
    misses = []
    for command in (*COMMANDS, "list --all --markdown"):
        wall, cpu = mine[command]
        line = f"  {LABELS.get(command, command):32} {wall:7.1f} {cpu:7.1f}"
        ratio = None
        if other:
            ref_wall, ref_cpu = other[command]
            if ref_wall == ref_wall:  # not NaN: it was run
                ratio = ref_wall / wall
                line += f" {ref_wall:9.1f} {ref_cpu:7.1f} {ratio:5.1f}x {ref_cpu / cpu:5.1f}x"
            else:
                line += f" {'-':>9} {'-':>7} {'-':>6} {'-':>6}"
        if size >= 10000:
            if command == "list --all --markdown":
                verdict = "met" if wall < LIST_ALL_TARGET_MS else f"MISSED (>= {LIST_ALL_TARGET_MS:.0f} ms)"
            else:
                verdict = _verdict(wall, ratio if other else None)
            line += f"   {verdict}"
            if verdict != "met":
                misses.append(f"{LABELS.get(command, command)}: {verdict}")
        print(line)
    return misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="interpreter the launcher names")
    opts = parser.parse_args()
    home = tempfile.TemporaryDirectory()
    launcher = entry.write_launcher(Path(home.name) / ".ralph", opts.python, str(ROOT / "lib"))
    # As an agent calls it: the path alone, its first line naming the interpreter.
    clis = {"ours": [launcher] if launcher else [opts.python, "-S", str(TASK)]}
    theirs = _ralph_sh()
    if theirs:
        clis["ralph.sh"] = theirs
    misses = []
    load = os.getloadavg()[0]
    bare = _median([_run([opts.python, "-S", "-c", "pass"], ROOT, _env())[:2] for _ in range(opts.runs)])
    print(f"task CLI whole-process timings, median of {opts.runs} runs, ms; load average {load:.2f}")
    print(f"interpreter start-up alone ({opts.python} -S -c pass): wall {bare[0]:.1f}, cpu {bare[1]:.1f}")
    print("ours: " + ("the agents' launcher, first line " + Path(launcher).read_text().splitlines()[0]
                      if launcher else f"{opts.python} -S {TASK} (no launcher can name it)"))
    if not theirs:
        print("ralph.sh not timed: set RALPH_SH_TASK to its lib/task (or a checkout) for the ratios")
    for size in (int(s) for s in opts.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            repo, env = make_repo(Path(tmp) / "repo"), _env()
            # ralph.sh's lib/task opens the database beside its own script unless told; ours
            # ignores RALPH_DB_PATH (docs/tasks.md), so both use the repo's.
            env["RALPH_DB_PATH"] = str(repo / ".ralph" / "tasks.db")
            wall, _, proc = _run(clis["ours"] + ["plan-sync"], repo, env, jsonl(size))
            assert proc.returncode == 0, proc.stderr
            for i in range(0, 30, 10):  # a few tasks under a valid lease
                _run(clis["ours"] + ["claim", f"task-{i:05}", "--agent", "other"], repo, env)
            print(f"\n{size} tasks (built by one plan-sync in {wall:.0f} ms)")
            skip = set()
            if theirs and size > 100 and not os.environ.get("RALPH_SH_FULL"):
                print("  (ralph.sh list --all --markdown skipped above 100 tasks; RALPH_SH_FULL=1 runs it)")
                skip.add(("ralph.sh", "list --all --markdown"))
            misses += _table(size, _time(clis, repo, env, opts.runs, skip), bool(theirs))
    print(f"\nload average now {os.getloadavg()[0]:.2f} (targets are for a quiet machine)")
    print(f"targets at 10,000 tasks: each command < {TARGET_MS:.0f} ms wall"
          + (f" and >= {TARGET_RATIO:.0f}x ralph.sh" if theirs else " (ratios: RALPH_SH_TASK unset)")
          + f"; list --all --markdown < {LIST_ALL_TARGET_MS:.0f} ms")
    print("  all met" if not misses else "  missed: " + "; ".join(misses))
    home.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
