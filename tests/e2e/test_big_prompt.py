"""Black-box: a prompt too big for one command-line argument (Linux: 128 KiB with its NUL)
does not crash the run: the task data goes to a file under .ralph/prompts/ and the
prompt names it, with a one-line notice."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from loophelp import agent, tasks  # noqa: F401  (fixtures)

LIMIT = 131072 - 1          # bytes of one argument, without its NUL


def spilled_file(prompt: str, command: str) -> Path:
    assert prompt.startswith(command + " The task data is too large for the command line")
    return Path(re.search(r"read it from the file (\S+\.md) ", prompt).group(1))


def test_a_prompt_of_exactly_the_limit_goes_inline_and_one_byte_more_goes_to_a_file(
        run_ralph, tasks, agent, git_repo):
    inline = "é" * ((LIMIT - len("/ralph-build ")) // 2) + "x" * ((LIMIT - len("/ralph-build ")) % 2)
    over = inline + "y"
    tasks.script(peek=[{"out": inline}, {"out": over}, {"out": ""}],
                 plan_status={"out": "1 open, 0 active\n"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0, proc.stderr
    first, second = agent.prompts()
    assert first == "/ralph-build " + inline and len(first.encode()) == LIMIT
    path = spilled_file(second, "/ralph-build")
    assert path.parent == git_repo / ".ralph" / "prompts"
    assert path.read_text() == over + "\n"
    notices = [line for line in proc.stdout.splitlines() if line.startswith("Note: ")]
    assert notices == [f"Note: task data ({len(over.encode())} bytes) is too large for one "
                       f"command-line argument; passing it in {path}"]


def test_a_huge_peek_in_build_mode_is_passed_through_a_file(run_ralph, tasks, agent):
    peek = "\n\n".join(f"## Task t-{i}\nid: t-{i}\ntitle: it's \"{i}\" $(x)\npriority: 2\nstatus: open"
                       for i in range(5000))
    tasks.script(peek=[{"out": peek + "\n"}, {"out": ""}], plan_status={"out": "1 open, 0 active\n"})
    proc = run_ralph("build", env={**tasks.env, **agent.env})
    assert proc.returncode == 0 and proc.stderr == ""
    (prompt,) = agent.prompts()
    assert spilled_file(prompt, "/ralph-build").read_text() == peek + "\n"
    assert proc.stdout.endswith("No tasks available. Exiting loop.\nderegistered ab12\n")


@pytest.mark.timeout(240)
def test_plan_over_5000_real_tasks_passes_the_list_through_a_file(run_ralph, run_task, agent, git_repo):
    lines = "".join(json.dumps({"id": f"task-{i:04d}", "t": f"Task number {i} with a longish title",
                                "p": i % 4, "cat": "feat", "spec": "feature.md",
                                "steps": ["write the code", "write the test"],
                                "deps": [f"task-{i - 1:04d}"] if i % 7 else []}) + "\n"
                    for i in range(5000))
    sync = run_task("plan-sync", input=lines)
    assert sync.stdout == "inserted: 5000, updated: 0, deleted: 0, skipped (done): 0\n", sync.stderr
    listing = run_task("list", "--all", "--markdown").stdout
    assert len(listing.encode()) > 5 * 131072
    proc = run_ralph("plan", env=agent.env, timeout=200)
    assert proc.returncode == 0, proc.stderr
    (prompt,) = agent.prompts()
    assert spilled_file(prompt, "/ralph-plan").read_text() == listing
    assert proc.stdout.endswith("Reached max iterations: 1\n")
