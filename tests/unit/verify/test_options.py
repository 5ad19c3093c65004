"""verify.options: the settings read into one value, and a task's own `verify:` line."""
from __future__ import annotations

import pytest

from ralphpy.verify import options, patterns


def test_settings_are_read_with_their_defaults():
    assert options.read({}) == options.VerifyOptions(None, 600.0, "hold", ())
    read = options.read({"verify": "make test", "verify_timeout": 90.0, "tamper": "warn",
                         "protect": ("tests/**", ".github/**")})
    assert read == options.VerifyOptions("make test", 90.0, "warn", ("tests/**", ".github/**"))
    assert read.armed and not options.read({"tamper": "hold"}).armed


def test_config_options_are_read_and_a_resumed_run_s_list_too():
    class Settled:                                  # config's Options, as far as read looks
        verify, verify_timeout, tamper, protect = "make test", 60.0, "off", ("tests/**",)

    assert options.read(Settled()) == options.VerifyOptions("make test", 60.0, "off",
                                                            ("tests/**",))
    assert options.read({"protect": ["tests/**", "ci/"]}).protect == ("tests/**", "ci/")


@pytest.mark.parametrize("description, command", [
    ("Fix it.\n\nverify: pytest -q tests/test_x.py\n", "pytest -q tests/test_x.py"),
    ("- Verify: npm test  \nmore", "npm test"),
    ("no command here; verify:", None),
    (None, None),
], ids=["line", "list-item", "none", "empty"])
def test_a_task_names_its_own_command_on_a_verify_line(description, command):
    assert options.task_command(description) == command


@pytest.mark.parametrize("path, globs, expected", [
    ("tests/unit/test_a.py", ("tests/**",), True),
    ("src/tests/x.py", ("tests/**",), False),
    ("src/tests/x.py", ("**/tests/**",), True),
    (".github/workflows/ci.yml", (".github/",), True),
    ("deep/Makefile", ("Makefile",), True),
    ("a/b.py", ("a/*.py",), True),
    ("a/c/b.py", ("a/*.py",), False),
], ids=["doublestar", "anchored", "any-depth", "folder", "basename", "star", "star-no-slash"])
def test_protect_globs(path, globs, expected):
    assert patterns.protected(path, globs) is expected
