"""Standing approvals: ``.loopkit/allow.toml`` (SPEC section 30).

A gate question about a shell command or a file tool offers **Allow always here** beside
Approve and Reject. Chosen (two taps on a phone or in the inbox, like every P0 approval;
typed once on the command line), it approves the call and adds a rule here, bound to
this workspace and to:

- a shell command: the exact command — its SHA-256 (``command_sha256``; the text is kept
  beside it as the human saw it, secrets masked) — run in the same folder (``folder``,
  relative to the workspace). One character more or less, another folder: asked again.
- a file tool's call (Write, Edit, apply_patch, write_file …): the files it writes, as
  globs relative to the workspace (``files``; the exact paths as written, glob characters
  escaped — a human may widen them by hand, e.g. ``migrations/*.sql``).

Every later call that needs nothing beyond one rule passes at once — the Claude, Codex and
Gemini gates alike — with a ``gate_rule_used`` event naming the rule. ``loopkit rules``
lists them numbered; ``loopkit rules rm N`` removes one. The file is loopkit's: under
``loopkit run`` the agent cannot write it (it is in ``.loopkit/``, which the gate guards),
and a call the guard holds — one touching loopkit's own files — is never offered a rule,
nor passed by one. A file that does not read as rules passes nothing (every gated call is
asked) and says why.

Standard library only (``tomllib`` when a rule is read, ``tomli_w`` when one is written):
the gate's hook reads this file only once a call has met a gate rule.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from loopkit import atomicfile, clock
from loopkit.audit.chain import digest  # CPython's own SHA-256: hashlib loads OpenSSL
from loopkit.config import plaintoml
from loopkit.datarecord import record
from loopkit.errors import BadInput
from loopkit.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.gate")

FILE = os.path.join(".loopkit", "allow.toml")
LOCK = os.path.join(".loopkit", "locks", "allow.lock")
ALWAYS = "always"  # the option's value ("Allow always here")
_HEADER = (
    '# loopkit\'s standing approvals ("Allow always here"), written when a human chose it.\n'
    "# `loopkit rules` lists them numbered, `loopkit rules rm N` removes one. A command rule\n"
    "# passes that exact command (its SHA-256) in that folder; a files rule, the file tools'\n"
    "# writes to paths matching its globs (relative to the workspace). See docs/claude-code.md.\n"
)
_KEYS = frozenset(
    {
        "workspace",
        "folder",
        "command",
        "command_sha256",
        "files",
        "added_at",
        "by",
        "via",
        "request_id",
        "agent",
        "tool",
    }
)


def _sha256(text: str) -> str:
    found: str = digest(text.encode("utf-8", "surrogatepass"))
    return found


@record(frozen=True, slots=True)
class Wanted:
    """What a gated call needs of a rule to pass: the command's SHA-256 and folder, or the
    files it writes (relative to the workspace)."""

    folder: str | None = None
    command_sha256: str | None = None
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        if self.command_sha256 is not None:
            return {"folder": self.folder, "command_sha256": self.command_sha256}
        return {"files": list(self.files)}

    @classmethod
    def from_dict(cls, data: Any) -> Wanted | None:
        if not isinstance(data, dict):
            return None
        sha, folder, files = data.get("command_sha256"), data.get("folder"), data.get("files")
        if isinstance(sha, str) and isinstance(folder, str):
            return cls(folder=folder, command_sha256=sha)
        if isinstance(files, list) and files and all(isinstance(f, str) for f in files):
            return cls(files=tuple(files))
        return None


def _inside(workspace: str, path: str) -> str | None:
    """``path`` (absolute) relative to ``workspace``, or None when it is outside."""
    relative = os.path.relpath(os.path.normpath(path), os.path.normpath(workspace))
    if relative == ".." or relative.startswith("../") or os.path.isabs(relative):
        return None
    return relative


def wanted(workspace: str, cwd: str, commands: list[str], paths: list[str]) -> Wanted | None:
    """What a call needs of a standing rule — its one shell command (the exact text, in the
    folder it runs in), else the files its file tools write — or None when no rule can be
    offered for it (no command and no file, several commands, a place outside the
    workspace)."""
    if len(commands) > 1:
        return None
    if commands:
        folder = _inside(workspace, cwd)
        if folder is None:
            return None
        return Wanted(folder=folder, command_sha256=_sha256(commands[0]))
    files = []
    for path in paths:
        full = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
        relative = _inside(workspace, full)
        if relative is None or relative == ".":
            return None
        files.append(relative)
    return Wanted(files=tuple(files)) if files else None


@record(frozen=True, slots=True)
class Rule:
    """One standing approval, as ``allow.toml`` holds it."""

    workspace: str
    folder: str | None = None
    command: str | None = None  # as the human saw it (masked); never matched
    command_sha256: str | None = None
    files: tuple[str, ...] = ()
    added_at: str | None = None
    by: str | None = None
    via: str | None = None
    request_id: str | None = None
    agent: str | None = None
    tool: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"workspace": self.workspace}
        if self.command_sha256 is not None:
            data.update(
                folder=self.folder or ".",
                command=self.command or "",
                command_sha256=self.command_sha256,
            )
        else:
            data["files"] = list(self.files)
        extra = {
            "added_at": self.added_at,
            "by": self.by,
            "via": self.via,
            "request_id": self.request_id,
            "agent": self.agent,
            "tool": self.tool,
        }
        data.update((k, v) for k, v in extra.items() if v is not None)
        return data

    def shown(self) -> str:
        """One line for ``loopkit rules``: what it lets through, where, and who said so."""
        if self.command_sha256 is not None:
            where = "" if self.folder in (None, ".") else f" in {self.folder}/"
            what = f"`{self.command}`{where}"
        else:
            what = "writes to " + ", ".join(self.files)
        who = " ".join(
            part
            for part in (
                f"by {self.by}" if self.by else "",
                f"via {self.via}" if self.via else "",
                self.added_at or "",
            )
            if part
        )
        return f"{what} ({who})" if who else what

    def logged(self, number: int) -> dict[str, Any]:
        """The rule's fields in its events (added, used, removed: ``gate_rule_*``)."""
        return {
            "rule": number,
            "request_id": self.request_id,
            "command": self.command,
            "files": list(self.files) or None,
            "folder": self.folder,
        }

    def lets(self, workspace: str, need: Wanted) -> bool:
        """Whether this rule passes a call needing ``need`` in ``workspace``."""
        if os.path.realpath(self.workspace) != os.path.realpath(workspace):
            return False
        if need.command_sha256 is not None:
            return self.command_sha256 == need.command_sha256 and os.path.normpath(
                self.folder or "."
            ) == os.path.normpath(need.folder or ".")
        if self.command_sha256 is not None or not need.files:
            return False
        import fnmatch

        return all(
            any(fnmatch.fnmatchcase(path, glob) for glob in self.files) for path in need.files
        )


