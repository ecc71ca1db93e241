"""``loopkit serve``: the per-user daemon (SPEC section 10).

It holds the bot's lease and relays answers for every registered workspace — supervised or
not, so a bare ``loopkit escalate`` or a ``run.sh`` loop can be answered from the phone — and
retries the failed deliveries of blocks that no supervisor watches (a waiting supervisor
retries its own). It adopts nothing (adoption needs the agent's run). Its HTTP side is a
Starlette app served by uvicorn on ``--listen`` (default ``127.0.0.1:8765``): an ASGI stack
because the web inbox (SPEC section 11) grows on it — pages, live updates — and uvicorn runs
it in this process, beside the relay's threads, with no second server to operate. Until the
inbox lands it answers ``/healthz`` only, and shows no request data.

SIGINT / SIGTERM stop it (130 / 143); the relay finishes the batch it is handling first.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading

import uvicorn

from loopkit import clock, fleet, loops
from loopkit.answering.service import Answering
from loopkit.answering.telling import FollowUps
from loopkit.datarecord import field, record
from loopkit.errors import EXIT_SIGINT, EXIT_SIGTERM, UsageError
from loopkit.escalation import blockfile, delivery
from loopkit.escalation.adoption import block_request_id
from loopkit.escalation.escalator import Escalator
from loopkit.escalation.repair import repair
from loopkit.escalation.sender import Sender
from loopkit.fleet import Hubs
from loopkit.fleet.publishing import Publishing
from loopkit.home import home
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.guard import LISTEN_QUEUE, ConnectionGuard, guarded, limits
from loopkit.inbox.relay.poller import UpdatePoller, people_chats
from loopkit.inbox.relay.slack_socket import SlackRelay
from loopkit.inbox.web import Inbox, app
from loopkit.log import get_logger
from loopkit.requests.locate import Stores
from loopkit.workspace.state import SupervisorLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from types import FrameType
    from typing import Any

    from loopkit.config import ChannelSettings

log = get_logger("loopkit.serve")

DEFAULT_LISTEN = "127.0.0.1:8765"
RETRY_LOOK = 5.0  # seconds between looks for deliveries that are due, at the most
SEND_BUDGET = 12.0  # seconds a stopping serve gives the follow-ups under way (one send's)

UNIT = """\
[Unit]
Description=loopkit serve: answers from the phone for every loop of {user}
After=network-online.target

[Service]
ExecStart={python} -m loopkit serve --listen {listen}
Restart=on-failure
RestartSec=5

[Install]
WantedBy=default.target
"""


def parse_listen(value: str, *, explicit: bool) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UsageError(f"--listen {value!r} is not HOST:PORT (e.g. {DEFAULT_LISTEN})")
    host = host.strip("[]")
    if not explicit and host not in ("127.0.0.1", "::1", "localhost"):
        raise UsageError("serve listens on loopback unless --listen names another address")
    return host, int(port)


def unit(listen: str) -> str:
    import getpass

    return UNIT.format(user=getpass.getuser(), python=sys.executable, listen=listen)


def inbox_url(host: str, port: int, token: str, path: str = "/") -> str:
    shown = f"[{host}]" if ":" in host else host
    if shown in ("0.0.0.0", "[::]"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}{path}?token={token}"


def show_url(out: Any, host: str, port: int, secret: str, user: str) -> None:
    """The inbox's URL with its token, and its QR code — on a terminal only: written to a
    pipe or a journal, the token would sit in a log."""
    if getattr(out, "isatty", lambda: False)():
        url = inbox_url(host, port, secret)
        out.write(f"loopkit serve: the inbox, for {user}: {url}\n")
        out.write(qr_code(url))
    else:
        bare = inbox_url(host, port, "…").split("?")[0]
        out.write(
            f"loopkit serve: the inbox, for {user}: {bare} (its token is in "
            f"{home() / 'inbox.token'}; `loopkit serve --print-url` on a terminal shows the link)\n"
        )
    out.flush()


def qr_code(text: str) -> str:
    """``text`` as a QR code of block characters, for a phone's camera."""
    import io

    import segno

    out = io.StringIO()
    segno.make(text, error="m").terminal(out=out, compact=True)
    return out.getvalue()


@record
class Retrier:
    """Sends what is due for blocks no supervisor watches, in every registered workspace."""

    stop: threading.Event
    stores: Stores
    repaired: set[Path] = field(default_factory=set)

    def run(self) -> None:
        while not self.stop.is_set():
            wait = RETRY_LOOK
            for path in [r.path for r in self.stores.registry.workspaces()]:
                try:
                    wait = min(wait, self._workspace(path))
                except Exception as exc:  # one broken workspace stops no other
                    log.warning("retry_failed", msg=f"serve: cannot retry in {path}: {exc}")
            self.stop.wait(max(0.05, wait))

    def _workspace(self, path: Path) -> float:
        """Send what is due for the block standing in ``path`` (its BLOCKED.md's request, the
        only one read); seconds until its next send (RETRY_LOOK at most)."""
        place = self.stores.place(path)
        config, store, workspace = place.config, place.store, place.workspace
        watched = SupervisorLock(workspace).holder() is not None
        if path not in self.repaired and not watched:
            # Once per workspace: finish an escalation a crash cut short (escalation.repair).
            self.repaired.add(path)
            repair(Escalator(config, store=store))
        if blockfile.state(workspace.blocked) == "absent":
            return RETRY_LOOK  # nothing stands: nobody to tell
        if watched:
            return RETRY_LOOK  # a supervisor watches its own blocks
        request_id = block_request_id(workspace, store)
        record = store.load(request_id) if request_id else None
        if record is None or not record.is_open:
            return RETRY_LOOK
        due = delivery.next_due(record, config.escalation, clock.now())
        if due is None:
            return RETRY_LOOK
        wait = (due.at - clock.now()).total_seconds()
        if wait > 0:
            return min(wait, RETRY_LOOK)
        if Sender(config, store).deliver(record, reminders=True) is None:
            return RETRY_LOOK  # nothing went out after all (another process sent it)
        return 0.0  # look again at once: the next step may be due already (a next rung)


