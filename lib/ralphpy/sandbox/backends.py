"""Owns choosing the sandbox of a run (--sandbox auto|bwrap|docker|podman|none) and checking,
before the first session, that it starts: `auto` takes bubblewrap, then podman, then docker,
whichever is installed and works; a named one that cannot start is an error naming what to
install or start, never a silent run on the host. `wrap` turns a session's argv into the
sandboxed one. Knows nothing of the session's loop or of what the plan holds (plan)."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Mapping, Sequence

from ralphpy import programs
from ralphpy.errors import UsageError
from ralphpy.sandbox import bwrap, oci
from ralphpy.sandbox.plan import Plan

NONE, AUTO = "none", "auto"
CHOICES = (AUTO, bwrap.PROGRAM, *oci.ENGINES, NONE)
_AUTO_ORDER = (bwrap.PROGRAM, "podman", "docker")


@dataclass(frozen=True)
class Backend:
    name: str                    # bwrap, docker or podman
    program: str                 # its path
    image: str | None = None     # docker, podman: the image the agent runs in

    @property
    def shown(self) -> str:
        """As the banner and `ralph status` name it."""
        return f"{self.name} ({self.image})" if self.image else self.name


def _found(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", os.defpath))


def _starts(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """None when argv runs and exits 0, else the first line of why not."""
    try:
        done = programs.run(argv, cwd="/", env=env, timeout=30)
    except (OSError, programs.TimeoutExpired) as err:
        return str(err)
    if done.code == 0:
        return None
    lines = (done.err or done.out).strip().splitlines()
    return lines[-1] if lines else f"exit {done.code}"


def check(name: str, program: str, image: str | None, env: Mapping[str, str]) -> None:
    """UsageError when backend `name` at `program` cannot start a sandbox here."""
    if name == bwrap.PROGRAM:
        why = _starts(bwrap.probe(program), env)
        if why is not None:
            raise UsageError(f"--sandbox bwrap: bubblewrap cannot start a sandbox here ({why}); "
                             "allow unprivileged user namespaces, or choose another --sandbox")
        return
    if not image:
        raise UsageError(f"--sandbox {name} needs an image with the agent CLI in it: "
                         "set sandbox_image in ralph.yml or --sandbox-image")
    why = _starts(oci.probe(program), env)
    if why is not None:
        raise UsageError(f"--sandbox {name}: no {name} daemon answers ({why}); start it, or "
                         "choose another --sandbox")


def resolve(choice: str, image: str | None, env: Mapping[str, str]) -> Backend | None:
    """The run's sandbox, checked to start (None for `none`); UsageError otherwise."""
    if choice == NONE:
        return None
    if choice == AUTO:
        for name in _AUTO_ORDER:
            if name != bwrap.PROGRAM and not image:
                continue                        # an engine needs an image: not for auto
            program = _found(name, env)
            if program is None:
                continue
            try:
                check(name, program, image, env)
            except UsageError:
                continue
            return Backend(name, program, image if name != bwrap.PROGRAM else None)
        raise UsageError(f"--sandbox auto: no sandbox can start here; install bubblewrap "
                         f"(apt-get install {bwrap.PACKAGE}), or choose --sandbox none")
    if choice != bwrap.PROGRAM and not image:
        check(choice, "", image, env)                   # the image first: no daemon is asked
    program = _found(choice, env)
    if program is None:
        package = bwrap.PACKAGE if choice == bwrap.PROGRAM else choice
        raise UsageError(f"--sandbox {choice}: '{choice}' is not on PATH; install {package}, "
                         "or choose another --sandbox")
    check(choice, program, image, env)
    return Backend(choice, program, image if choice != bwrap.PROGRAM else None)


def wrap(backend: Backend, plan: Plan, argv: Sequence[str], env_names: Sequence[str],
         name: str) -> list[str]:
    """The session's argv run inside the sandbox of `plan`; name: the session's own (a
    container's, so that it can be removed)."""
    if backend.name == bwrap.PROGRAM:
        return bwrap.argv(plan, argv, backend.program)
    return oci.argv(backend.program, backend.image or "", plan, argv, env_names, name)


def leftover(backend: Backend, name: str) -> list[str] | None:
    """The call that removes what a session's sandbox may leave (a container), or None."""
    return oci.remove(backend.program, name) if backend.name in oci.ENGINES else None


def run_quietly(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """A clean-up call whose failure changes nothing (the container went with its --rm)."""
    _starts(argv, env)


__all__ = ["Backend", "CHOICES", "NONE", "AUTO", "resolve", "check", "wrap", "leftover",
           "run_quietly"]
