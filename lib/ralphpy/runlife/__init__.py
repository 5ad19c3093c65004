"""Owns one run from start to finish as the loops drive it: the run picked or resumed under its
lock, each session recorded, and at the end the report written and the notifications sent. The
records themselves (lock, state, progress) are runs/'s; the report and notifications are theirs."""
