"""Owns task sources: backlogs kept by another tool (tk tickets, flowctl tasks) answered through
the task-CLI contract, with ralph's own lease record in front of them. The loop never sees them.
Also the task CLI's entry point, which chooses between a source's CLI and the embedded one."""
