"""The canary: the newest releases of the agent CLIs run through tests/e2e_real beside the
pinned ones (`make canary`, `python -m canary`). A maintainer's tool, never part of the suite."""
