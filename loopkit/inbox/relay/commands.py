"""Steering loops from Telegram (SPEC section 22): ``/loops``, ``/pause <repo>``,
``/resume <repo>``, ``/stop <repo>``, and guidance addressed to a loop.

Only the allowed chat and users steer (the router checks before handing an update here);
a stranger's command is logged and changes nothing. With a fleet, every machine's loops are
listed and steered (another machine's through the fleet); a repo name two machines share is
named ``machine:repo``. An unknown, missing or ambiguous repo is answered with the list of
loops. Every command is recorded with who (the Telegram user), via ``telegram`` and when,
as the CLI's and the inbox's are (:mod:`loopkit.loops`).

Messages: a message starting ``@repo`` goes to that loop's agent — into its running turn
where the agent takes input mid-turn, else as a note for its next run (SPEC §24; the answer
says which); so does a reply to a message the bot sent about one loop (its answer to
``/pause``, ``/resume``, ``/stop`` or an earlier message) — those messages are remembered,
by id, in ``LOOPKIT_HOME/telegram/loop-messages.json`` (the newest :data:`REMEMBERED`).
``/loops`` shows each running turn: the call it runs and since when.
"""

from __future__ import annotations

import contextlib

from loopkit import atomicfile, loops, readfile
from loopkit.errors import LoopkitError
from loopkit.home import home
from loopkit.log import get_logger
from loopkit.message import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from loopkit.channels.telegram_api import BotApi
    from loopkit.inbox.relay.senders import Sender
    from loopkit.loops import Loop
    from loopkit.workspace.steer import Command

log = get_logger("loopkit.phone")

COMMANDS: dict[str, Command] = {"/pause": "pause", "/resume": "resume", "/stop": "stop"}
REMEMBERED = 200
MAX_LISTING = 4000  # characters of /loops' answer (Telegram's limit is 4096)


