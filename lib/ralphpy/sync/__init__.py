"""Owns `--sync`, git across machines: clones of one origin that share a backlog fetch and
rebase before each session and push after each finished task (docs/fleet.md). The git steps
(branch) and the policy of a run (runner); the loop plugs it in through loop.features."""
