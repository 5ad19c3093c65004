"""Owns ralph.py's side of a fleet of machines on one PostgreSQL task store: which store a run
uses, each agent's claims file, waiting out a lost store, and the fleet as `ralph status` shows
it. The store itself is tasks/'s; the heartbeat process is session/'s."""
