"""Black-box: a run imports only the features it uses. Every start of ralph.py pays for what it
imports (in CPython 3.11 each dataclass and each regex is built again at every start), and a
run that verifies nothing and freezes no scope has no use for the tamper check's rules or for
scope freeze's snapshot, hashing and report; nor for the IANA zone database before a usage
limit names a zone."""
from __future__ import annotations

import sys

import pytest

from conftest import RALPH, install_stub, run_process

# Loaded where a run uses them: a diff is scanned, FREEZE_SCOPE is on, a reset names a zone.
ON_DEMAND = ("ralphpy.verify.tamper", "ralphpy.verify.as_they_stood", "ralphpy.verify.runners",
             "ralphpy.scope.freeze", "ralphpy.scope.snapshot", "zoneinfo")


def imported(git_repo, base_env, *argv: str) -> set[str]:
    proc = run_process([sys.executable, "-X", "importtime", str(RALPH), *argv], cwd=git_repo,
                       env=base_env)
    assert proc.returncode == 0, proc.stderr
    return {line.split("|")[2].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")}


def test_a_build_that_verifies_nothing_and_freezes_no_scope_imports_neither(
        git_repo, base_env, bin_dir, run_task):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    modules = imported(git_repo, base_env, "build", "-n", "1")
    assert {"ralphpy.loop.features", "ralphpy.verify.completion"} <= modules   # a real start
    assert not modules & set(ON_DEMAND)


@pytest.mark.parametrize("setting, loaded", [
    ("verify: 'true'\n", "ralphpy.verify.tamper"),
    ("freeze_scope: true\n", "ralphpy.scope.freeze"),
])
def test_a_run_with_the_feature_on_imports_it(git_repo, base_env, bin_dir, run_task, setting,
                                               loaded):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    (git_repo / "ralph.yml").write_text(setting)
    assert loaded in imported(git_repo, base_env, "build", "-n", "1")
