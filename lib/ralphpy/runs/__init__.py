"""Owns the life of a run on disk: the run lock, the run state, start, resume and finish,
and the progress record (events.jsonl, progress.md)."""
