"""Owns the loop's side of the task command: which command to call, the calls themselves
and the parsing of their answers. Knows nothing of how a store keeps its tasks."""
