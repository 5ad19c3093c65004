"""Owns docker's and podman's command line for a sandbox plan: `run --rm -i --init` of the
image the user names (`sandbox_image`), as the user's uid, its root file system read-only, the
plan's mounts as bind mounts and tmpfs, the host's network, each variable of the session passed
by name (its value never on a command line), a name per session so that what a killed client
left is removed (`remove`). Knows nothing of what the plan holds or of running it."""
from __future__ import annotations

import os
from typing import Iterable, Sequence

from ralphpy.sandbox.plan import RO, TMPFS, Plan

ENGINES = ("docker", "podman")


def argv(engine: str, image: str, plan: Plan, inner: Sequence[str], env_names: Iterable[str],
         name: str) -> list[str]:
    out = [engine, "run", "--rm", "-i", "--init", "--name", name, "--network", "host",
           "--user", f"{os.getuid()}:{os.getgid()}", "--read-only"]
    for mount in plan.mounts:
        if mount.kind == TMPFS:
            out += ["--tmpfs", mount.path]
        else:
            ro = ",readonly" if mount.kind == RO else ""
            out += ["--mount", f"type=bind,src={mount.path},dst={mount.path}{ro}"]
    for var in sorted(set(env_names) - set(plan.env)):
        out += ["-e", var]
    for var, value in plan.env.items():
        out += ["-e", f"{var}={value}"]
    return [*out, "-w", plan.cwd, image, *inner]


def probe(engine: str) -> list[str]:
    """Whether a daemon answers: `docker info` fails without one."""
    return [engine, "info", "--format", "{{.ServerVersion}}"]


def remove(engine: str, name: str) -> list[str]:
    """The session's container, gone whatever ended its client."""
    return [engine, "rm", "-f", name]


__all__ = ["argv", "probe", "remove", "ENGINES"]
