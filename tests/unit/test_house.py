"""The house rules of the repository, checked over its files: a long module says why it is one
concern, no import cycle between modules or between packages, the packages' layers as
docs/architecture.md lists them, no module named as a package, one way to run programs, a
docstring for every package, and no process wording (work items, roles) in the code and docs a
user or contributor reads."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
PACKAGE = LIB / "ralphpy"
# Past this, a module says in its docstring why it is one concern (docs/contributing.md): a
# length is a reason to look again, not a line to split a concern at.
LONG_MODULE = 500
# Work items, roles and the process that produced the code are nothing a reader needs.
PROCESS_WORDS = re.compile(r"issue ?#?[0-9]|\blead\b|helper session|team brief", re.IGNORECASE)
WORDING_ROOTS = ["ralph.py", "lib", "docs", "README.md", "CHANGELOG.md", "scripts", "bench", "demo",
                 "tests"]
# Who may start a process: programs.py (every program that is not an agent), session/
# (agents: process groups, pumps), tasks/ (the task CLI's own git reads, kept free of
# ralph.py's modules for its start-up time) and notify/ (a notifier command is fed its
# notification on stdin and killed from the dispatcher thread at the run's end, which
# programs.run_group does not offer).
MAY_RUN_PROCESSES = ("ralphpy.programs", "ralphpy.session.", "ralphpy.tasks.",
                     "ralphpy.notify.")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(LIB).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ralphpy modules `name` imports, at the top or inside a function; not the imports
    under `if TYPE_CHECKING:`, which only a type checker runs (annotations of a caller's type)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_a_module_over_500_lines_says_in_its_docstring_why_it_is_one_concern():
    unexplained = {}
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        docstring = " ".join((ast.get_docstring(ast.parse(text)) or "").split())
        if len(text.splitlines()) > LONG_MODULE and "one concern" not in docstring.lower():
            unexplained[name] = len(text.splitlines())
    assert unexplained == {}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_two_ralphpy_modules_import_each_other_even_through_others():
    known = _modules()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    assert sum(map(len, graph.values())) > len(known)           # the graph was read
    assert _cycles(graph) == []


def _package_of(module: str) -> str:
    """`ralphpy.runs.lock` -> `runs`; a module at the top of the library (`ralphpy.errors`)
    -> "" (the bottom layer every package may import)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def _package_graph() -> dict[str, dict[str, set[str]]]:
    """Package -> the packages it imports -> the module imports that make each edge."""
    known = _modules()
    graph: dict[str, dict[str, set[str]]] = {
        p.name: {} for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    for name, path in known.items():
        source = _package_of(name)
        for imported in _imports(name, path, known):
            target = _package_of(imported)
            if source and target and target != source:
                graph[source].setdefault(target, set()).add(f"{name} -> {imported}")
    return graph


def _layers() -> list[set[str]]:
    """The layers the architecture page lists, lowest first: `1. `tasks` `agents``."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Layers", 1)[1].split("\n## ", 1)[0]
    return [set(re.findall(r"`([a-z_]+)/`", line))
            for line in re.findall(r"^[0-9]+\. (.*)$", section, re.M)]


def test_no_two_packages_import_each_other_even_through_others():
    graph = _package_graph()
    assert sum(map(len, graph.values())) > len(graph)           # the graph was read
    cycles = _cycles({p: set(targets) for p, targets in graph.items()})
    assert cycles == [], {f"{a} -> {b}": sorted(why) for cycle in cycles for a in cycle
                          for b, why in graph[a].items() if b in cycle}


def test_the_architecture_page_puts_every_package_in_exactly_one_layer():
    layers = _layers()
    listed = [p for layer in layers for p in layer]
    assert sorted(listed) == sorted(_package_graph())


def test_a_package_imports_only_packages_of_the_layers_below_its_own():
    level = {p: n for n, layer in enumerate(_layers()) for p in layer}
    upwards = {f"{a} -> {b}": sorted(why) for a, targets in _package_graph().items()
               for b, why in targets.items() if level.get(b, -1) >= level.get(a, -1)}
    assert upwards == {}


def test_the_top_level_modules_import_no_package():
    known = _modules()
    bottom = {name for name in known if name.count(".") == 1 and not _package_of(name)}
    found = {name: sorted(i for i in _imports(name, known[name], known) if _package_of(i))
             for name in bottom}
    assert bottom and {n: i for n, i in found.items() if i} == {}


def test_no_module_is_named_as_a_package():
    # `from ralphpy.tasks import agents` beside `from ralphpy import agents` reads as the one
    # while it is the other: a module is named for its concern, not after another package.
    packages = set(_package_graph())
    named = sorted(name for name in _modules()
                   if name.count(".") > 1 and name.rpartition(".")[2] in packages)
    assert packages and named == []


def test_every_package_says_what_it_owns_in_its_init_docstring():
    packages = sorted({path.parent for path in PACKAGE.rglob("*.py")
                       if "__pycache__" not in path.parts})
    missing = [str(p.relative_to(LIB)) for p in packages
               if not (p / "__init__.py").is_file()
               or not ast.get_docstring(ast.parse((p / "__init__.py").read_text(encoding="utf-8")))]
    assert missing == []


def test_only_the_programs_helper_session_and_task_cli_start_processes():
    starters = set()
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] in ("subprocess", "plumbum") for n in names):
                starters.add(name)
    assert starters and all(name.startswith(MAY_RUN_PROCESSES) for name in starters), starters


def _text_files(root: Path):
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in paths:
        if "__pycache__" in path.parts:
            continue
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


@pytest.mark.parametrize("root", [r for r in WORDING_ROOTS if (ROOT / r).exists()])
def test_no_work_item_or_role_is_named_in_code_or_docs(root):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path, text in _text_files(ROOT / root) if path != Path(__file__).resolve()
            for n, line in enumerate(text.splitlines(), 1) if PROCESS_WORDS.search(line)]
    assert not hits, "\n".join(hits)


def test_the_architecture_page_names_every_module_in_its_package():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    sections = re.split(r"^`([a-z_]+)/`:", page, flags=re.M)
    listed = {sections[i]: set(re.findall(r"^\| `([a-z_]+\.py)` \|", sections[i + 1], re.M))
              for i in range(1, len(sections), 2)}
    top = set(re.findall(r"^\| `([a-z_]+\.py)` \|", sections[0], re.M))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        package = path.parent.name
        named = top if path.parent == PACKAGE else listed.get(package, set())
        if path.name not in named:
            missing.append(str(path.relative_to(LIB)))
    assert missing == []


def test_a_bench_quoted_in_two_pages_gives_the_same_numbers_in_both():
    """bench/sources.py's per-iteration overhead is quoted in the README's Speed table and in
    docs/task-sources.md: one measurement, the same numbers (a reader compares them)."""
    row, = [line for line in (ROOT / "README.md").read_text().splitlines()
            if line.startswith("| `bench/sources.py`")]
    readme = [int(n) for n in re.search(r"\| ([0-9]+) / ([0-9]+) / ([0-9]+) ms;", row).groups()]
    page = (ROOT / "docs" / "task-sources.md").read_text()
    quoted = [int(re.search(rf"^\| {name} \| ([0-9]+) ms \|", page, re.MULTILINE).group(1))
              for name in ("sqlite", "tk", "flowctl")]
    assert quoted == readme
