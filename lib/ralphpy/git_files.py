"""Owns reading the three git facts of the task CLI from the repository's own files: the work
tree root (`git rev-parse --show-toplevel`), origin's URL (`git remote get-url origin`) and the
current branch (`git branch --show-current`), each without starting git (about 2 ms a call).

An answer is given only for the plain layouts where it is certain to be the one git prints: a
`.git` directory, or a `.git` file naming a git directory (linked worktrees, submodules), owned
by this user, found without crossing a filesystem, with a config file in plain syntax. Anything
else gives None and the caller asks git itself: an environment variable that steers git
(GIT_DIR, GIT_CONFIG_*, ...), `include`, `url.*.insteadOf`, `core.worktree`, `extensions`,
a remote defined outside the repository's config, a symbolic HEAD that is not a plain
`ref: refs/heads/<name>` line, a symbolic branch ref, and every error case, so that git's
own message and exit decide (docs/contract/task-cli.md s.3, s.7). Does not run git."""
from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

# GIT_* variables that change none of the three answers (identities, editors, transport,
# tracing); any other one (GIT_DIR, GIT_CONFIG_*, GIT_NAMESPACE, ...) hands the question to git.
_HARMLESS_ENV_PREFIXES = ("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_SSL_", "GIT_HTTP_", "GIT_CURL_",
                          "GIT_SSH", "GIT_TRACE", "GIT_LFS_")
_HARMLESS_ENV = frozenset((
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "GIT_ASKPASS",
    "GIT_MERGE_AUTOEDIT", "GIT_MERGE_VERBOSITY", "GIT_PROGRESS_DELAY", "GIT_FLUSH",
    "GIT_REDACT_COOKIES", "GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER",
    # Skips the system config; this reader still reads it, which can only make it ask git more.
    "GIT_CONFIG_NOSYSTEM",
))
# Sections that can change an answer from anywhere (an include can hold anything).
_UNSAFE_SECTIONS = frozenset((b"include", b"includeif", b"url", b"extensions"))
_BAD_REF_CHARS = frozenset(b" ~^:?*[\\\x7f")
_MAX_FILE = 1 << 20


class Layout:
    """A repository found from the current directory: work tree root, git directory, common
    directory (differs in a linked worktree), HEAD's content and origin's URL from its config
    (None: not in a plain `[remote "origin"]` url line)."""

    __slots__ = ("toplevel", "gitdir", "commondir", "head", "url")

    def __init__(self, toplevel: str, gitdir: str, commondir: str, head: bytes,
                 url: str | None) -> None:
        self.toplevel, self.gitdir, self.commondir, self.head, self.url = (
            toplevel, gitdir, commondir, head, url)


def _read(path: str) -> bytes | None:
    """The file's bytes; None when it is missing; raises _Unsure for anything else."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_FILE + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise _Unsure from err
    if len(data) > _MAX_FILE:
        raise _Unsure
    return data


class _Unsure(Exception):
    """Git, not this reader, must answer."""


def _config(data: bytes) -> list[tuple[bytes, bytes | None, bytes, bytes | None]]:
    """(section, subsection, key, value) entries of a git config file, names lowercased except
    the subsection, values stripped (None for a bare key). Raises _Unsure for syntax beyond
    `[section]`, `[section "sub"]` and `key = value` lines: quotes or escapes anywhere, a
    continued line, a value after a header, old-style `[section.sub]`, a BOM, a line git
    would refuse."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise _Unsure
    entries = []
    section, sub = b"", None
    for line in data.split(b"\n"):
        line = line.strip()
        if not line or line[:1] in b"#;":
            continue
        if line.endswith(b"\\"):
            raise _Unsure
        if line[:1] == b"[":
            if not line.endswith(b"]"):
                raise _Unsure
            name, space, quoted = line[1:-1].partition(b" ")
            sub = None
            if space:
                if (len(quoted) < 2 or quoted[:1] != b'"' or quoted[-1:] != b'"'
                        or b'"' in quoted[1:-1] or b"\\" in quoted):
                    raise _Unsure
                sub = quoted[1:-1]
            section = name.lower()
            if not _is_name(section):
                raise _Unsure
            continue
        key, equals, value = line.partition(b"=")
        key = key.strip().lower()
        if not section or not _is_name(key) or b'"' in value or b"\\" in value:
            raise _Unsure
        entries.append((section, sub, key, value.strip() if equals else None))
    return entries


def _is_name(name: bytes) -> bool:
    return name[:1].isalpha() and name.replace(b"-", b"").isalnum()


def _check(section: bytes, key: bytes, value: bytes | None) -> None:
    """Raises _Unsure for a setting that can change an answer: includes, URL rewriting,
    extensions, and the core settings that move the work tree or make the repository bare."""
    if section in _UNSAFE_SECTIONS:
        raise _Unsure
    if section == b"core":
        if key == b"worktree" or (key == b"bare" and value != b"false"):
            raise _Unsure
        if key == b"repositoryformatversion" and value not in (b"0", b"1"):
            raise _Unsure


def _plain_value(value: bytes | None) -> bytes:
    """A value exactly as git reads it: no quotes, escapes, comments or inner blanks."""
    if not value or any(c in value for c in b'"\\#; \t\r\v\f'):
        raise _Unsure
    return value


def _repo_config(commondir: str) -> str | None:
    """Origin's first URL from the repository's config (None: git must say)."""
    url = None
    for section, sub, key, value in _config(_read(os.path.join(commondir, "config")) or b""):
        _check(section, key, value)
        if section == b"remote" and sub == b"origin" and key == b"url" and url is None:
            url = _plain_value(value).decode("utf-8", "surrogateescape")
    return url


