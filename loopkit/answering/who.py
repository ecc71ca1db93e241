"""Who is answering, and whether they may (SPEC sections 11, 21 and 27).

Every surface turns its caller into an :class:`Answerer`: the name a record keeps, the
surface (``via``), and the *origin* — the evidence the rule is judged on:

- :class:`Shell` — a command of this machine (``loopkit reply``, ``unblock``, ``dismiss``,
  the Python API): refused when this process runs inside a supervised agent's session;
- :class:`Browser` — the web inbox: refused when the browser's loopback connection comes
  from such a process;
- :class:`TelegramUser` — a tap or a message: only from the configured chat and, when
  listed, the allowed users (numeric ids: usernames change);
- :class:`SlackUser` — a click or a thread reply: only the allowed users, when listed;
- :class:`Tap` — a one-tap URL of a phone push (ntfy): the URL's signature names the person
  it was sent to; the connection is judged as a browser's;
- :class:`Policy` — an entry of ``[[policy.answers]]`` (SPEC §30): only a routine question,
  never a P0 one, an approval, a review or a gate (:meth:`Answerer.check_about`, once the
  request is found); it is no person, and needs to be none.

The answering service (:mod:`loopkit.answering.service`) checks every answer with
:meth:`Answerer.check` before it reads anything; a surface may ask :meth:`Answerer.refusal`
first to word its own reply ("not allowed"), but it never decides in its place.

**Only listed people answer** (SPEC §29). When the request's workspace lists
``[[escalation.people]]``, the service then asks :meth:`Answerer.listed`: the answerer must
be one of them — by name on the command line (``loopkit reply --by NAME``) and in the
inbox (``serve --user NAME``), by their chat on Telegram, their user id on Slack, the signed
name of a tap — and the answer is recorded under that person's name.
"""

from __future__ import annotations

from loopkit import agentsession
from loopkit.config.people import find, names
from loopkit.datarecord import record, replace
from loopkit.errors import AgentAnswer, NotAllowed
from loopkit.escalation.policy import routine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.config.people import Person
    from loopkit.errors import LoopkitError
    from loopkit.requests.record import Request


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


def _no_chats() -> frozenset[str]:
    return frozenset()


@record(frozen=True, slots=True)
class TelegramAllowed:
    """The chat the bot answers in, and the users who may decide (none listed: anyone in
    that chat). ``people_chats``: the chats of the people on Telegram in the workspaces this
    process serves (their messages are answered there too; the service then checks the
    request's own people)."""

    chat: str
    users: frozenset[int]
    people_chats: Callable[[], frozenset[str]] = _no_chats

    @classmethod
    def of(
        cls, settings: ChannelSettings, people_chats: Callable[[], frozenset[str]] | None = None
    ) -> TelegramAllowed:
        chat = (settings.telegram_chat or "").strip()
        return cls(chat, frozenset(settings.telegram_allowed_users), people_chats or _no_chats)

    def chat_ok(self, chat: Any) -> bool:
        if not isinstance(chat, dict):
            return False
        if self.chat and same_chat(chat, self.chat):
            return True
        return any(same_chat(chat, known) for known in self.people_chats())

    def user_ok(self, user_id: int | None) -> bool:
        return not self.users or (user_id is not None and user_id in self.users)


def same_chat(chat: dict[str, Any], known: str) -> bool:
    """Whether Telegram's ``chat`` object is the chat ``known`` (an id, or ``@username``)."""
    if str(chat.get("id")) == known:
        return True
    username = chat.get("username")
    return bool(username) and known.lstrip("@").lower() == str(username).lower()


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

    def in_the_chat(self) -> bool:
        """Whether this came from the configured chat (not only a listed person's own)."""
        chat = self.chat if isinstance(self.chat, dict) else {}
        return bool(self.allowed.chat) and same_chat(chat, self.allowed.chat)

    def person(self, people: tuple[Person, ...], by_name: str | None) -> Person | None:
        """The person whose chat this is; in a chat several people share, the one the
        sender's Telegram name names."""
        chat = self.chat if isinstance(self.chat, dict) else {}
        there = [p for p in people if p.channel == "telegram" and p.address
                 and same_chat(chat, p.address)]  # fmt: skip
        if len(there) == 1:
            return there[0]
        first = (by_name or "").split(" ")[0]
        return find(tuple(there), first) if first else None


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

    def person(self, people: tuple[Person, ...], by_name: str | None) -> Person | None:
        return next((p for p in people if p.channel == "slack" and p.address == self.user_id), None)


