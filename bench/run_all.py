#!/usr/bin/env python3
"""Runs every speed script in bench/ (`make bench`). Each script prints its own timings and
the ratios against the reference it measures in the same run; this only runs them in turn.

Pass script names to run a subset: `python bench/run_all.py render scope`.
Extra arguments for a script can be given through BENCH_ARGS_<NAME> (e.g. BENCH_ARGS_RENDER="--mb 20").
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = ["task_ops", "loop", "render", "scope", "parallel", "report", "verify", "fleet",
         "github", "sources", "sandbox"]


def main(argv: list[str]) -> int:
    names = argv or [name for name in ORDER if (BENCH / f"{name}.py").exists()]
    failed = []
    for name in names:
        script = BENCH / f"{name}.py"
        if not script.exists():
            print(f"bench: no such script: {script.name}", file=sys.stderr)
            failed.append(name)
            continue
        extra = shlex.split(os.environ.get(f"BENCH_ARGS_{name.upper()}", ""))
        print(f"\n=== bench/{script.name} {' '.join(extra)}".rstrip(), flush=True)
        if subprocess.call([sys.executable, str(script), *extra]) != 0:
            failed.append(name)
    if failed:
        print(f"\nbench: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
