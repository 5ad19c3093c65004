#!/usr/bin/env python3
"""bench/fleet: many claimers on one backlog, the PostgreSQL store next to SQLite in one run.

For 1, 4 and 16 concurrent claimers it fills a fresh store with --tasks open tasks (no
dependencies) by one plan-sync, then starts that many long-lived worker processes; once all are
ready they claim together, each calling the task CLI in-process
(`ralphpy.tasks.cli.main(["claim"], ...)`, cwd in a git repo) in a loop until "No eligible
tasks" (exit 2), timing each claim. Each worker has the environment a ralph run gives its agent:
the scope `task _get-scope` resolved once (RALPH_SCOPE_REPO, RALPH_SCOPE_BRANCH), an agent id
and a claims file for its fencing tokens. So neither process start-up nor a scope lookup a run's
agent never makes is what is measured: a claim costs what the store costs. It prints claims per
second and the p50 and p99 claim latency, and checks that every task was claimed exactly once
(no slug claimed twice across workers, and the store's own `list --status active` counts every
task). It also prints the CPU time a claim costs, in the claimers (their own rusage) and in the
PostgreSQL server (every server process, from /proc), and the claims per second that cost allows
on this machine's cores: where the claimers and the server share a few cores, that, not the
store's locking, bounds PostgreSQL's rate. Then `peek -n 10` at --peek-tasks tasks
(bench/task_ops.py's backlog: priorities, steps, a dependency chain broken every tenth task,
three tasks active): the in-process p50 over --repeats calls (the `peek` a ralph run makes each
iteration, in-process) and the whole-process `scripts/task peek -n 10` median (an agent's own
call), beside the floors of the same run no such process goes below: the interpreter's start-up
(`python -S -c pass`) and, for PostgreSQL, importing psycopg alone.

    python3 bench/fleet.py [--tasks 3000] [--claimers 1,4,16] [--peek-tasks 100000]
                           [--repeats 20] [--stores sqlite,postgresql]

PostgreSQL runs on a throwaway server of its own (tests/pgserver.py: initdb in a temp
directory, fsync on, a free port of 127.0.0.1), skipped with a line naming what is missing
without the server programs or psycopg. A checkout whose task CLI does not take a
`postgresql://` RALPH_TASKS_DB fails the PostgreSQL half with one line (exit 1).
Targets: 16 claimers on PostgreSQL >= 4x the claims/s of 16 on SQLite; zero double claims;
`peek -n 10` at 100,000 tasks < 50 ms, the store's work: in-process, as a run's loop calls it.
The whole process is printed, not judged: on PostgreSQL, importing the driver alone (psycopg
3, which the fleet's store is built on) takes more than 50 ms (docs/fleet.md).
"""
from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import task_ops          # bench/task_ops.py: the backlog it times for peek, and its repo set-up

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "scripts" / "task"
sys.path[:0] = [str(ROOT / "lib"), str(ROOT / "tests")]

RATIO_TARGET = 4.0
PEEK_TARGET_MS = 50.0
_GIVE_UP_AFTER = 50       # consecutive failed claims (not exit 2) before a claimer stops


class StoreRefused(Exception):
    """The task CLI of this checkout does not use the store this URL names."""


def _call(argv: list[str], environ: dict[str, str], stdin: str = "") -> tuple[int, str, str]:
    from ralphpy.tasks import cli
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def _checked(argv: list[str], environ: dict[str, str], stdin: str = "") -> str:
    code, out, err = _call(argv, environ, stdin)
    if code != 0:
        raise SystemExit(f"fleet: task {' '.join(argv)} failed ({code}): {err.strip()}")
    return out


def _environ(store: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RALPH_", "GIT_", "PG"))}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C.UTF-8", "RALPH_TASKS_DB": store})
    return env


def _backlog(n: int) -> str:
    return "".join(json.dumps({"id": f"c-{i:05}", "t": f"Claimable task {i}", "p": i % 4}) + "\n"
                   for i in range(n))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _server_cpu_s(cluster) -> float | None:
    """CPU seconds spent so far by the PostgreSQL server: its postmaster and every process it
    started (backends, WAL writer, checkpointer, ...), from /proc; None without a server."""
    if cluster is None or (postmaster := cluster.postmaster_pid()) is None:
        return None
    ticks, total = os.sysconf("SC_CLK_TCK"), 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue                                   # gone meanwhile
        if int(entry.name) == postmaster or int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])   # utime, stime
    return total / ticks


