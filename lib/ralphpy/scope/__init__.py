"""Owns scope freeze: the snapshot of the backlog at run start and the check before every
session that names added, removed and edited tasks and specs."""
