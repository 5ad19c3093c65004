"""Owns the user-facing failures: one RalphError subclass per failure a user or an agent can
cause, each with its exit code from the one table below (repeated in the README). Raising is
done deep in lib/; catching and printing happens once, in ralph.py. Knows nothing of the loop."""

# The exit-code table. 0, 1 and 130 are ralph.sh's; the others are ralph.py's own and stable.
EXIT_OK = 0                 # done: no tasks, all tasks complete, promise, iteration limit
EXIT_USAGE = 1              # unknown command or option, bad flag or config value, no specs,
                            # preflight: agent program missing, no git repo or origin, store
                            # never reached at start
EXIT_LOCKED = 3             # another run holds the run lock of this backlog
EXIT_SCOPE_CHANGED = 4      # STOP_ON_SCOPE_CHANGE: the frozen scope changed
EXIT_BUDGET = 5             # a budget ran out: --max-cost, --max-runtime, --max-limit-wait
EXIT_NO_PROGRESS = 6        # breaker: idle sessions or consecutive failures
EXIT_USAGE_DISABLED = 7     # usage disabled (an admin, a gemini quota of 0, amp without credit)
EXIT_ENVIRONMENT = 8        # .ralph/ cannot be written (disk full, read-only) or read, nor
                            # the task store (a tasks.db that is not one)
EXIT_AUTH = 9               # the agent cannot authenticate (bad or expired key, logged out)
EXIT_ROOT_REFUSED = 10      # the agent refused --danger as root (IS_SANDBOX=1 not set)
EXIT_TASK_CMD_MISSING = 127  # `ralph task`: the task command cannot be executed
EXIT_INTERRUPTED = 130      # SIGINT or SIGTERM


class RalphError(Exception):
    """A failure with a one-line message for the user and a documented exit code."""

    exit_code = EXIT_USAGE


class UsageError(RalphError):
    """Bad command line or configuration value."""

    exit_code = EXIT_USAGE


class RunLocked(RalphError):
    """Another live run holds the run lock."""

    exit_code = EXIT_LOCKED


class ScopeChanged(RalphError):
    """The frozen scope changed and STOP_ON_SCOPE_CHANGE is on."""

    exit_code = EXIT_SCOPE_CHANGED


class BudgetExhausted(RalphError):
    """A cost, runtime or limit-wait budget ran out."""

    exit_code = EXIT_BUDGET


class NoProgress(RalphError):
    """The no-progress breaker tripped."""

    exit_code = EXIT_NO_PROGRESS


class UsageDisabled(RalphError):
    """The agent reported that its usage is disabled: by an admin, a quota whose limit is 0
    (gemini), an account without credit (amp). No wait can help."""

    exit_code = EXIT_USAGE_DISABLED


class AuthFailed(RalphError):
    """The agent cannot authenticate: waiting cannot help, a person must log in or fix a key."""

    exit_code = EXIT_AUTH


class RootRefused(RalphError):
    """The agent refused to skip its permission prompts because it runs as root."""

    exit_code = EXIT_ROOT_REFUSED


class EnvironmentFailure(RalphError):
    """ralph.py's own files cannot be written or read (disk full, read-only, permissions)."""

    exit_code = EXIT_ENVIRONMENT


class SessionNotStarted(RalphError):
    """A session's place could not be made ready before its agent started (a --parallel
    worktree's set-up failed): its task fails with this reason and the run goes on, as when
    its worktree cannot be created; never an exit of its own."""


__all__ = [
    "RalphError", "UsageError", "RunLocked", "ScopeChanged", "BudgetExhausted", "NoProgress",
    "UsageDisabled", "AuthFailed", "RootRefused", "EnvironmentFailure", "SessionNotStarted",
    "EXIT_OK", "EXIT_USAGE", "EXIT_LOCKED", "EXIT_SCOPE_CHANGED", "EXIT_BUDGET",
    "EXIT_NO_PROGRESS", "EXIT_USAGE_DISABLED", "EXIT_ENVIRONMENT", "EXIT_AUTH",
    "EXIT_ROOT_REFUSED", "EXIT_TASK_CMD_MISSING",
    "EXIT_INTERRUPTED",
]
