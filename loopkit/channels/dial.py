"""Channel ``dial``: the operator's own command (an SMS gateway, a pager, ntfy …).

``LOOPKIT_HITL_DIAL_CMD`` is split like a shell would split it (``shlex``) and run as an
argv, without a shell; the message goes to its stdin and nowhere else, so nothing in a
question can ever be executed. It runs in its own session and the whole process group is
killed when it overruns. It also dies (SIGKILL) with the process that sends, even one
killed with ``kill -9``, so no dial outlives its ``loopkit escalate``. The command line itself
is treated as a secret (it may carry an API key) and never appears in a log or an error.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from pathlib import Path

from loopkit import prctl
from loopkit.channels import Outcome
from loopkit.config.programs import missing_program
from loopkit.message import fold, one_way
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.message import Note

DIAL_TIMEOUT = 30.0


class DialChannel:
    name = "dial"

    def __init__(
        self, settings: ChannelSettings, *, timeout: float = DIAL_TIMEOUT, **_: Any
    ) -> None:
        self.settings = settings
        self.timeout = timeout
        self.redactor = Redactor(settings.secrets())

    def _argv(self) -> tuple[list[str] | None, str | None]:
        if not self.settings.dial_cmd:
            return None, "LOOPKIT_HITL_DIAL_CMD is not set"
        try:
            argv = shlex.split(self.settings.dial_cmd)
        except ValueError as exc:
            return None, f"LOOPKIT_HITL_DIAL_CMD cannot be split into words ({exc})"
        return (argv, None) if argv else (None, "LOOPKIT_HITL_DIAL_CMD is empty")

    def problems(self) -> list[str]:
        argv, problem = self._argv()
        if argv is None:
            return [f"{problem}: export the command that should get the message on stdin"]
        missing = missing_program(tuple(argv), cwd=Path.cwd())
        if missing is None:
            return []
        # The command line is a secret; its program is named only where it is no part of one.
        program = self.redactor.text(missing.program)
        return [f"LOOPKIT_HITL_DIAL_CMD runs {program!r}, which {missing.why}: {missing.fix} "
                "(it runs without a shell, looked up on PATH as execvp does)"]  # fmt: skip

    def send(self, message: Note) -> Outcome:
        argv, problem = self._argv()
        if argv is None:
            return Outcome(ok=False, status="error", error=problem)
        extra = {
            "LOOPKIT_REQUEST_ID": message.request_id,
            "LOOPKIT_REPO": message.repo,
            "LOOPKIT_QUESTION": fold(message.question),
        }
        person = getattr(message, "person", None)
        if person:  # [[escalation.people]]: whom the command should reach (SPEC §29)
            extra["LOOPKIT_PERSON"] = person
        # An environment value cannot hold a NUL byte (Popen would raise ValueError).
        env = {**os.environ, **{key: value.replace("\0", "") for key, value in extra.items()}}
        # PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the process. That
        # is this thread, which waits below for the command's end (or kills it after the
        # timeout): it outlives the command unless the whole process dies, which is just
        # when the command should go too.
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                preexec_fn=prctl.pdeathsig(signal.SIGKILL),
            )
        except OSError as exc:
            return Outcome(
                ok=False,
                status="error",
                error=f"dial command could not start ({exc.strerror}); check LOOPKIT_HITL_DIAL_CMD",
            )
        try:
            # Newline-terminated, so a `while read line` script sees the last line too.
            sent = one_way(message)
            text = sent if sent.endswith("\n") else sent + "\n"
            _, stderr = proc.communicate(text.encode("utf-8"), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            return Outcome(
                ok=False, status="timeout", error=f"dial command killed after {self.timeout:g} s"
            )
        if proc.returncode == 0:
            return Outcome(ok=True, status=0)
        tail = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = f": {fold(tail[-1], 200)}" if tail else ""
        return Outcome(
            ok=False,
            status=proc.returncode,
            error=self.redactor.text(f"dial command exited {proc.returncode}{detail}"),
        )

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            # A process that left the group still holds our pipes; stop reading them.
            for pipe in (proc.stdout, proc.stderr):
                if pipe:
                    pipe.close()
            proc.wait()
