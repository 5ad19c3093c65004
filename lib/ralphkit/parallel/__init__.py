"""Owns `--parallel N`: filling N slots with sessions in git worktrees, component safety,
merging branches back, and recovery of a killed parallel run."""
