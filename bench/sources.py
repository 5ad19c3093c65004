#!/usr/bin/env python3
"""bench/sources: what a task source costs the build loop, per iteration, at 1,000 tasks.

For each source (sqlite, the embedded store, as the reference; tk; flowctl) it builds a
1,000-task backlog in a temp git repo, then runs iterations as the loop and a stub agent make
them: the loop's in-process calls (`peek -n 10`, the crash-safety `list --status active
--assignee`, `plan-status`) and the agent's `claim` and `done` through scripts/task. It reports
ms per iteration of ralph.py's own calls (its overhead), ms of the agent's two calls, and the
tool processes started per iteration (counted by a shim in front of the real tool).

`--tasks github` runs against the tests' stand-in of GitHub's REST API (tests/ghstandin.py) on
127.0.0.1, in a process of its own so its work is not timed as ralph's, at two sizes (100 and
2,000 issues of about a kilobyte each, dated a minute apart): the loop's calls must cost the
same at both (ratio at most 1.5) and under 20 ms an iteration. The agent's `done` closes an issue each iteration, so
one of the loop's calls sees that change and brings the cache up to date.

    RALPH_VENDOR_DIR=../shared/vendor python bench/sources.py [--tasks 1000] [--iterations 10]
        [--github-issues 100 2000]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/github.py would shadow PyGithub's `github` for the in-process GitHub calls.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT / "lib"))
VENDOR = Path(os.environ.get("RALPH_VENDOR_DIR") or ROOT.parent / "shared" / "vendor")
TOOLS = {"tk": VENDOR / "ticket" / "tk", "flowctl": VENDOR / "flow-next" / "flowctl"}
LOOP_BUDGET_MS, RATIO_TARGET = 20, 1.5      # the loop's calls per iteration, over GitHub
BODY = ("Steps to reproduce:\n\n1. Run `widgets --parse input.txt`\n2. See the traceback\n\n"
        "```\nTraceback (most recent call last):\n  File \"parse.py\", line 3\n```\n") * 6


def sh(argv, cwd, env, stdin=None) -> str:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, input=stdin, check=True,
                          capture_output=True, text=True).stdout


def shim(base: Path, name: str, counter: Path) -> Path:
    """An executable that counts its runs, then runs the real tool."""
    path = base / f"count-{name}"
    path.write_text(f'#!/bin/sh\necho x >> "{counter}"\nexec "{TOOLS[name]}" "$@"\n')
    path.chmod(0o755)
    return path


def standin(repo: Path, env: dict, issues: int) -> subprocess.Popen:
    """The stand-in of GitHub with `issues` labelled issues, serving from another process;
    the bare remote a claim's ref is pushed to holds the repository's first commit."""
    bare = repo.parent / "remote.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", bare], repo, env)
    sh(["git", "commit", "-q", "--allow-empty", "-m", "start"], repo, env)
    sh(["git", "push", "-q", bare, "main"], repo, env)
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(bare), str(issues)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url, token = server.stdout.readline().split()
    env.update({"GITHUB_API_URL": url, "GH_TOKEN": token,
                "RALPH_TASKS": "github:acme/widgets", "RALPH_TASKS_ROOT": str(repo)})
    return server


def serve(bare: str, issues: int) -> None:
    """--serve: the stand-in until stdin closes; its URL and token on the first line."""
    sys.path.insert(0, str(ROOT / "tests"))
    import ghstandin
    server = ghstandin.Standin(Path(bare))
    start = time.time() - issues * 60
    for n in range(issues):
        number = server.add_issue(f"Work item {n}", BODY, labels=("ralph",))
        # A backlog written over time, an issue a minute: made in one second, every issue
        # would be the newest, and the first question for what changed since (GitHub's
        # `since` counts that second in) would answer the whole listing again, once.
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + n * 60))
        server.issues[number].update(created_at=stamp, updated_at=stamp)
    print(server.url, ghstandin.TOKEN, flush=True)
    sys.stdin.read()
    server.close()


def fill(source: str, repo: Path, env: dict, tasks: int) -> None:
    if source == "sqlite":
        lines = "".join(json.dumps({"id": f"b-{i:04d}", "t": f"Task {i}", "p": i % 4}) + "\n"
                        for i in range(tasks))
        sh([sys.executable, ROOT / "scripts" / "task", "plan-sync"], repo, env, lines)
    elif source == "tk":                 # tk's own file format, written directly: 1,000 `tk
        folder = repo / ".tickets"       # create` runs would only time bash
        folder.mkdir()
        for i in range(tasks):
            (folder / f"b-{i:04d}.md").write_text(
                f"---\nid: b-{i:04d}\nstatus: open\ndeps: []\nlinks: []\n"
                f"created: 2026-01-01T00:00:00Z\ntype: task\npriority: {i % 4}\n---\n# Task {i}\n")
    else:
        sh([TOOLS["flowctl"], "init", "--json"], repo, env)
        spec = json.loads(sh([TOOLS["flowctl"], "spec", "create", "--title", "Bench", "--json"],
                             repo, env))["id"]
        items = json.dumps([{"title": f"Task {i}", "priority": i % 4} for i in range(tasks)])
        sh([TOOLS["flowctl"], "task", "create", "--spec", spec, "--from-json", "-", "--json"],
           repo, env, items)


def bench(source: str, tasks: int, iterations: int) -> dict:
    from ralphpy.backlog import calls
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "repo"
        repo.mkdir()
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
               "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
        env.pop("RALPH_TASKS", None)
        sh(["git", "init", "-q", "-b", "main"], repo, env)
        sh(["git", "remote", "add", "origin", "https://github.com/acme/bench.git"], repo, env)
        server = standin(repo, env, tasks) if source == "github" else None
        if server is None:
            fill(source, repo, env, tasks)
        counter = base / "count"
        if source not in ("sqlite", "github"):
            env.update({"RALPH_TASKS": source, "RALPH_TASKS_ROOT": str(repo),
                        "TK" if source == "tk" else "FLOWCTL": str(shim(base, source, counter))})
        os.chdir(repo)
        task = calls.resolve(ROOT, env)
        agent = task.call("agent", "register", env=env).output
        env["RALPH_AGENT_ID"] = agent
        t0 = time.perf_counter()
        task.call("peek", "-n", "10", env=env)         # the run's first read (flowctl: its one
        first_ms = (time.perf_counter() - t0) * 1000   # `tasks --json`), outside the figures
        first_procs = len(counter.read_text().split()) if counter.exists() else 0
        loop_s = agent_s = loop_cpu = 0.0
        counter.write_text("")
        for _ in range(iterations):
            t0, c0 = time.perf_counter(), time.thread_time()
            task.call("peek", "-n", "10", env=env)
            t1, c1 = time.perf_counter(), time.thread_time()
            claimed = sh([sys.executable, ROOT / "scripts" / "task", "claim"], repo, env)
            tid = next(line[4:] for line in claimed.splitlines() if line.startswith("id: "))
            sh([sys.executable, ROOT / "scripts" / "task", "done", tid,
                "--result", '{"commit": "abc"}'], repo, env)
            t2, c2 = time.perf_counter(), time.thread_time()
            task.call("list", "--status", "active", "--assignee", agent, "--markdown", env=env)
            task.call("plan-status", env=env)
            t3, c3 = time.perf_counter(), time.thread_time()
            loop_s += (t1 - t0) + (t3 - t2)
            loop_cpu += (c1 - c0) + (c3 - c2)
            agent_s += t2 - t1
        procs = len(counter.read_text().split())
        os.chdir(ROOT)
        if server is not None:
            server.communicate("")
    return {"source": source, "loop_ms": loop_s / iterations * 1000,
            "loop_cpu_ms": loop_cpu / iterations * 1000,
            "agent_ms": agent_s / iterations * 1000, "tool_procs": procs / iterations,
            "first_ms": first_ms, "first_procs": first_procs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--github-issues", type=int, nargs=2, default=(100, 2000))
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve[0], int(args.serve[1]))
    print(f"{args.tasks} tasks, {args.iterations} iterations each (claim + done by the agent)")
    for source in ("sqlite", "tk", "flowctl"):
        if source != "sqlite" and not os.access(TOOLS[source], os.X_OK):
            print(f"{source:8s} skipped: {TOOLS[source]} not found (set RALPH_VENDOR_DIR)")
            continue
        r = bench(source, args.tasks, args.iterations)
        print(f"{source:8s} ralph.py overhead {r['loop_ms']:7.1f} ms/iteration   "
              f"agent's claim+done {r['agent_ms']:7.1f} ms   "
              f"tool processes {r['tool_procs']:.1f}/iteration   "
              f"(first read: {r['first_ms']:.0f} ms, {r['first_procs']} processes)")
    small, big = (bench("github", n, args.iterations) for n in args.github_issues)
    for r, n in ((small, args.github_issues[0]), (big, args.github_issues[1])):
        print(f"github   ralph.py overhead {r['loop_ms']:7.1f} ms/iteration   "
              f"agent's claim+done {r['agent_ms']:7.1f} ms   at {n} issues "
              f"(CPU {r['loop_cpu_ms']:.1f} ms; first read: {r['first_ms']:.0f} ms)")
    ratio = big["loop_ms"] / small["loop_ms"]
    print(f"targets (github): ralph.py overhead < {LOOP_BUDGET_MS} ms/iteration: "
          f"{'OK' if big['loop_ms'] < LOOP_BUDGET_MS else 'MISSED'}; ratio {args.github_issues[1]}"
          f" vs {args.github_issues[0]} issues {ratio:.2f} <= {RATIO_TARGET}: "
          f"{'OK' if ratio <= RATIO_TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
