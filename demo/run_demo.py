#!/usr/bin/env python3
"""`make demo`: a real ralph build loop over a demo backlog, with a bundled stub agent.

What it does, step by step (each step prints what it runs):
  1. creates a git repository in a temp directory (origin remote, three specs, one commit);
  2. puts demo/stub-agent on PATH as `claude` (in a temp bin directory);
  3. loads a backlog of 5 tasks of three specs, two of them with dependencies, with
     `scripts/task plan-sync` (tasks of different specs may run at once under --parallel);
  4. runs `ralph.py build -n 10` there, streaming its output: each session the stub agent
     claims a task, writes a file, commits it and marks the task done with the commit;
  5. shows `task list --all` and `git log --oneline`, and where the repository is.

Usage: run_demo.py [--dir DIR] [-- BUILD_OPTIONS...]
  DIR: where to create the demo repo (default: a new temp dir); BUILD_OPTIONS: more options
  for `ralph.py build -n 10`, such as `--parallel 2` or `--assign` (`make demo ARGS=...`).
Exit status: ralph's. The demo repository is kept for you to explore.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RALPH = ROOT / "ralph.py"
TASK = ROOT / "scripts" / "task"
STUB_AGENT = Path(__file__).resolve().parent / "stub-agent"

# The demo backlog, in plan-sync's JSONL fields (docs/contract/task-cli.md s.9.1).
BACKLOG = [
    {"id": "demo-01", "t": "Create the greeting module", "p": 1, "cat": "feat",
     "spec": "greeting.md", "steps": ["write greeting.py", "commit"]},
    {"id": "demo-02", "t": "Add a --name option", "p": 2, "cat": "feat",
     "spec": "greeting.md", "deps": ["demo-01"]},
    {"id": "demo-03", "t": "Test the greeting", "p": 2, "cat": "test",
     "spec": "greeting.md", "deps": ["demo-01", "demo-02"]},
    {"id": "demo-04", "t": "Document the greeting in the README", "p": 3, "cat": "docs",
     "spec": "readme.md"},
    {"id": "demo-05", "t": "Add a changelog entry", "p": 3, "cat": "chore",
     "spec": "changelog.md"},
]

# One spec file per spec the backlog names: with `--parallel`, tasks of different specs may
# run at once (docs/parallel.md), so the demo's docs and changelog tasks overlap the code's.
SPECS = {
    "greeting.md": "# Greeting\n\nA tiny command that greets.\n\n## Requirements\n"
                   "- `greet` prints `Hello, world!`\n- `greet --name Ada` prints `Hello, Ada!`\n",
    "readme.md": "# README\n\nThe README says what `greet` does.\n",
    "changelog.md": "# Changelog\n\nEach change has a line in CHANGELOG.md.\n",
}


def step(text: str) -> None:
    print(f"\n▶ {text}", flush=True)


def run(argv: list[str], cwd: Path, env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, check=True, **kwargs)


def demo_env(bin_dir: Path) -> dict[str, str]:
    """The caller's environment without RALPH_* settings, with the stub agent first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RALPH_", "GIT_", "STUB_")) and k != "CLAUDE_CODE_USE_BEDROCK"}
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env.setdefault("LANG", "C.UTF-8")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def make_repo(repo: Path, env: dict[str, str]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    run(["git", "init", "-q", "-b", "main"], repo, env)
    run(["git", "config", "user.name", "Ralph Demo"], repo, env)
    run(["git", "config", "user.email", "demo@example.com"], repo, env)
    run(["git", "config", "commit.gpgsign", "false"], repo, env)
    # The task CLI derives the backlog's scope from the origin URL (docs/contract/task-cli.md s.7).
    run(["git", "remote", "add", "origin", "https://github.com/example/ralph-demo.git"], repo, env)
    (repo / "specs").mkdir(exist_ok=True)
    for name, text in SPECS.items():
        (repo / "specs" / name).write_text(text, encoding="utf-8")
    (repo / "README.md").write_text("# ralph demo\n", encoding="utf-8")
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-q", "-m", "Demo project with three specs"], repo, env)


USAGE = "Usage: run_demo.py [--dir DIR] [-- BUILD_OPTIONS...]"


def main(argv: list[str]) -> int:
    build_options = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if argv and (argv[0] != "--dir" or len(argv) != 2):
        print(USAGE, file=sys.stderr)
        return 1
    if not RALPH.exists():
        print(f"Error: {RALPH} not found: the demo needs ralph.py", file=sys.stderr)
        return 1
    if argv:
        base = Path(argv[1]).resolve()
        base.mkdir(parents=True, exist_ok=True)
    else:
        base = Path(tempfile.mkdtemp(prefix="ralph-demo-"))
    repo, bin_dir = base / "repo", base / "bin"
    bin_dir.mkdir(exist_ok=True)
    agent = bin_dir / "claude"
    shutil.copy2(STUB_AGENT, agent)
    agent.chmod(0o755)
    env = demo_env(bin_dir)

    step(f"Creating a demo git repository in {repo}")
    make_repo(repo, env)

    step(f"Loading {len(BACKLOG)} demo tasks: scripts/task plan-sync < backlog.jsonl")
    jsonl = "".join(json.dumps(task) + "\n" for task in BACKLOG)
    run([sys.executable, str(TASK), "plan-sync"], repo, env, input=jsonl, text=True)

    build = ["build", "-n", "10", *build_options]
    step(f"Running: ralph.py {' '.join(build)}   (the stub agent `claude` claims, commits, "
         "completes)")
    status = subprocess.run([sys.executable, str(RALPH), *build], cwd=repo,
                            env=env, stdin=subprocess.DEVNULL).returncode
    print(f"\n(ralph exited with status {status})", flush=True)

    step("Backlog afterwards: scripts/task list --all")
    subprocess.run([sys.executable, str(TASK), "list", "--all"], cwd=repo, env=env)
    step("Commits made by the agent: git log --oneline")
    subprocess.run(["git", "log", "--oneline"], cwd=repo, env=env)

    step(f"The demo repository is kept in {repo}")
    print(f"  cd {repo} && {sys.executable} {TASK} show demo-03 --with-deps")
    print(f"  logs of every session: {repo / '.ralph' / 'logs'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
