"""The value parsers of ``loopkit.toml``: each takes a TOML value and returns the setting,
or raises ValueError saying what was expected (``config`` adds the file, line and key)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

TIMEOUT_ACTIONS = ("skip", "queue", "retry", "abort")
if TYPE_CHECKING:
    TimeoutAction = Literal["skip", "queue", "retry", "abort"]
# A command is a shell string (run by /bin/sh -c) or an argv list (run without a shell).
Command = str | tuple[str, ...]


_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|s|m|h)"  # compiled on first use (SPEC §20)
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# The longest duration of any setting: a year. Longer is a slip (``pause = 1e10`` is 317
# years, past what a clock or a timer can hold), refused at load, never a crash mid-run.
MAX_DURATION = 366 * 86400.0


def parse_duration(value: object) -> float:
    """``5`` / ``2.5`` (seconds), ``"500ms"``, ``"5s"``, ``"60m"``, ``"1h30m"`` → seconds;
    a year (``"8784h"``) at most."""
    if isinstance(value, bool):
        raise ValueError('expected a duration such as 5, "5s", "10m" or "1h"')
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError("a duration must be a finite number (not nan or inf)")
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return _at_most_a_year(float(value), value)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        pos, total = 0, 0.0
        for m in re.finditer(_DURATION_PART, text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNIT[m.group(2)]
            pos = m.end()
        if text and pos == len(text) and math.isfinite(total):
            return _at_most_a_year(total, value)
    raise ValueError(f'{value!r} is not a duration such as "5s", "10m" or "1h"')


def _at_most_a_year(seconds: float, value: object) -> float:
    if seconds > MAX_DURATION:
        raise ValueError(f'{value!r} is over a year; a duration is at most "8784h" (366 days)')
    return seconds


_SIZE = r"(?i)(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?"
_SIZE_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: object) -> int:
    """``52428800`` (bytes), ``"50MB"``, ``"50 MiB"``, ``"512k"``, ``"1G"`` → bytes (k, M and G
    are powers of 1024); at least 64 kB."""
    size: float | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (m := re.fullmatch(_SIZE, value.strip())):
        size = float(m.group(1)) * _SIZE_UNIT[m.group(2).lower()]
    if size is None:
        raise ValueError(f'{value!r} is not a size such as "50MB", "512kB" or 1048576')
    if size < 64 * 1024:
        raise ValueError(f"{value!r} is less than 64kB; a log that small shows nothing useful")
    return int(size)


HOOK_TIMEOUT = 600.0  # seconds: the timeout `loopkit hook install` gives Claude Code's hook


def hook_wait(value: object) -> float:
    """A duration below the hook's own timeout (600 s): Claude Code stops a hook that runs
    longer and then lets the held call run — a wait that long would open the gate."""
    seconds = parse_duration(value)
    if seconds >= HOOK_TIMEOUT:
        raise ValueError(
            f"{value!r} is not below {HOOK_TIMEOUT:g} s, the hook's timeout: Claude Code would "
            "stop the hook and let the call run; use at most 590s"
        )
    return seconds


def command(value: object) -> Command:
    """A command: a string (run by ``/bin/sh -c``) or a list of strings (argv, no shell)."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("a command cannot be empty")
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError("expected a command: a string (run by /bin/sh -c) or a list of strings")


def optional_command(value: object) -> Command | None:
    """A command: a string (run by ``/bin/sh -c``) or a list of strings (argv, no shell)."""
    return command(value)


def resume_command(value: object) -> Command:
    """A command (as ``agent``) that holds ``{session_id}``: where the agent's session id goes."""
    given = command(value)
    words = [given] if isinstance(given, str) else list(given)
    if not any("{session_id}" in word for word in words):
        raise ValueError(
            "the resume command must hold {session_id}, e.g. "
            '"claude -p --resume {session_id} --output-format json"'
        )
    return given


def commands(value: object) -> tuple[Command, ...]:
    """A list of commands, each a string or a list of strings."""
    if not isinstance(value, list):
        raise ValueError("expected a list of commands")
    return tuple(command(v) for v in value)


def a_string(value: object) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def nonempty_string(value: object) -> str:
    """A string that is not blank."""
    text = a_string(value)
    if not text.strip():
        raise ValueError("cannot be empty")
    return text


def strings(value: object) -> tuple[str, ...]:
    """A list of strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return tuple(value)


def positive_int(value: object) -> int:
    """A whole number, at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number of at least 1")
    return value


def positive_number(value: object) -> float:
    """A number greater than 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError("expected a number greater than 0")  # NaN fails `> 0` too
    if not math.isfinite(value):
        raise ValueError("expected a finite number (not inf)")
    return value


def minutes(value: object) -> float:
    """A number of minutes greater than 0, at most a year's (as every duration)."""
    number = positive_number(value)
    if number * 60 > MAX_DURATION:
        raise ValueError(f"{value!r} minutes is over a year; at most {MAX_DURATION / 60:g}")
    return number


def gate_rules(value: object) -> tuple[str, ...]:
    """``[gate] rules``: regular expressions for Bash commands, or ``tool:<glob>``."""
    import re

    rules = strings(value)
    for rule in rules:
        if rule.startswith("tool:"):
            continue
        try:
            re.compile(rule)
        except re.error as exc:
            raise ValueError(f"{rule!r} is not a regular expression ({exc})") from None
    return rules