def _user_configs(environ: Mapping[str, str], git: str) -> list[str]:
    """The system and global config files git may read, plus the system file of a git
    installed under another prefix (its location is built into git)."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(git)))
    paths = ["/etc/gitconfig", os.path.join(prefix, "etc", "gitconfig")]
    home, xdg = environ.get("HOME", ""), environ.get("XDG_CONFIG_HOME", "")
    if xdg:
        paths.append(os.path.join(xdg, "git", "config"))
    if home:
        paths += [os.path.join(home, ".config", "git", "config"), os.path.join(home, ".gitconfig")]
    return paths


def _owned(path: str, uid: int) -> os.stat_result:
    st = os.stat(path)
    if st.st_uid != uid:  # git's safe.directory check: let git decide
        raise _Unsure
    return st


def _gitdir_of(dotgit: str, folder: str, uid: int) -> str:
    """The git directory a `.git` entry stands for."""
    st = os.lstat(dotgit)
    if st.st_uid != uid:
        raise _Unsure
    if stat.S_ISDIR(st.st_mode):
        return dotgit
    if not stat.S_ISREG(st.st_mode):
        raise _Unsure
    data = _read(dotgit) or b""
    if not data.startswith(b"gitdir: "):
        raise _Unsure
    target = data[8:].rstrip(b"\r\n")
    if not target or b"\n" in target or b"\r" in target:
        raise _Unsure
    return os.path.join(folder, os.fsdecode(target))


def _check_gitdir(gitdir: str, uid: int) -> tuple[str, bytes]:
    """-> (common directory, HEAD's content) of a complete git directory."""
    _owned(gitdir, uid)
    head = _read(os.path.join(gitdir, "HEAD"))
    if head is None or os.path.islink(os.path.join(gitdir, "HEAD")):
        raise _Unsure
    if not head.startswith(b"ref: refs/") and not object_id(head.rstrip(b"\n")):
        raise _Unsure  # git does not take this directory for a repository
    common = _read(os.path.join(gitdir, "commondir"))
    commondir = gitdir
    if common is not None:
        common = common.rstrip(b"\r\n")
        if not common or b"\n" in common:
            raise _Unsure
        commondir = os.path.join(gitdir, os.fsdecode(common))
    for name in ("objects", "refs"):
        if not os.access(os.path.join(commondir, name), os.X_OK):
            raise _Unsure
    return commondir, head


def discover(environ: Mapping[str, str], git: str, cwd: str | None = None) -> Layout | None:
    """The repository holding `cwd` (else the current directory), as git would find it; None
    when git must be asked (git is the program `git` found on environ's PATH)."""
    if os.geteuid() == 0 and environ.get("SUDO_UID"):
        return None  # git's ownership check then depends on its version
    for name in environ:
        if (name.startswith("GIT_") and name not in _HARMLESS_ENV
                and not name.startswith(_HARMLESS_ENV_PREFIXES)):
            return None
    try:
        uid = os.geteuid()
        folder = os.path.realpath(cwd) if cwd else os.getcwd()  # physical, as git's getcwd()
        device = os.stat(folder).st_dev
        while True:
            dotgit = os.path.join(folder, ".git")
            if os.path.lexists(dotgit):
                _owned(folder, uid)
                gitdir = _gitdir_of(dotgit, folder, uid)
                commondir, head = _check_gitdir(gitdir, uid)
                url = _repo_config(commondir)
                for path in _user_configs(environ, git):
                    for section, sub, key, value in _config(_read(path) or b""):
                        _check(section, key, value)
                        if section == b"remote" and sub == b"origin":  # read before the repo's
                            raise _Unsure
                return Layout(folder, gitdir, commondir, head, url)
            if os.path.lexists(os.path.join(folder, "HEAD")):
                return None  # perhaps inside a git directory itself
            parent = os.path.dirname(folder)
            if parent == folder or os.stat(parent).st_dev != device:
                return None  # no repository, or one beyond a mount point: git says which
            folder = parent
    except (_Unsure, OSError, UnicodeError):
        return None


def object_id(text: bytes) -> bool:
    """A full object id as git writes it: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits."""
    return len(text) in (40, 64) and not text.strip(b"0123456789abcdef")


def _valid_branch(name: bytes) -> bool:
    """A branch name git takes as it is (a stricter subset of `git check-ref-format`)."""
    if (not name or name.startswith(b"/") or name.endswith((b"/", b".", b".lock"))
            or b".." in name or b"//" in name or b"@{" in name or name == b"@"):
        return False
    if any(c < 0x20 or c in _BAD_REF_CHARS for c in name):
        return False
    return not any(part.startswith(b".") or part.endswith(b".lock") for part in name.split(b"/"))


def current_branch(layout: Layout) -> str | None:
    """The checked-out branch, or None when git must say (detached HEAD, unusual HEAD)."""
    head = layout.head
    if not head.startswith(b"ref: refs/heads/") or not head.endswith(b"\n"):
        return None
    name = head[16:-1]
    if not _valid_branch(name):
        return None
    try:
        ref = os.path.join(layout.commondir, "refs", "heads", os.fsdecode(name))
        st = os.lstat(ref)
    except FileNotFoundError:
        return name.decode("utf-8", "surrogateescape")  # unborn or packed: a plain branch
    except (OSError, UnicodeError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        with open(ref, "rb") as handle:
            target = handle.read(80).rstrip(b"\n")
    except OSError:
        return None
    if not object_id(target):
        return None  # a symbolic or broken branch ref: git says what it makes of it
    return name.decode("utf-8", "surrogateescape")


__all__ = ["Layout", "discover", "current_branch", "object_id"]
