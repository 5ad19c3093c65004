"""Owns the tamper rule on what a verify command usually runs: `npm test` runs package.json's
`test` script, `make test` the Makefile's `test` rule. A session that changes one of those
(or defines it again, which wins) changes what "the tests pass" means, whatever the tests
say: `"test": "jest"` made `"test": "exit 0"`, or `@exit 0` added at the top of the recipe.
Scripts and targets named test, check or verify, alone or with a suffix (`test:unit`,
`check-all`). Adding a new script or target is no finding. Pure functions over a file's diff
and text; knows nothing of git (tamper.py reads both sides)."""
from __future__ import annotations

import re

from ralphpy.verify.diff_files import DiffFile

_NAME = r"(?:test|check|verify)(?:[-_.:][\w.:-]*)?"
_NPM_SCRIPT = re.compile(r'^\s*"(?P<name>' + _NAME + r')"\s*:')
_MAKE_RULE = re.compile(r"^(?P<targets>[^\t#:=\s][^:=#]*?)\s*::?(?!=)")
_MAKE_TARGET = re.compile(r"^" + _NAME + r"$")
_MAKEFILE = re.compile(r"(^|/)(GNUmakefile|[Mm]akefile|[^/]*\.mk)$")


def is_makefile(path: str) -> bool:
    return bool(_MAKEFILE.search(path))


def applies(path: str) -> bool:
    """A file this rule reads: a package.json or a makefile."""
    return path.rsplit("/", 1)[-1] == "package.json" or is_makefile(path)


def _npm_script(line: str) -> str | None:
    m = _NPM_SCRIPT.match(line)
    return m.group("name") if m else None


def make_rule_lines(lines: list[str]) -> dict[int, str]:
    """The lines (numbered from 1) of a makefile's rules for test targets, target line and
    recipe, each with its target. A recipe line starts with a tab; blank lines and comments
    do not end a rule, anything else that is not a rule does."""
    rules: dict[int, str] = {}
    current = None
    for no, line in enumerate(lines, 1):
        if line.startswith("\t"):
            if current:
                rules[no] = current
            continue
        if (m := _MAKE_RULE.match(line)):
            current = next((t for t in m.group("targets").split() if _MAKE_TARGET.match(t)),
                           None)
            if current:
                rules[no] = current
        elif line.strip() and not line.lstrip().startswith("#"):
            current = None
    return rules


def changes(f: DiffFile, new_text: str, old_text: str | None) -> list[tuple[int | None, str]]:
    """What the change did to the file's test scripts or rules: (line, detail) each; the line
    of the new file, or of the old one for what was removed. old_text: the file as the diff
    started (read for a makefile only: which rule a removed line was in, which targets it had)."""
    path = f.new or ""
    if path.rsplit("/", 1)[-1] == "package.json":
        return _npm_changes(f, new_text)
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


def _npm_changes(f: DiffFile, new_text: str) -> list[tuple[int | None, str]]:
    removed = {text.strip() for _, text in f.removed}
    added = {text.strip() for _, text in f.added}
    had = {name for _, text in f.removed if (name := _npm_script(text))}
    defined: dict[str, int] = {}
    for line in new_text.split("\n"):
        if (name := _npm_script(line)):
            defined[name] = defined.get(name, 0) + 1
    found: list[tuple[int | None, str]] = []
    for no, text in f.removed:
        if _npm_script(text) and text.strip() not in added:
            found.append((no, f"test script changed: {text.strip()[:120]}"))
    for no, text in f.added:
        name = _npm_script(text)
        if name and name not in had and defined.get(name, 0) > 1 \
                and text.strip() not in removed:
            found.append((no, f"test script {name} defined again (the last one wins)"))
    return found


__all__ = ["applies", "is_makefile", "changes", "make_rule_lines"]
