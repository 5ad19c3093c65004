"""Owns what a verdict of the verify gate is: passed, warned, failed, timed out or held, from
the check's result and the tamper findings under the `tamper:` mode, and how it reads (the
fail reason the task is reopened with, the run's report line). Knows nothing of tasks, of git
or of when the gate judges (verify.completion)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:                       # annotations only (verify.completion loads tamper)
    from ralphpy.verify import gate, tamper

FAILED = ("failed", "timeout", "held")


@dataclass
class Verdict:
    """What the gate decided for one task."""

    task: str
    verdict: str                      # passed | warned | failed | timeout | held
    reason: str = ""                  # the fail reason given to `_reopen` ("" when it passed)
    check: gate.Check | None = None
    findings: list[tamper.Finding] = field(default_factory=list)
    tree: str = ""                    # where it ran

    @property
    def ok(self) -> bool:
        return self.verdict in ("passed", "warned")


def decide(slug: str, check: gate.Check | None, findings: list[tamper.Finding], mode: str,
           recheck: bool = False, tree: str = "") -> Verdict:
    """Findings under `tamper: hold` hold the task (with the check's failure too, if any); a
    failed or timed-out check reopens it; findings under `warn` pass it with a warning."""
    failed = check is not None and not check.passed
    if findings and mode == "hold":
        text = "; ".join(f.text() for f in findings)
        lines = [f"tamper check: {text}"]
        if failed:
            lines += [failure(check, recheck)]
        return Verdict(slug, "held", "\n".join(lines), check, findings, tree)
    if failed:
        return Verdict(slug, "timeout" if check.timed_out else "failed",
                       failure(check, recheck), check, findings, tree)
    return Verdict(slug, "warned" if findings else "passed", "", check, findings, tree)


def line(v: Verdict) -> str:
    """The run's report line of a verdict."""
    if v.ok:
        said = v.check.summary() if v.check else "no verify command"
        warned = f"; tamper findings: {'; '.join(f.text() for f in v.findings)}" \
            if v.findings else ""
        return f"verify: task {v.task} {v.verdict}: {said}{warned}"
    action = "reopened and held" if v.verdict == "held" else "reopened"
    return f"verify: task {v.task} {action}: {v.reason.split(chr(10), 1)[0]}"


def failure(check: gate.Check, recheck: bool) -> str:
    """The fail reason of a check that failed. Not Check.summary: a reason leads with what went
    wrong (`verify failed:`, the first line a report and the next session show) and gives the
    output's tail; the summary is the report line of a check that passed."""
    at = check.ran_at
    again = " on re-check (the tree moved since it passed)" if recheck else ""
    if check.timed_out:
        head = f"verify timed out{again}: `{check.command}` ran longer than {check.timeout_s:g}s {at}"
    elif check.error:
        head = f"verify could not run{again}: `{check.command}`: {check.error}"
    else:
        head = f"verify failed{again}: `{check.command}` exited {check.exit_code} {at}"
    return f"{head}\n{check.tail}" if check.tail else head


__all__ = ["Verdict", "decide", "line", "failure", "FAILED"]