class _Server:  # a thin uvicorn.Server that remembers the signal that stopped it
    """uvicorn on ``sock``, its connections bounded and their request headers timed by a
    :class:`~loopkit.inbox.guard.ConnectionGuard` (default: the limits this process's
    RLIMIT_NOFILE allows)."""

    def __init__(
        self, sock: socket.socket, app: Any, *, guard: ConnectionGuard | None = None
    ) -> None:
        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield  # ours are installed by serve(): uvicorn must not re-raise them

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                for listening in sockets or []:  # asyncio listened with the accept burst
                    listening.listen(LISTEN_QUEUE)

        self.signal: int | None = None
        self.guard = guard if guard is not None else ConnectionGuard(limits())
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            http=guarded(self.guard),  # h11, whatever else is installed: the guard is h11's
            ws="none",  # the inbox has no websockets; an upgrade would leave the guard
            backlog=self.guard.limits.backlog,
        )
        self.server = Server(config)
        self.sock = sock

    def stop(self, signum: int) -> None:
        self.signal = signum
        self.server.should_exit = True

    def run(self) -> None:
        self.server.run(sockets=[self.sock])


def serve(
    listen: str,
    *,
    explicit: bool,
    settings: ChannelSettings,
    out: Any,
    user: str,
    rotate: bool = False,
    hubs: Hubs | None = None,
) -> int:
    """Serve the inbox, the relay, the retrier and the follower until a signal. ``hubs``:
    the process's hubs, handed to each (built here when not handed in)."""
    host, port = parse_listen(listen, explicit=explicit)
    token = InboxToken(home())
    secret = token.rotate() if rotate else token.ensure()
    if rotate:
        out.write("loopkit serve: new inbox token: every earlier session is signed out\n")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {listen}: {exc.strerror}; pick another --listen"
        ) from None
    sock.listen(64)
    sock.setblocking(False)
    bound = sock.getsockname()
    stop = threading.Event()
    hubs = hubs or Hubs()
    stores = Stores(hubs.for_config)
    # One door for every answer this process takes — the inbox's, a tap's, a click's — and
    # it tells the others (SPEC §27).
    answering = Answering(stores=stores, hubs=hubs)
    followups = FollowUps(answering)  # ntfy's people told, PagerDuty's incident resolved
    inbox = Inbox(token, user, Throttle(), stores, hubs, _answering=answering,
                  _followups=followups)  # fmt: skip
    server = _Server(sock, app(inbox))
    poller = _poller(settings, answering)
    slack = _slack(settings, answering)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        server.stop(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    retrier = Retrier(stop, stores)
    threading.Thread(target=retrier.run, daemon=True, name="loopkit-retry").start()
    # With a fleet: answers and steering given on other machines reach this machine's
    # workspaces, and every loop of this machine is published to the fleet each beat.
    fleet.follow_answers(hubs, stores, stop, publishing=Publishing(loops.describe))
    out.write(f"loopkit serve: listening on http://{bound[0]}:{bound[1]} (LOOPKIT_HOME {home()})\n")
    show_url(out, bound[0], bound[1], secret, user)
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop.set()
        if poller is not None:
            poller.stop()
        if slack is not None:
            slack.stop()
        answering.finish(timeout=SEND_BUDGET)  # follow-ups claimed go out first (SPEC §29)
        hubs.close()
        sock.close()
    return EXIT_SIGINT if server.signal == signal.SIGINT else EXIT_SIGTERM


def _poller(settings: ChannelSettings, answering: Answering) -> UpdatePoller | None:
    """The bot's poller for the whole machine, when a bot is configured (serve has no
    workspace of its own: the bot's lease and offset are kept by the environment's fleet,
    else on this machine)."""
    if not settings.telegram_token:
        return None
    if not (settings.telegram_chat or people_chats(answering.stores)()):
        return None
    poller = UpdatePoller.relay(
        settings, hubs=answering.hubs, stores=answering.stores, answering=answering
    )
    poller.active.set()
    poller.start()
    return poller


def _slack(settings: ChannelSettings, answering: Answering) -> SlackRelay | None:
    """The Slack app's Socket Mode connection for the whole machine, when the app is
    configured (``slack_mode = "socket"``, both tokens): clicks answer any registered
    workspace's block, as taps do."""
    if not (settings.slack_socket and settings.slack_bot_token and settings.slack_app_token):
        return None

    relay = SlackRelay.relay(
        settings, hubs=answering.hubs, stores=answering.stores, answering=answering
    )
    relay.active.set()
    relay.start()
    return relay
