"""One frozen Config, built once from ``loopkit.toml`` and the environment.

Precedence, highest first: environment variables (``LOOPKIT_HITL_*``), then
``loopkit.toml`` in the workspace, then the defaults below. Every key has a default, so the
file is optional. The file is validated as a whole at load: an unknown key, a wrong type or
a TOML syntax error is a :class:`ConfigError` naming the file, the line and the key.

Channel secrets (bot token, webhook URL, dial command) come from the environment only, so
they never need to live in a file.
"""

from __future__ import annotations

import contextlib
import os
import re

from loopkit import extras, readfile
from loopkit.config import plaintoml
from loopkit.config import values as config_values
from loopkit.config.keys import KEYS
from loopkit.config.values import TIMEOUT_ACTIONS as TIMEOUT_ACTIONS
from loopkit.config.values import Command as Command  # noqa: TC001 (a re-export)
from loopkit.config.values import PolicyAnswer as PolicyAnswer  # noqa: TC001 (a re-export)
from loopkit.config.values import parse_duration as parse_duration
from loopkit.datarecord import field, record, replace
from loopkit.errors import ConfigError
from loopkit.redact import dial_secrets

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from loopkit.config.people import Person
    from loopkit.config.values import TimeoutAction as TimeoutAction

CONFIG_NAME = "loopkit.toml"
DEFAULT_TELEGRAM_API = "https://api.telegram.org"
DEFAULT_SLACK_API = "https://slack.com/api/"
DEFAULT_PAGERDUTY_API = "https://events.pagerduty.com"

# Secrets that never reach the agent's environment (SPEC §11): the channels', the fleet's,
# the inbox's. verify, done and preflight are the user's own commands and keep them.
AGENT_HIDDEN_ENV = (
    "LOOPKIT_HITL_TELEGRAM_TOKEN",
    "LOOPKIT_HITL_SLACK_WEBHOOK",
    "LOOPKIT_HITL_SLACK_BOT_TOKEN",
    "LOOPKIT_HITL_SLACK_APP_TOKEN",
    "LOOPKIT_HITL_APPRISE_URLS",
    "LOOPKIT_HITL_DIAL_CMD",
    "LOOPKIT_HITL_NTFY_URL",
    "LOOPKIT_HITL_NTFY_TOKEN",
    "LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY",
    "LOOPKIT_FLEET_DSN",
    "LOOPKIT_INBOX_TOKEN",
)


@record(frozen=True, slots=True)
class LoopConfig:
    agent: Command | None = None
    # The agent's own session continued after an answer (SPEC section 18): {session_id}.
    resume: Command | None = None
    # What an agent that reads its prompt on stdin is asked (stream-json, SPEC section 23).
    prompt: str | None = None
    verify: Command | None = None
    done: Command | None = None
    pause: float = 5.0
    iteration_timeout: float = 3600.0
    max_verify_failures: int = 3
    task_file: str | None = None
    task_pattern: str | None = r"^- \[ \] (.+)$"
    required_env: tuple[str, ...] = ()
    preflight: tuple[Command, ...] = ()
    preflight_backoff: float = 1.0
    dependency_wait: float = 1800.0  # a dependency down (rate limit) this long: ask
    stop_agent_on_block: bool = False
    block_grace: float = 30.0
    kill_grace: float = 10.0
    max_log: int = 50 * 1024 * 1024  # bytes of one iteration's log, and of one command's echo


@record(frozen=True, slots=True)
class EscalationConfig:
    # The ladder: the first channel is tried first; the next when the one before failed
    # hard, or nobody answered within ``escalate_after``.
    ladder: tuple[str, ...] = ("none",)
    blocked_file: str = "BLOCKED.md"
    timeout_minutes: float = 30
    # For blocks without a stated action (the supervisor's own, an agent's): keep waiting.
    timeout_action: TimeoutAction = "queue"
    send_timeout: float = 10.0
    retry_backoff: float = 30.0  # a failed delivery is retried after this, doubled each time
    retry_backoff_max: float = 900.0
    escalate_after: float | None = None  # seconds without an answer before the next rung
    remind_every: float | None = None  # seconds between reminders
    max_reminders: int = 2
    slack_mode: str = "webhook"  # or "socket": a Slack app, buttons over Socket Mode
    # [[escalation.people]] (SPEC §29): who is asked, in order; listed, they are the ladder.
    people: tuple[Person, ...] = ()

    @property
    def channel(self) -> str:
        """The first rung: the channel a block is sent to first."""
        return self.people[0].channel if self.people else self.ladder[0]

    @property
    def channels(self) -> tuple[str, ...]:
        """Every channel a block may go out on: the people's, else the ladder's."""
        if self.people:
            return tuple(dict.fromkeys(p.channel for p in self.people))
        return self.ladder


