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
import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from loopkit.errors import ConfigError
from loopkit.redact import dial_secrets

CONFIG_NAME = "loopkit.toml"
TIMEOUT_ACTIONS = ("skip", "queue", "retry", "abort")
DEFAULT_TELEGRAM_API = "https://api.telegram.org"

TimeoutAction = Literal["skip", "queue", "retry", "abort"]
# A command is a shell string (run by /bin/sh -c) or an argv list (run without a shell).
Command = str | tuple[str, ...]
# Secrets that never reach the agent's environment (SPEC §11): the channels', the fleet's,
# the inbox's. verify, done and preflight are the user's own commands and keep them.
AGENT_HIDDEN_ENV = (
    "LOOPKIT_HITL_TELEGRAM_TOKEN",
    "LOOPKIT_HITL_SLACK_WEBHOOK",
    "LOOPKIT_HITL_DIAL_CMD",
    "LOOPKIT_FLEET_DSN",
    "LOOPKIT_INBOX_TOKEN",
)


@dataclass(frozen=True, slots=True)
class LoopConfig:
    agent: Command | None = None
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
    stop_agent_on_block: bool = False
    block_grace: float = 30.0
    kill_grace: float = 10.0


@dataclass(frozen=True, slots=True)
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

    @property
    def channel(self) -> str:
        """The first rung: the channel a block is sent to first."""
        return self.ladder[0]


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    escalate_words: tuple[str, ...] = ()
    proceed_words: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    """Channel settings from the environment. Secret fields never reach a log or a file."""

    telegram_token: str | None = None
    telegram_chat: str | None = None
    telegram_api: str = DEFAULT_TELEGRAM_API
    telegram_allowed_users: tuple[int, ...] = ()
    slack_webhook: str | None = None
    dial_cmd: str | None = None

    def secrets(self) -> tuple[str, ...]:
        """Values that must be redacted wherever they might appear: the token, the webhook,
        the dial command whole and its secret-shaped arguments (:func:`dial_secrets`)."""
        found = [s for s in (self.telegram_token, self.slack_webhook, self.dial_cmd) if s]
        return (*found, *dial_secrets(self.dial_cmd or ""))


