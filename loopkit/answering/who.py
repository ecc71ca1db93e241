"""Who is answering, and whether they may (SPEC sections 11, 21 and 27).

Every surface turns its caller into an :class:`Answerer`: the name a record keeps, the
surface (``via``), and the *origin* — the evidence the rule is judged on:

- :class:`Shell` — a command of this machine (``loopkit reply``, ``unblock``, ``dismiss``,
  the Python API): refused when this process runs inside a supervised agent's session;
- :class:`Browser` — the web inbox: refused when the browser's loopback connection comes
  from such a process;
- :class:`TelegramUser` — a tap or a message: only from the configured chat and, when
  listed, the allowed users (numeric ids: usernames change);
- :class:`SlackUser` — a click or a thread reply: only the allowed users, when listed.

The answering service (:mod:`loopkit.answering.service`) checks every answer with
:meth:`Answerer.check` before it reads anything; a surface may ask :meth:`Answerer.refusal`
first to word its own reply ("not allowed"), but it never decides in its place.
"""

from __future__ import annotations

from loopkit import agentsession
from loopkit.datarecord import record
from loopkit.errors import AgentAnswer, NotAllowed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.errors import LoopkitError


@record(frozen=True, slots=True)
class Shell:
    """A command run on this machine: this very process is judged."""

    def refusal(self) -> LoopkitError | None:
        return AgentAnswer(agentsession.REFUSAL) if agentsession.inside() else None


@record(frozen=True, slots=True)
class Browser:
    """The web inbox: the process at the other end of the browser's connection is judged
    (``client`` is the ASGI client, ``server_port`` the inbox's port)."""

    client: Any
    server_port: int | None

    def refusal(self) -> LoopkitError | None:
        if agentsession.connection_from_agent(self.client, self.server_port):
            return AgentAnswer(agentsession.REFUSAL)
        return None


@record(frozen=True, slots=True)
class TelegramAllowed:
    """The chat the bot answers in, and the users who may decide (none listed: anyone in
    that chat)."""

    chat: str
    users: frozenset[int]

    @classmethod
    def of(cls, settings: ChannelSettings) -> TelegramAllowed:
        chat = (settings.telegram_chat or "").strip()
        return cls(chat, frozenset(settings.telegram_allowed_users))

    def chat_ok(self, chat: Any) -> bool:
        if not isinstance(chat, dict) or not self.chat:
            return False
        if str(chat.get("id")) == self.chat:
            return True
        username = chat.get("username")
        return bool(username) and self.chat.lstrip("@").lower() == str(username).lower()

    def user_ok(self, user_id: int | None) -> bool:
        return not self.users or (user_id is not None and user_id in self.users)


@record(frozen=True, slots=True)
class TelegramUser:
    """A Telegram update's sender, in the chat it came from."""

    allowed: TelegramAllowed
    chat: Any  # the update's ``chat`` object, as Telegram sent it
    user_id: int | None

    def refusal(self) -> LoopkitError | None:
        if self.allowed.chat_ok(self.chat) and self.allowed.user_ok(self.user_id):
            return None
        return NotAllowed("telegram: not allowed: this chat or user may not answer")


@record(frozen=True, slots=True)
class SlackAllowed:
    """The Slack users who may decide (none listed: anyone in the channel)."""

    users: frozenset[str]

    @classmethod
    def of(cls, settings: ChannelSettings) -> SlackAllowed:
        return cls(frozenset(settings.slack_allowed_users))

    def user_ok(self, user_id: str | None) -> bool:
        return not self.users or (user_id is not None and user_id in self.users)


@record(frozen=True, slots=True)
class SlackUser:
    """A Slack click's or thread reply's user."""

    allowed: SlackAllowed
    user_id: str | None

    def refusal(self) -> LoopkitError | None:
        if self.allowed.user_ok(self.user_id):
            return None
        return NotAllowed(
            "not allowed: you are not among the people who may answer loopkit's questions"
        )


Origin = Shell | Browser | TelegramUser | SlackUser
SHELL = Shell()


@record(frozen=True, slots=True)
class Answerer:
    """Who answers: ``by`` as the record keeps it, the surface (``via``: cli, telegram,
    slack, inbox …), the origin judged, and ``about`` — the surface's own ids, added to the
    resolution (``by_id``, ``by_name``)."""

    by: str
    via: str
    origin: Origin = SHELL
    about: dict[str, Any] | None = None

    def refusal(self) -> LoopkitError | None:
        """Why this answerer may not answer, or None."""
        return self.origin.refusal()

    def check(self) -> None:
        """Raise the refusal (AgentAnswer or NotAllowed, exit 77), if any."""
        refused = self.refusal()
        if refused is not None:
            raise refused