@record(frozen=True, slots=True)
class StuckConfig:
    """``[stuck]`` (SPEC section 19): each threshold ``0`` (or ``"off"``) = that trigger off."""

    no_progress: int = 3  # iterations in a row that break no new ground (SPEC §25)
    same_error: int = 3  # verify failures in a row with the same failure, no new ground
    repeated_output: int = 4  # agent outputs in a row, no new ground, near-copies of earlier
    crash_loop: int = 3  # agent runs in a row that fail (or time out) and change nothing
    max_task_iterations: int = 0  # iterations on one task (0: off)
    task_timeout: float | None = None  # seconds of wall time on one task (None: off)
    max_cost_usd: float | None = None  # dollars the agent reports spending (None: off)
    # Inside one agent turn (SPEC section 24), read from its event stream as it runs:
    same_call: int = 5  # the same tool call with the same input, in a row
    ping_pong: int = 4  # cycles of two calls alternating (A-B-A-B…)
    silent: float | None = 600.0  # seconds with no event and no output (None: off)


@record(frozen=True, slots=True)
class PolicyConfig:
    escalate_words: tuple[str, ...] = ()
    proceed_words: tuple[str, ...] = ()
    answers: tuple[PolicyAnswer, ...] = ()  # [[policy.answers]] (SPEC section 30)


@record(frozen=True, slots=True)
class GateConfig:
    """Which Claude Code tool calls wait for a human (None: the defaults of hooks.rules)."""

    rules: tuple[str, ...] | None = None
    protect: tuple[str, ...] | None = None
    extend_defaults: bool = False


@record(frozen=True, slots=True)
class HooksConfig:
    wait: float = 540.0  # outside a supervisor: below Claude Code's 600 s hook timeout


@record(frozen=True, slots=True)
class ChannelSettings:
    """Channel settings from the environment. Secret fields never reach a log or a file."""

    telegram_token: str | None = None
    telegram_chat: str | None = None
    telegram_api: str = DEFAULT_TELEGRAM_API
    telegram_allowed_users: tuple[int, ...] = ()
    slack_webhook: str | None = None
    slack_mode: str = "webhook"  # [escalation] slack_mode: "socket" is a two-way Slack app
    slack_bot_token: str | None = None  # xoxb-…: chat.postMessage, chat.update
    slack_app_token: str | None = None  # xapp-…: apps.connections.open (Socket Mode)
    slack_channel: str | None = None  # a channel id (C…) or name
    slack_allowed_users: tuple[str, ...] = ()  # Slack user ids (U…, W…) who may answer
    slack_api: str = DEFAULT_SLACK_API  # Web API base URL (tests point it at 127.0.0.1)
    apprise_urls: tuple[str, ...] = ()  # Apprise's own URLs (discord://, mailto://, ntfy://…)
    dial_cmd: str | None = None
    ntfy_url: str | None = None  # an ntfy topic URL (the topic is a password on ntfy.sh)
    ntfy_token: str | None = None  # an ntfy access token (tk_…), for protected topics
    pagerduty_routing_key: str | None = None  # an Events API v2 integration key
    pagerduty_api: str = DEFAULT_PAGERDUTY_API  # events posted to {base}/v2/enqueue
    # Secrets named outside the environment: the people's ntfy topics and Apprise URLs.
    more_secrets: tuple[str, ...] = ()
    inbox_url: str | None = None  # the web inbox as the phone reaches it: an "Open" button
    fleet_dsn: str | None = None  # [fleet] dsn / LOOPKIT_FLEET_DSN: PostgreSQL, shared

    @property
    def slack_socket(self) -> bool:
        """Slack is the two-way app (Socket Mode), not the one-way webhook."""
        return self.slack_mode == "socket"

    def secrets(self) -> tuple[str, ...]:
        """Values that must be redacted wherever they might appear: the tokens, the webhook,
        the Apprise URLs (they carry keys), the dial command whole and its secret-shaped
        arguments (:func:`dial_secrets`), the fleet's DSN and its password."""
        own = (self.telegram_token, self.slack_webhook, self.slack_bot_token,
               self.slack_app_token, *self.apprise_urls, self.dial_cmd, self.ntfy_url,
               self.ntfy_token, self.pagerduty_routing_key, *self.more_secrets)  # fmt: skip
        found = [s for s in own if s]
        fleet = [self.fleet_dsn, *dial_secrets(self.fleet_dsn)] if self.fleet_dsn else []
        return (*found, *dial_secrets(self.dial_cmd or ""), *fleet)

    def for_person(self, person: Person) -> ChannelSettings:
        """These settings with ``person``'s address where their channel reads its target:
        the chat, the Slack channel, the Apprise URL, the ntfy topic."""
        address = person.address
        if address is None:
            return self
        if person.channel == "telegram":
            return replace(self, telegram_chat=address)
        if person.channel == "slack":
            return replace(self, slack_channel=address)
        if person.channel == "apprise":
            return replace(self, apprise_urls=(address,))
        if person.channel == "ntfy":
            return replace(self, ntfy_url=address)
        return self