def _rule(data: Any, number: int, path: str) -> Rule:
    where = f"{path}: rule {number}"
    if not isinstance(data, dict):
        raise BadInput(f"{where}: not a table")
    unknown = set(data) - _KEYS
    if unknown:
        raise BadInput(f"{where}: unknown key {sorted(unknown)[0]!r}")
    texts = {k: v for k, v in data.items() if k != "files"}
    if not all(isinstance(v, str) for v in texts.values()):
        raise BadInput(f"{where}: every value but files is a string")
    if not isinstance(data.get("workspace"), str):
        raise BadInput(f"{where}: no workspace")
    files = data.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise BadInput(f"{where}: files is a list of globs")
    has_command = isinstance(data.get("command_sha256"), str)
    if has_command == bool(files):
        raise BadInput(f"{where}: either command_sha256 (and folder) or files")
    if has_command and len(data["command_sha256"]) != 64:
        raise BadInput(f"{where}: command_sha256 is a SHA-256 in hex")
    return Rule(**{**texts, "files": tuple(files)})


def load(workspace: str | Path) -> list[Rule]:
    """The rules of ``workspace``, in order (none when there is no file). A file that does
    not read as rules raises BadInput (exit 65), naming it."""
    path = os.path.join(workspace, FILE)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        data = plaintoml.loads(text)  # what loopkit writes, read without tomllib's import
        if data is None:
            import tomllib

            data = tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise BadInput(f"{path}: not rules loopkit can read ({exc}); fix or remove it") from None
    rules = data.get("allow", [])
    if set(data) - {"allow"} or not isinstance(rules, list):
        raise BadInput(f"{path}: holds something other than [[allow]] rules; fix or remove it")
    return [_rule(entry, number, path) for number, entry in enumerate(rules, start=1)]


