"""What the supervisor's phases share: its parts, its state, and the small result of a phase.

:class:`~loopkit.supervisor.loop.Supervisor` builds one :class:`Parts` — handing it the
runner, the containment, what builds the escalator, the hub and the clock — and hands it to
the phases it owns — :class:`~loopkit.supervisor.iteration.Iteration` and
:class:`~loopkit.supervisor.blocked.BlockedPhase` — each of which returns a :class:`Step`.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Protocol

from loopkit.answering.service import Answering
from loopkit.answering.telling import FollowUps
from loopkit.datarecord import record
from loopkit.errors import EXIT_SIGINT, EXIT_SIGTERM
from loopkit.inbox.relay.poller import UpdatePoller
from loopkit.inbox.relay.slack_socket import SlackRelay
from loopkit.log import get_logger
from loopkit.redact import LineRedactor, Redactor
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.supervisor.mailbox import Mailbox
from loopkit.workspace import Workspace
from loopkit.workspace.skipped import SkippedTasks
from loopkit.workspace.state import LoopStatus, State, StateFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from loopkit.clock import Clock
    from loopkit.config import Config
    from loopkit.escalation.escalator import Escalator
    from loopkit.fleet import Hubs
    from loopkit.requests.hub import Hub
    from loopkit.requests.record import Request
    from loopkit.supervisor.containment import Containment
    from loopkit.supervisor.runner import CommandRunner
    from loopkit.watch.folder import FolderWatch

log = get_logger("loopkit.supervisor")


@record(frozen=True, slots=True)
class Options:
    exit_on_block: bool = False
    max_iterations: int | None = None
    install_signals: bool = True


@record(frozen=True, slots=True)
class Step:
    """What a phase tells the loop: go on, keep waiting (the blocked phase), or exit."""

    action: Literal["continue", "wait", "exit"]
    code: int | None = None

    @staticmethod
    def exit(code: int) -> Step:
        return Step("exit", code)


CONTINUE = Step("continue")
KEEP_WAITING = Step("wait")


class EscalatorFactory(Protocol):
    """Builds the escalator for a config (at start, and again on a reload): ``Escalator``."""

    def __call__(self, config: Config, *, store: RequestStore) -> Escalator: ...


def _stdout_echo(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


def console(config: Config) -> LineRedactor:
    """Where the commands' output is echoed: stdout, redacted line by line."""
    return LineRedactor(_stdout_echo, Redactor(config.channels.secrets()))