@record(frozen=True, slots=True)
class Config:
    workspace: Path
    file: Path | None = None  # the loopkit.toml that was read, if any
    loop: LoopConfig = field(default_factory=LoopConfig)
    escalation: EscalationConfig = field(default_factory=EscalationConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    stuck: StuckConfig = field(default_factory=StuckConfig)
    channels: ChannelSettings = field(default_factory=ChannelSettings)
    gate: GateConfig = field(default_factory=GateConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)

    @property
    def blocked_path(self) -> Path:
        return self.workspace / self.escalation.blocked_file


if TYPE_CHECKING:
    Validator = Callable[[object], Any]

# The parser of each key, by table: read from the one table of keys (loopkit.config.keys),
# which docs/generate.py and `loopkit init` read too.
_SCHEMA: dict[str, dict[str, Validator]] = {
    table: {name: key.parse for name, key in keys.items()} for table, keys in KEYS.items()
}


def _line_of(text: str, table: str | None, key: str | None) -> int | None:
    """The 1-based line where ``key`` (or the ``[table]`` header) is set, when findable."""
    current: str | None = None
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=") if key else None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"']+)\s*\]", line)
        if header:
            current = header.group(1).strip("\"'")
            if key is None and current == table:
                return number
            if key is not None and current == f"{table}.{key}":
                return number  # [[escalation.people]]: the first of its tables
            continue
        if key_re and current == table and key_re.match(line):
            return number
    return None


def _where(path: Path, text: str, table: str | None, key: str | None) -> str:
    line = _line_of(text, table, key)
    return f"{path}:{line}" if line else str(path)


def _suggest(name: str, known: list[str]) -> str:
    import difflib  # only to name a typo's fix

    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}known: {', '.join(known)}"


def _validate(
    path: Path, text: str, data: dict[str, Any], lenient: bool = False
) -> dict[str, dict[str, Any]]:
    """The tables' values, validated; ``lenient``: what is valid is kept, the rest dropped."""
    values: dict[str, dict[str, Any]] = {name: {} for name in _SCHEMA}
    for table, body in data.items():
        if lenient:
            for key, raw in body.items() if isinstance(body, dict) else ():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    values[table][key] = _SCHEMA[table][key](raw)
            continue
        if table not in _SCHEMA:
            where = _where(path, text, table, None)
            raise ConfigError(
                f"{where}: unknown table [{table}] ({_suggest(table, list(_SCHEMA))}); "
                "remove it or fix the name"
            )
        if not isinstance(body, dict):
            where = _where(path, text, None, table)
            raise ConfigError(f"{where}: {table!r} must be a table ([{table}]), not a value")
        schema = _SCHEMA[table]
        for key, raw in body.items():
            where = _where(path, text, table, key)
            if key not in schema:
                raise ConfigError(
                    f"{where}: unknown key {key!r} in [{table}] ({_suggest(key, list(schema))})"
                )
            try:
                values[table][key] = schema[key](raw)
            except ValueError as exc:
                raise ConfigError(f"{where}: [{table}] {key}: {exc}") from None
    return values