def find(workspace: str, need: Wanted) -> tuple[int, Rule] | None:
    """The first rule (numbered from 1) that passes a call needing ``need``, else None."""
    for number, rule in enumerate(load(workspace), start=1):
        if rule.lets(workspace, need):
            return number, rule
    return None


@contextlib.contextmanager
def _locked(workspace: str | Path) -> Iterator[None]:
    lock = Path(workspace) / LOCK
    lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _save(workspace: str | Path, rules: list[Rule]) -> None:
    import tomli_w

    text = _HEADER + (
        "\n" + tomli_w.dumps({"allow": [r.to_dict() for r in rules]}) if rules else ""
    )
    atomicfile.write_bytes(Path(workspace) / FILE, text.encode(), mode=0o600)


def rule_from(workspace: str, record: Request) -> Rule | None:
    """The rule a gate request answered "Allow always here" asks for, or None."""
    gate = record.gate or {}
    need = Wanted.from_dict(gate.get("standing"))
    if need is None:
        return None
    res = record.resolution
    return Rule(
        workspace=os.path.realpath(workspace),
        folder=need.folder,
        command=str(gate.get("command") or "") if need.command_sha256 else None,
        command_sha256=need.command_sha256,
        files=tuple(_escaped(f) for f in need.files),
        added_at=clock.iso_seconds(),
        by=res.by if res else None,
        via=res.via if res else None,
        request_id=record.request_id,
        agent=str(gate.get("agent")) if gate.get("agent") else None,
        tool=str(gate.get("tool")) if gate.get("tool") else None,
    )


def _escaped(path: str) -> str:
    """``path`` as a glob that matches only itself."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in path)


def add(workspace: str | Path, rule: Rule) -> tuple[int, bool]:
    """Add ``rule`` (once per request: adding it again changes nothing). Returns its number
    and whether it was added now."""
    with _locked(workspace):
        rules = load(workspace)
        for number, existing in enumerate(rules, start=1):
            if rule.request_id is not None and existing.request_id == rule.request_id:
                return number, False
        rules.append(rule)
        _save(workspace, rules)
        return len(rules), True


def remove(workspace: str | Path, number: int) -> Rule:
    """Remove rule ``number`` (as ``loopkit rules`` numbers them); BadInput when there is
    none."""
    with _locked(workspace):
        rules = load(workspace)
        if not 1 <= number <= len(rules):
            have = f"rules 1–{len(rules)}" if rules else "no rules"
            raise BadInput(f"no rule {number}: {Path(workspace) / FILE} has {have}")
        gone = rules.pop(number - 1)
        _save(workspace, rules)
        return gone


def on_answer(workspace: str | Path, record: Request, store: RequestStore | None = None) -> None:
    """Allow always here, chosen on a gate's question (SPEC §30): its rule goes into the
    workspace's ``.loopkit/allow.toml`` — after the answer is recorded, so a crash between
    loses the rule (the next identical call is asked again), never adds one unanswered. The
    approval's own single use is the rule's from then on (taken on ``store``): removing the
    rule leaves nothing that lets the call through."""
    res = record.resolution
    if res is None or res.outcome != ALWAYS:
        return
    rule = rule_from(str(workspace), record)
    if rule is None:
        return
    try:
        number, added = add(workspace, rule)
    except (BadInput, OSError) as exc:
        log.warning(
            "gate_rule_not_added",
            request_id=record.request_id,
            msg=f"the standing approval of {record.request_id} was not written: {exc}",
        )
        return
    if added and store is not None:

        def used(fresh: Request) -> bool:
            if fresh.consumed_at:
                return False
            fresh.consumed_at = clock.iso_seconds()
            return True

        store.update(record.request_id, used)
    if added:
        log.info(
            "gate_rule_added",
            **rule.logged(number),
            by=rule.by,
            via=rule.via,
            workspace=str(workspace),
            msg=f"standing rule {number} added to {FILE}: {rule.shown()}",
        )
