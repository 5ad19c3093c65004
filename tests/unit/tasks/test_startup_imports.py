"""What a task command on the SQLite store imports, in a fresh `python -S` as scripts/task
starts: not `re`, `enum`, `functools` or `typing` (each costs milliseconds on every call an
agent makes; decisions/0002). A `scheme://` store value is the only thing that needs the store
URL parser. Checked for the embedded CLI alone and through scripts/task, whose entry point
chooses between it and a task source's CLI."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TASK, git

LIB = Path(__file__).resolve().parents[3] / "lib"
PROBE = ("import sys, io; sys.path.insert(0, %r); from ralphpy.tasks import cli;"
         "code = cli.main(sys.argv[1:], stdout=io.StringIO());"
         "print(code, sorted(m for m in %r if m in sys.modules))")
HEAVY = ("re", "enum", "functools", "json", "typing")


@pytest.mark.parametrize("store", ["", "backlog/tasks.db"], ids=["default", "RALPH_TASKS_DB path"])
@pytest.mark.parametrize("command", [["plan-status"], ["peek"], ["list", "--status", "active"]])
def test_a_sqlite_command_imports_neither_re_nor_enum_nor_functools(tmp_path, store, command):
    git(tmp_path, "init", "-q", "-b", "main")
    env = {"PATH": "/usr/bin:/bin", "RALPH_SCOPE_REPO": "o/r", "RALPH_SCOPE_BRANCH": "main"}
    if store:
        env["RALPH_TASKS_DB"] = store
    out = subprocess.run([sys.executable, "-S", "-c", PROBE % (str(LIB), HEAVY), *command],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "0 []\n", "")


@pytest.mark.parametrize("command", [["plan-status"], ["peek", "-n", "10"], ["claim"]])
def test_scripts_task_on_sqlite_imports_none_of_them_either(tmp_path, command):
    git(tmp_path, "init", "-q", "-b", "main")
    env = {"PATH": "/usr/bin:/bin", "RALPH_SCOPE_REPO": "o/r", "RALPH_SCOPE_BRANCH": "main"}
    out = subprocess.run([sys.executable, "-S", "-X", "importtime", str(TASK), *command],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode in (0, 2), out.stderr           # claim: 2, nothing to claim
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "ralphpy.tasks.cli" in imported and not imported & set(HEAVY)