@dataclass(frozen=True, slots=True)
class Config:
    workspace: Path
    file: Path | None = None  # the loopkit.toml that was read, if any
    loop: LoopConfig = field(default_factory=LoopConfig)
    escalation: EscalationConfig = field(default_factory=EscalationConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    channels: ChannelSettings = field(default_factory=ChannelSettings)

    @property
    def blocked_path(self) -> Path:
        return self.workspace / self.escalation.blocked_file


# --- parsing helpers -----------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """``5`` / ``2.5`` (seconds), ``"500ms"``, ``"5s"``, ``"60m"``, ``"1h30m"`` → seconds."""
    if isinstance(value, bool):
        raise ValueError('expected a duration such as 5, "5s", "10m" or "1h"')
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError("a duration must be a finite number (not nan or inf)")
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        pos, total = 0, 0.0
        for m in _DURATION_PART.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNIT[m.group(2)]
            pos = m.end()
        if text and pos == len(text) and math.isfinite(total):
            return total
    raise ValueError(f'{value!r} is not a duration such as "5s", "10m" or "1h"')


def _command(value: object) -> Command:
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("a command cannot be empty")
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(cast(list[str], value))
    raise ValueError("expected a command: a string (run by /bin/sh -c) or a list of strings")


def _opt_command(value: object) -> Command | None:
    return _command(value)


def _commands(value: object) -> tuple[Command, ...]:
    if not isinstance(value, list):
        raise ValueError("expected a list of commands")
    return tuple(_command(v) for v in value)


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _nonempty_str(value: object) -> str:
    text = _str(value)
    if not text.strip():
        raise ValueError("cannot be empty")
    return text


def _strs(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return tuple(cast(list[str], value))


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number of at least 1")
    return value


def _positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError("expected a number greater than 0")  # NaN fails `> 0` too
    if not math.isfinite(value):
        raise ValueError("expected a finite number (not inf)")
    return value


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _ladder(value: object) -> tuple[str, ...]:
    """``"telegram"``, ``"telegram,dial"`` or ``["telegram", "dial"]``: the channel ladder."""
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [str(v).strip() for v in value]
    else:
        raise ValueError('expected a channel name or a list of them, e.g. ["telegram", "dial"]')
    names = [name for name in names if name]
    if not names:
        raise ValueError("name at least one channel (none sends nothing)")
    if len(set(names)) != len(names):
        raise ValueError("a channel appears twice in the ladder")
    return tuple(names)


def _opt_duration(value: object) -> float | None:
    if value in ("off", "", 0):
        return None
    return parse_duration(value) or None


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a whole number, 0 or more")
    return value


def _timeout_action(value: object) -> str:
    if value not in TIMEOUT_ACTIONS:
        raise ValueError(f"expected one of {', '.join(TIMEOUT_ACTIONS)}, got {value!r}")
    return str(value)


def _pattern(value: object) -> str:
    text = _str(value)
    try:
        re.compile(text, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return text


def _relative_file(value: object) -> str:
    """A path inside the workspace: relative, and never climbing out of it with ``..``."""
    text = _nonempty_str(value)
    if "\x00" in text:
        raise ValueError("cannot contain a NUL byte")
    if os.path.isabs(text) or ".." in Path(text).parts:
        raise ValueError(f"{text!r} leaves the workspace; name a file inside it")
    return text


Validator = Callable[[object], Any]

_SCHEMA: dict[str, dict[str, Validator]] = {
    "loop": {
        "agent": _opt_command,
        "verify": _opt_command,
        "done": _opt_command,
        "pause": parse_duration,
        "iteration_timeout": parse_duration,
        "max_verify_failures": _positive_int,
        "task_file": _relative_file,
        "task_pattern": _pattern,
        "required_env": _strs,
        "preflight": _commands,
        "preflight_backoff": parse_duration,
        "stop_agent_on_block": _bool,
        "block_grace": parse_duration,
        "kill_grace": parse_duration,
    },
    "escalation": {
        "channel": _ladder,
        "blocked_file": _relative_file,
        "timeout_minutes": _positive_number,
        "timeout_action": _timeout_action,
        "send_timeout": parse_duration,
        "retry_backoff": parse_duration,
        "escalate_after": _opt_duration,
        "remind_every": _opt_duration,
        "max_reminders": _count,
    },
    "policy": {
        "escalate_words": _strs,
        "proceed_words": _strs,
    },
}


def _line_of(text: str, table: str | None, key: str | None) -> int | None:
    """The 1-based line where ``key`` (or the ``[table]`` header) is set, when findable."""
    current: str | None = None
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=") if key else None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([A-Za-z0-9_.\-\"']+)\s*\]", line)
        if header:
            current = header.group(1).strip("\"'")
            if key is None and current == table:
                return number
            continue
        if key_re and current == table and key_re.match(line):
            return number
    return None


def _where(path: Path, text: str, table: str | None, key: str | None) -> str:
    line = _line_of(text, table, key)
    return f"{path}:{line}" if line else str(path)


def _suggest(name: str, known: list[str]) -> str:
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
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return text, tomllib.loads(text)
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
    return ChannelSettings(
        telegram_token=env("LOOPKIT_HITL_TELEGRAM_TOKEN"),
        telegram_chat=env("LOOPKIT_HITL_TELEGRAM_CHAT"),
        telegram_api=(env("LOOPKIT_HITL_TELEGRAM_API") or DEFAULT_TELEGRAM_API).rstrip("/"),
        telegram_allowed_users=tuple(allowed),
        slack_webhook=env("LOOPKIT_HITL_SLACK_WEBHOOK"),
        dial_cmd=env("LOOPKIT_HITL_DIAL_CMD"),
    )


def load(
    workspace: Path, environ: Mapping[str, str] | None = None, *, lenient: bool = False
) -> Config:
    """Build the Config for ``workspace``. Raises ConfigError (exit 78) when invalid.

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
            values["escalation"]["channel"] = _ladder(channel)
        except ValueError as exc:
            if not lenient:
                raise ConfigError(f"LOOPKIT_HITL_CHANNEL={channel!r}: {exc}") from None
    escalation = dict(values["escalation"])
    if "channel" in escalation:
        escalation["ladder"] = escalation.pop("channel")
    return Config(
        workspace=workspace,
        file=file,
        loop=LoopConfig(**values["loop"]),
        escalation=EscalationConfig(**escalation),
        policy=PolicyConfig(**values["policy"]),
        channels=_channel_settings(environ, lenient),
    )
