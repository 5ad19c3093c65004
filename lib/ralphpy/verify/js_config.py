"""Owns the reading of a JavaScript runner's configuration file (vitest's, jest's, and JSON
such as package.json) without running it: its braces, keys and quoted strings are followed
(comments, regular expressions and template literals skipped), so each setting is found in
the block it is in, with its quoted entries and their lines; and the globs those entries are
(`{a,b}`, `[jt]`, `?(x)`), compared by their text or matched against a path; and the regular
expressions they are, in the syntax JavaScript and Python's `re` share.

Which keys are settings, and what a change of them leaves out, is the runners' modules'
(vitest_config.py, jest_config.py): `settings` asks them by the keys of the blocks around a
key. What code builds is not followed: a spread, a variable or a call gives no entry of its
own (a call's quoted arguments are entries), a block defined elsewhere and given by name is
not read. Pure functions over texts; knows nothing of diffs or git."""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from itertools import product
from typing import Callable, Iterable, Mapping, NamedTuple

from ralphpy.verify import patterns

_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_QUOTED = re.compile(r"""'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?|`(?:\\.|[^`\\])*`?""")
_REGEX = re.compile(r"/(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[a-z]*")
_WORD = re.compile(r"[\w$]+")
_COLON = re.compile(r"[ \t]*:(?!:)")
_OPERATOR = re.compile(r"[=!<>]==?|=>|\?\?=?|\?\.(?!\d)")  # not an assignment, not a ternary
_REGEX_AFTER = "(,=:[!&|?{};"          # a `/` after these starts a regular expression
# What of a JavaScript regular expression Python's `re` reads alike: an escape of a class
# (\d, \w, \s, \b), of a control character, a code unit or a back reference, or of a sign; a
# group that captures, or `(?:`, a lookahead or a lookbehind. Anything else (`(?<name>`, `\p{..}`,
# `\k<..>`, `[^]`, `\A`, which JavaScript reads as a letter) is not translated.
_JS_REGEX = re.compile(r"""(?:\\(?:[dDwWsSbBfnrtv0-9]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[^\w\s])
                          |\((?:\?(?::|=|!|<=|<!)|(?!\?))|\[(?!\^?\])|[^\\(\[])*""", re.X)

# The name a key has as a setting, from the keys of the object blocks around it (outermost
# first; None for a block no key opens, as `module.exports = {`), or None: no setting.
Namer = Callable[[list, str], "str | None"]


@dataclass
class Setting:
    line: int                                               # where its key is (first one)
    entries: list[tuple[int, str]] = field(default_factory=list)   # (line, quoted text)

    @property
    def first_line(self) -> int:
        """Where a finding on the setting goes: its first entry's line, else its key's."""
        return self.entries[0][0] if self.entries else self.line


class Change(NamedTuple):
    """What a change of a setting leaves out, as findings name it."""
    path: str
    line: int
    setting: str                   # test.exclude, testMatch, ...
    what: str                      # "test.exclude src/a.test.ts", "testMatch **/*.ts removed"


@dataclass
class _Frame:
    opener: str
    key: str | None                # the key whose value the bracket opens (or its frame's)
    pending: str | None = None     # in an object: the key whose value is being read
    ternary: int = 0               # `?` seen: the next `name :` is a branch, not a key


def _tokens(text: str) -> Iterable[tuple[int, str, str]]:
    """(line, kind, text) of what the reader follows: kind `key` (a name before a colon),
    `qkey` (a quoted one), `str` (a quoted text), or the bracket or punctuation itself."""
    i, line, prev = 0, 1, "("
    while i < len(text):
        c, m = text[i], None
        if c == "/" and (m := _COMMENT.match(text, i)):
            pass                                           # `prev` stays what it was
        elif c == "/" and prev in _REGEX_AFTER and (m := _REGEX.match(text, i)):
            prev = "x"
        elif c in "\"'`" and (m := _QUOTED.match(text, i)):
            yield line, "qkey" if _COLON.match(text, m.end()) else "str", m.group(0)[1:-1]
            prev = "x"
        elif m := _WORD.match(text, i):
            if _COLON.match(text, m.end()):
                yield line, "key", m.group(0)
            prev = "x"
        elif c in "=!<>?" and (m := _OPERATOR.match(text, i)):
            prev = "="
        elif c in "{[()]},;?=":
            yield line, c, c
        if m:
            line, i = line + m.group(0).count("\n"), m.end()
        else:
            prev = prev if c.isspace() else c
            line, i = line + (c == "\n"), i + 1


def _name(stack: list[_Frame], key: str | None, namer: Namer) -> str | None:
    return namer([f.key for f in stack if f.opener == "{"], key or "")


def settings(text: str, namer: Namer) -> dict[str, Setting]:
    """The file's settings `namer` names, each with its quoted entries; a setting given by
    code is there without entries."""
    found: dict[str, Setting] = {}
    stack = [_Frame("(", None)]
    for line, kind, value in _tokens(text):
        top = stack[-1]
        if kind in ("key", "qkey") and top.ternary:          # `a ? b : c`: c is no key's
            top.ternary -= 1
            if kind == "key":
                continue
            kind = "str"
        if kind in ("key", "qkey"):
            top.pending = value
            if name := _name(stack, value, namer):
                found.setdefault(name, Setting(line))
        elif kind == "str":
            if name := _name(stack, top.pending if top.opener == "{" else top.key, namer):
                found.setdefault(name, Setting(line)).entries.append((line, value))
        elif kind in ("{", "[", "("):
            stack.append(_Frame(kind, top.pending or (top.key if top.opener != "{" else None)))
        elif kind in ("}", "]", ")"):
            if len(stack) > 1:
                stack.pop()
        elif kind == "?":
            top.ternary += 1
        else:                                                # , ; = end a key's value
            top.pending, top.ternary = None, 0
    return found


