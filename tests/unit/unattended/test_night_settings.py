"""unattended.night.resolve: the breakers' default rule (defaults only for a build run without
an iteration limit; explicit values always) and the unattended-run values."""
from __future__ import annotations

from pathlib import Path

import pytest

from ralphpy.config import flags
from ralphpy.config import settings
from ralphpy.unattended import night


def settings_of(mode: str, *args: str, yml: str = "", tmp_path: Path):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "ralph.yml").write_text(yml)
    opts = settings.load(mode, flags.parse(mode, list(args)).values, {}, tmp_path)
    return night.resolve(opts, opts.explicit())


@pytest.mark.parametrize("mode,args,expected", [
    ("build", [], (3, 3, 5)),
    ("build", ["-n", "0"], (3, 3, 5)),
    ("build", ["-n", "5"], (0, 0, 0)),
    ("plan", [], (0, 0, 0)),
    ("build", ["-n", "5", "--max-idle-sessions", "2"], (0, 2, 0)),
    ("build", ["--max-attempts", "1", "--max-consecutive-failures", "0"], (1, 3, 0)),
    ("build", ["--parallel", "2"], (3, 0, 5)),          # a task once per run: no idle breaker
    ("build", ["--parallel", "2", "--max-idle-sessions", "2"], (3, 0, 5)),
], ids=["default-build", "n0", "n5", "plan", "n5-explicit", "explicit-unlimited", "parallel",
        "parallel-explicit-idle"])
def test_breakers_take_their_defaults_only_without_an_iteration_limit(
        tmp_path, mode, args, expected):
    limits = settings_of(mode, *args, tmp_path=tmp_path).limits
    assert (limits.max_attempts, limits.max_idle_sessions,
            limits.max_consecutive_failures) == expected


def test_ralph_yml_counts_as_explicit_with_an_iteration_limit(tmp_path):
    cfg = settings_of("build", "-n", "5", yml="max_idle_sessions: 4\nmax_cost: 2.5\n",
                      tmp_path=tmp_path)
    assert (cfg.limits.max_idle_sessions, cfg.limits.max_cost_usd) == (4, 2.5)


def test_durations_and_flag_only_values_are_read_with_their_defaults(tmp_path):
    cfg = settings_of("build", "--session-timeout", "1h30m", "--idle-timeout", "0",
                "--kill-grace", "0.5", "--limit-wait-margin", "0", tmp_path=tmp_path)
    assert (cfg.session_s, cfg.idle_s, cfg.kill_grace_s, cfg.margin_s) == (5400, None, 0.5, 0)
    assert (cfg.default_wait_s, cfg.limits.max_limit_wait_s) == (1800, 6 * 3600)
    default = settings_of("build", tmp_path=tmp_path)
    assert (default.session_s, default.idle_s, default.kill_grace_s) == (3600, 900, 10)


@pytest.mark.parametrize("given,expected", [("0", None), ("2h", 7200)], ids=["off", "2h"])
def test_max_limit_wait_0_means_no_cap(tmp_path, given, expected):
    cfg = settings_of("build", "--max-limit-wait", given, tmp_path=tmp_path)
    assert cfg.limits.max_limit_wait_s == expected
