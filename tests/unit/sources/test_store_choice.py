"""sources.choice: what the `tasks` setting chooses, with RALPH_TASKS_DB beside it."""
from __future__ import annotations

import pytest

from ralphpy.sources import choice

A = "postgresql://ralph@a/x"
B = "postgresql://ralph@b/y"


@pytest.mark.parametrize("tasks,tasks_db,expected", [
    ("", "", ""),                                  # the default file
    ("sqlite", "", ""),
    ("", "shared/tasks.db", "shared/tasks.db"),
    ("sqlite", B, B),                              # RALPH_TASKS_DB counts while sqlite
    (A, "", A),
    (A, B, A),                                     # the setting's URL wins
    (A, "shared/tasks.db", A),
    ("mysql://db/x", B, "mysql://db/x"),           # a URL, if an unknown one
    ("tk", B, None),                               # a source keeps its own backlog
    ("flowctl", "", None),
])
def test_the_settings_url_wins_and_ralph_tasks_db_counts_only_while_sqlite(tasks, tasks_db,
                                                                           expected):
    assert choice.store(tasks, tasks_db) == expected
    environ = {"RALPH_TASKS": tasks, "RALPH_TASKS_DB": tasks_db}
    assert choice.store_in({k: v for k, v in environ.items() if v}) == expected


@pytest.mark.parametrize("tasks,source,store", [
    ("", False, False), ("sqlite", False, False), (None, False, False),
    ("tk", True, False), ("flowctl", True, False), ("beads", True, False),
    (A, False, True), ("postgres://db/t", False, True), ("foo://x", False, True),
])
def test_a_setting_is_sqlite_a_source_or_a_store(tasks, source, store):
    assert (choice.is_source(tasks), choice.is_store(tasks)) == (source, store)
