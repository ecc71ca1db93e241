"""loopkit's expected errors and the exit code each one maps to.

    LoopkitError                  1   anything expected but not covered below
    ├── UsageError               64   a command line loopkit cannot act on
    ├── ConfigError              78   loopkit.toml or the environment is invalid
    ├── WorkspaceError            1   a file loopkit needs cannot be read or written
    ├── AlreadyRunning            1   another supervisor holds this workspace
    ├── RequestError             65   a request record or its input is bad
    │   ├── BadInput             65   input refused (rubric, id, corrupt record)
    │   ├── RequestNotFound      66   no such request
    │   └── RequestConflict       4   already answered, or changed since read
    ├── AgentAnswer              77   an answer from inside a supervised agent's session
    ├── NotAllowed               77   an answer from someone not among those who may answer
    ├── TaskNotFound             66   no such skipped task (unskip)
    ├── LoopNotFound             66   no loop of that name, here or in the fleet (pause, stop …)
    ├── NotAWorkspace            66   not a loopkit workspace (status, unblock in the wrong folder)
    └── ChannelError              1   a channel could not be set up (send-test, doctor)

Only ``loopkit.cli`` turns these into exits; domain code raises them. Every message is one
line a human can act on: what went wrong, where, and how to fix it.
"""

from __future__ import annotations

# Exit codes, in one place (SPEC section 5). 2 means *blocked*, never a usage error.
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BLOCKED = 2
EXIT_ABORTED = 3
EXIT_CONFLICT = 4
EXIT_USAGE = 64
EXIT_DATAERR = 65
EXIT_NOINPUT = 66
EXIT_TEMPFAIL = 75  # recorded here only: the fleet could not be reached (SPEC §28)
EXIT_NOPERM = 77
EXIT_CONFIG = 78
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class LoopkitError(Exception):
    """An expected failure with a one-line, actionable message."""

    exit_code: int = EXIT_FAILURE


class UsageError(LoopkitError):
    exit_code = EXIT_USAGE


class ConfigError(LoopkitError):
    exit_code = EXIT_CONFIG


class WorkspaceError(LoopkitError):
    exit_code = EXIT_FAILURE


class AlreadyRunning(LoopkitError):
    exit_code = EXIT_FAILURE


class RequestError(LoopkitError):
    exit_code = EXIT_DATAERR


class BadInput(RequestError):
    exit_code = EXIT_DATAERR


class RequestNotFound(RequestError):
    exit_code = EXIT_NOINPUT


class RequestConflict(RequestError):
    exit_code = EXIT_CONFLICT


class AgentAnswer(LoopkitError):
    exit_code = EXIT_NOPERM


class NotAllowed(LoopkitError):
    exit_code = EXIT_NOPERM


class TaskNotFound(LoopkitError):
    exit_code = EXIT_NOINPUT


class LoopNotFound(LoopkitError):
    exit_code = EXIT_NOINPUT


class NotAWorkspace(LoopkitError):
    exit_code = EXIT_NOINPUT


class ChannelError(LoopkitError):
    exit_code = EXIT_FAILURE
