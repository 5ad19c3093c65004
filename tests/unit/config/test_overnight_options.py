"""overnight_options.resolve: the lead's default rule for issue 7's breakers (issue defaults only
for a build run without an iteration limit; explicit values always) and the flag values."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lib"))
from ralphkit.config import flags as cli_args  # noqa: E402
from ralphkit.config import settings as config
from ralphkit.config import unattended_flags as overnight_options


def night(mode: str, *args: str, yml: str = "", tmp_path: Path):
    overnight_options.register()
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "ralph.yml").write_text(yml)
    opts = cli_args.parse(mode, list(args))
    settings = config.load(cli_args.given_values(opts), {}, tmp_path)
    opts = cli_args.settle(opts, settings)
    explicit = {k for k, v in settings.explicit().items()}
    return overnight_options.resolve(opts, explicit)


@pytest.mark.parametrize("mode,args,expected", [
    ("build", [], (3, 3, 5)),
    ("build", ["-n", "0"], (3, 3, 5)),
    ("build", ["-n", "5"], (0, 0, 0)),
    ("plan", [], (0, 0, 0)),
    ("build", ["-n", "5", "--max-idle-sessions", "2"], (0, 2, 0)),
    ("build", ["--max-attempts", "1", "--max-consecutive-failures", "0"], (1, 3, 0)),
], ids=["default-build", "n0", "n5", "plan", "n5-explicit", "explicit-unlimited"])
def test_breakers_take_the_issue_defaults_only_without_an_iteration_limit(
        tmp_path, mode, args, expected):
    limits = night(mode, *args, tmp_path=tmp_path).limits
    assert (limits.max_attempts, limits.max_idle_sessions,
            limits.max_consecutive_failures) == expected


def test_ralph_yml_counts_as_explicit_with_an_iteration_limit(tmp_path):
    cfg = night("build", "-n", "5", yml="max_idle_sessions: 4\nmax_cost: 2.5\n", tmp_path=tmp_path)
    assert (cfg.limits.max_idle_sessions, cfg.limits.max_cost_usd) == (4, 2.5)


def test_durations_and_flag_only_values_are_read_and_defaults_are_the_issues(tmp_path):
    cfg = night("build", "--session-timeout", "1h30m", "--idle-timeout", "0",
                "--kill-grace", "0.5", "--limit-wait-margin", "0", tmp_path=tmp_path)
    assert (cfg.session_s, cfg.idle_s, cfg.kill_grace_s, cfg.margin_s) == (5400, None, 0.5, 0)
    assert (cfg.default_wait_s, cfg.limits.max_limit_wait_s) == (1800, 6 * 3600)
    default = night("build", tmp_path=tmp_path)
    assert (default.session_s, default.idle_s, default.kill_grace_s) == (3600, 900, 10)


@pytest.mark.parametrize("args,message", [
    (["--session-timeout", "soon"], "Error: --session-timeout requires a duration (e.g. 90s, 15m, 1h)"),
    (["--max-attempts", "x"], "Error: --max-attempts requires a number"),
    (["--max-cost"], "Error: --max-cost requires a number (USD)"),
], ids=["duration", "int", "missing"])
def test_a_bad_flag_value_is_one_error_line(tmp_path, args, message):
    overnight_options.register()
    with pytest.raises(config.UsageError) as err:
        cli_args.parse("build", args)
    assert str(err.value) == message
