"""Owns verified completion: ralph runs the verify command itself after a task is marked done,
and checks the session's diff for tampering with the tests (docs/verify.md)."""
