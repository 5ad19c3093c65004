"""loop.features.Features: the features of a run, run in order through one interface."""
from __future__ import annotations

from ralphpy.loop.features import Feature, Features, Prompt, ScopeFreeze
from ralphpy.loop.sessions import Session


def _session() -> Session:
    return Session(n=1, command="/ralph-build", prompt=Prompt("peek"), agent="a1")


class Recorder(Feature):
    """A feature that records each hook it sees and answers as told."""

    def __init__(self, name: str, calls: list, line: str | None = None,
                 claim: str | None = "keep", failed: tuple = (), extra_line: str | None = None):
        self.name, self.calls, self.line, self.claim = name, calls, line, claim
        self.failed, self.extra_line = list(failed), extra_line

    def start(self) -> None:
        self.calls.append((self.name, "start"))

    def before_session(self) -> str | None:
        self.calls.append((self.name, "before"))
        return self.line

    def prompt(self, prompt: Prompt) -> Prompt | None:
        self.calls.append((self.name, "prompt", prompt.data))
        if self.claim == "keep":
            return prompt
        return None if self.claim is None else Prompt(self.claim, task=self.name)

    def after_session(self, session) -> None:
        self.calls.append((self.name, "after"))
        session.failed += self.failed

    def end_lines(self, lines: list[str]) -> list[str]:
        return lines + [self.extra_line] if self.extra_line else lines


def test_with_no_feature_on_every_hook_leaves_the_loop_as_ralph_sh_has_it():
    none = Features(None, None)
    assert none.before_session() is None
    assert none.prompt(Prompt("peek")) == Prompt("peek")
    session = _session()
    none.after_session(session)
    assert session.failed == [] and none.end_lines(["done"]) == ["done"]


def test_the_first_stop_line_ends_before_session_and_later_features_are_not_asked():
    calls: list = []
    features = Features(Recorder("a", calls), Recorder("b", calls, line="Stopped"),
                        Recorder("c", calls))
    assert features.before_session() == "Stopped"
    assert calls == [("a", "before"), ("b", "before")]


def test_prompts_pass_through_each_feature_and_none_means_nothing_to_run():
    calls: list = []
    claims = Features(Recorder("a", calls), Recorder("b", calls, claim="block"))
    assert claims.prompt(Prompt("peek")) == Prompt("block", task="b")
    nothing = Features(Recorder("c", calls, claim=None), Recorder("d", calls))
    assert nothing.prompt(Prompt("peek")) is None
    assert calls == [("a", "prompt", "peek"), ("b", "prompt", "peek"), ("c", "prompt", "peek")]


def test_failed_tasks_and_end_lines_gather_from_every_feature_in_order():
    calls: list = []
    features = Features(Recorder("a", calls, failed=("t1",), extra_line="held: t1"),
                        Recorder("b", calls, failed=("t2",), extra_line="release"))
    features.start()
    session = _session()
    features.after_session(session)
    assert session.failed == ["t1", "t2"]
    assert features.end_lines(["done"]) == ["done", "held: t1", "release"]
    assert calls == [("a", "start"), ("b", "start"), ("a", "after"), ("b", "after")]


def test_get_finds_a_feature_by_kind_only_when_it_is_on():
    recorder = Recorder("a", [])
    assert Features(recorder, None).get(Recorder) is recorder
    assert Features(recorder).get(ScopeFreeze) is None


def test_the_fail_reason_is_the_last_features_that_gives_one():
    class Reason(Feature):
        def __init__(self, reason: str | None):
            self.reason = reason

        def after_session(self, session) -> None:
            if self.reason:
                session.reason = self.reason

    session = _session()
    Features(None).after_session(session)
    assert session.reason == "session exited without completing task"
    Features(Reason("verify failed"), Reason(None)).after_session(session)
    assert session.reason == "verify failed"
