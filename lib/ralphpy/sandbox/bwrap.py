"""Owns bubblewrap's command line for a sandbox plan: the host's file system read-only under
the plan's mounts, its own pid namespace (the agent cannot signal ralph or another session;
nothing it starts outlives it), killed with ralph (--die-with-parent), the host's network. No
--new-session: the agent stays in the process group ralph signals (docs/contract/ralph-cli.md
s.16). Knows nothing of what the plan holds or of running it."""
from __future__ import annotations

from typing import Sequence

from ralphpy.sandbox.plan import RO, RW, TMPFS, Plan

PROGRAM = "bwrap"
PACKAGE = "bubblewrap"
_BIND = {RW: "--bind", RO: "--ro-bind"}


def argv(plan: Plan, inner: Sequence[str], program: str = PROGRAM) -> list[str]:
    out = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--unshare-pid", "--die-with-parent"]
    for mount in plan.mounts:
        if mount.kind == TMPFS:
            out += ["--tmpfs", mount.path]
        else:
            out += [_BIND[mount.kind], mount.path, mount.path]
    for name, value in plan.env.items():
        out += ["--setenv", name, value]
    return [*out, "--chdir", plan.cwd, "--", *inner]


def probe(program: str = PROGRAM) -> list[str]:
    """A sandbox that starts and ends at once: whether bwrap works on this machine (user
    namespaces allowed), asked before the first session."""
    return [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--die-with-parent", "--", "true"]


__all__ = ["argv", "probe", "PROGRAM", "PACKAGE"]
