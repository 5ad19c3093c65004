"""A fleet for black-box tests of `ralph build --sync`: a bare origin in a temp directory, N
clones of it (one per "machine": its own .ralph/, its own committer name), one backlog they
all share and tests/stubs/fleet-agent as their agent. The backlog's store is a parameter:
RALPH_TASKS_DB=<absolute path of one SQLite file> by default (one scope for every clone: same
origin URL, same branch); the same fleet runs over another store by passing its value (a
postgresql:// URL). Used as `make_fleet(tmp_path, base_env, bin_dir, machines=3)`."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import taskfork
from conftest import RALPH, TASK_ARGV, git, install_stub, run_process

SPEC = "# Feature\n\n- [ ] it works\n"


@dataclass
class Fleet:
    origin: Path                    # the bare repository every clone pushes to
    clones: list[Path]              # machine i works in clones[i]
    env: dict[str, str]             # every machine's environment (store, PATH with the stub)
    log: Path                       # FLEET_LOG: one "<clone> <task>" line per finished task

    def env_for(self, i: int, **extra: str) -> dict[str, str]:
        name = self.clones[i].name
        return {**self.env, "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name,
                "RALPH_HOSTNAME": name, **extra}

    def start(self, i: int, *args: str, **extra: str) -> subprocess.Popen:
        """`ralph.py <args>` on machine i, running (collect it with finish)."""
        return subprocess.Popen([sys.executable, str(RALPH), *args], cwd=self.clones[i],
                                env=self.env_for(i, **extra), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                encoding="utf-8", errors="replace")

    @staticmethod
    def finish(proc: subprocess.Popen, timeout: float = 60) -> subprocess.CompletedProcess:
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def ralph(self, i: int, *args: str, timeout: float = 60,
              **extra: str) -> subprocess.CompletedProcess:
        return self.finish(self.start(i, *args, **extra), timeout)

    def task(self, *args: str, i: int = 0, input: str | None = None) -> subprocess.CompletedProcess:
        return run_process([*TASK_ARGV, *args], cwd=self.clones[i],
                           env=self.env_for(i), input=input)

    def create(self, *ids: str) -> None:
        lines = "".join(json.dumps({"id": tid, "t": f"Task {tid}"}) + "\n" for tid in ids)
        assert self.task("plan-sync", input=lines).returncode == 0

    def tasks(self) -> dict[str, dict]:
        out = self.task("_export-json").stdout
        return {t["id"]: t for t in map(json.loads, out.splitlines())}

    def git(self, i: int, *args: str) -> str:
        return git(self.clones[i], *args, env=self.env_for(i)).strip()

    def origin_git(self, *args: str) -> str:
        return git(self.origin, *args, env=self.env).strip()

    def origin_subjects(self, branch: str = "main") -> list[str]:
        return self.origin_git("log", "--format=%s", branch).splitlines()

    def origin_commits(self, branch: str = "main") -> dict[str, str]:
        """Every commit of the branch on origin: its full id -> its subject."""
        lines = self.origin_git("log", "--format=%H %s", branch).splitlines()
        return dict(line.split(" ", 1) for line in lines)

    def result_commits(self) -> dict[str, str | None]:
        """Each task's id -> the commit its result names (None without one)."""
        return {tid: json.loads(t["result"]).get("commit") if t.get("result") else None
                for tid, t in self.tasks().items()}

    def finished(self) -> list[tuple[str, str]]:
        """(clone, task) for every task the stub agents marked done, in order."""
        if not self.log.exists():
            return []
        return [tuple(line.split(" ", 1)) for line in self.log.read_text().splitlines()]

    def assert_every_task_done_once_and_on_origin(self, ids: list[str]) -> None:
        """The outcome a fleet run must reach: the backlog holds `ids`, all done, each marked
        done exactly once, its commit on origin once, and its result naming that commit as
        origin has it (a rebase before a push gives a commit a new id)."""
        tasks = self.tasks()
        assert {tid: t["status"] for tid, t in tasks.items()} == dict.fromkeys(ids, "done")
        assert Counter(tid for _, tid in self.finished()) == Counter(ids)
        subjects = Counter(self.origin_subjects())
        assert all(subjects[f"{tid}: work"] == 1 for tid in ids)
        on_origin = self.origin_commits()
        assert {tid: on_origin.get(c) for tid, c in self.result_commits().items()} == {
            tid: f"{tid}: work" for tid in ids}

    def commit(self, i: int, name: str, text: str, push: bool = False,
               message: str | None = None) -> str:
        """Machine i, outside any ralph run, writes `text` into `name` and commits it (message:
        "<name>: <text>" unless given), then with push pushes main to origin; returns its head."""
        path = self.clones[i] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.git(i, "add", name)
        self.git(i, "commit", "-qm", message or f"{name}: {text.strip()}")
        if push:
            self.git(i, "push", "-q", "origin", "main")
        return self.git(i, "rev-parse", "HEAD")

    def other_machine_pushes(self, i: int, file: str, text: str) -> str:
        """A shell snippet (FLEET_AFTER): machine i, outside any ralph run, brings its clone
        up to date with origin, writes `text` into `file`, commits and pushes: origin moves
        while another machine's session runs."""
        clone = self.clones[i]
        return (f"cd '{clone}' && git pull -q --rebase origin main && "
                f"printf '%s\\n' '{text}' > '{file}' && git add '{file}' && "
                f"git commit -qm 'other machine: {text}' && git push -q origin main")


def make_fleet(tmp: Path, base_env: dict[str, str], bin_dir: Path, machines: int = 3,
               store: str | None = None, forker: taskfork.Forker | None = None) -> Fleet:
    """The origin (specs/, README.md, shared.txt; .ralph/ ignored) and `machines` clones
    host1..hostN on branch main tracking origin/main. store: RALPH_TASKS_DB's value (default:
    one SQLite file beside the clones). forker: the agents' task calls on a PostgreSQL store
    are forks of its warm process (tests/taskfork.py)."""
    install_stub(bin_dir, "claude", "fleet-agent")
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(origin), env=base_env)
    seed = tmp / "seed"
    git(tmp, "clone", "-q", str(origin), str(seed), env=base_env)
    (seed / "specs").mkdir()
    (seed / "specs" / "feature.md").write_text(SPEC)
    (seed / "README.md").write_text("fleet\n")
    (seed / "shared.txt").write_text("nobody\n")
    (seed / ".gitignore").write_text(".ralph/\n")
    git(seed, "add", "-A", env=base_env)
    git(seed, "commit", "-qm", "initial", env=base_env)
    git(seed, "push", "-q", "origin", "main", env=base_env)
    clones = []
    for n in range(1, machines + 1):
        clone = tmp / f"host{n}"
        git(tmp, "clone", "-q", str(origin), str(clone), env=base_env)
        clones.append(clone)
    log = tmp / "fleet.log"
    env = {**base_env, "RALPH_TASKS_DB": store or str(tmp / "backlog.db"),
           "FLEET_LOG": str(log)}
    if forker is not None and taskfork.names_postgres(env):
        env["FLEET_TASKFORK"] = forker.address()
    return Fleet(origin, clones, env, log)


__all__ = ["Fleet", "make_fleet"]
