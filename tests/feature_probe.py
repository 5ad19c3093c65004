"""A feature that records every hook it is given, for the test that a feature registered once
(one line in loop.features.REGISTRY) is active in the single loop and under --parallel alike.
Run as a process: `python feature_probe.py <ralph argv...>` registers it, then runs ralph.py's
main; each hook appends one JSON line to $PROBE_LOG. Its run-level hold: once the file
$PROBE_HOLD names exists, the run starts no session and stops."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "lib")]
    import ralph
    from ralphpy.loop import features

    log = Path(os.environ["PROBE_LOG"])

    def note(hook: str, session=None) -> None:
        entry = {"hook": hook}
        if session is not None:
            entry.update(task=session.task, failed=list(session.failed),
                         cwd=str(session.cwd) if session.cwd else None,
                         worktree=session.place is not None, log=str(session.log),
                         agent=session.agent,
                         outcome=session.outcome.kind if session.outcome else None)
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    class Probe(features.Feature):
        def start(self) -> None:
            note("start")

        def prepare(self, session) -> None:
            session.env["PROBE_SEEN"] = "yes"          # reaches the agent's environment
            note("prepare", session)

        def after_session(self, session) -> None:
            note("after_session", session)

        def record(self, session) -> None:
            note("record", session)

        def finish(self) -> None:
            note("finish")

        def holding(self):
            """Run-level: once $PROBE_HOLD exists, no session starts any more; a stop line
            ends the run (exit 0)."""
            if os.environ.get("PROBE_HOLD") and Path(os.environ["PROBE_HOLD"]).exists():
                return features.Hold(features.STOPPED_BY_REQUEST, line="Stopped: probe hold")
            return None

    features.REGISTRY.append(lambda ctx: Probe())
    ralph.main(sys.argv[1:])


if __name__ == "__main__":
    main()