class LoopCommands:
    """What the relay does with a steering command or a note from an allowed user."""

    def __init__(
        self, bot: BotApi, chat: str, *, fleet: loops.Fleet | None = None, root: Path | None = None
    ) -> None:
        self.bot = bot
        self.chat = chat
        self.fleet = fleet  # other machines' loops (None: this machine's alone)
        self.memory = (root or home()) / "telegram" / "loop-messages.json"

    def _loops(self) -> list[Loop]:
        return loops.all_loops(self.fleet)

    def command(self, text: str, sender: Sender, message_id: Any) -> None:
        """``/loops`` or ``/pause|/resume|/stop <repo>`` (anything else: the help line)."""
        head, _, rest = text.strip().partition(" ")
        name = head.split("@", 1)[0].lower()  # "/pause@loopkit_bot" in groups
        found = self._loops()
        if name == "/loops":
            self._tell(_listing(found), message_id)
            return
        command = COMMANDS.get(name)
        if command is None:
            self._tell("Commands: /loops, /pause <repo>, /resume <repo>, /stop <repo>; "
                       "@<repo> <text> goes to its agent: into the running turn where it "
                       "takes one, else as a note for its next run.", message_id)  # fmt: skip
            return
        loop = self._one(rest.strip(), found, message_id)
        if loop is None:
            return
        try:
            told = loops.steer(loop, command, by=sender.by, via="telegram", fleet=self.fleet)
        except LoopkitError as exc:
            told = f"{loop.where}: not done: {exc}"
        log.info(f"telegram_{command}", by=sender.by, msg=f"telegram: {told}")
        self._tell(told, message_id, about=loop)

    def addressed(self, text: str, sender: Sender, message_id: Any) -> bool:
        """``@repo text``: a note for that loop. False when the message is no such note."""
        head, _, rest = text.strip().partition(" ")
        if not head.startswith("@") or len(head) < 2:
            return False
        found = self._loops()
        matches = loops.find(head[1:], found)
        if not matches:
            return False  # "@someone" that is no loop: an ordinary message
        loop = self._one(head[1:], found, message_id)  # two loops: it says which names
        if loop is not None:
            self._note(loop, rest, sender, message_id)
        return True

    def replied(self, replied_to: Any, text: str, sender: Sender, message_id: Any) -> bool:
        """A reply to a message about one loop: a note for it. False when it is no such reply."""
        key = self._remembered().get(str(replied_to))
        if key is None:
            return False
        loop = next((one for one in self._loops() if one.key == key), None)
        if loop is None:
            return False
        self._note(loop, text, sender, message_id)
        return True

    def _note(self, loop: Loop, text: str, sender: Sender, message_id: Any) -> None:
        if not text.strip():
            self._tell(f"{loop.where}: an empty note; write what it should know after the "
                       "name", message_id)  # fmt: skip
            return
        try:
            told = loops.say(loop, text, by=sender.by, via="telegram", fleet=self.fleet)
        except LoopkitError as exc:
            told = f"{loop.where}: not delivered: {exc}"
        log.info("telegram_say", by=sender.by, msg=f"telegram: {told}")
        self._tell(told, message_id, about=loop)

    def _one(self, name: str, found: list[Loop], message_id: Any) -> Loop | None:
        matches = loops.find(name, found) if name else []
        if len(matches) == 1:
            return matches[0]
        machines = len({one.machine for one in matches})
        if machines > 1:
            names = ", ".join(loops.address(one) for one in matches)
            why = f"{name!r} names loops on {machines} machines; say which: {names}."
        else:
            why = "Which loop?" if not name else f"No single loop named {name!r}."
        self._tell(f"{why}\n{_listing(found)}", message_id)
        return None

    def _tell(self, text: str, answer_to: Any, *, about: Loop | None = None) -> None:
        if not self.chat:
            return
        told: dict[str, Any] = {"chat_id": self.chat, "text": text}
        if isinstance(answer_to, int):
            told["reply_parameters"] = {"message_id": answer_to,
                                        "allow_sending_without_reply": True}  # fmt: skip
        sent = self.bot.try_call("sendMessage", told)
        if about is not None and isinstance(sent, dict) and isinstance(sent.get("message_id"), int):
            self._remember(sent["message_id"], about.key)

    def _remembered(self) -> dict[str, str]:
        try:
            data = readfile.json_document(readfile.read_text(self.memory))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _remember(self, message_id: int, key: str) -> None:
        known = self._remembered()
        known[str(message_id)] = key
        kept = dict(list(known.items())[-REMEMBERED:])
        with contextlib.suppress(OSError):
            self.memory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(self.memory, kept, mode=0o600)


def _listing(found: list[Loop]) -> str:
    if not found:
        return "No loops on this machine."
    lines = ["Loops:"]
    shared = {one.repo for one in found if sum(o.repo == one.repo for o in found) > 1}
    for one in found:
        since = loops.since_text(one)
        name = loops.address(one) if one.repo in shared else one.repo
        on = f" (on {one.machine})" if one.machine and one.repo not in shared else ""
        extra = f" · ${one.spend_usd:.2f} spent" if one.spend_usd is not None else ""
        extra += f" · {loops.live_line(one.live, 60)}" if one.live else ""
        extra += f" · Q: {fold(one.question, 60)}" if one.question else ""
        extra += " · pause pending" if one.paused_by and one.state != "paused" else ""
        lines.append(f"- {name}{on}: {one.state}, iteration {one.iteration}"
                     f"{' · ' + since if since else ''}{extra}")  # fmt: skip
    tail = "/pause <repo> · /resume <repo> · /stop <repo> · @<repo> <message>"
    if sum(len(line) + 1 for line in [*lines, tail]) > MAX_LISTING:
        kept: list[str] = []
        for line in lines:  # Telegram refuses a message over 4096 characters
            if sum(len(k) + 1 for k in kept) + len(line) + 120 > MAX_LISTING:
                break
            kept.append(line)
        more = len(lines) - len(kept)
        lines = [*kept, f"… and {more} more: `loopkit ps` or the inbox's Loops page lists all"]
    lines.append(tail)
    return "\n".join(lines)