def expand(glob: str, limit: int = 64) -> list[str] | None:
    """The plain globs (`*`, `**`, `?`) a glob stands for: `{a,b}`, `[jt]` and the extglobs
    `?(x|y)`, `@(x|y)` and `(x|y)` spelled out; None when it has syntax this does not read or
    stands for more than `limit`."""
    glob = re.sub(r"^(?:\./|/)+", "", glob.strip())
    if re.search(r"[!+*]\(", glob):                  # none, one or more, any number of
        return None
    glob = re.sub(r"\?\(([^()]*)\)", lambda m: "{," + m.group(1).replace("|", ",") + "}", glob)
    glob = re.sub(r"@?\(([^()]*)\)", lambda m: "{" + m.group(1).replace("|", ",") + "}", glob)
    glob = re.sub(r"\[([\w.]+)\]", lambda m: "{" + ",".join(m.group(1)) + "}", glob)
    parts = re.split(r"\{([^{}]*)\}", glob)
    if any(c in part for part in parts[::2] for c in "{}[]()|"):
        return None
    choices = [[part] if i % 2 == 0 else part.split(",") for i, part in enumerate(parts)]
    count = 1
    for options in choices:
        count *= len(options)
    return ["".join(c) for c in product(*choices)] if count <= limit else None


def covers(general: str, specific: str) -> bool:
    """Every path `specific` matches, `general` matches (as far as its text tells)."""
    wide, narrow = expand(general), expand(specific)
    if wide is None or narrow is None:
        return general.strip() == specific.strip()
    return all(any(patterns.glob_rx(w).match(n) for w in wide) for n in narrow)


def matches_any(glob: str, paths: Iterable[str]) -> bool:
    """A path or a folder of `paths`, seen from any folder above it, matches the glob (a
    glob this cannot read is taken to match)."""
    globs = expand(glob)
    if globs is None:
        return True
    rxs = [patterns.glob_rx(g.rstrip("/") + suffix) for g in globs for suffix in ("", "/**")]
    return any(rx.match(tail) for path in paths if path
               for tail in [path] + [path[i + 1:] for i, c in enumerate(path) if c == "/"]
               for rx in rxs)


def matcher(glob: str) -> Callable[[str], bool] | None:
    """Whether the glob matches a whole path (not a folder of it, nor it seen from below its
    top); None when this cannot read the glob."""
    globs = expand(glob)
    rxs = [patterns.glob_rx(g) for g in globs or []]
    return None if globs is None else lambda path: any(rx.match(path) for rx in rxs)


def regex(text: str) -> re.Pattern | None:
    """A JavaScript regular expression's source as Python's, or None when it uses syntax the
    two do not read alike (or none at all)."""
    if not _JS_REGEX.fullmatch(text):
        return None
    with warnings.catch_warnings():              # `[[` and the like: a set read another way
        warnings.simplefilter("error")
        try:
            return re.compile(text, re.ASCII)       # JavaScript's \w and \d: ASCII
        except (re.error, FutureWarning):
            return None


def in_folder(config: str, paths: Iterable[str]) -> list[str]:
    """The paths under the configuration file's folder, relative to it (the runner's
    rootDir as far as this reads it)."""
    return under(config.rpartition("/")[0], paths)


def under(folder: str, paths: Iterable[str]) -> list[str]:
    """The paths under a folder ("" the top), relative to it."""
    return [p[len(folder) + 1:] if folder else p for p in paths
            if p and (not folder or p.startswith(folder + "/"))]


def scripts(paths: Iterable[str]) -> list[str]:
    """The JavaScript and TypeScript files of `paths` outside node_modules: what a runner may
    load, as a test when its patterns match it."""
    return [p for p in paths if patterns.JS_SCRIPT.search(p) and "node_modules/" not in f"/{p}"]


def js_tests(paths: Iterable[str]) -> list[str]:
    """The test files of `paths` (patterns.is_test_path) a JavaScript runner may run: in
    JavaScript or TypeScript, not a Python or Go test beside them."""
    return [p for p in scripts(paths) if patterns.is_test_path(p)]


def left_out(was: Callable[[str], bool] | None, now: Callable[[str], bool] | None,
             files: Iterable[str]) -> list[str] | None:
    """The scripts of `files` a runner took for tests by its old settings (`was`) and does
    not by its new ones (`now`); None when either cannot be told (a pattern not read, given by
    code) or the old settings took none."""
    taken = [path for path in scripts(files) if was and was(path)]
    if not taken or now is None:
        return None
    return [path for path in taken if not now(path)]


def texts(found: Mapping[str, Setting], name: str) -> list[str]:
    """A setting's quoted entries."""
    return [text for _, text in found[name].entries] if name in found else []


def naming(config: str, left: list[str] | None) -> str:
    """The first file of `left` (relative to the configuration's folder) named, from the
    repository's top, as a finding ends."""
    folder = config.rpartition("/")[0]
    return f" (leaves out {folder + '/' if folder else ''}{left[0]})" if left else ""


def one_a_line(found: Iterable[Change]) -> list[Change]:
    """The first change of each line and setting: one finding a line, as for other files."""
    first: dict[tuple[str, int, str], Change] = {}
    for change in found:
        first.setdefault((change.path, change.line, change.setting), change)
    return list(first.values())


__all__ = ["Change", "Setting", "settings", "expand", "covers", "matches_any", "matcher",
           "regex", "in_folder", "under", "scripts", "js_tests", "left_out", "texts", "naming",
           "one_a_line"]
