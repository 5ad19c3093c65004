"""Owns the task CLI's entry point and how it is started: `ralph-task` installed, scripts/task
in a checkout, and the launcher a run writes for its agents (`.ralph/bin/task`, the path in
RALPH_TASK_SCRIPT: ralph's own interpreter named in its first line, so no PATH lookup and no
version manager's shim runs at each call, docs/decisions/0035). The CLI the `tasks` setting
names answers (sources.choice): a store URL in RALPH_TASKS is the embedded CLI's store
(docs/fleet.md), a source's name is that source's CLI (docs/task-sources.md), anything else the
embedded CLI. What answers is imported only once chosen, so the embedded CLI starts as fast as
when it was the entry point itself. Knows nothing of the commands themselves."""
from __future__ import annotations

import os
import sys

from ralphpy.sources import choice

# typing costs the task CLI's start-up a fifth of its imports (re, enum, collections):
# annotations only (docs/decisions/0002).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import MutableMapping

LAUNCHER = ("bin", "task")          # under the run's .ralph/ (git-ignored)
# A longer first line is cut short by older kernels (127 bytes before Linux 5.1): such an
# interpreter, or one whose path holds a blank, keeps the task command itself.
_SHEBANG_MAX = 127
_LAUNCHER_TEXT = '''\
#!{python} -S
"""The task CLI for the agents of ralph's runs in this checkout ($RALPH_TASK_SCRIPT), written
by ralph at the start of a run: it runs the task CLI of {lib} with the interpreter ralph ran
under, named above, so no PATH lookup happens at each call (docs/decisions/0035)."""
import sys
sys.dont_write_bytecode = False     # the package's bytecode stays cached (decisions/0002)
sys.path.insert(0, {lib!r})
from ralphpy.sources import entry
entry.launch(__file__, {venv!r})
'''


def name_store(environ: MutableMapping[str, str]) -> None:
    """RALPH_TASKS naming a store (`--tasks postgresql://...` as an environment variable)
    becomes RALPH_TASKS_DB, also over one RALPH_TASKS_DB names already: the `tasks` setting
    names the store, RALPH_TASKS_DB only while that setting is sqlite, as in a run."""
    if choice.is_store(environ.get("RALPH_TASKS", "")):
        environ["RALPH_TASKS_DB"] = environ.pop("RALPH_TASKS")


def main() -> None:
    name_store(os.environ)
    if not choice.is_source(os.environ.get("RALPH_TASKS", "")):
        from ralphpy.tasks.cli import console_main
    else:                                            # a task source (docs/task-sources.md)
        from ralphpy.sources.cli import console_main
    console_main()


def find_driver(script: str, venv: str | None) -> None:
    """A PostgreSQL store (the one used, or the one `migrate-db` copies into) needs psycopg
    from site-packages, the GitHub source PyGithub (docs/github.md), which -S left off sys.path: this Python's folders and the user's, and
    the checkout's `venv` (`make setup`) when it is for this Python's version (its compiled
    modules are then this ABI's); else `script` is run again by the venv's interpreter, as
    ralph.py itself re-executes. Their .pth hooks (setuptools', editable installs) are left
    out: a fifth of a command's start-up, and psycopg needs none of them."""
    from ralphpy.tasks import store_url
    github = os.environ.get("RALPH_TASKS", "").partition(":")[0] == "github"
    if not (github or store_url.is_postgres(choice.store_in(os.environ) or "")
            or sys.argv[1:2] == ["migrate-db"]):
        return
    import importlib.util
    import site
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    if venv:
        folders.append(os.path.join(venv, "lib", f"python{sys.version_info[0]}."
                                    f"{sys.version_info[1]}", "site-packages"))
    for folder in folders:
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.append(folder)
    if not venv or importlib.util.find_spec("github" if github else "psycopg") is not None:
        return
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, script, *sys.argv[1:]])


def launch(script: str, venv: str | None) -> None:
    """scripts/task and the agents' launcher: the driver where the store needs it, then main()."""
    find_driver(script, venv)
    main()


def own_lib() -> str:
    """The folder holding this ralphpy package (symlinks resolved): what the launcher puts
    first on sys.path."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def runs_from() -> list[str]:
    """The folders the task CLI runs from when the launcher starts it: the package's folder and
    the interpreter's (its venv, the Python install a venv links to); a sandbox shows them."""
    python = os.path.realpath(sys.executable)
    return list(dict.fromkeys([own_lib(), sys.prefix, sys.base_prefix,
                               os.path.dirname(os.path.dirname(python))]))


def launcher_text(python: str, lib: str) -> bytes | None:
    """The agents' launcher for the task CLI in `lib` run by `python` (absolute), or None when
    `python` cannot be named in a first line (a blank in it, too long)."""
    head = f"#!{python} -S".encode("utf-8", "surrogateescape")
    if (not os.path.isabs(python) or len(head) > _SHEBANG_MAX
            or any(c in python for c in " \t\n\r")):
        return None
    venv = os.path.join(os.path.dirname(lib), ".venv")
    text = _LAUNCHER_TEXT.format(python=python, lib=lib,
                                 venv=venv if os.path.isdir(venv) else None)
    return text.encode("utf-8", "surrogateescape")


def write_launcher(ralph_dir: Path, python: str, lib: str) -> str | None:
    """The launcher under `ralph_dir`, written when it is missing or differs (atomically: an
    agent of another run may be calling it), its path returned; None when `python` cannot be
    named in its first line or the file cannot be written (the caller keeps its command)."""
    from ralphpy import atomic_file
    from ralphpy.errors import EnvironmentFailure
    text = launcher_text(python, lib)
    if text is None:
        return None
    path = ralph_dir.joinpath(*LAUNCHER)
    try:
        with open(path, "rb") as handle:
            same = handle.read() == text and os.access(path, os.X_OK)
    except OSError:
        same = False
    if not same:
        try:                                    # a new .ralph/ gets its `*` .gitignore first
            atomic_file.write_atomic(path, text, mode=0o755)
        except EnvironmentFailure:
            return None
    return str(path)


__all__ = ["name_store", "main", "launch", "own_lib", "runs_from", "launcher_text",
           "write_launcher"]
