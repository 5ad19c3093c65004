"""The canary (`make canary`, `python -m canary [CLI ...]`): each agent CLI's newest release
run through the tests that prove its adapter against the pinned one (tests/e2e_real).

For each CLI of canary/groups.json whose `latest` on the npm registry is not its pin in
package.json: install it into `.agents-latest/<cli>/` (never `.agents/`), run its test group
twice in the same run, against the pinned CLIs and with the latest first on the path
(`RALPH_AGENTS_DIR=.agents-latest/<cli>:.agents`), and print one table row: pinned and latest
version, each run's results, and for a failure what the latest did differently first (the
first differing event of the agent's stream, else the failure's message). A failure the pinned
CLI shares is the suite's, not the new release's; a test whose stand-in was asked what it does
not serve is a stand-in gap, told apart from an adapter break.

Exit codes: 0 all green (or nothing newer), 1 a break (or a stand-in gap, or a group red on
the pinned CLI too), 2 a CLI could not be installed or its tests could not run (no break),
3 a usage mistake (one `Error:` line, nothing installed).
Never part of `make test`: the pinned suite stays the gate (docs/decisions/0033).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from canary import compare, npm
from canary.record import record_dir

ROOT = Path(__file__).resolve().parents[1]
GROUP_TIMEOUT_S = 3600
GREEN, BREAK, GAP, RED, NOT_RUN = "green", "BREAK", "stand-in gap", "red on pinned too", "not run"
EXIT_OK, EXIT_BREAK, EXIT_INSTALL, EXIT_USAGE = 0, 1, 2, 3
BAD = (BREAK, GAP, RED)


@dataclass
class Row:
    cli: str
    pinned: str
    latest: str = "?"
    pinned_run: str = "-"
    latest_run: str = "-"
    verdict: str = GREEN
    first: str = ""                       # the first difference, or why it could not run
    notes: list[str] = field(default_factory=list)


@dataclass
class GroupRun:
    results: dict[str, compare.TestResult]
    events: Path
    gaps: dict[str, set[str]]
    log: Path

    def counts(self) -> str:
        tally: dict[str, int] = {}
        for r in self.results.values():
            tally[r.outcome] = tally.get(r.outcome, 0) + 1
        return ", ".join(f"{n} {k}" for k, n in sorted(tally.items())) or "no tests ran"


def _run_group(tests: list[str], agents_dirs: list[Path], work: Path) -> GroupRun:
    """The group's tests, as pytest runs them from the checkout, the CLIs found in
    agents_dirs (first wins); the session logs and the stand-ins' gaps recorded in work/."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "RALPH_CANARY_"))}
    env.update(RALPH_AGENTS_DIR=os.pathsep.join(map(str, agents_dirs)),
               RALPH_CANARY_EVENTS=str(work / "events"),
               RALPH_CANARY_STANDIN_LOG=str(work / "standin.jsonl"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    xml = work / "junit.xml"
    # --basetemp: the tests' temp dirs stay in work/, away from other pytest runs' numbered ones
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-p", "canary.record", f"--basetemp={work / 'tmp'}", f"--junitxml={xml}", *tests]
    log = work / "pytest.log"
    with open(log, "wb") as out:
        try:
            subprocess.run(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=GROUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            out.write(f"\ncanary: the group ran over {GROUP_TIMEOUT_S}s\n".encode())
    return GroupRun(compare.results(xml), work / "events", compare.standin_gaps(
        work / "standin.jsonl"), log)


def _judge(row: Row, pinned: GroupRun, latest: GroupRun) -> None:
    row.pinned_run, row.latest_run = pinned.counts(), latest.counts()
    failed = [t for t, r in latest.results.items() if r.outcome == "failed"]
    if not failed and not any(r.outcome == "passed" for r in latest.results.values()):
        skipped = next((r.message for r in latest.results.values() if r.message), "")
        row.verdict, row.first = NOT_RUN, skipped or f"no test ran (see {latest.log})"
        return
    worst = []
    for test in failed:
        message = latest.results[test].message
        new_gaps = sorted(latest.gaps.get(test, set()) - pinned.gaps.get(test, set()))
        if pinned.results.get(test, compare.TestResult("passed")).outcome == "failed":
            verdict, first = RED, f"fails on the pinned CLI too: {message}"
        elif new_gaps:
            verdict, first = GAP, f"the stand-in could not answer {new_gaps[0]}"
        else:
            verdict = BREAK
            name = record_dir(test)
            first = compare.first_difference(compare.events(pinned.events / name),
                                             compare.events(latest.events / name)) or message
        worst.append((BAD.index(verdict), verdict, first))
        row.notes.append(f"{test.split('::')[-1]}: {first}"
                         + ("" if first == message else f" (the test: {message})"))
    if worst:
        _, row.verdict, row.first = min(worst)
        row.notes.append(f"pytest's output: {latest.log}")
        return
    for test in latest.results:            # green: what changed all the same, for the next pin
        name = record_dir(test)
        new_gaps = sorted(latest.gaps.get(test, set()) - pinned.gaps.get(test, set()))
        changed = (f"the stand-in could not answer {new_gaps[0]}" if new_gaps else
                   compare.first_difference(compare.events(pinned.events / name),
                                            compare.events(latest.events / name)))
        if changed:
            row.first = f"no break; {changed}"
            row.notes.append(f"{test.split('::')[-1]}: {changed}")
            return


def check(cli: str, group: dict, pinned_version: str, opts: argparse.Namespace) -> Row:
    row = Row(cli, pinned_version)
    env = dict(os.environ)
    say = lambda what: print(f"canary: {cli}: {what}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        row.latest = npm.latest(group["package"], env, ROOT)
        if row.latest == pinned_version:
            row.first = "nothing newer to run"
            return row
        fresh = npm.install(group["package"], row.latest, opts.latest_dir / cli,
                            group.get("binary", cli), env)
        say(f"{group['package']}@{row.latest} {'installed' if fresh else 'kept from before'} "
            f"in {opts.latest_dir / cli}")
    except npm.NpmFailed as err:
        row.verdict, row.first = NOT_RUN, f"could not install: {err}"
        row.notes.append(row.first)
        return row
    work = opts.latest_dir / "runs" / cli
    say(f"running its tests against {pinned_version} (pinned)")
    pinned = _run_group(group["tests"], [opts.pinned_dir], work / "pinned")
    say(f"running its tests against {row.latest} (latest)")
    latest = _run_group(group["tests"], [opts.latest_dir / cli, opts.pinned_dir],
                        work / "latest")
    _judge(row, pinned, latest)
    return row


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "\u2026"


def table(rows: list[Row]) -> str:
    head = ("CLI", "PINNED", "LATEST", "TESTS ON PINNED", "TESTS ON LATEST", "RESULT",
            "FIRST DIFFERENCE")
    cells = [head] + [(r.cli, r.pinned, r.latest, r.pinned_run, r.latest_run, r.verdict,
                       _cut(r.first, 100)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:-1], widths)) + "  " + row[-1]
             for row in cells]
    for r in rows:
        lines += [f"{r.cli} {r.latest}: {note}" for note in r.notes]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def exit_code(rows: list[Row]) -> int:
    if any(r.verdict in BAD for r in rows):
        return EXIT_BREAK
    return EXIT_INSTALL if any(r.verdict == NOT_RUN for r in rows) else EXIT_OK


def _usage_error(message: str) -> None:
    """A usage mistake: one line, exit 3 (not 1 or 2: those are the canary's findings)."""
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m canary", description=__doc__.split("\n\n")[0])
    p.add_argument("clis", nargs="*", help="only these CLIs (default: every one of --groups)")
    p.add_argument("--pins", type=Path, default=ROOT / "package.json")
    p.add_argument("--groups", type=Path, default=ROOT / "canary" / "groups.json")
    p.add_argument("--pinned-dir", type=Path, default=ROOT / ".agents")
    p.add_argument("--latest-dir", type=Path, default=ROOT / ".agents-latest")
    p.error = _usage_error                                     # type: ignore[method-assign]
    opts = p.parse_args(argv)
    try:
        groups = json.loads(opts.groups.read_text(encoding="utf-8"))
        pins = npm.pins(opts.pins)
    except (OSError, ValueError, KeyError) as err:
        _usage_error(f"cannot read {opts.groups} and {opts.pins}: {err}")
    unknown = [c for c in opts.clis if c not in groups]
    if unknown:
        _usage_error(f"unknown CLI {unknown[0]!r} (known: {', '.join(groups)})")
    opts.pinned_dir, opts.latest_dir = opts.pinned_dir.resolve(), opts.latest_dir.resolve()
    rows = []
    for cli in opts.clis or list(groups):
        group = groups[cli]
        if not (opts.pinned_dir / "node_modules" / ".bin" / group.get("binary", cli)).exists():
            rows.append(Row(cli, pins.get(group["package"], "?"), verdict=NOT_RUN,
                            first=f"the pinned CLI is not installed in {opts.pinned_dir} "
                                  "(make agents)"))
            continue
        rows.append(check(cli, group, pins[group["package"]], opts))
    sys.stdout.write(table(rows))
    return exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
