"""The HTML report in a real headless browser (Debian's chromium; `make setup` and .ci/run
install it): `ralph report --html` of runs of 1, 100 and 10,000 sessions, the page's DOM as the
browser built it (charts drawn, task table filled, a hostile task title shown as text), a
screenshot, and a Content-Security-Policy that lets no script run, not even an injected one."""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "unit" / "report"))
from synthetic import XSS, make_run  # noqa: E402 (the report tests' run records)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: the HTML report cannot be opened in a "
                             "browser (apt-get install chromium; `make setup` and .ci/run do)")
RUN = "20261122T220000Z-aaaaaa"
MAX_BYTES = 2 * 1024 * 1024


class Dom(HTMLParser):
    """The elements of a page: tag, attributes, the ids of its ancestors, its own text."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[dict] = []
        self.stack: list[dict] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": "",
                   "within": {e["attrs"].get("id") for e in self.stack} - {None}}
        self.elements.append(element)
        if tag not in ("meta", "br", "link", "img", "input", "hr", "wbr"):   # void elements
            self.stack.append(element)

    def handle_endtag(self, tag):
        if any(e["tag"] == tag for e in self.stack):
            while self.stack.pop()["tag"] != tag:
                pass

    def handle_data(self, data):
        for element in self.stack:
            element["text"] += data

    def find(self, tag: str, within: str | None = None, cls: str | None = None) -> list[dict]:
        return [e for e in self.elements if e["tag"] == tag
                and (within is None or within in e["within"] or e["attrs"].get("id") == within)
                and (cls is None or cls in e["attrs"].get("class", "").split())]


def chromium(tmp_path: Path, page: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            *extra, page.as_uri()]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env,
                          stdin=subprocess.DEVNULL)


def png_size_and_colours(path: Path) -> tuple[int, int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


@pytest.fixture
def hostile_backlog(run_task):
    """Task t0 carries a title that would run code if the page did not escape it."""
    lines = [json.dumps({"id": "t0", "t": XSS}), json.dumps({"id": "t1", "t": "Plain & simple"})]
    assert run_task("plan-sync", input="\n".join(lines) + "\n").returncode == 0


@pytest.mark.parametrize("sessions", [1, 100, 10_000], ids=["1", "100", "10000"])
def test_the_html_report_renders_its_charts_and_task_table_in_a_real_browser(
        sessions, git_repo, run_ralph, hostile_backlog, tmp_path):
    make_run(git_repo / ".ralph", RUN, sessions)
    page = tmp_path / "report.html"
    proc = run_ralph("report", "--html", str(page), timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"Wrote {page}\n", "")
    assert page.stat().st_size < MAX_BYTES

    dumped = chromium(tmp_path, page, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert "Content Security Policy" not in dumped.stderr     # its own stylesheet applied
    dom = Dom(dumped.stdout)
    [cost] = dom.find("polyline", "chart-cost", "series-cost")
    assert len(cost["attrs"]["points"].split()) == min(sessions + 1, 240)
    assert len(dom.find("polyline", "chart-cost", "series-done")) == 1
    assert 1 <= len(dom.find("rect", "chart-durations", "bar")) <= 240
    assert dom.find("rect", "chart-outcomes", "outcome")
    rows = dom.find("tr", "task-table")
    tasks = len({e["task"] for e in map(json.loads, (git_repo / ".ralph" / "runs" / RUN /
                                                      "events.jsonl").read_text().splitlines())
                 if e.get("task")})
    assert len(rows) == 1 + min(tasks, 2000)             # the header row and one per task
    cells = [c["text"] for c in dom.find("td", "task-table")]
    assert XSS in cells                                    # the hostile title, shown as text
    assert not dom.find("img") and not dom.find("script")

    shot = tmp_path / "shot.png"
    taken = chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=412,1600",
                     "--hide-scrollbars")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    width, height, colours = png_size_and_colours(shot)
    assert (width, height) == (412, 1600) and colours > 16     # a phone-wide page, drawn


def test_a_script_slipped_into_the_page_is_refused_by_its_policy(git_repo, run_ralph,
                                                               hostile_backlog, tmp_path):
    make_run(git_repo / ".ralph", RUN, 3)
    page = tmp_path / "report.html"
    assert run_ralph("report", "--html", str(page)).returncode == 0
    tampered = tmp_path / "tampered.html"
    tampered.write_text(page.read_text().replace(
        "<main>", "<main><script>document.title='ran'</script>"
                  "<img src=x onerror=\"document.title='ran'\">"))
    dumped = chromium(tmp_path, tampered, "--dump-dom")
    title = Dom(dumped.stdout).find("title")[0]["text"]
    assert title == f"ralph report: run {RUN}"
    assert "violates the following Content Security Policy directive" in dumped.stderr


def test_control_characters_are_shown_escaped_and_a_long_word_wraps_in_its_cell(
        git_repo, run_ralph, run_task, tmp_path):
    """A title with escape sequences and one long unbroken word: the page holds no raw
    control character (the title is shown `\\x1b[31m`), and the word wraps inside its cell,
    so the Tasks table stays as wide as the page instead of pushing its columns off screen.
    The table's width is measured by the browser: a copy of the page without its policy runs
    one script that writes it into the title."""
    word = "W" * 200
    hostile = f"Red \x1b[31mALERT\x1b[0m \x1b]0;pwned\x07 {word}"
    lines = [json.dumps({"id": "t0", "t": hostile}), json.dumps({"id": "t1", "t": "Plain"})]
    assert run_task("plan-sync", input="\n".join(lines) + "\n").returncode == 0
    make_run(git_repo / ".ralph", RUN, 3)
    page = tmp_path / "report.html"
    assert run_ralph("report", "--html", str(page)).returncode == 0
    html = page.read_text()
    assert not any(chr(c) in html for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]
                   if chr(c) not in "\n\t")
    dom = Dom(chromium(tmp_path, page, "--dump-dom").stdout)
    assert f"Red \\x1b[31mALERT\\x1b[0m \\x1b]0;pwned\\x07 {word}" in [
        c["text"] for c in dom.find("td", "task-table")]

    measure = ("<script>var t=document.getElementById('task-table');"
               "document.title=t.scrollWidth+' '+t.parentNode.clientWidth</script></body>")
    probe = tmp_path / "probe.html"
    probe.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
                     .replace("</body>", measure))
    measured = chromium(tmp_path, probe, "--dump-dom", "--window-size=1280,900")
    table, room = map(int, Dom(measured.stdout).find("title")[0]["text"].split())
    assert 0 < table <= room
