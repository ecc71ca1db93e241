"""Codex runs a project's hooks only in a trusted project, and only hooks a human reviewed
(SPEC section 23) — asked of Codex itself.

Codex loads ``<repo>/.codex/`` (its ``hooks.json`` among it) only for a project whose
``[projects."<root>"] trust_level`` is ``"trusted"`` in ``$CODEX_HOME/config.toml``, and
runs an unmanaged hook only while its ``[hooks.state."<key>"] trusted_hash`` is the hook's
current hash (openai/codex ``codex-rs/hooks/src/engine/discovery.rs``: a hook is
*untrusted*, *modified* or *trusted*). Codex's app server answers both questions and
writes both settings (``codex app-server``, JSON-RPC over stdio: ``initialize``,
``hooks/list`` with ``cwds``, ``config/batchWrite``; the schema is
``codex app-server generate-json-schema``). So loopkit never computes Codex's hashes: it
asks Codex for its hook list, and trusts exactly loopkit's own hooks there, at the hash
Codex reports.

:func:`arrange` (``loopkit init --agent codex``, ``hook install codex``) trusts the project
and loopkit's hooks in it; :func:`check` (``doctor``) reads the list as Codex will.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time

from loopkit.datarecord import record
from loopkit.hooks.agentconfig import AGENTS, codex_home, ours

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

TIMEOUT = 30.0
REVIEW = (
    "open `codex` in {root} and review loopkit's hook (Codex asks before it runs a new or "
    "changed hook), or run `loopkit hook install codex` again"
)


class CodexUnavailable(RuntimeError):
    """Codex is not installed here, or its app server did not answer."""


@record(frozen=True, slots=True)
class Hook:
    key: str
    command: str
    event: str
    enabled: bool
    trust: str  # "trusted", "untrusted", "modified", "managed"
    current_hash: str

    @property
    def runs(self) -> bool:
        return self.enabled and self.trust in ("trusted", "managed")


class AppServer:
    """``codex app-server`` spoken with over stdio, one request at a time."""

    def __init__(self, program: str | None = None, env: dict[str, str] | None = None) -> None:
        found = program or shutil.which("codex")
        if found is None:
            raise CodexUnavailable("codex is not on PATH")
        try:
            self.proc = subprocess.Popen(
                [found, "app-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise CodexUnavailable(f"cannot start `codex app-server` ({exc.strerror})") from None
        self._buffer = b""
        self._next = 0
        self.call("initialize", {"clientInfo": {"name": "loopkit", "version": "1"}})
        self._send({"method": "initialized"})

    def __enter__(self) -> AppServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        proc = self.proc
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise CodexUnavailable(f"`codex app-server` stopped ({exc})") from None

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self._next += 1
        ident = self._next
        self._send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._read(deadline)
            if message.get("id") != ident or "method" in message:
                continue  # a notification, or a request of its own (none is answered)
            if "error" in message:
                error = message["error"]
                said = error.get("message") if isinstance(error, dict) else error
                raise CodexUnavailable(f"codex app-server: {method}: {said}")
            return message.get("result")

    def _read(self, deadline: float) -> dict[str, Any]:
        stdout = self.proc.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CodexUnavailable(f"`codex app-server` did not answer in {TIMEOUT:g} s")
            ready, _, _ = select.select([stdout], [], [], remaining)
            if ready:
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    raise CodexUnavailable("`codex app-server` exited")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}

    def hooks(self, root: Path) -> list[Hook]:
        result = self.call("hooks/list", {"cwds": [str(root)]}) or {}
        found: list[Hook] = []
        for entry in result.get("data") or []:
            for hook in entry.get("hooks") or [] if isinstance(entry, dict) else []:
                if isinstance(hook, dict) and isinstance(hook.get("key"), str):
                    found.append(Hook(hook["key"], str(hook.get("command") or ""),
                                      str(hook.get("eventName")), bool(hook.get("enabled")),
                                      str(hook.get("trustStatus")),
                                      str(hook.get("currentHash") or "")))  # fmt: skip
        return found

    def write(self, key_path: str, value: dict[str, Any]) -> None:
        self.call("config/batchWrite", {
            "edits": [{"keyPath": key_path, "mergeStrategy": "upsert", "value": value}],
        })  # fmt: skip


def _ours(hook: Hook) -> bool:
    return ours(hook.command, AGENTS["codex"].words) is not None


def arrange(root: Path, *, program: str | None = None) -> list[str]:
    """Trust the project at ``root`` and loopkit's hooks in it, in Codex's user config, as
    Codex itself writes them; what was done (empty: it was so already). Raises
    :class:`CodexUnavailable` when Codex cannot be asked."""
    root = root.resolve()
    done: list[str] = []
    with AppServer(program) as codex:
        listed = codex.hooks(root)
        if not any(_ours(h) for h in listed):
            codex.write("projects", {str(root): {"trust_level": "trusted"}})
            done.append(f"trusted the project {root} (Codex loads its .codex/ only then)")
            listed = codex.hooks(root)
        for hook in listed:
            if _ours(hook) and hook.trust not in ("trusted", "managed"):
                codex.write("hooks.state", {hook.key: {"trusted_hash": hook.current_hash}})
                done.append(f"trusted loopkit's hook {hook.key} ({hook.trust} before)")
    return done


def check(root: Path, *, program: str | None = None) -> tuple[bool, str]:
    """Whether Codex will run loopkit's PreToolUse hook in ``root``, and what it said."""
    try:
        with AppServer(program) as codex:
            listed = [h for h in codex.hooks(root.resolve()) if _ours(h)]
    except CodexUnavailable as exc:
        return True, f"cannot ask Codex ({exc}); not checked"
    if not listed:
        return False, (
            f"Codex lists no loopkit hook for {root}: the project is not trusted (Codex loads "
            "its .codex/ only in a trusted project) or .codex/hooks.json lacks it; "
            "run `loopkit hook install codex`"
        )
    idle = [h for h in listed if not h.runs]
    if idle:
        states = ", ".join(f"{h.key}: {'disabled' if not h.enabled else h.trust}" for h in idle)
        return False, f"Codex will not run loopkit's hook ({states}); {REVIEW.format(root=root)}"
    return True, f"Codex runs loopkit's hook ({', '.join(h.key for h in listed)}: trusted)"


def trust(root: Path) -> list[str]:
    """Codex asked to trust the project and loopkit's hooks in it (the lines say what was
    done); when it cannot be asked, the one line that says what to do."""
    try:
        done = arrange(root)
    except CodexUnavailable as exc:
        return [
            f"not trusted yet: {exc}. Codex runs a project's hooks only in a trusted project "
            "and once each is reviewed: run `loopkit hook install codex` here again once "
            "`codex` is on PATH"
        ]
    return [f"{codex_home() / 'config.toml'}: {line}" for line in done]
