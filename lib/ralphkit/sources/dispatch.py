"""Owns the prompt-template dispatch of `ralph build --prompt TEMPLATE`, the way pi-ticketflow's
/ralph-loop runs a ticket (`pi "/tf <ticket-id> --auto"`): ralph claims the next task for the
session's agent and the prompt is the template with `{id}` replaced by its id. Works over any
task command; knows nothing of the loop or the agent."""
from __future__ import annotations

from typing import Callable

from ralphkit.backlog import answers

TaskCall = Callable[[list[str]], "tuple[bool, str]"]


def claim_prompt(task_call: TaskCall, agent: str, template: str) -> tuple[str, str] | None:
    """(task id, prompt) for the task just claimed, or None when nothing could be claimed."""
    ok, out = task_call(["claim", "--agent", agent])
    ids = answers.slugs(out) if ok else []
    if not ids:
        return None
    return ids[0], template.replace("{id}", ids[0])


__all__ = ["claim_prompt"]
