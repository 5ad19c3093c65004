"""Owns the tamper rule on files that mix a runner's settings with others and cannot be
restored apart (verify.test_side): a makefile's test target rule changed or defined again (a
new target is no finding), a vite.config.* line of vitest's settings. Knows nothing of git."""
from __future__ import annotations

import re

from ralphpy.verify import test_side
from ralphpy.verify.diff_files import DiffFile

_MAKE_RULE = re.compile(r"^(?P<targets>[^\t#:=\s][^:=#]*?)\s*::?(?!=)")
_VITEST_KEY = re.compile(r"\b(?:test|include|exclude|dir|root|passWithNoTests|testNamePattern"
                         r"|setupFiles|globalSetup|allowOnly|bail|reporters|coverage)\b\s*:")
_MAKEFILE = re.compile(r"(^|/)(GNUmakefile|[Mm]akefile|[^/]*\.mk)$")


def is_makefile(path: str) -> bool:
    return bool(_MAKEFILE.search(path))


def applies(path: str) -> bool:
    """A file this rule reads (package.json's test scripts are restored by the second run)."""
    return is_makefile(path) or bool(test_side.UNSPLIT.search(path))


def make_rule_lines(lines: list[str]) -> dict[int, str]:
    """The lines (from 1) of a makefile's test target rules, each with its target. Blank
    lines and comments do not end a rule, anything else that is not a recipe or rule does."""
    rules: dict[int, str] = {}
    current = None
    for no, line in enumerate(lines, 1):
        if (m := _MAKE_RULE.match(line)):       # never a recipe line: those start with a tab
            current = next((t for t in m.group("targets").split()
                            if test_side.TEST_SCRIPT.match(t)), None)
        elif not line.startswith("\t") and line.strip() and not line.lstrip().startswith("#"):
            current = None
        if current and (m or line.startswith("\t")):
            rules[no] = current
    return rules


def changes(f: DiffFile, new_text: str, old_text: str | None) -> list[tuple[int | None, str]]:
    """(line, detail) of each test rule the change touched (the old file's line for what was
    removed; old_text: which rule a removed line was in, which targets it had)."""
    if test_side.UNSPLIT.search(f.new or ""):
        return [(no, f"vitest settings changed in a file not restored apart: {text.strip()[:80]}")
                for no, text in f.removed + f.added if _VITEST_KEY.search(text)][:1]
    new_rules = make_rule_lines(new_text.split("\n"))
    old_rules = make_rule_lines((old_text or "").split("\n"))
    had = set(old_rules.values())
    changed: dict[str, int] = {}            # target -> the first line that says so
    for no, _ in f.removed:
        if no in old_rules:
            changed.setdefault(old_rules[no], no)
    for no, _ in f.added:
        if new_rules.get(no) in had:                        # a new target is an addition
            changed.setdefault(new_rules[no], no)
    return [(no, f"make target {target}: its rule changed") for target, no in changed.items()]


__all__ = ["applies", "is_makefile", "changes", "make_rule_lines"]