def fleet_dsn(value: object) -> str:
    """``[fleet] dsn``: a ``postgresql://`` URL (the form psycopg takes)."""
    if not isinstance(value, str) or not value.strip().startswith(("postgresql://", "postgres://")):
        raise ValueError("expected a postgresql:// URL, e.g. postgresql://loopkit@db:5432/loopkit")
    return value.strip()


def flag(value: object) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def ladder(value: object) -> tuple[str, ...]:
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


SLACK_MODES = ("webhook", "socket")


def slack_mode(value: object) -> str:
    """``webhook`` (one-way, an incoming webhook) or ``socket`` (two-way: a Slack app over
    Socket Mode)."""
    if value not in SLACK_MODES:
        raise ValueError('expected "webhook" (one-way) or "socket" (buttons, over Socket Mode)')
    return str(value)


def optional_duration(value: object) -> float | None:
    """A duration, or ``"off"`` (also ``0`` or ``""``): not at all."""
    if value in ("off", "", 0):
        return None
    return parse_duration(value) or None


def optional_money(value: object) -> float | None:
    """An amount of US dollars (``5``, ``12.50``), or ``0`` / ``"off"``: no limit."""
    if value in ("off", ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError('expected an amount in US dollars (e.g. 5 or 12.50), or 0 / "off"')
    if not math.isfinite(value):
        raise ValueError("expected a finite amount (not inf)")
    return float(value) or None


def count(value: object) -> int:
    """A whole number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a whole number, 0 or more")
    return value


def timeout_action(value: object) -> str:
    """``skip``, ``queue``, ``retry`` or ``abort``."""
    if value not in TIMEOUT_ACTIONS:
        raise ValueError(f"expected one of {', '.join(TIMEOUT_ACTIONS)}, got {value!r}")
    return str(value)


def pattern(value: object) -> str:
    """A regular expression (Python syntax, multi-line mode)."""
    text = a_string(value)
    try:
        re.compile(text, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return text


def relative_file(value: object) -> str:
    """A path inside the workspace: relative, and never climbing out of it with ``..``."""
    text = nonempty_string(value)
    if "\x00" in text:
        raise ValueError("cannot contain a NUL byte")
    if os.path.isabs(text) or ".." in Path(text).parts:
        raise ValueError(f"{text!r} leaves the workspace; name a file inside it")
    return text


# The categories a question may be asked under (`loopkit ask --category`): the needs-human
# policy (escalation/policy.py) gates the P0 ones; [[policy.answers]] may name the others.
CATEGORIES = ("ontology", "ux", "one-way-door", "third-party", "cost", "scope", "data-loss",
              "security", "legal")  # fmt: skip
P0_CATEGORIES = frozenset({"data-loss", "security", "legal", "one-way-door"})
_ANSWER_KEYS = ("category", "request_key", "words", "answer", "why")


@record(frozen=True, slots=True)
class PolicyAnswer:
    """One ``[[policy.answers]]`` entry: a routine question it answers — every matcher given
    must hold: its ``category``, its ``request_key`` (a glob), one of ``words`` in its
    prompt — and the ``answer`` (an option's value, or words) with ``why``."""

    answer: str
    why: str
    category: str | None = None
    request_key: str | None = None
    words: tuple[str, ...] = ()


def policy_answers(value: object) -> tuple[PolicyAnswer, ...]:
    """``[[policy.answers]]``: tables of ``category`` / ``request_key`` / ``words`` →
    ``answer`` with ``why``."""
    if not isinstance(value, list):
        raise ValueError("expected [[policy.answers]] tables")
    found = []
    for number, entry in enumerate(value, start=1):
        where = f"entry {number}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a table ([[policy.answers]])")
        unknown = sorted(set(entry) - set(_ANSWER_KEYS))
        if unknown:
            raise ValueError(
                f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ANSWER_KEYS)})"
            )
        for key in ("answer", "why"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ValueError(f"{where}: {key} is required (a non-empty string)")
        category = entry.get("category")
        if category is not None:
            if not isinstance(category, str) or category.strip().lower() not in CATEGORIES:
                raise ValueError(f"{where}: category {category!r} is not one of "
                                 f"{' '.join(CATEGORIES)}")  # fmt: skip
            category = category.strip().lower()
            if category in P0_CATEGORIES:
                raise ValueError(f"{where}: category {category!r} is P0: a human always "
                                 "answers it, never a policy")  # fmt: skip
        glob = entry.get("request_key")
        if glob is not None and (not isinstance(glob, str) or not glob.strip()):
            raise ValueError(f"{where}: request_key is a glob (a non-empty string)")
        words = entry.get("words", ())
        if isinstance(words, str):
            words = [words]
        if not isinstance(words, (list, tuple)) or not all(
            isinstance(w, str) and w.strip() for w in words
        ):
            raise ValueError(f"{where}: words is a list of words or phrases")
        if category is None and glob is None and not words:
            raise ValueError(f"{where}: give category, request_key or words: what it answers")
        found.append(PolicyAnswer(entry["answer"].strip(), entry["why"].strip(), category,
                                  glob, tuple(w.strip() for w in words)))  # fmt: skip
    return tuple(found)
