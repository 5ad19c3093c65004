"""config.flags: the command line of `ralph plan|build`, derived from the settings table."""
from __future__ import annotations

import pytest

from ralphpy.config import flags
from ralphpy.config.table import SETTINGS
from ralphpy.errors import UsageError


def test_values_are_typed_and_the_last_of_a_repeated_flag_wins():
    given = flags.parse("build", ["-n", "3", "--max-iterations", "4", "--danger", "-m", "opus",
                                  "--max-cost", "2.5", "--parallel", "2", "--kill-grace", "1m"])
    assert given.values == {"max_iterations": 4, "danger": True, "model": "opus",
                            "max_cost": 2.5, "parallel": 2, "kill_grace": 60.0}
    assert not given.help


def test_help_stops_the_reading_of_later_arguments():
    given = flags.parse("plan", ["-n", "2", "--help", "--bogus"])
    assert given.help and given.values == {"max_iterations": 2}


@pytest.mark.parametrize("value,seconds", [("1h 30m", 5400), ("90", 90), ("1h30m", 5400)],
                         ids=str)
def test_a_duration_flag_takes_the_same_grammar_as_ralph_yml(value, seconds):
    assert flags.parse("build", ["--max-runtime", value]).values == {"max_runtime": seconds}


@pytest.mark.parametrize("mode,args,message", [
    ("build", ["--session-timeout", "soon"],
     "Error: --session-timeout requires a duration (e.g. 90s, 15m, 1h)"),
    ("build", ["--max-attempts", "x"], "Error: --max-attempts requires a number"),
    ("build", ["--max-cost"], "Error: --max-cost requires a number (USD)"),
    ("build", ["--merge", "-x"], "Error: --merge requires rebase, ff or none"),
    ("plan", ["--max-attempts", "2"],
     "Error: Unknown option '--max-attempts'\nRun 'ralph plan --help' for usage"),
], ids=["duration", "int", "missing", "dash", "build-only"])
def test_a_bad_flag_is_one_error_line(mode, args, message):
    with pytest.raises(UsageError) as err:
        flags.parse(mode, args)
    assert str(err.value) == message


@pytest.mark.parametrize("mode", ["plan", "build"])
def test_every_flag_of_the_mode_has_its_lines_in_the_help(mode):
    text = flags.help_text(mode)
    for setting in SETTINGS:
        for line in setting.flag_help:
            assert (line.split("{")[0] in text) == (mode in setting.modes)
    assert text.startswith(f"Usage: ralph {mode} [options]\n\nOptions:\n")
    assert text.endswith("  --help, -h                  Show this help\n")
    default = "1" if mode == "plan" else "unlimited"
    assert f"                             (default: {default})\n" in text
