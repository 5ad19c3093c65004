"""Owns bubblewrap's command line for a sandbox plan: the host's file system read-only under
the plan's mounts, its own pid namespace (the agent cannot signal ralph or another session;
nothing it starts outlives it), killed with ralph (--die-with-parent), the host's network. No
--new-session: the agent stays in the process group ralph signals (docs/contract/ralph-cli.md
s.16). bwrap itself ignores SIGINT and SIGTERM (GNU env's --ignore-signal), the agent gets
them back at their default (--default-signal): otherwise the group's first Ctrl+C would end
bwrap, and with it the whole sandbox, before the agent could clean up. SIGKILL ends all.
Knows nothing of what the plan holds or of running it."""
from __future__ import annotations

from typing import Sequence

from ralphpy.sandbox.plan import RO, RW, TMPFS, Plan

PROGRAM = "bwrap"
PACKAGE = "bubblewrap"
_BIND = {RW: "--bind", RO: "--ro-bind"}
_OUTSIDE = ("env", "--ignore-signal=INT,TERM")          # bwrap waits for the agent
_INSIDE = ("env", "--default-signal=INT,TERM", "--")    # the agent answers them


def argv(plan: Plan, inner: Sequence[str], program: str = PROGRAM) -> list[str]:
    out = [*_OUTSIDE, program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--unshare-pid", "--die-with-parent"]
    for mount in plan.mounts:
        if mount.kind == TMPFS:
            out += ["--tmpfs", mount.path]
        else:
            out += [_BIND[mount.kind], mount.path, mount.path]
    for name, value in plan.env.items():
        out += ["--setenv", name, value]
    return [*out, "--chdir", plan.cwd, "--", *_INSIDE, *inner]


def probe(program: str = PROGRAM) -> list[str]:
    """A sandbox that starts and ends at once: whether bwrap works on this machine (user
    namespaces allowed), asked before the first session."""
    return [*_OUTSIDE, program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--die-with-parent", "--", *_INSIDE, "true"]


__all__ = ["argv", "probe", "PROGRAM", "PACKAGE"]