@record(frozen=True, slots=True)
class Tap:
    """A one-tap URL of a phone push, its signature checked by the inbox: ``person`` is the
    one it was sent to ("" when the ladder is not of people). The process at the other end
    of the connection is judged as a browser's (an agent that found the URL is refused)."""

    person: str
    client: Any
    server_port: int | None

    def refusal(self) -> LoopkitError | None:
        return Browser(self.client, self.server_port).refusal()

    def person_of(self, people: tuple[Person, ...]) -> Person | None:
        return find(people, self.person)


@record(frozen=True, slots=True)
class Policy:
    """``[[policy.answers]]`` entry ``number`` of the workspace's loopkit.toml (SPEC §30):
    loopkit's own answer to a routine question. It may answer only that — never a P0
    question, an approval, a review or a gate (:meth:`refusal_about`)."""

    number: int
    why: str

    def refusal(self) -> LoopkitError | None:
        return None  # the config is the human's; under `loopkit run` the agent cannot edit it

    def refusal_about(self, record: Request) -> LoopkitError | None:
        if routine(record):
            return None
        return NotAllowed(
            f"policy: request {record.request_id} is not a routine question (a P0 question, an "
            "approval, a review or a gate): a human answers it, never [[policy.answers]]"
        )


Origin = Shell | Browser | TelegramUser | SlackUser | Tap | Policy
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

    def check_about(self, record: Request) -> None:
        """Raise the refusal to answer ``record`` in particular (a policy: only a routine
        question), if any."""
        if isinstance(self.origin, Policy):
            refused = self.origin.refusal_about(record)
            if refused is not None:
                raise refused

    def person(self, people: tuple[Person, ...]) -> Person | None:
        """Who of ``people`` this answerer is (see the module), or None."""
        origin = self.origin
        if isinstance(origin, Tap):
            return origin.person_of(people)
        if isinstance(origin, TelegramUser | SlackUser):
            by_name = (self.about or {}).get("by_name")
            return origin.person(people, by_name if isinstance(by_name, str) else None)
        return find(people, self.by)

    def listed(self, people: tuple[Person, ...]) -> Answerer:
        """This answerer as the listed person it is, recorded under their name; raises
        NotAllowed (77) when ``people`` are listed and it is none of them."""
        if isinstance(self.origin, Policy):
            return self  # [[policy.answers]] is no person: it answers only what is routine
        if not people:
            if isinstance(self.origin, TelegramUser) and not self.origin.in_the_chat():
                # A person's own chat (another workspace's [[escalation.people]]) answers
                # that workspace's questions, not one that lists nobody.
                raise NotAllowed(
                    "telegram: not allowed: this chat answers only the questions of the "
                    "workspaces that list it in [[escalation.people]]"
                )
            return self
        person = self.person(people)
        if person is None:
            how = {
                "cli": "; name yourself with --by NAME",
                "inbox": "; start `loopkit serve --user NAME` as one of them",
            }.get(self.via, "")
            raise NotAllowed(
                f"not allowed: {self.by} is not among the people who may answer this "
                f"question ([[escalation.people]]: {names(people)}){how}"
            )
        if person.name == self.by:
            return self
        about = {**(self.about or {})}
        about.setdefault("by_name", self.by)  # the surface's own name for them, kept
        return replace(self, by=person.name, about=about)
