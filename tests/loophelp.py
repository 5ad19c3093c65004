"""Helpers shared by the loop's test modules (test_cli, test_session_setup, test_build_loop,
test_plan_loop, test_rendering_e2e, test_signals): a scripted stub task CLI and stub agents."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import RALPH, STUBS, install_stub, read_jsonl, wait_for

RULE = "\u2501" * 40


class TaskStub:
    """tests/stubs/task as RALPH_TASK_CMD, with a script of answers and a call log."""

    def __init__(self, tmp: Path):
        self.log = tmp / "task-calls.jsonl"
        self.script_path = tmp / "task-script.json"
        self.answers: dict = {}
        self.env = {"RALPH_TASK_CMD": str(STUBS / "task"), "STUB_TASK_LOG": str(self.log),
                    "STUB_TASK_SCRIPT": str(self.script_path)}
        self._write()

    def script(self, **answers) -> "TaskStub":
        """script(peek=[{"out": ...}, ...], plan_status={...}); '_' in a key means a space,
        except a leading one (`_get-scope`)."""
        for key, value in answers.items():
            name = {"_get_scope": "_get-scope", "plan_status": "plan-status"}.get(
                key, key.replace("_", " "))
            self.answers[name] = value
        self._write()
        return self

    def _write(self) -> None:
        self.script_path.write_text(json.dumps(self.answers))

    def calls(self) -> list[list[str]]:
        return [rec["argv"] for rec in read_jsonl(self.log)]

    def records(self) -> list[dict]:
        return read_jsonl(self.log)


@pytest.fixture
def tasks(tmp_path: Path) -> TaskStub:
    return TaskStub(tmp_path)


class Agent:
    """tests/stubs/claude on PATH, recording its calls; `stream(text)` sets what it prints."""

    def __init__(self, tmp: Path, bin_dir: Path):
        install_stub(bin_dir)
        self.log = tmp / "claude-calls.jsonl"
        self.stream_path = tmp / "claude-stream"
        self.env = {"STUB_LOG": str(self.log)}

    def stream(self, data: bytes | str) -> "Agent":
        self.stream_path.write_bytes(data.encode() if isinstance(data, str) else data)
        self.env["STUB_STREAM"] = str(self.stream_path)
        return self

    def calls(self) -> list[dict]:
        return read_jsonl(self.log)

    def prompts(self) -> list[str]:
        return [call["argv"][1] for call in self.calls()]


@pytest.fixture
def agent(tmp_path: Path, bin_dir: Path) -> Agent:
    return Agent(tmp_path, bin_dir)


def events(*items: dict) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


def assistant(*texts: str) -> dict:
    return {"type": "assistant", "message": {"content": [{"type": "text", "text": t} for t in texts]}}


def result(text: str = "", subtype: str = "success", cost: float = 0.05, turns: int = 1) -> dict:
    return {"type": "result", "subtype": subtype, "result": text, "total_cost_usd": cost,
            "num_turns": turns}


# ralph.py keeps SIGHUP ignored when it starts with it ignored (nohup, docs/unattended.md), and
# a test suite run under nohup would hand that on: the runs of the tests start with SIGHUP at
# its default, as from a terminal, by resetting it before ralph.py is exec'd (same pid).
_SIGHUP_DEFAULT = ("import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
                   "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")


class Running:
    """ralph.py started with Popen in a session of its own (as a terminal's foreground job
    would have its own group), SIGHUP at its default; stdout collected by a thread."""

    def __init__(self, args: list[str], *, cwd: Path, env: dict[str, str]):
        argv = [sys.executable, "-c", _SIGHUP_DEFAULT, str(RALPH), *args]
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self._out = bytearray()
        self._err = bytearray()
        self._threads = [threading.Thread(target=self._drain, args=(self.proc.stdout, self._out), daemon=True),
                         threading.Thread(target=self._drain, args=(self.proc.stderr, self._err), daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _drain(stream, buf: bytearray) -> None:
        while chunk := stream.read1(65536):
            buf.extend(chunk)

    @property
    def stdout(self) -> str:
        return bytes(self._out).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return bytes(self._err).decode("utf-8", "replace")

    def wait(self, timeout: float = 20) -> int:
        rc = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait()


def killed_when(args: list[str], *, cwd: Path, env: dict[str, str], ready: Callable[[], Any],
                release: Path | None = None, timeout: float = 60) -> tuple[Running, Any]:
    """ralph.py started with args and killed with SIGKILL, alone (its agent's group is left
    running, as a crash leaves it), once ready() answers; then `release` (a file the agent
    waits for) is created. Returns the dead run (its output kept) and ready()'s answer."""
    run = Running(args, cwd=cwd, env=env)
    try:
        answer = wait_for(ready, timeout=timeout)
        os.kill(run.proc.pid, signal.SIGKILL)
        run.proc.wait(10)
    finally:
        run.kill()
        if release is not None:
            release.touch()
    return run, answer


def alive(pid: int) -> bool:
    """True while pid runs (a zombie waiting for a reaper counts as gone)."""
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
