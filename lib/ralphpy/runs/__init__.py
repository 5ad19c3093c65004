"""Owns a run's records on disk: the run lock, the run state, the progress record (events.jsonl,
progress.md) and what an earlier run left behind. Starting and finishing a run is runlife/'s."""
