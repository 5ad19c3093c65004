"""Owns a run's side of the questions agents ask a person (`task ask`, docs/questions.md): told
between sessions, answered by their default at their deadline, their answers given to the next
session of their task. The records are tasks.question_files'; `ralph answer` is commands'."""
