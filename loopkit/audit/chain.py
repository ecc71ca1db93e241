"""``.loopkit/audit.jsonl``: one JSON line per audited event, each carrying the SHA-256 of the
line before it (a hash chain), and ``loopkit audit verify``.

A line is ``{"seq": N, "prev": "<sha256 of line N-1>", "at": …, "event": …, …}`` — compact
JSON, ASCII only, one line. ``seq`` counts from 1; the first line's ``prev`` is 64 zeros.
``.loopkit/audit.head`` holds the last line's ``seq`` and SHA-256, so that lines cut from the
end, or an edited last line, are found too.

**Appending** (:func:`append`) is one step under an ``flock`` of ``.loopkit/locks/audit.lock``,
whoever appends — a hook's process, the supervisor, a short command, ``serve``: read the last
line, append the new one with its ``seq`` and ``prev`` in a single ``write`` on an
``O_APPEND`` descriptor, ``fdatasync``, then write the head atomically (not synced: one sync
per line). So concurrent writers keep the chain whole, and a crash leaves at worst a *torn*
last line (a write cut short: bytes after the last newline) or a head some lines behind —
never ahead: the head is written only after its line is durable.

**A torn line is not tampering**, and is told apart like this: it is the file's last bytes,
with no newline after them, and the complete lines before it end where the head says the
chain ends (the head is written only after a line is whole, so a crash mid-line leaves the
head at the line before). The next append cuts the torn bytes off and records that it did
(an ``audit_torn`` line naming their length and SHA-256) before its own line; ``verify``
reports a torn tail as such and exits 0. Bytes without a newline anywhere else, or a tail
beyond where the head says the chain ends, are not a crash's.

**Verifying** (:func:`verify`) reads the chain in order and names the first line that is not
as written: a line that is not a record, a ``seq`` out of order (a line dropped, or lines
reordered or duplicated), a ``prev`` that is not the SHA-256 of the line before (that line
was edited), and at the end a head that does not match (lines cut from the end, the last line
edited). Any single edit, drop, insertion or reordering is found. What a chain cannot show is
a whole trail rewritten consistently, head included: shipping the events elsewhere as they
happen (OpenTelemetry, :mod:`loopkit.audit.otel`, with each line's ``seq`` and SHA-256) is
what makes that visible.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os

from loopkit import atomicfile
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

GENESIS = "0" * 64
HEAD_VERSION = "audit-head 1"
_RESERVED = ("seq", "prev")
_CHUNK = 8192


try:  # CPython's own SHA-256: hashlib's import loads OpenSSL, ~2 ms of a short command
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # before 3.12
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha256


def digest(line: bytes) -> str:
    """The SHA-256 of one line, without its newline, in hex."""
    found: str = sha256(line).hexdigest()
    return found


@record(frozen=True, slots=True)
class Trail:
    """The audit files of one workspace, from its ``.loopkit/`` folder."""

    state_dir: Path

    @property
    def path(self) -> Path:
        return self.state_dir / "audit.jsonl"

    @property
    def head(self) -> Path:
        return self.state_dir / "audit.head"

    @property
    def lock(self) -> Path:
        return self.state_dir / "locks" / "audit.lock"


@record(frozen=True, slots=True)
class Appended:
    """A line written: its ``seq`` and SHA-256 (what a shipped copy carries)."""

    seq: int
    sha256: str


def line_of(seq: int, prev: str, entry: dict[str, Any]) -> bytes:
    """The line for ``entry`` at ``seq`` after a line whose SHA-256 is ``prev`` (no
    newline). A field of the entry named ``seq`` or ``prev`` is kept as ``field_seq``."""
    body: dict[str, Any] = {"seq": seq, "prev": prev}
    for key, value in entry.items():
        body[f"field_{key}" if key in _RESERVED else key] = value
    return json.dumps(body, ensure_ascii=True, separators=(",", ":"), default=str).encode()


# --- appending ------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(trail: Trail) -> Any:
    trail.lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(trail.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _tail(fd: int, size: int) -> tuple[bytes | None, bytes]:
    """The last complete line (None: there is none) and the torn bytes after it."""
    end = size
    data = b""
    while True:
        start = max(0, end - _CHUNK)
        data = os.pread(fd, end - start, start) + data
        end = start
        last = data.rfind(b"\n")
        torn = data[last + 1 :] if last >= 0 else data
        if last >= 0:
            before = data.rfind(b"\n", 0, last)
            if before >= 0 or start == 0:
                return data[before + 1 : last], torn
        elif start == 0:
            return None, torn


def _count(fd: int) -> int:
    """Complete lines in the file (a broken last line's ``seq`` is counted instead)."""
    count, offset = 0, 0
    while chunk := os.pread(fd, 1 << 20, offset):
        count += chunk.count(b"\n")
        offset += len(chunk)
    return count


def _seq_of(line: bytes) -> int | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    seq = data.get("seq") if isinstance(data, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def append(trail: Trail, entry: dict[str, Any]) -> Appended:
    """Add ``entry`` at the end of the chain (see the module: one step under the lock,
    fsynced, the head written after). A torn tail a crash left is cut off first, and the
    cut recorded."""
    with _locked(trail):
        fd = os.open(trail.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            last, torn = _tail(fd, size) if size else (None, b"")
            if last is None:
                seq, prev = 0, GENESIS
            else:
                found = _seq_of(last)
                seq = found if found is not None else _count(fd)
                prev = digest(last)
            lines = []
            gap = _gap(_head(trail), seq, prev)
            if torn:
                os.ftruncate(fd, size - len(torn))
            if gap is not None:
                # The file does not end where the head says: lines were cut from the end or
                # the last one edited since. Said in the chain itself, so that appending
                # does not hide it (verify names this line).
                seq += 1
                said: dict[str, Any] = {"event": GAP, "found_seq": seq - 1, "msg": gap}
                if torn:
                    said |= {"bytes": len(torn), "sha256": digest(torn)}
                lines.append(line_of(seq, prev, said))
                prev = digest(lines[-1])
            elif torn:
                seq += 1
                cut = {
                    "event": "audit_torn",
                    "bytes": len(torn),
                    "sha256": digest(torn),
                    "msg": "a line cut short by a crash was removed",
                }
                lines.append(line_of(seq, prev, cut))
                prev = digest(lines[-1])
            seq += 1
            lines.append(line_of(seq, prev, entry))
            os.write(fd, b"".join(line + b"\n" for line in lines))
            os.fdatasync(fd)  # the line is durable before anything says it is there
        finally:
            os.close(fd)
        sha = digest(lines[-1])
        # Atomic, not synced: a power cut may leave the head some lines behind the file —
        # never ahead of it — which verify tells apart (a head behind is a crash's).
        head = f"{HEAD_VERSION}\n{seq} {sha}\n".encode()
        atomicfile.write_bytes(trail.head, head, mode=0o600, durable=False)
        return Appended(seq, sha)


GAP = "audit_gap"  # the event of a line written after the trail was found cut or edited


def _gap(head: tuple[int, str] | str | None, seq: int, prev: str) -> str | None:
    """Why the chain's end (``seq`` lines, the last one's SHA-256 ``prev``) is not where
    ``head`` says it is, or None. A head behind the file is a crash's (the head is written
    after its line); a missing head with at most one line too (a crash before the first
    head)."""
    if isinstance(head, str):
        return f"the head {head}"
    if head is None:
        return None if seq <= 1 else f"the head is gone with {seq} line(s) in the trail"
    head_seq, head_sha = head
    if seq < head_seq:
        return f"{head_seq - seq} line(s) cut from the end (the head names line {head_seq})"
    if seq == head_seq and prev != head_sha:
        return f"line {seq} edited after it was written (the head records another SHA-256)"
    return None


# --- verifying ------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class Verdict:
    """What :func:`verify` found: ``problem`` (None: the chain holds) names the first bad
    line as ``audit.jsonl:N: …``; ``notes`` are what is not tampering (a torn last line, a
    head one line behind after a crash)."""

    lines: int
    problem: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.problem is None


def _head(trail: Trail) -> tuple[int, str] | str | None:
    """The head's ``(seq, sha256)``; None when there is none; a string saying what is wrong
    with one that cannot be read."""
    try:
        text = trail.head.read_text("ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read ({exc})"
    first, _, rest = text.partition("\n")
    parts = rest.split()
    if first != HEAD_VERSION or len(parts) != 2 or not parts[0].isdigit() or len(parts[1]) != 64:
        return "is not a head loopkit wrote"
    return int(parts[0]), parts[1]


def verify(trail: Trail, *, name: str | None = None) -> Verdict:
    """Check the chain of ``trail`` line by line (see the module). ``name``: how the file is
    named in what is said (default: its file name)."""
    name = name or trail.path.name
    try:
        data = trail.path.read_bytes()
    except FileNotFoundError:
        data = b""
    head = _head(trail)
    if isinstance(head, str):
        return Verdict(0, f"{trail.head.name}: {head}")
    *complete, torn = data.split(b"\n")
    notes: list[str] = []
    seq, prev = 0, GENESIS
    head_sha = head[1] if isinstance(head, tuple) and head[0] == len(complete) else None
    for number, line in enumerate(complete, start=1):
        after = _prev_of(complete[number]) if number < len(complete) else head_sha
        problem = _check_line(line, number, seq, prev, complete, after)
        if problem is not None:
            where, what = problem
            return Verdict(where - 1, f"{name}:{where}: {what}")
        if json.loads(line).get("event") == GAP:
            said = json.loads(line).get("msg")
            return Verdict(number - 1, f"{name}:{number}: written after the trail was cut or "
                                       f"edited before it: {said}")  # fmt: skip
        seq, prev = seq + 1, digest(line)
    count = len(complete)
    at_head = (head is None and count == 0) or head == (seq, prev)
    if head is not None and not isinstance(head, str) and head != (seq, prev):
        head_seq, head_sha = head
        if 0 < head_seq < seq and digest(complete[head_seq - 1]) == head_sha:
            # Whole lines, chained, after the line the head names: written while a crash (or
            # a power cut, which the head's unsynced write may not outlive) kept the head
            # behind — never ahead: it is written only once its line is durable. The next
            # append writes it again.
            notes.append(
                f"{name}:{head_seq + 1}: newer than {trail.head.name} (a crash before the head "
                "was written): kept"
            )
            at_head = True
        elif head_seq > seq:
            gone = head_seq - seq
            return Verdict(
                count,
                f"{name}:{count + 1}: {gone} line(s) cut from the end "
                f"({trail.head.name} says the chain ends at line {head_seq})",
            )
        elif head_seq == seq:
            return Verdict(
                count,
                f"{name}:{count}: edited (its SHA-256 is not the one {trail.head.name} recorded)",
            )
        else:
            return Verdict(
                count,
                f"{name}:{max(head_seq, 1)}: edited (its SHA-256 is not the one "
                f"{trail.head.name} recorded)",
            )
    elif head is None and count:
        return Verdict(
            count,
            f"{trail.head.name}: missing, but {name} has {count} line(s): "
            "removed, or the trail was copied without it",
        )
    if torn:
        if not at_head:
            return Verdict(
                count,
                f"{name}:{count + 1}: bytes with no end of line after a chain "
                "that does not end where the head says",
            )
        notes.append(
            f"{name}:{count + 1}: torn last line ({len(torn)} bytes, a crash while it "
            "was written; not tampering): the next append removes it"
        )
    return Verdict(count, None, tuple(notes))


def _prev_of(line: bytes) -> str | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data.get("prev") if isinstance(data, dict) else None


def _check_line(
    line: bytes, number: int, seq: int, prev: str, lines: list[bytes], after: str | None
) -> tuple[int, str] | None:
    """The first bad line and what is wrong with it, when the line at ``number`` does not
    follow a chain of ``seq`` lines ending in ``prev``; else None. A ``prev`` that is not
    the line before's SHA-256 says one of the two was edited: this line, when what comes
    after it (the next line's ``prev``, or the head: ``after``) does not know it either;
    else the line before."""
    found = _wrong(line, seq)
    if found == "ahead":
        due = seq + 1
        later = any(_seq_of(other) == due for other in lines[number:])
        what = "reordered" if later else "dropped"
        found = f"seq {_seq_of(line)} where {due} was due: line(s) {what} before it"
    if found is not None:
        return number, found
    if json.loads(line).get("prev") != prev:
        if number == 1:
            return 1, "the first line does not start the chain (edited)"
        if after is not None and after != digest(line):
            return number, "edited (neither the line before nor the one after agrees with it)"
        return number - 1, (
            f"edited, or line {number} is not the line written after it (line {number} "
            "records another SHA-256 for it)"
        )
    return None


def _wrong(line: bytes, seq: int) -> str | None:
    try:
        data = json.loads(line)
    except ValueError:
        return "not a JSON record (edited, or written by something else)"
    if not isinstance(data, dict):
        return "not a JSON record (edited, or written by something else)"
    if line != line_of(data.get("seq", 0), str(data.get("prev")), _entry(data)):
        return "not as loopkit writes it (edited)"
    found = data.get("seq")
    if not isinstance(found, int) or isinstance(found, bool):
        return "no sequence number (edited)"
    if found > seq + 1:
        return "ahead"  # dropped, or reordered: the caller looks further
    if found < seq + 1:
        return (
            f"seq {found} where {seq + 1} was due: lines reordered or repeated, or a line "
            "inserted before it"
        )
    return None


def _entry(data: dict[str, Any]) -> dict[str, Any]:
    entry = {}
    for key, value in data.items():
        if key in _RESERVED:
            continue
        entry[key[6:] if key.startswith("field_") and key[6:] in _RESERVED else key] = value
    return entry