def _agents_environ(environ: dict[str, str], names: list[str]) -> dict[str, dict[str, str]]:
    """The environment a ralph run gives each agent (loop/start.session_setup): the scope
    `task _get-scope` resolved once for all, the agent's id, and its own claims file (fencing
    tokens) in a directory of this measurement's, so no token of another one is read."""
    scope = dict(line.split(":", 1) for line in _checked(["_get-scope"], environ).splitlines())
    claims = tempfile.mkdtemp(prefix="claims-", dir=Path.cwd().parent)
    return {name: {**environ, "RALPH_SCOPE_REPO": scope["repo"],
                   "RALPH_SCOPE_BRANCH": scope["branch"], "RALPH_AGENT_ID": name,
                   "RALPH_CLAIMS_FILE": os.path.join(claims, name)} for name in names}


def _claimer(name: str, repo: str, environ: dict, go, leave, results) -> None:
    """One worker, an agent of a ralph run: ready once the imports and a first store call are
    done, then `task claim` until nothing is eligible, timing each claim; its server connection
    stays open until `leave`, so the server's CPU time is read while its backend still counts."""
    os.chdir(repo)
    _call(["plan-status"], environ)
    results.put(("ready", name))
    go.wait()
    cpu = _cpu_s()
    claims, errors, failed_in_a_row = [], [], 0
    while failed_in_a_row < _GIVE_UP_AFTER:
        started = time.monotonic()
        code, out, err = _call(["claim"], environ)
        took = time.monotonic() - started
        if code == 0:
            claims.append((out.split("\n", 1)[0].removeprefix("## Task "), took))
            failed_in_a_row = 0
        elif code == 2 and err.strip() == "No eligible tasks":
            break
        else:
            errors.append(f"exit {code}: {err.strip()}")
            failed_in_a_row += 1
    results.put(("done", name, claims, errors, time.monotonic(), _cpu_s() - cpu))
    leave.wait(timeout=600)


def _fleet(repo: Path, environ: dict[str, str], claimers: int, tasks: int, cluster) -> dict:
    context = multiprocessing.get_context("spawn")   # no inherited connections or pipes
    go, leave, results = context.Event(), context.Event(), context.Queue()
    agents = _agents_environ(environ, [f"claimer-{i:02}" for i in range(claimers)])
    workers = [context.Process(target=_claimer, args=(name, str(repo), agent_env, go, leave,
                                                      results))
               for name, agent_env in agents.items()]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            results.get(timeout=300)
        server_before = _server_cpu_s(cluster)
        started = time.monotonic()
        go.set()
        done = [results.get(timeout=1800) for _ in workers]
        server_after = _server_cpu_s(cluster)
    finally:
        leave.set()
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    claims = [claim for _, _, mine, _, _, _ in done for claim in mine]
    errors = [error for _, _, _, mine, _, _ in done for error in mine]
    server = (server_after - server_before) if server_before is not None else 0.0
    client = sum(d[5] for d in done)
    counts = Counter(slug for slug, _ in claims)
    latencies = sorted(took * 1000 for _, took in claims)
    listed = _checked(["list", "--status", "active"], environ).splitlines()[1:]
    return {"claims": len(claims), "per_s": len(claims) / (max(d[4] for d in done) - started),
            "p50": _percentile(latencies, 50), "p99": _percentile(latencies, 99),
            "double": sum(1 for n in counts.values() if n > 1), "unclaimed": tasks - len(counts),
            "active": len(listed), "errors": errors,
            "client_ms": 1000 * client / max(1, len(claims)),
            "server_ms": 1000 * server / max(1, len(claims))}


def _percentile(sorted_values: list[float], pct: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, round(pct / 100 * (len(sorted_values) - 1)))]


