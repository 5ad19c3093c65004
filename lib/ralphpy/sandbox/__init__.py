"""Owns running an agent session inside a sandbox (--sandbox, docs/sandbox.md): what the session
may see and write as data (plan), one module per backend turning that into argv (bwrap, oci)."""
