"""backlog.calls on a PostgreSQL store that cannot be reached: the call's last stderr line is
kept, the task CLI's retry lines reach `notice`, and `store_lost` decides whether the call is
made again. A real in-process task CLI against a port where nothing listens."""
from __future__ import annotations


from ralphpy.backlog import calls

URL = "postgresql://u:hunter2@127.0.0.1:9/nowhere?connect_timeout=1"


def embedded(**more) -> calls.TaskCommand:
    return calls.TaskCommand("task", None, True, **more)


def test_an_unreachable_store_is_a_failed_call_that_says_so():
    result = embedded().call("peek", env={"RALPH_TASKS_DB": URL, "RALPH_STORE_RETRY": "0"})
    assert (result.ok, result.output, result.store_lost) == (False, "", True)
    assert result.error.startswith("Error: task store unreachable: "
                                   "postgresql://u:***@127.0.0.1:9/nowhere")


def test_store_lost_is_asked_after_each_failure_until_it_gives_up():
    asked, notices = [], []

    def lost(result: calls.TaskResult, attempt: int) -> bool:
        asked.append(attempt)
        return attempt < 3

    task = embedded(store_lost=lost, notice=notices.append)
    # a budget of one first pause: one retry line per call
    result = task.call("plan-status", env={"RALPH_TASKS_DB": URL, "RALPH_STORE_RETRY": "0.2"})
    assert asked == [1, 2, 3] and result.store_lost
    assert len(notices) == 3 and all(n.startswith("ralph task: task store unavailable (")
                                     and "retrying in 0.2s" in n for n in notices)
    assert not any("hunter2" in n for n in notices)


def test_other_failures_are_not_waited_for():
    asked = []
    task = embedded(store_lost=lambda result, attempt: asked.append(attempt) or True)
    result = task.call("peek", env={"RALPH_TASKS_DB": "mysql://db/x"})
    assert not result.ok and not result.store_lost and asked == []
    assert result.error.startswith("Error: unknown task store 'mysql://db/x'")