def _peek(repo: Path, environ: dict[str, str], repeats: int) -> tuple[float, float | None, str]:
    """-> (in-process p50 ms, whole-process median ms or None, the whole process's last
    error line)"""
    _checked(["peek", "-n", "10"], environ)                       # warm: imports, caches
    inproc = []
    for _ in range(repeats):
        started = time.perf_counter()
        _checked(["peek", "-n", "10"], environ)
        inproc.append((time.perf_counter() - started) * 1000)
    whole = []
    for _ in range(max(3, repeats // 2)):          # as the shebang runs it: python3 -S
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-S", str(TASK), "peek", "-n", "10"], cwd=repo,
                              env=environ, capture_output=True, text=True)
        whole.append((time.perf_counter() - started) * 1000)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            return statistics.median(inproc), None, last
    return statistics.median(inproc), statistics.median(whole), ""


def _floors(kinds: list[str], repeats: int) -> dict[str, float]:
    """Whole-process medians no task CLI process goes below: the interpreter's start-up, and
    for PostgreSQL importing psycopg from its site-packages folder, as scripts/task does."""
    programs = {"python -S": "pass"}
    if "postgresql" in kinds:
        import psycopg
        folder = os.path.dirname(os.path.dirname(psycopg.__file__))
        programs["importing psycopg"] = f"import sys; sys.path.append({folder!r}); import psycopg"
    floors = {}
    for label, code in programs.items():
        took = []
        for _ in range(max(3, repeats // 2)):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-S", "-c", code], check=True)
            took.append((time.perf_counter() - started) * 1000)
        floors[label] = statistics.median(took)
    return floors


class _Stores:
    """Hands out a fresh, empty store per measurement: a new SQLite file, or a new database
    of the throwaway PostgreSQL server."""

    def __init__(self, base: Path):
        self.base, self.cluster, self.made = base, None, 0

    def fresh(self, kind: str) -> str:
        self.made += 1
        if kind == "sqlite":
            return str(self.base / f"store-{self.made}.db")
        if self.cluster is None:
            import pgserver
            self.cluster = pgserver.start_cluster()
        return self.cluster.url(self.cluster.create_database(f"fleet_{self.made}"))

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.destroy()


def _probe_postgresql(stores: _Stores) -> None:
    """Raise StoreRefused unless the task CLI really keeps its tasks in the PostgreSQL
    database the URL names. Runs in a scratch repo: a CLI that takes the URL for a file path
    writes its junk there."""
    import pgserver
    url = stores.fresh("postgresql")
    scratch = task_ops.make_repo(stores.base / "probe")
    os.chdir(scratch)
    try:
        code, _, err = _call(["plan-sync"], _environ(url), _backlog(1))
        if code != 0:
            raise StoreRefused(f"task plan-sync on {url} failed ({code}): {err.strip()}")
        if (scratch / "postgresql:").exists():
            raise StoreRefused("the task CLI took the postgresql:// URL for a file path: "
                               "this checkout has no PostgreSQL task store")
        tables = pgserver.pg_query(url, "SELECT count(*) FROM pg_tables WHERE schemaname "
                                        "NOT IN ('pg_catalog', 'information_schema')")[0][0]
        if not tables:
            raise StoreRefused(f"task plan-sync on {url} exited 0 but left no table there")
    finally:
        os.chdir(stores.base)


def _kinds(requested: list[str], stores: _Stores) -> tuple[list[str], bool]:
    """-> (stores to measure, whether the PostgreSQL half failed)"""
    kinds = [kind for kind in requested if kind == "sqlite"]
    if "postgresql" not in requested:
        return kinds, False
    import pgserver
    reason = pgserver.missing()
    if reason:
        print(f"postgresql: skipped: {reason}")
        return kinds, False
    try:
        _probe_postgresql(stores)
    except StoreRefused as refused:
        print(f"postgresql: FAILED: {refused}")
        return kinds, True
    return kinds + ["postgresql"], False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--claimers", default="1,4,16")
    parser.add_argument("--peek-tasks", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--stores", default="sqlite,postgresql")
    opts = parser.parse_args()
    levels = [int(n) for n in opts.claimers.split(",")]
    with tempfile.TemporaryDirectory(prefix="ralph-fleet-") as tmp:
        stores = _Stores(Path(tmp))
        try:
            return _run(opts, levels, stores)
        finally:
            os.chdir(ROOT)
            stores.close()


def _run(opts, levels: list[int], stores: _Stores) -> int:
    kinds, pg_failed = _kinds(opts.stores.split(","), stores)
    repo = task_ops.make_repo(stores.base / "repo")
    os.chdir(repo)
    print(f"{opts.tasks} open tasks per run, claimed until none is eligible; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"  {'store':11} {'claimers':>8} {'claims/s':>9} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'errors':>6} {'double':>6} {'unclaimed':>9} {'active':>6} "
          f"{'cpu ms/claim (claimer+server)':>30}")
    rates, cpu, bad = {}, {}, []
    for claimers in levels:
        for kind in kinds:
            environ = _environ(stores.fresh(kind))
            _checked(["plan-sync"], environ, _backlog(opts.tasks))
            r = _fleet(repo, environ, claimers, opts.tasks,
                       stores.cluster if kind == "postgresql" else None)
            rates[kind, claimers] = r["per_s"]
            cpu[kind, claimers] = r["client_ms"] + r["server_ms"]
            print(f"  {kind:11} {claimers:8} {r['per_s']:9.1f} {r['p50']:7.1f} {r['p99']:7.1f} "
                  f"{len(r['errors']):6} {r['double']:6} {r['unclaimed']:9} {r['active']:6} "
                  f"{r['client_ms']:21.2f} + {r['server_ms']:.2f}")
            if r["double"] or r["unclaimed"] or r["active"] != opts.tasks:
                bad.append(f"{kind} x{claimers}: {r['double']} claimed twice, "
                           f"{r['unclaimed']} never claimed, {r['active']} active listed")
            for error in sorted(set(r["errors"]))[:3]:
                print(f"      {error}")
    print(f"\npeek -n 10 at {opts.peek_tasks} tasks (in-process p50 of {opts.repeats}; "
          f"whole process `python -S scripts/task`, median)")
    peeks = {}
    for kind in kinds:
        environ = _environ(stores.fresh(kind))
        started = time.perf_counter()
        _checked(["plan-sync"], environ, task_ops.jsonl(opts.peek_tasks))
        filled = time.perf_counter() - started
        for i in (0, 10, 20):
            _checked(["claim", f"task-{i:05}", "--agent", "other"], environ)
        inproc, whole, error = _peek(repo, environ, opts.repeats)
        peeks[kind] = (inproc, whole)
        shown = f"{whole:6.1f} ms" if whole is not None else "FAILED"
        print(f"  {kind:11} in-process {inproc:6.1f} ms   whole process {shown}   "
              f"(plan-sync of {opts.peek_tasks}: {filled:.1f} s)")
        if error:
            print(f"      scripts/task peek -n 10: {error}")
    if kinds:
        print("  floors, whole process: " + "; ".join(
            f"{label} {ms:.1f} ms" for label, ms in _floors(kinds, opts.repeats).items()))
    return _verdict(levels, rates, cpu, peeks, bad, pg_failed, opts.peek_tasks)


def _verdict(levels, rates, cpu, peeks, bad, pg_failed: bool, peek_tasks: int) -> int:
    top = max(levels)
    print(f"\ntargets: {top} claimers on postgresql >= {RATIO_TARGET:.0f}x sqlite's claims/s; "
          f"zero double claims; peek -n 10 at {peek_tasks} tasks < {PEEK_TARGET_MS:.0f} ms "
          "in-process (the whole process is not judged: see the docstring)")
    missed = []
    if ("postgresql", top) in rates and ("sqlite", top) in rates:
        ratio = rates["postgresql", top] / rates["sqlite", top]
        cores = os.cpu_count() or 1
        ceiling = cores * 1000 / cpu["postgresql", top] if cpu["postgresql", top] else 0
        print(f"  {top} claimers: postgresql {ratio:.2f}x sqlite; at "
              f"{cpu['postgresql', top]:.2f} ms of CPU a claim, {cores} cores allow at most "
              f"{ceiling:.0f} postgresql claims/s ({ceiling / rates['sqlite', top]:.1f}x sqlite)")
        if ratio < RATIO_TARGET:
            missed.append(f"postgresql {ratio:.2f}x sqlite at {top} claimers")
    for kind, (inproc, whole) in peeks.items():
        if whole is None:
            missed.append(f"{kind} peek whole process failed")
        if not inproc < PEEK_TARGET_MS:
            missed.append(f"{kind} peek in-process {inproc:.1f} ms")
    print("  claims: every task claimed exactly once" if not bad
          else "  claims: WRONG: " + "; ".join(bad))
    print("  speed: all met" if not missed else "  speed: MISSED: " + "; ".join(missed))
    return 1 if bad or pg_failed else 0


if __name__ == "__main__":
    sys.exit(main())
