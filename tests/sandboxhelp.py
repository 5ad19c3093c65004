"""What the sandbox's test modules share (tests/e2e/test_sandbox_e2e.py,
tests/e2e_real/test_sandbox_real.py): the skip that names why bubblewrap cannot run here."""
from __future__ import annotations

import shutil
import subprocess

import pytest


def bwrap_missing() -> str | None:
    """Why bubblewrap cannot run a sandbox on this machine, or None."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--unshare-pid", "true"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"bwrap cannot create namespaces here: {done.stderr.strip()}"
    return None


_WHY = bwrap_missing()
needs_bwrap = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")
