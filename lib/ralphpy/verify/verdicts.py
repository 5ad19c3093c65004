"""Owns what a verdict of the verify gate is, from the check's result and the tamper findings
under the `tamper:` mode, and how it reads (the fail reason, the report line). Knows nothing
of tasks, of git or of when the gate judges (verify.completion)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:                       # annotations only (verify.completion loads tamper)
    from ralphpy.verify import as_they_stood, gate, tamper

FAILED = ("failed", "timeout", "held")
# The diff rules' findings that stand alone; the others explain a failure of the tests as they
# stood (or a test of the start that no longer runs) to a person, and are no finding alone.
ALONE = ("protected_path", "verify_line", "hidden_path", "test_command", "coverage_excluded")
MAY_CHANGE = "judged by the session's tests alone (tests: may change)"


@dataclass
class Verdict:                        # what the gate decided for one task
    task: str
    verdict: str                      # passed | warned | failed | timeout | held
    reason: str = ""                  # the fail reason given to `_reopen` ("" when it passed)
    check: gate.Check | None = None
    findings: list[tamper.Finding] = field(default_factory=list)
    tree: str = ""                    # where it ran
    second: as_they_stood.Second | None = None     # the tests as they stood, when run
    note: str = ""                    # how it was judged, for the report line

    @property
    def ok(self) -> bool:
        return self.verdict in ("passed", "warned")


def decide(slug: str, check: gate.Check | None, findings: list[tamper.Finding], mode: str,
           recheck: bool = False, tree: str = "", second: as_they_stood.Second | None = None,
           may_change: bool = False) -> Verdict:
    """The diff rules' findings that stand alone (ALONE), and, when the tests as they stood
    failed or a test of the start no longer runs, the others with them, hold the task under
    `tamper: hold` (with a failure too, if any); a failed or timed-out check, or a failed
    second run, reopens it; findings under `warn` pass it with a warning."""
    stood_failed = second is not None and not second.check.passed
    if stood_failed or (second is not None and second.dropped):
        findings = [*findings, *_second_findings(second)]
    else:
        findings = [f for f in findings if f.kind in ALONE]
    note = MAY_CHANGE if may_change else ""
    failed = check is not None and not check.passed
    why = ""
    if failed:
        why = failure(check, recheck)
    elif stood_failed:
        why = failure(second.check, recheck, second)
    if findings and mode == "hold":
        text = "; ".join(f.text() for f in findings)
        reason = f"tamper check: {text}" + (f"\n{why}" if why else "")
        return Verdict(slug, "held", reason, check, findings, tree, second, note)
    if why:
        timed_out = (check if failed else second.check).timed_out
        return Verdict(slug, "timeout" if timed_out else "failed", why, check, findings, tree,
                       second, note)
    return Verdict(slug, "warned" if findings else "passed", "", check, findings, tree, second,
                   note)


def _second_findings(second: as_they_stood.Second) -> list[tamper.Finding]:
    from ralphpy.verify.tamper import Finding
    where = ", ".join(second.restored[:3]) + (", ..." if len(second.restored) > 3 else "")
    found = []
    if not second.check.passed:
        named = ", ".join(second.check.failing) or f"`{second.check.command}` exited " \
            f"{second.check.exit_code}"
        found.append(Finding("tests_as_they_stood", where, None,
                             f"the start's tests fail with the test side as it stood: {named}"))
    return found + [Finding("dropped_test", "", None, f"test {name} of the start no longer runs")
                    for name in second.dropped]


def line(v: Verdict) -> str:
    """The run's report line of a verdict."""
    if v.ok:
        said = v.check.summary() if v.check else "no verify command"
        warned = f"; tamper findings: {'; '.join(f.text() for f in v.findings)}" \
            if v.findings else ""
        runs = f"; {v.note}" if v.note else "; the tests as they stood passed too" \
            if v.second else ""
        if v.second and v.second.gone:          # renamed or removed: said, not held
            runs += f" (no longer run by these names: {', '.join(v.second.gone[:5])})"
        return f"verify: task {v.task} {v.verdict}: {said}{runs}{warned}"
    action = "reopened and held" if v.verdict == "held" else "reopened"
    return f"verify: task {v.task} {action}: {v.reason.split(chr(10), 1)[0]}"


def failure(check: gate.Check, recheck: bool,
            second: as_they_stood.Second | None = None) -> str:
    """The fail reason of a failed check: unlike Check.summary (a passed check's line) it leads
    with what went wrong, the line a report and the next session show, then the output's tail."""
    at = check.ran_at
    named = f": {', '.join(check.failing)}" if check.failing else ""
    again = " on re-check (the tree moved since it passed)" if recheck else ""
    if check.timed_out:
        head = f"verify timed out{again}: `{check.command}` ran longer than {check.timeout_s:g}s {at}"
    elif check.error:
        head = f"verify could not run{again}: `{check.command}`: {check.error}"
    elif second is not None:
        head = (f"verify failed with the tests as they stood: `{check.command}` exited "
                f"{check.exit_code} {at} with the start's test side{named}")
    else:
        head = f"verify failed{again}: `{check.command}` exited {check.exit_code} {at}{named}"
    return f"{head}\n{check.tail}" if check.tail else head


__all__ = ["Verdict", "decide", "line", "failure", "FAILED"]