def read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """Read and parse ``path``; a syntax error names the file, line and column."""
    try:
        text = readfile.read_text(path)
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data = plaintoml.loads(text)  # the plain TOML of every loopkit.toml, without tomllib
    if data is None:
        data = _parse_toml(path, text)
    if readfile.too_deep(data):
        raise ConfigError(
            f"{path}: nested deeper than {readfile.MAX_DEPTH} levels; a loopkit.toml is a few "
            "flat tables — `loopkit init --force` writes a fresh file"
        )
    return text, data


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    """``text`` by :mod:`tomllib`: what is not plain TOML, and every syntax error."""
    import tomllib

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ConfigError(
            f"{path}: nested deeper than {readfile.MAX_DEPTH} levels; a loopkit.toml is a few "
            "flat tables — `loopkit init --force` writes a fresh file"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            msg = msg[: m.start()].strip()
            raise ConfigError(
                f"{path}:{m.group(1)}:{m.group(2)}: TOML syntax error: {msg}; fix that line "
                "(strings need quotes; `loopkit init --force` writes a fresh file)"
            ) from None
        raise ConfigError(f"{path}: TOML syntax error: {msg}; fix the file") from None
    except ValueError as exc:  # an integer longer than Python converts (4300 digits)
        raise ConfigError(f"{path}: {exc}; a loopkit.toml holds no such number") from None


def _channel_settings(environ: Mapping[str, str], lenient: bool = False) -> ChannelSettings:
    def env(name: str) -> str | None:
        value = environ.get(name, "").strip()
        return value or None

    allowed: list[int] = []
    raw_allowed = env("LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS")
    for part in (raw_allowed or "").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.lstrip("-").isdigit():
            if lenient:
                continue
            raise ConfigError(
                f"LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS: {part!r} is not a numeric Telegram user "
                "id; list numeric ids separated by commas (usernames can change)"
            )
        allowed.append(int(part))
    inbox_url = env("LOOPKIT_INBOX_URL")
    if inbox_url and (not inbox_url.startswith(("http://", "https://")) or "?" in inbox_url):
        if not lenient:
            raise ConfigError(
                f"LOOPKIT_INBOX_URL: {inbox_url!r} is not an http(s) address; give the inbox's "
                "address as the phone reaches it, without a token (e.g. http://laptop.vpn:8765)"
            )
        inbox_url = None
    return ChannelSettings(
        telegram_token=env("LOOPKIT_HITL_TELEGRAM_TOKEN"),
        telegram_chat=env("LOOPKIT_HITL_TELEGRAM_CHAT"),
        telegram_api=(env("LOOPKIT_HITL_TELEGRAM_API") or DEFAULT_TELEGRAM_API).rstrip("/"),
        telegram_allowed_users=tuple(allowed),
        slack_webhook=env("LOOPKIT_HITL_SLACK_WEBHOOK"),
        slack_bot_token=env("LOOPKIT_HITL_SLACK_BOT_TOKEN"),
        slack_app_token=env("LOOPKIT_HITL_SLACK_APP_TOKEN"),
        slack_channel=env("LOOPKIT_HITL_SLACK_CHANNEL"),
        slack_allowed_users=_words(env("LOOPKIT_HITL_SLACK_ALLOWED_USERS")),
        slack_api=(env("LOOPKIT_HITL_SLACK_API") or DEFAULT_SLACK_API).rstrip("/") + "/",
        apprise_urls=_words(env("LOOPKIT_HITL_APPRISE_URLS"), ", \n"),
        dial_cmd=env("LOOPKIT_HITL_DIAL_CMD"),
        ntfy_url=_ntfy_url(env("LOOPKIT_HITL_NTFY_URL"), lenient),
        ntfy_token=env("LOOPKIT_HITL_NTFY_TOKEN"),
        pagerduty_routing_key=env("LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY"),
        pagerduty_api=(env("LOOPKIT_HITL_PAGERDUTY_API") or DEFAULT_PAGERDUTY_API).rstrip("/"),
        inbox_url=inbox_url.rstrip("/") if inbox_url else None,
        fleet_dsn=_env_dsn(env("LOOPKIT_FLEET_DSN"), lenient),
    )


def _ntfy_url(value: str | None, lenient: bool) -> str | None:
    """The full topic URL (``https://ntfy.sh/my-topic``): a server and one topic."""
    if value is None or re.fullmatch(r"https?://[^/?#\s]+/[-_A-Za-z0-9]{1,64}", value):
        return value
    if lenient:
        return None
    raise ConfigError(
        "LOOPKIT_HITL_NTFY_URL is not a topic URL; give the server and the topic, e.g. "
        "https://ntfy.sh/my-topic (the topic: 1-64 letters, digits, - or _)"
    )


def _words(value: str | None, separators: str = ", ") -> tuple[str, ...]:
    """``U1,U2`` (or spaced): the non-empty parts, in order."""
    for sep in separators[1:]:
        value = (value or "").replace(sep, separators[0])
    return tuple(part.strip() for part in (value or "").split(separators[0]) if part.strip())


def _env_dsn(value: str | None, lenient: bool) -> str | None:
    if value is None:
        return None
    try:
        return config_values.fleet_dsn(value)
    except ValueError as exc:
        if lenient:
            return None
        raise ConfigError(f"LOOPKIT_FLEET_DSN: {exc}") from None


def _fleet_installed() -> bool:
    """Whether the ``[fleet]`` extra (psycopg) is there: looked up, never imported."""
    return extras.installed("psycopg")


def load(
    workspace: Path, environ: Mapping[str, str] | None = None, *, lenient: bool = False
) -> Config:
    """Build the Config for ``workspace``. Raises ConfigError (exit 78) when invalid.

    Pure: it reads, validates and returns. It configures nothing — the fleet's DSN is a field
    (``channels.fleet_dsn``: the environment's, else ``[fleet] dsn``), and whoever assembles
    the process builds the hub from it (:class:`loopkit.fleet.Hubs`).

    The workspace is made absolute here, once: every path derived from the Config (the
    events file included) names the same folder, whatever the process's folder is later.

    ``lenient``: never raise — keep every valid setting and drop the rest (a block must be
    raised even when ``loopkit.toml`` is broken; the caller reports the error).
    """
    environ = os.environ if environ is None else environ
    workspace = workspace.resolve()
    path = workspace / CONFIG_NAME
    values: dict[str, dict[str, Any]] = {name: {} for name in _SCHEMA}
    file: Path | None = None
    if path.is_file() or (path.exists() and not path.is_dir()):
        try:
            text, data = read_toml(path)
        except ConfigError:
            if not lenient:
                raise
            text, data = "", {}
        values = _validate(path, text, data, lenient)
        file = path
    elif path.is_dir() and not lenient:
        raise ConfigError(f"{path}: is a folder, not a file; remove it or rename it")

    channel = environ.get("LOOPKIT_HITL_CHANNEL", "").strip()
    if channel:
        try:
            values["escalation"]["channel"] = config_values.ladder(channel)
        except ValueError as exc:
            if not lenient:
                raise ConfigError(f"LOOPKIT_HITL_CHANNEL={channel!r}: {exc}") from None
    mode = environ.get("LOOPKIT_HITL_SLACK_MODE", "").strip()
    if mode:
        try:
            values["escalation"]["slack_mode"] = config_values.slack_mode(mode)
        except ValueError as exc:
            if not lenient:
                raise ConfigError(f"LOOPKIT_HITL_SLACK_MODE={mode!r}: {exc}") from None
    escalation = dict(values["escalation"])
    if "channel" in escalation:
        escalation["ladder"] = escalation.pop("channel")
    channels = _channel_settings(environ, lenient)
    dsn = channels.fleet_dsn or values["fleet"].get("dsn")
    if dsn is not None and not _fleet_installed():
        if not lenient:
            raise ConfigError(
                "a fleet DSN is set ([fleet] dsn or LOOPKIT_FLEET_DSN) but psycopg is not "
                "installed: pip install 'loopkit[fleet]' (or unset it to work on this machine "
                "alone)"
            )
        dsn = None  # lenient: this machine alone, as without a fleet
    if dsn != channels.fleet_dsn:
        channels = replace(channels, fleet_dsn=dsn)
    if escalation.get("slack_mode", "webhook") != channels.slack_mode:
        channels = replace(channels, slack_mode=escalation["slack_mode"])
    hidden = tuple(p.address for p in escalation.get("people", ()) if p.secret_address)
    if hidden:
        channels = replace(channels, more_secrets=tuple(str(a) for a in hidden))
    return Config(
        workspace=workspace,
        file=file,
        loop=LoopConfig(**values["loop"]),
        escalation=EscalationConfig(**escalation),
        policy=PolicyConfig(**values["policy"]),
        stuck=StuckConfig(**values["stuck"]),
        channels=channels,
        gate=GateConfig(**values["gate"]),
        hooks=HooksConfig(**values["hooks"]),
    )
