"""What a task command on the SQLite store imports, in a fresh `python -S` as scripts/task
starts: not `re`, `enum` or `functools` (each costs milliseconds on every call an agent makes;
decisions/0002). A `scheme://` store value is the only thing that needs the store URL parser."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git

LIB = Path(__file__).resolve().parents[3] / "lib"
PROBE = ("import sys, io; sys.path.insert(0, %r); from ralphkit.tasks import cli;"
         "code = cli.main(sys.argv[1:], stdout=io.StringIO());"
         "print(code, sorted(m for m in ('re', 'enum', 'functools', 'json') if m in sys.modules))")


@pytest.mark.parametrize("store", ["", "backlog/tasks.db"], ids=["default", "RALPH_TASKS_DB path"])
@pytest.mark.parametrize("command", [["plan-status"], ["peek"], ["list", "--status", "active"]])
def test_a_sqlite_command_imports_neither_re_nor_enum_nor_functools(tmp_path, store, command):
    git(tmp_path, "init", "-q", "-b", "main")
    env = {"PATH": "/usr/bin:/bin", "RALPH_SCOPE_REPO": "o/r", "RALPH_SCOPE_BRANCH": "main"}
    if store:
        env["RALPH_TASKS_DB"] = store
    out = subprocess.run([sys.executable, "-S", "-c", PROBE % str(LIB), *command], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "0 []\n", "")
