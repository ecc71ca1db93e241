"""The supervisor's shared core: its parts (config, store, runner, watch, state) and the
steps every part of ``loopkit run`` uses — save the state, finish, report a stop, tell the
phone how a block ended. :class:`loopkit.supervisor.Supervisor` is built on it, with the
steps of one iteration (:mod:`loopkit.iteration`) and the wait while blocked
(:mod:`loopkit.blocking`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.errors import EXIT_SIGINT, EXIT_SIGTERM
from loopkit.escalation.escalator import Escalator
from loopkit.log import get_logger
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.supervisor.process import Runner
from loopkit.supervisor.state import State, StateFile, SupervisorLock
from loopkit.watch.folder import FolderWatch
from loopkit.watch.wake import Wake
from loopkit.workspace import Workspace

log = get_logger("loopkit.supervisor")

PROGRESS_EVERY = 0.5  # seconds between saves of the iteration number alone


def _stdout_echo(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


@dataclass(frozen=True, slots=True)
class Options:
    exit_on_block: bool = False
    max_iterations: int | None = None
    install_signals: bool = True


class Core:
    """The supervisor's parts and state, and the few steps every part uses."""

    def __init__(
        self,
        config: Config,
        *,
        options: Options | None = None,
        escalator: Escalator | None = None,
        reload: Callable[[], Config] | None = None,
        echo: Callable[[bytes], None] | None = _stdout_echo,
        print_head: Callable[[str], None] | None = None,
    ) -> None:
        config = replace(config, workspace=config.workspace.resolve())
        self.config = config
        self.options = options or Options()
        self.workspace = Workspace.of(config)
        self.store = RequestStore(self.workspace)
        self.escalator = escalator or Escalator(config, store=self.store)
        self._reload_config = reload or (lambda: config_mod.load(self.workspace.root))
        self.print_head = print_head or (lambda text: sys.stdout.write(text))
        self.state_file = StateFile(self.workspace)
        self.lock = SupervisorLock(self.workspace)
        self.wake = Wake()
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.signal_received: int | None = None
        self.runner = Runner(
            wake=self.wake, stop=self.stop, kill_grace=config.loop.kill_grace, echo=echo
        )
        self.state = State()
        self._watch: FolderWatch | None = None
        self._poller: Any = None
        self._log_warned = False
        # The environment children inherit, read once (decoding os.environ is not free).
        self._base_env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("LOOPKIT_DECISION", "LOOPKIT_DECISION_REQUEST")
        }
        self._iteration_saved = -PROGRESS_EVERY
        self._announced_folder = False

    def _phone(self) -> Any:
        """The Telegram answer poller, when the channel is telegram (started on first use)."""
        channels = self.config.channels
        if self.config.escalation.channel != "telegram" or not (
            channels.telegram_token and channels.telegram_chat
        ):
            return None
        if self._poller is None:
            from loopkit.supervisor.phone import UpdatePoller

            self._poller = UpdatePoller(self.config)
            self._poller.start()
        return self._poller

    def _announce(self, record: Request, *, now: bool = False) -> None:
        """Edit the phone's message to show how a block ended (a tap edits it itself)."""
        phone = self._phone()
        if phone is None or record.is_open or (record.resolution or {}).get("via") == "telegram":
            return
        if now:
            phone.show_outcome(record)
        else:
            threading.Thread(target=phone.show_outcome, args=(record,), daemon=True).start()

    def _save(self, *, durable: bool = True) -> None:
        self.state_file.save(self.state, durable=durable)

    def _finish(self, status: str, code: int, why: str) -> int:
        self.state.status = status
        self.state.last_exit = code
        self._save()
        log.info("exit", status=status, code=code, msg=why)
        return code

    def _stopped(self) -> int:
        code = EXIT_SIGINT if self.signal_received == signal.SIGINT else EXIT_SIGTERM
        name = signal.Signals(self.signal_received or signal.SIGTERM).name
        return self._finish("stopped", code, f"stopped by {name}")
