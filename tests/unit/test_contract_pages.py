"""The contract pages and the code that cites them: every section a comment, docstring or doc
cites (`docs/contract/ralph-cli.md s.15.5`, or a bare `s.12` after the page is named) is a
section of that page in docs/contract/, so a reader of the code can open it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract"
CITING_ROOTS = ["ralph.py", "lib", "scripts", "tests", "bench", "demo", "docs"]
# A page named with a section: `docs/contract/task-cli.md s.9.4`, or in a doc
# `[task-cli.md](contract/task-cli.md) s.9.4`.
NAMED = re.compile(r"contract/(ralph|task)-cli\.md\)? s\.(\d+(?:\.\d+)*)")
BARE = re.compile(r"(?<![\w./\-])s\.(\d+(?:\.\d+)*)\b")


def _sections(page: str) -> set[str]:
    """`## 9. Session setup` is s.9, `### 9.4 Agent` s.9.4, a step `**15.5 Crash safety.**`
    s.15.5."""
    text = (CONTRACT / f"{page}-cli.md").read_text(encoding="utf-8")
    found = re.findall(r"^(?:## (\d+)\. |### (\d+\.\d+) |\*\*(\d+\.\d+) )", text, re.M)
    return {a or b or c for a, b, c in found}


def _citing_files():
    for name in CITING_ROOTS:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in paths:
            if (path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts
                    and CONTRACT not in path.parents and path.suffix not in (".pyc", ".db")):
                try:
                    yield path, path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    continue


@pytest.mark.parametrize("page", ["ralph", "task"])
def test_each_contract_page_says_what_it_is_and_how_it_is_kept(page):
    opening = " ".join((CONTRACT / f"{page}-cli.md").read_text(encoding="utf-8")[:3000].split())
    assert "contract that users of ralph.sh depend on" in opening
    assert "tests/e2e/" in opening and "compatibility.md" in opening


def test_every_section_cited_with_its_page_is_on_that_page():
    sections = {"ralph": _sections("ralph"), "task": _sections("task")}
    missing = [f"{path.relative_to(ROOT)}:{n}: {page}-cli.md s.{number}"
               for path, text in _citing_files()
               for n, line in enumerate(text.splitlines(), 1)
               for page, number in NAMED.findall(line) if number not in sections[page]]
    assert missing == []


def test_every_bare_section_cited_is_on_one_of_the_pages():
    sections = _sections("ralph") | _sections("task")
    missing = [f"{path.relative_to(ROOT)}:{n}: s.{number}"
               for path, text in _citing_files()
               for n, line in enumerate(text.splitlines(), 1)
               for number in BARE.findall(line) if number not in sections]
    assert missing == []
