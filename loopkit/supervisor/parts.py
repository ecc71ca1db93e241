"""What the supervisor's phases share: its parts, its state, and the small result of a phase.

:class:`~loopkit.supervisor.loop.Supervisor` builds one :class:`Parts` and hands it to the
phases it owns — :class:`~loopkit.supervisor.iteration.Iteration` and
:class:`~loopkit.supervisor.blocked.BlockedPhase` — each of which returns a :class:`Step`.
"""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from loopkit.config import Config
from loopkit.errors import EXIT_SIGINT, EXIT_SIGTERM
from loopkit.escalation.escalator import Escalator
from loopkit.log import get_logger
from loopkit.redact import LineRedactor, Redactor
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.supervisor.containment import Containment, label
from loopkit.supervisor.runner import Runner
from loopkit.watch.folder import FolderWatch
from loopkit.watch.wake import Wake
from loopkit.workspace import Workspace
from loopkit.workspace.state import State, StateFile

if TYPE_CHECKING:
    from loopkit.inbox.relay.poller import UpdatePoller

log = get_logger("loopkit.supervisor")


@dataclass(frozen=True, slots=True)
class Options:
    exit_on_block: bool = False
    max_iterations: int | None = None
    install_signals: bool = True


@dataclass(frozen=True, slots=True)
class Step:
    """What a phase tells the loop: go on, keep waiting (the blocked phase), or exit."""

    action: Literal["continue", "wait", "exit"]
    code: int | None = None

    @staticmethod
    def exit(code: int) -> Step:
        return Step("exit", code)


CONTINUE = Step("continue")
KEEP_WAITING = Step("wait")


def _stdout_echo(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


class Parts:
    """The supervisor's parts and state, and the few steps every phase uses."""

    def __init__(self, config: Config, options: Options) -> None:
        self.options = options
        self.state_file = StateFile(Workspace.of(config))
        self.wake = Wake()
        self.stop = threading.Event()
        self.signal_received: int | None = None
        self.redactor = Redactor(config.channels.secrets())
        self._echo = LineRedactor(_stdout_echo, self.redactor)
        workspace = Workspace.of(config)
        self.containment = Containment(record=workspace.running_file, name=label(workspace.root))
        self.runner = Runner(
            wake=self.wake,
            stop=self.stop,
            kill_grace=config.loop.kill_grace,
            echo=self._echo.write,
            containment=self.containment,
        )
        self.state = State()
        self.watch: FolderWatch | None = None  # while the loop runs
        self._poller: UpdatePoller | None = None
        self.use(config)

    def use(self, config: Config) -> None:
        """Build the config's parts: at start, and again on a reload."""
        self.config = config
        self.workspace = Workspace.of(config)
        self.store = RequestStore(self.workspace)  # the one store of this process
        self.escalator = Escalator(config, store=self.store)
        self.runner.kill_grace = config.loop.kill_grace
        self.redactor = Redactor(config.channels.secrets())
        self._echo.redactor = self.redactor
        if self._poller is not None:  # the phone poller restarts, on its next use, as set now
            self._poller.stop()
            self._poller = None

    def phone(self) -> UpdatePoller | None:
        """The Telegram answer poller, when the channel is telegram (started on first use)."""
        channels = self.config.channels
        if "telegram" not in self.config.escalation.ladder or not (
            channels.telegram_token and channels.telegram_chat
        ):
            return None
        if self._poller is None:
            from loopkit.inbox.relay.poller import UpdatePoller

            self._poller = UpdatePoller(self.config, store=self.store)
            self._poller.start()
        return self._poller

    def flush_echo(self) -> None:
        """The console's last partial line of a command that has ended."""
        self._echo.flush()

    def close(self) -> None:
        if self._poller is not None:
            self._poller.stop()

    def announce(self, record: Request, *, now: bool = False) -> None:
        """Edit the phone's message to show how a block ended (a tap edits it itself)."""
        phone = self.phone()
        answered = record.resolution
        if phone is None or record.is_open or (answered is not None and answered.via == "telegram"):
            return
        if now:
            phone.show_outcome(record)
        else:
            threading.Thread(target=phone.show_outcome, args=(record,), daemon=True).start()

    def save(self, *, durable: bool = True) -> None:
        self.state_file.save(self.state, durable=durable)

    def finish(self, status: str, code: int, why: str) -> Step:
        self.state.status = status
        self.state.last_exit = code
        self.save()
        log.info("exit", status=status, code=code, msg=why)
        return Step.exit(code)

    def stopped(self) -> Step:
        code = EXIT_SIGINT if self.signal_received == signal.SIGINT else EXIT_SIGTERM
        name = signal.Signals(self.signal_received or signal.SIGTERM).name
        return self.finish("stopped", code, f"stopped by {name}")
