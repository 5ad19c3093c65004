"""Black-box, the canary (`python -m canary`) against a fake agent CLI published on a local npm
registry (a stand-in on 127.0.0.1 serving its packuments and `npm pack`-shaped tarballs): its
newest release installed into a prefix of its own, its test group run against the pinned and
the latest, the table, and exit 0 (green), 1 (a break, or a stand-in gap) or 2 (could not
install). The fake test group writes the session log ralph would (the CLI's stdout)."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("npm") is None,
                                reason="npm is not installed (apt-get install nodejs npm)")

# What each release of the fake CLI prints: 1.1.0 the same events as 1.0.0 (other values, one
# field more),
# 2.0.0 a failed result, 3.0.0 asks its API for an endpoint the stand-in does not serve.
INIT = '{"type":"system","subtype":"init","version":"%s"}'
OK = '{"type":"result","subtype":"success","is_error":false}'
RELEASES = {
    "1.0.0": f"echo '{INIT % '1.0.0'}'; echo '{OK}'",
    "1.1.0": f"echo '{INIT[:-1] % '1.1.0'},\"sandbox\":false}}'; echo '{OK}'",
    "2.0.0": f"echo '{INIT % '2.0.0'}'; "
             "echo '{\"type\":\"result\",\"subtype\":\"error_during_execution\","
             "\"is_error\":true}'",
    "3.0.0": (f"echo '{INIT % '3.0.0'}'; python3 -c 'import os, urllib.request as u\n"
              "try: u.urlopen(os.environ[\"FAKE_API\"] + \"/v2/sessions\")\n"
              "except Exception: pass'; "
              "echo '{\"type\":\"result\",\"subtype\":\"error\",\"is_error\":true}'"),
    "4.0.0": None,                         # listed, but its tarball is not on the registry
    "5.0.0": "",                           # a command without a shebang: it cannot start
}

SUITE = '''
import json, os, subprocess, sys
from pathlib import Path
sys.path.insert(0, {e2e_real!r})
from standin import StandIn, Text


def test_the_fake_agent_ends_its_session_with_success(tmp_path):
    found = [Path(d, "node_modules", ".bin", "fakeagent")
             for d in os.environ["RALPH_AGENTS_DIR"].split(os.pathsep)]
    with StandIn(lambda body, n: Text("ok")) as api:
        out = subprocess.run([str(next(p for p in found if p.exists()))], text=True, check=True,
                             capture_output=True, env={{**os.environ, "FAKE_API": api.url}})
    logs = tmp_path / "repo" / ".ralph" / "logs"
    logs.mkdir(parents=True)
    (logs / "session.jsonl").write_text(out.stdout)
    assert json.loads(out.stdout.splitlines()[-1])["subtype"] == "success"
'''


def _tarball(version: str, script: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text, mode in (
                ("package/package.json", json.dumps({"name": "fake-agent", "version": version,
                                                     "bin": {"fakeagent": "bin/fakeagent"}}),
                 0o644),
                ("package/bin/fakeagent", f"#!/bin/sh\n{script}\n" if script else
                 "echo 'Error: native binary not installed.' >&2; exit 1\n", 0o755)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Registry:
    """Serves `fake-agent`: GET /fake-agent (its packument, `latest` as set) and its
    tarballs; everything else 404."""

    def __init__(self, latest: str):
        self.tarballs = {v: _tarball(v, s) for v, s in RELEASES.items() if s is not None}
        self.latest = latest
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def packument(self) -> dict:
        versions = {}
        for version in RELEASES:
            data = self.tarballs.get(version, b"")
            versions[version] = {
                "name": "fake-agent", "version": version, "bin": {"fakeagent": "bin/fakeagent"},
                "dist": {"tarball": f"{self.url}fake-agent/-/fake-agent-{version}.tgz",
                         "shasum": hashlib.sha1(data).hexdigest(),
                         "integrity": "sha512-" + base64.b64encode(
                             hashlib.sha512(data).digest()).decode()}}
        return {"name": "fake-agent", "dist-tags": {"latest": self.latest}, "versions": versions}

    def _handler(self) -> type:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                version = self.path.rsplit("fake-agent-", 1)[-1].removesuffix(".tgz")
                status, kind = 200, "application/json"
                if self.path == "/fake-agent":
                    body = json.dumps(registry.packument()).encode()
                elif self.path.endswith(".tgz") and version in registry.tarballs:
                    body, kind = registry.tarballs[version], "application/octet-stream"
                else:
                    status, body = 404, b'{"error":"not found"}'
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def __enter__(self) -> "Registry":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_canary(tmp_path: Path, base_env: dict[str, str], latest: str):
    """The canary over one CLI, `fakeagent`, pinned at 1.0.0 (installed by hand in the pinned
    prefix), with `latest` as the registry's latest."""
    pinned = tmp_path / "pinned" / "node_modules" / ".bin"
    pinned.mkdir(parents=True)
    (pinned / "fakeagent").write_text(f"#!/bin/sh\n{RELEASES['1.0.0']}\n")
    (pinned / "fakeagent").chmod(0o755)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_fake.py").write_text(SUITE.format(e2e_real=str(ROOT / "tests" / "e2e_real")))
    (tmp_path / "package.json").write_text(json.dumps({"dependencies": {"fake-agent": "1.0.0"}}))
    (tmp_path / "groups.json").write_text(json.dumps({"fakeagent": {
        "package": "fake-agent", "tests": [str(suite / "test_fake.py")]}}))
    with Registry(latest) as registry:
        env = {**base_env, "npm_config_registry": registry.url,
               "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_fetch_retries": "0",
               "npm_config_update_notifier": "false", "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "canary", "--pins", str(tmp_path / "package.json"),
             "--groups", str(tmp_path / "groups.json"), "--pinned-dir", str(tmp_path / "pinned"),
             "--latest-dir", str(tmp_path / "latest")],
            cwd=ROOT, env=env, text=True, capture_output=True, timeout=120)
    return proc, proc.stdout.splitlines()


