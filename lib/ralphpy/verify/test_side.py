"""Owns the test side: the files that decide what the tests say and which of them run, and the
runner section of a file that mixes runner settings with others (pyproject.toml, setup.cfg,
tox.ini, package.json), restored on its own. Pure functions; knows nothing of git."""
from __future__ import annotations

import json
import re

from ralphpy.verify import patterns

# Each runner's test files, test-support files and configuration, by path. A file of one
# runner's part is restored for all: a project may run several.
RUNNERS = {
    "pytest": r"(^|/)(test_[^/]*|[^/]*_test|conftest|tests|pytest|sitecustomize|usercustomize)"
              r"\.py$|(^|/)\.?pytest\.(ini|toml)$|\.pth$",
    "node --test": r"(^|/)test/|" + patterns.NODE_TEST_NAME,
    "jest": r"(^|/)(__tests__|__mocks__)/|\.(test|spec)\.[cm]?[jt]sx?$"
            r"|(^|/)jest\.(config|setup)[^/]*$|(^|/)setupTests\.[cm]?[jt]sx?$",
    "vitest": r"(^|/)vitest\.(config|setup|workspace)[^/]*$",
    # others: files under a test folder, and the names the tamper check knows as tests
    "generic": r"(^|/)(tests?|spec|fixtures)/",
}
_TEST_SIDE = re.compile("|".join(f"(?:{rx})" for rx in RUNNERS.values()))

# A file that mixes runner settings with others: its runner section is restored alone.
_SECTIONS = {"pyproject.toml": re.compile(r"^\[tool\.pytest(\.ini_options)?\]\s*$"),
             "setup.cfg": re.compile(r"^\[tool:pytest\]\s*$"),
             "tox.ini": re.compile(r"^\[pytest\]\s*$")}
# a test script's or make target's name: test, check or verify, alone or with a suffix
TEST_SCRIPT = re.compile(r"^(?:test|check|verify)(?:[-_.:][\w.:-]*)?$")
# vite.config.* mixes vitest's `test` block with the app's build in code: not split, the
# session's file is used (the runners' collections at both ends judge it)
UNSPLIT = re.compile(r"(^|/)vite\.config\.[cm]?[jt]s$")


def is_test_side(path: str, protect: tuple[str, ...] = ()) -> bool:
    """A whole file of the test side: tests, their support and configuration, `protect:`."""
    return bool(_TEST_SIDE.search(path)) or patterns.is_test_path(path) or \
        patterns.protected(path, protect)


def mixed(path: str) -> bool:
    """A file whose runner section alone is on the test side."""
    return path.rsplit("/", 1)[-1] in (*_SECTIONS, "package.json")


def _split(text: str, header: re.Pattern) -> tuple[list[str], list[str], int]:
    """(the lines outside the runner's sections, the sections' lines, where the first
    section stood among the outside lines; -1 when none)."""
    outside: list[str] = []
    at, inside, current = -1, [], outside
    for line in text.split("\n"):
        if line.startswith("["):
            current = inside if header.match(line) else outside
            if current is inside and at < 0:
                at = len(outside)
        current.append(line)
    return outside, inside, at


def restore_section(path: str, start: str | None, now: str) -> str | None:
    """The session's file with its runner section as at the start (`start` None: new), where
    it stands now. None when the file cannot be split (package.json that is not JSON)."""
    name = path.rsplit("/", 1)[-1]
    if name == "package.json":
        return _restore_package(start, now)
    outside, _, at = _split(now, _SECTIONS[name])
    _, section, _ = _split(start or "", _SECTIONS[name])
    at = len(outside) if at < 0 else at
    return "\n".join(outside[:at] + section + outside[at:])


def section_changed(path: str, start: str, now: str) -> bool:
    """Whether a session's change to a mixed file changed its runner section (a dependency
    added to pyproject.toml or package.json is no change of the test side)."""
    restored = restore_section(path, start, now)
    if restored is None or not path.endswith("package.json"):
        return restored != now
    return json.loads(restored) != json.loads(now)        # the same object, keys reordered


def _restore_package(start: str | None, now: str) -> str | None:
    """package.json with jest's `"jest"` object and its test scripts as they were."""
    try:
        old, new = json.loads(start or "{}"), json.loads(now)
    except ValueError:
        return None
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return None
    for key in ("jest", "vitest"):
        new.pop(key, None)
        if key in old:
            new[key] = old[key]
    scripts = {k: v for k, v in (new.get("scripts") or {}).items() if not TEST_SCRIPT.match(k)}
    scripts.update({k: v for k, v in (old.get("scripts") or {}).items() if TEST_SCRIPT.match(k)})
    if scripts or "scripts" in new:
        new["scripts"] = scripts
    return json.dumps(new, indent=2) + "\n"


__all__ = ["UNSPLIT", "TEST_SCRIPT", "is_test_side", "mixed", "restore_section", "section_changed"]
