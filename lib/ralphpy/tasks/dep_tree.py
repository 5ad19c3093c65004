"""Owns the `deps` walk (docs/contract/task-cli.md s.9.13): the distinct (blocker, depth) pairs
below a task, sorted by depth then slug, ending on cycles. Pure function over an adjacency map; does
not own queries or output. Exact and polynomial on acyclic graphs (every path is simple there); a
task on a dependency cycle is listed and expanded only at its first depth, and the queried task is
never listed below itself, so the walk always ends (exact simple-path semantics on cyclic
graphs would be exponential)."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Hashable, Mapping, Sequence


def _cyclic(graph: Mapping[Hashable, Sequence[Hashable]], root: Hashable) -> set:
    """Nodes reachable from root that lie on a cycle (Tarjan's SCCs, iterative)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    cyclic: set = set()
    counter = 0
    work = [(root, iter(graph.get(root, ())))]
    index[root] = low[root] = counter
    stack.append(root)
    on_stack.add(root)
    while work:
        node, children = work[-1]
        advanced = False
        for child in children:
            if child not in index:
                counter += 1
                index[child] = low[child] = counter
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph.get(child, ()))))
                advanced = True
                break
            if child in on_stack:
                low[node] = min(low[node], index[child])
        if advanced:
            continue
        work.pop()
        if work:
            parent = work[-1][0]
            low[parent] = min(low[parent], low[node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                cyclic.update(component)
    return cyclic


def walk(graph: Mapping[Hashable, Sequence[Hashable]], root: Hashable) -> list[tuple[int, Hashable]]:
    """Distinct (depth, node) pairs below root, depth 1 = direct blockers."""
    cyclic = _cyclic(graph, root)
    seen_cyclic = {root}
    pairs: list[tuple[int, Hashable]] = []
    level = list(dict.fromkeys(graph.get(root, ())))  # direct blockers are always listed
    depth = 1
    while level:
        pairs.extend((depth, node) for node in level)
        seen_cyclic.update(node for node in level if node in cyclic)
        following: dict = {}
        for node in level:
            for child in graph.get(node, ()):
                if child not in seen_cyclic:
                    following[child] = None
        level = list(following)
        depth += 1
    return pairs


__all__ = ["walk"]
