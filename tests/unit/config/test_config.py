"""config.settings: ralph.yml files, environment and command-line values merged and validated
into typed Options."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ralphpy.config import settings as config_settings
from ralphpy.config.options import Options
from ralphpy.config.table import SETTINGS
from ralphpy.errors import EXIT_USAGE, UsageError

YML_KEYS = {s.name for s in SETTINGS if s.in_yml}


def load(tmp_path: Path, yml: str | None = None, env: dict | None = None, mode: str = "build",
         **cli):
    if yml is not None:
        (tmp_path / "ralph.yml").write_text(yml)
    return config_settings.load(mode, cli, env or {}, tmp_path)


def problems(tmp_path: Path, yml: str | None = None, env: dict | None = None, **cli) -> list:
    with pytest.raises(UsageError) as err:
        load(tmp_path, yml, env, **cli)
    assert err.value.exit_code == EXIT_USAGE
    assert str(err.value) == "\n".join(err.value.problems)
    return err.value.problems


def test_defaults_apply_without_any_file_or_variable(tmp_path: Path):
    settings = load(tmp_path)
    assert settings.session_timeout == 3600 and settings.idle_timeout == 900
    assert (settings.max_attempts, settings.max_idle_sessions,
            settings.max_consecutive_failures) == (3, 3, 5)
    assert settings.max_iterations == 0 and settings.max_cost is None
    assert settings.freeze_scope is False and settings.agent == "claude"
    assert settings.completion_promise == "COMPLETE" and settings.parallel == 1
    assert (settings.kill_grace, settings.limit_wait_margin, settings.limit_default_wait) == (
        10, 120, 1800)
    assert settings.explicit() == {} and settings.source("max_cost") == "default"


def test_options_have_one_typed_field_per_setting_row():
    fields = [f.name for f in dataclasses.fields(Options)]
    assert fields == ["mode", *(s.name for s in SETTINGS), "sources"]


def test_every_setting_row_is_complete():
    for setting in SETTINGS:
        # no flag: a ralph.yml-only setting (assign_prompt, inbox, respawn_limit, ...)
        # `agents:` lists the fallback agents, after --agent: its flag says so
        named = {"agents": "--fallback-agent"}.get(setting.name, setting.name.replace("_", "-"))
        assert setting.help and setting.flag in (None, "--" + named.lstrip("-"))
        assert setting.kind in ("int", "bool", "number", "duration", "text", "list",
                                "lists")
        assert bool(setting.flags) == bool(setting.flag_help)
        assert setting.in_yml or setting.flags


@pytest.mark.parametrize("mode,yml,expected", [
    ("plan", None, 1), ("build", None, 0), ("plan", "max_iterations: 4\n", 4),
    ("build", "max_iterations: 0\n", 0)], ids=["plan", "build", "plan-yml", "build-yml-0"])
def test_the_iteration_limit_takes_the_mode_default_when_no_source_sets_it(
        tmp_path: Path, mode: str, yml: str | None, expected: int):
    assert load(tmp_path, yml, mode=mode).max_iterations == expected


@pytest.mark.parametrize("yml,cli", [("max_iterations: 0\n", {}), (None, {"max_iterations": 0})],
                         ids=["ralph.yml", "cli"])
def test_plan_mode_refuses_0_iterations_from_any_source(tmp_path: Path, yml, cli):
    with pytest.raises(UsageError, match=r"^Error: plan mode requires at least 1 iteration "):
        load(tmp_path, yml, mode="plan", **cli)


def test_persisted_options_leave_out_how_this_invocation_runs(tmp_path: Path):
    opts = load(tmp_path, "max_iterations: 3\nmax_cost: 2\n", {"SCOPE_WATCH": "0"},
                dry_run=True, resume=True, kill_grace=1.0, parallel=2)
    assert set(opts.explicit()) == {"max_iterations", "max_cost", "scope_watch", "dry_run",
                                    "resume", "kill_grace", "parallel"}
    assert opts.persisted() == {"max_cost": 2.0, "parallel": 2}


def test_a_resumed_runs_values_are_applied_and_unknown_names_ignored(tmp_path: Path):
    opts = load(tmp_path).with_values({"max_cost": 4.0, "max_iterations": 7, "gone": 1})
    assert (opts.max_cost, opts.max_iterations) == (4.0, 7)


def test_precedence_is_cli_then_environment_then_ralph_yml_then_default(tmp_path: Path):
    yml = "freeze_scope: false\nstop_on_scope_change: true\nmax_cost: 5\nmax_attempts: 4\n"
    settings = load(tmp_path, yml, {"FREEZE_SCOPE": "1", "STOP_ON_SCOPE_CHANGE": "0"},
                    freeze_scope=False, max_cost=None)
    assert (settings.freeze_scope, settings.source("freeze_scope")) == (False, "cli")
    assert (settings.stop_on_scope_change, settings.source("stop_on_scope_change")) == (
        False, "env")
    assert (settings.max_cost, settings.source("max_cost")) == (5.0, "ralph.yml")
    assert (settings.parallel, settings.source("parallel")) == (1, "default")
    assert settings.explicit() == {"freeze_scope": False, "stop_on_scope_change": False,
                                   "max_cost": 5.0, "max_attempts": 4}


def test_an_empty_environment_variable_counts_as_unset(tmp_path: Path):
    settings = load(tmp_path, "freeze_scope: true\n", {"FREEZE_SCOPE": ""})
    assert settings.source("freeze_scope") == "ralph.yml"


@pytest.mark.parametrize("text,value", [
    ("1", True), ("0", False), ("true", True), ("FALSE", False), ("yes", True), ("No", False),
    ("on", True), ("off", False)], ids=lambda v: repr(v))
def test_booleans_from_the_environment(tmp_path: Path, text: str, value: bool):
    assert load(tmp_path, env={"FREEZE_SCOPE": text}).freeze_scope is value


@pytest.mark.parametrize("text,seconds", [
    ("90", 90), ("1.5", 1.5), ("30s", 30), ("15m", 900), ("1h", 3600), ("1h30m", 5400),
    ("2d", 172800), ("0", 0), ("1h 30m", 5400), ("30 s", 30)], ids=lambda v: str(v))
def test_durations_accept_seconds_and_units(tmp_path: Path, text: str, seconds: float):
    assert load(tmp_path, f"session_timeout: {text}\n").session_timeout == seconds
    assert load(tmp_path, None, idle_timeout=text).idle_timeout == seconds


def test_a_full_ralph_yml_is_read(tmp_path: Path):
    yml = """\