class Parts:
    """The supervisor's parts and state, and the few steps every phase uses.

    It is handed what it holds: the runner (whose ``wake`` and ``stop`` are the supervisor's),
    the containment of its commands, ``echo`` (the console the runner writes to), what builds
    the escalator, the hubs (and the workspace's own hub, when handed one) and the clock
    every phase reads the time from.
    """

    def __init__(
        self,
        config: Config,
        options: Options,
        *,
        runner: CommandRunner,
        containment: Containment,
        escalator: EscalatorFactory,
        echo: LineRedactor,
        hubs: Hubs,
        hub: Hub | None,
        clock: Clock,
    ) -> None:
        self.options = options
        self.hubs = hubs
        self._hub = hub  # the workspace's hub, when handed one (else its Config's)
        self.state_file = StateFile(Workspace.of(config))
        self.runner = runner
        self.wake = runner.wake
        self.stop = runner.stop
        self.containment = containment
        self.clock = clock
        self._escalator_for = escalator
        self.signal_received: int | None = None
        # Set at each save of the state (and each steering order): the fleet's follower
        # publishes the loop's row then (SPEC §22); nothing waits on it without a fleet.
        self.changed = threading.Event()
        self._echo = echo
        self.state = State()
        self.watch: FolderWatch | None = None  # while the loop runs
        self._poller: UpdatePoller | None = None
        self._slack: SlackRelay | None = None
        # Messages for the running turn (SPEC §24): the steering thread posts them, the turn
        # takes them on the runner's thread.
        self.mailbox = Mailbox(Workspace.of(config), self.wake)
        self.use(config)

    def use(self, config: Config) -> None:
        """Build the config's parts: at start, and again on a reload."""
        self.config = config
        self.workspace = Workspace.of(config)
        self.skipped = SkippedTasks(self.workspace)  # shared with `loopkit unskip`

        hub = self._hub if self._hub is not None else self.hubs.for_config(config)
        self.store = RequestStore(self.workspace, hub=hub)  # the one store of this process
        self.stores = Stores(self.hubs.for_config)  # every other registered workspace's
        self.stores.add(config, self.store)
        # The one door for answers in this process: the relays answer through it, and it
        # tells each of them how a block ended (SPEC §27).
        self.answering = Answering(stores=self.stores, hubs=self.hubs, here=self.store)
        FollowUps(self.answering)  # the people asked on ntfy, an incident: told once (§29)
        self.escalator = self._escalator_for(config, store=self.store)
        self.runner.kill_grace = config.loop.kill_grace
        self.runner.max_output = config.loop.max_log
        self.redactor = Redactor(config.channels.secrets())
        self._echo.redactor = self.redactor
        if self._poller is not None:  # the phone poller restarts, on its next use, as set now
            self._poller.stop()
            self._poller = None
        if self._slack is not None:  # so does the Slack app's connection
            self._slack.stop()
            self._slack = None

    def phone(self) -> UpdatePoller | None:
        """The Telegram answer poller, when the channel is telegram (started on first use)."""
        channels = self.config.channels
        people = [p for p in self.config.escalation.people if p.channel == "telegram"]
        if "telegram" not in self.config.escalation.channels or not (
            channels.telegram_token and (channels.telegram_chat or people)
        ):
            return None
        if self._poller is None:
            self._poller = UpdatePoller.relay(
                channels,
                hubs=self.hubs,
                stores=self.stores,
                hub=self.store.hub,
                answering=self.answering,
                clock=self.clock,
            )
            self._poller.start()
        return self._poller

    def slack(self) -> SlackRelay | None:
        """The Slack app's Socket Mode relay, when the channel is slack with ``slack_mode =
        "socket"`` and its settings are there (started on first use)."""
        channels = self.config.channels
        if "slack" not in self.config.escalation.channels or not channels.slack_socket:
            return None
        if not (channels.slack_bot_token and channels.slack_app_token):
            return None
        if self._slack is None:
            self._slack = SlackRelay.relay(
                channels,
                hubs=self.hubs,
                stores=self.stores,
                hub=self.store.hub,
                answering=self.answering,
                clock=self.clock,
            )
            self._slack.start()
        return self._slack

    def flush_echo(self) -> None:
        """The console's last partial line of a command that has ended."""
        self._echo.flush()

    def close(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        if self._slack is not None:
            self._slack.stop()
        # Follow-ups claimed for the people asked (SPEC §29) go out before the process ends.
        self.answering.finish(timeout=self.config.escalation.send_timeout + 2)

    def announce(self, record: Request, *, now: bool = False) -> None:
        """Show how a block ended on the phone's (and Slack's) message, whoever ended it: the
        answering service tells each relay once (the surface that answered showed it)."""
        if record.is_open:
            return
        self.phone()
        self.slack()
        via = record.resolution.via if record.resolution is not None else None
        self.answering.tell(record, skip=via, background=not now)

    def save(self, *, durable: bool = True) -> None:
        self.state_file.save(self.state, durable=durable)
        self.changed.set()

    def finish(self, status: LoopStatus, code: int, why: str) -> Step:
        self.state.status = status
        self.state.last_exit = code
        self.save()
        log.info("exit", status=status, code=code, msg=why)
        return Step.exit(code)

    def stopped(self) -> Step:
        code = EXIT_SIGINT if self.signal_received == signal.SIGINT else EXIT_SIGTERM
        name = signal.Signals(self.signal_received or signal.SIGTERM).name
        return self.finish(LoopStatus.STOPPED, code, f"stopped by {name}")
