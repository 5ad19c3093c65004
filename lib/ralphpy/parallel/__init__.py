"""Owns `--parallel N`: filling N slots with sessions in git worktrees, which tasks may run at
once (components, specs), a new worktree's set-up, merging branches back, and recovery of a
killed parallel run."""

# Checked before anything is written (loop.start.check_checkout) and again by a resumed run,
# whose --parallel may come from its state.
NEEDS_BRANCH = ("--parallel needs a checked-out branch to merge into "
                "(HEAD is detached or this is not a git repository)")