def test_a_release_whose_tests_pass_is_green_with_exit_0_and_names_what_changed(tmp_path, base_env):
    proc, lines = run_canary(tmp_path, base_env, "1.1.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines[0].split() == ["CLI", "PINNED", "LATEST", "TESTS", "ON", "PINNED", "TESTS",
                                "ON", "LATEST", "RESULT", "FIRST", "DIFFERENCE"]
    changed = "event 2 `system subtype=init`: latest adds sandbox"
    assert lines[1].split()[:8] == ["fakeagent", "1.0.0", "1.1.0", "1", "passed", "1", "passed",
                                    "green"]
    assert lines[1].endswith(f"  no break; {changed}"), lines
    assert lines[2:] == [f"fakeagent 1.1.0: test_the_fake_agent_ends_its_session_with_success: "
                         f"{changed}"]
    assert (tmp_path / "latest" / "fakeagent" / "node_modules" / ".bin" / "fakeagent").exists()
    assert not (tmp_path / "pinned" / "package.json").exists()      # the pinned prefix untouched


def test_a_release_that_breaks_a_test_names_the_first_differing_event_with_exit_1(
        tmp_path, base_env):
    proc, lines = run_canary(tmp_path, base_env, "2.0.0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = lines[1]
    assert row.split()[:9] == ["fakeagent", "1.0.0", "2.0.0", "1", "passed", "1", "failed",
                               "BREAK", "event"]
    first = ("event 3: pinned `result subtype=success is_error=False`, latest `result "
             "subtype=error_during_execution is_error=True`")
    assert row.endswith(first[:99] + "\u2026"), row                 # cut to 100 in the table
    assert lines[2].startswith("fakeagent 2.0.0: test_the_fake_agent_ends_its_session_with_"
                               f"success: {first} "), lines
    assert "(the test: AssertionError: assert 'error_during_execution' == 'success'" in lines[2]


def test_a_request_the_stand_in_does_not_serve_is_a_stand_in_gap_not_a_break(tmp_path,
                                                                            base_env):
    proc, lines = run_canary(tmp_path, base_env, "3.0.0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "stand-in gap" in lines[1] and "BREAK" not in proc.stdout, proc.stdout
    assert lines[1].endswith("the stand-in could not answer GET /v2/sessions: not served (404)")


@pytest.mark.parametrize("latest,why", [
    ("4.0.0", "npm install exited 1: "),
    ("5.0.0", "fake-agent@5.0.0 installed, but `fakeagent` does not start: Exec format error")],
    ids=["no-tarball", "does-not-start"])
def test_a_release_that_cannot_be_installed_exits_2(tmp_path, base_env, latest, why):
    """A release whose command installs but cannot start (amp's newest wrapper without its
    native package for this platform) counts as not installed: the tests would otherwise pass
    against the pinned CLI next on PATH."""
    proc, lines = run_canary(tmp_path, base_env, latest)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert lines[1].split()[:6] == ["fakeagent", "1.0.0", latest, "-", "-", "not"]
    assert lines[2].startswith(f"fakeagent {latest}: could not install: {why}"), lines
    assert not (tmp_path / "latest" / "fakeagent" / ".installed").exists()   # tried again next time


@pytest.mark.parametrize("args,line", [
    (["nope"], "Error: unknown CLI 'nope' (known: claude, codex, gemini, opencode, pi, amp)"),
    (["--bogus"], "Error: unrecognized arguments: --bogus"),
    (["--pins", "/nonexistent/package.json"], "Error: cannot read ")],
    ids=["unknown-cli", "unknown-option", "no-pins"])
def test_a_usage_mistake_is_one_error_line_and_exit_3_with_nothing_installed(tmp_path, base_env,
                                                                           args, line):
    proc = subprocess.run([sys.executable, "-m", "canary", "--latest-dir", str(tmp_path / "l"),
                           *args], cwd=ROOT, env={**base_env, "PYTHONPATH": str(ROOT)},
                          text=True, capture_output=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr.startswith(line) and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "l").exists()
