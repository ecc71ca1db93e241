"""What the inbox's pages show, read from the registered workspaces (no HTTP in here).

Every function is handed the process's :class:`~loopkit.requests.locate.Stores` (this
machine's workspaces, each with its own hub) and :class:`~loopkit.fleet.Hubs` (the fleets,
for other machines' requests).

Every workspace is addressed by its registry id (``home.workspace_id``), never by a path
from the request, so a URL cannot name a folder loopkit was not told about. Context refs
are shown only when they are regular text files inside their workspace, cut at
:data:`REF_LINES` lines; anything else is listed by name.
"""

from __future__ import annotations

from pathlib import Path

from loopkit import clock, readfile
from loopkit.datarecord import field, record
from loopkit.errors import LoopkitError
from loopkit.escalation import evidence
from loopkit.escalation.dismiss import is_ghost
from loopkit.home import workspace_id
from loopkit.inbox.entries import Entry, open_requests
from loopkit.loops import remote_key
from loopkit.message import LETTERS, age, clean
from loopkit.redact import Redactor
from loopkit.requests.models import Resolution
from loopkit.requests.reading import reading as reading_of
from loopkit.requests.record import Request, is_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.escalation.evidence import Evidence
    from loopkit.fleet import Hubs
    from loopkit.requests.locate import Place, Stores
    from loopkit.requests.store import RequestStore

REF_LINES = 200
REF_BYTES = 256 * 1024


@record(frozen=True, slots=True)
class Ref:
    name: str
    text: str | None = None  # the file's first REF_LINES lines, when it is one to show
    cut: bool = False
    link: str | None = None  # an https URL


@record(slots=True)
class Card:
    """One request as a page shows it."""

    record: Request
    workspace: Path
    repo: str
    key: str  # the workspace's registry id ("m…" for another machine's, with a fleet)
    refs: list[Ref] = field(default_factory=list)
    machine: str | None = None  # another machine's request (a fleet)
    ghost: bool = False  # its own BLOCKED.md is gone: nobody will answer it (SPEC §16)

    @property
    def url(self) -> str:
        return f"/r/{self.key}/{self.record.request_id}"

    @property
    def age(self) -> str:
        try:
            return age((clock.now() - clock.parse_iso(self.record.asked_at)).total_seconds())
        except ValueError:
            return "?"

    @property
    def deadline(self) -> str | None:
        row: dict[str, Any] = Entry(self.record, self.workspace, self.repo).row()
        if not row["deadline"]:
            return None
        return f"{row['deadline'][11:16]} UTC → {row['timeout_action']}"

    @property
    def choices(self) -> list[tuple[str, str, str]]:
        """(letter, label, consequence) for each option."""
        return [
            (LETTERS[i], o.label, o.consequence or "")
            for i, o in enumerate(self.record.options[:3])
        ]

    @property
    def resolution(self) -> Resolution:
        return self.record.resolution or Resolution()

    @property
    def reading(self) -> str:
        """How the answer was read (SPEC section 16), as every surface tells it."""
        return reading_of(self.record)


def _card(entry: Entry) -> Card:
    if entry.machine:
        key = remote_key(entry.machine, str(entry.workspace))
        return Card(entry.record, entry.workspace, entry.repo, key, machine=entry.machine)
    key = workspace_id(entry.workspace)
    return Card(entry.record, entry.workspace, entry.repo, key, ghost=entry.ghost)


def open_cards(stores: Stores, hubs: Hubs) -> list[Card]:
    return [_card(entry) for entry in open_requests(stores, hubs)]


def _place(key: str, stores: Stores) -> tuple[Path, str, Place] | None:
    for registered, place in stores.registered():
        if workspace_id(registered.path) == key:
            return registered.path, registered.repo, place
    return None


def find(key: str, request_id: str, stores: Stores, hubs: Hubs) -> Card | None:
    """The request ``request_id`` of the workspace with registry id ``key``, if both exist;
    another machine's as the fleet has it now (answered there: its answer)."""
    if not is_id(request_id):
        return None
    if key.startswith("m"):
        found = hubs.find(request_id)
        if found is None:
            return None
        remote = found[1]
        if remote_key(remote.machine, remote.workspace) != key:
            return None
        where = Path(remote.workspace)
        return Card(remote.record, where, remote.repo, key, machine=remote.machine)
    located = _place(key, stores)
    if located is None:
        return None
    path, repo, place = located
    try:
        record = place.store.load(request_id)
    except LoopkitError:
        return None
    card = Card(record, path, repo, key, ghost=is_ghost(place.store, record))
    card.refs = [_ref(path, ref) for ref in record.context_refs]
    return card


def store_of(card: Card, stores: Stores) -> RequestStore:
    return stores.of(card.workspace)


def history(stores: Stores, limit: int = 100) -> list[Card]:
    """Resolved and expired requests of every workspace, the most recent first."""
    found: list[Card] = []
    for registered, place in stores.registered():
        key = workspace_id(registered.path)
        try:
            records = list(place.store.all())
        except LoopkitError:
            continue
        for _, stored in records:
            if isinstance(stored, Request) and not stored.is_open:
                found.append(Card(stored, registered.path, registered.repo, key))
    found.sort(key=lambda c: str(c.resolution.resolved_at or c.record.updated_at))
    return found[::-1][:limit]


def _ref(root: Path, ref: str) -> Ref:
    if ref.startswith("https://"):
        return Ref(ref, link=ref)
    path = (root / ref).resolve()
    if not path.is_relative_to(root.resolve()):
        return Ref(ref)  # outside the workspace: named, never read
    try:
        raw = readfile.read_bytes(path, REF_BYTES)
    except OSError:
        return Ref(ref)
    if b"\x00" in raw[:4096]:
        return Ref(ref)  # not text
    lines = raw.decode("utf-8", "replace").splitlines()
    return Ref(ref, clean("\n".join(lines[:REF_LINES])), cut=len(lines) > REF_LINES)


def evidence_of(card: Card, stores: Stores) -> Evidence | None:
    """The agent's last output and the diff since the task started (SPEC §22), for an open
    request of this machine's (another machine's files are not here to read)."""
    if card.machine is not None or not card.record.is_open:
        return None
    try:
        place = stores.place(card.workspace)
    except LoopkitError:
        return None
    workspace = place.workspace
    redactor = Redactor(place.config.channels.secrets())
    return evidence.gather(workspace, redactor, base=evidence.task_base(workspace))
