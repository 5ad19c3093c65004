"""Owns parsing ralph.yml's text: PyYAML's safe loader, refusing a key given twice in one
mapping. Imported only when a ralph.yml exists (config/settings.py): PyYAML is about 15 ms of
a start that has no file to read."""
from __future__ import annotations

from typing import Any

import yaml


class InvalidYaml(ValueError):
    """One line: `invalid YAML`, where, and why."""


class _Loader(yaml.SafeLoader):
    """yaml.safe_load's loader, refusing a key given twice in one mapping: PyYAML keeps the
    last one silently, so `max_cost: 5` lower in the file would undo a budget set above."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                seen = key in first
            except TypeError:                  # an unhashable key: the base class says so
                continue
            if seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key} is set twice (first at line {first[key]})",
                    key_node.start_mark)
            first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def parse(text: str) -> Any:
    """The document's value (None for an empty file). Raises InvalidYaml."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)
    except RecursionError:
        raise InvalidYaml("invalid YAML: nested too deeply") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InvalidYaml(f"invalid YAML{where}: {problem}") from None


__all__ = ["InvalidYaml", "parse"]
