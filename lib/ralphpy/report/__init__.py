"""Owns the run report: a run's records (events.jsonl, state.json, the backlog) read into one
model, and that model rendered for the terminal, as Markdown, JSON and one self-contained HTML
page."""