# every key of the reference
max_iterations: 7
model: sonnet
danger: yes
completion_promise: DONE
dry_run: false
resume: false
freeze_scope: true
stop_on_scope_change: true
scope_watch: false
assign: true
session_timeout: 45m
idle_timeout: 5m
max_attempts: 2
max_idle_sessions: 0
max_consecutive_failures: 4
max_cost: 12.5
max_runtime: 8h
max_limit_wait: 6h
agent: pi
agent_cmd: /opt/pi/bin/pi
parallel: 3
assign_prompt: prompts/mine.md
inbox: incoming
respawn_limit: 5
continue_session: on
respawn_safety: off
merge: ff
worktree_setup: npm ci
worktree_setup_timeout: 5m
sync: true
pr: true
pr_wait: none
pr_merge: squash
pr_poll: 2m
tasks: tk
lease: 5m
store_connect_timeout: 30s
notify: ./notify.sh
notify_timeout: 5s
verify: pytest -q
verify_timeout: 2m
tamper: warn
protect: "tests/** .github/**"
pace: 80%
agents: [claude, codex, gemini]
escalate: [haiku, sonnet, opus]
sandbox: bwrap
sandbox_image: agent:1
"""
    settings = load(tmp_path, yml)
    assert set(settings.explicit()) == YML_KEYS
    assert (settings.max_iterations, settings.danger, settings.max_runtime) == (7, True, 28800)
    assert (settings.agent, settings.parallel, settings.max_cost) == ("pi", 3, 12.5)
    assert (settings.verify, settings.verify_timeout, settings.tamper) == ("pytest -q", 120, "warn")
    assert settings.protect == ("tests/**", ".github/**")
    assert (settings.lease, settings.store_connect_timeout) == (300, 30)
    assert (settings.sandbox, settings.sandbox_image) == ("bwrap", "agent:1")
    assert settings.sync is True
    assert (settings.pr, settings.pr_wait, settings.pr_merge, settings.pr_poll) == (
        True, "none", "squash", 120)
    assert (settings.worktree_setup, settings.worktree_setup_timeout) == ("npm ci", 300)
    assert (settings.pace, settings.agents) == ("80%", ("claude", "codex", "gemini"))
    assert settings.escalate == ("haiku", "sonnet", "opus")


@pytest.mark.parametrize("yml", ["protect: [tests/**, .github/**]\n",
                                 "protect: 'tests/**, .github/**'\n",
                                 "protect:\n  - tests/**\n  - .github/**\n"],
                         ids=["flow-list", "comma-text", "block-list"])
def test_a_list_setting_reads_a_yaml_list_or_one_separated_text(tmp_path: Path, yml: str):
    assert load(tmp_path, yml).protect == ("tests/**", ".github/**")


@pytest.mark.parametrize("yml,expected", [
    ("max_iteration: 3\n",
     "ralph.yml: unknown key 'max_iteration' (did you mean 'max_iterations'?)"),
    ("max-cost: 3\n", "ralph.yml: unknown key 'max-cost' (did you mean 'max_cost'?)"),
    ("colour: blue\n", "ralph.yml: unknown key 'colour'"),
    ("kill_grace: 5\n", "ralph.yml: unknown key 'kill_grace'"),
    ("session_timeout: 1h 30\n",
     "ralph.yml: session_timeout must be a duration (seconds, or like 30s, 15m, 1h), "
     "got '1h 30'"),
    ("max_cost: ten\n", "ralph.yml: max_cost must be a number, got 'ten'"),
    ("max_cost: 0\n", "ralph.yml: max_cost must be greater than 0, got 0"),
    ("max_iterations: 2.5\n", "ralph.yml: max_iterations must be a whole number, got 2.5"),
    ("max_iterations: -1\n", "ralph.yml: max_iterations must be at least 0, got -1"),
    ("parallel: 0\n", "ralph.yml: parallel must be from 1 to 64, got 0"),
    ("danger: maybe\n",
     "ralph.yml: danger must be a boolean (1/0, true/false, yes/no), got 'maybe'"),
    ("session_timeout: soon\n",
     "ralph.yml: session_timeout must be a duration (seconds, or like 30s, 15m, 1h), "
     "got 'soon'"),
    ("model: 4.5\n", "ralph.yml: model must be a non-empty text (put it in quotes), got 4.5"),
    ("agent: ''\n", "ralph.yml: agent must be a non-empty text, got ''"),
    ("max_attempts: [1, 2]\n", "ralph.yml: max_attempts must be a whole number, got [1, 2]"),
    ("protect: [tests/**, 3]\n", "ralph.yml: protect must be a list of texts, or one text of "
     "items separated by spaces or commas, got ['tests/**', 3]"),
    ("tamper: loud\n", "ralph.yml: tamper must be one of hold, warn, off, got 'loud'"),
    ('max_cost: "\u0661"\n', "ralph.yml: max_cost must be a number, got '\u0661'"),
    ('max_attempts: "\u0663"\n', "ralph.yml: max_attempts must be a whole number, got '\u0663'"),
    # what a program cannot be given: a NUL byte, a lone surrogate; a duration past datetime's
    ('model: "a\\0b"\n', "ralph.yml: model must be a text without NUL bytes, got 'a\\x00b'"),
    ('verify: "true\\ud800"\n', "ralph.yml: verify must be valid UTF-8 text, got 'true\\ud800'"),
    ('protect: ["a\\0"]\n', "ralph.yml: protect must be a text without NUL bytes, got ['a\\x00']"),
    ("max_runtime: 3651d\n", "ralph.yml: max_runtime must be a duration of at most 3650d, "
                             "got '3651d'"),
], ids=["typo", "dashes", "unknown-no-guess", "flag-only", "unit-less-part", "not-a-number", "zero-cost", "float-count",
        "negative", "parallel-zero", "bad-bool", "bad-duration", "number-as-text", "empty-text",
        "list", "list-of-non-texts", "tamper-mode", "arabic-indic-cost", "arabic-indic-count",
        "nul-byte", "lone-surrogate", "nul-in-list",
        "ten-years-and-a-day"])
def test_each_bad_key_or_value_gives_one_clear_line(tmp_path: Path, yml: str, expected: str):
    assert problems(tmp_path, yml) == [expected]


def test_every_problem_is_reported_not_only_the_first(tmp_path: Path):
    found = problems(tmp_path, "max_iteration: 3\nmax_cost: ten\nparallel: 0\n",
                     {"FREEZE_SCOPE": "maybe"}, max_attempts="x")
    assert found == [
        "ralph.yml: unknown key 'max_iteration' (did you mean 'max_iterations'?)",
        "environment variable FREEZE_SCOPE must be a boolean (1/0, true/false, yes/no), "
        "got 'maybe'",
        "--max-attempts must be a whole number, got 'x'",
        "ralph.yml: max_cost must be a number, got 'ten'",
        "ralph.yml: parallel must be from 1 to 64, got 0",
    ]


def test_a_bad_file_value_is_reported_even_when_the_cli_overrides_it(tmp_path: Path):
    assert problems(tmp_path, "max_cost: ten\n", max_cost=3) == [
        "ralph.yml: max_cost must be a number, got 'ten'"]


@pytest.mark.parametrize("yml,expected", [
    ("max_cost: 1\n  bad: [\n",
     "ralph.yml: invalid YAML at line 2, column 6: mapping values are not allowed here"),
    ("max_cost: [1,\n", "ralph.yml: invalid YAML at line 2, column 1: expected the node "
                        "content, but found '<stream end>'"),
    ("- max_cost\n- 3\n", "ralph.yml: the top level must be a mapping of settings "
                          "(key: value lines), got a list"),
    ("just text\n", "ralph.yml: the top level must be a mapping of settings "
                    "(key: value lines), got a str"),
    ("a: " + "[" * 10000 + "]" * 10000 + "\n", "ralph.yml: invalid YAML: nested too deeply"),
    ("max_cost: 5\nmodel: opus\nmax_cost: 50\n", "ralph.yml: invalid YAML at line 3, column 1: "
                                                 "max_cost is set twice (first at line 1)"),
], ids=["bad-indent", "unclosed-list", "list", "scalar", "nested-too-deeply", "duplicate-key"])
def test_a_file_that_is_not_a_settings_mapping_is_one_error(tmp_path: Path, yml, expected):
    assert problems(tmp_path, yml) == [expected]


@pytest.mark.parametrize("yml", ["", "# only a comment\n", "max_cost: ~\n"],
                         ids=["empty", "comment", "null-value"])
def test_an_empty_file_or_a_null_value_means_defaults(tmp_path: Path, yml: str):
    assert load(tmp_path, yml).explicit() == {}


def test_a_ralph_yml_that_is_not_utf8_is_one_error(tmp_path: Path):
    (tmp_path / "ralph.yml").write_bytes(b"max_cost: \xff\n")
    with pytest.raises(UsageError, match=r"^ralph\.yml: cannot read "):
        config_settings.load("build", {}, {}, tmp_path)


def test_repo_root_is_the_git_top_level_else_the_current_directory(git_repo: Path,
                                                                   tmp_path: Path):
    (git_repo / "sub" / "deeper").mkdir(parents=True)
    assert config_settings.find_repo_root(git_repo / "sub" / "deeper") == git_repo
    outside = tmp_path / "plain"
    outside.mkdir()
    assert config_settings.find_repo_root(outside) == outside


def test_options_are_read_only(tmp_path: Path):
    settings = load(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_cost = 3             # type: ignore[misc]
    with pytest.raises(AttributeError):
        settings.no_such_setting


@pytest.mark.parametrize("value", ["postgresql://ralph@db/tasks", "postgres://u:pw@db:5433/t",
                                   "POSTGRESQL://db/t"], ids=str)
def test_tasks_takes_a_postgresql_url(tmp_path: Path, value: str):
    assert load(tmp_path, tasks=value).tasks == value
    assert load(tmp_path, env={"RALPH_TASKS": value}).tasks == value


def test_an_unknown_store_scheme_in_tasks_is_refused_without_its_password(tmp_path: Path):
    assert problems(tmp_path, tasks="mysql://u:hunter2@db/x") == [
        "--tasks must be sqlite, tk, flowctl, github or a postgresql:// URL, got 'mysql://u:***@db/x'"]
    assert problems(tmp_path, "tasks: ./tasks.db\n") == [
        "ralph.yml: tasks must be sqlite, tk, flowctl, github or a postgresql:// URL, got './tasks.db'"]


def test_the_lease_is_a_duration_of_at_least_three_seconds(tmp_path: Path):
    assert load(tmp_path).lease == 600
    assert load(tmp_path, "lease: 2m\n").lease == 120
    assert problems(tmp_path, "lease: 1\n") == ["ralph.yml: lease must be at least 3, got 1"]
