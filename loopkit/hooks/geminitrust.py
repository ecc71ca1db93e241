"""Gemini CLI runs a folder's hooks only in a folder it trusts (SPEC section 23).

Gemini CLI 0.61 (google-gemini/gemini-cli ``packages/cli/src/config/trustedFolders.ts``,
https://geminicli.com/docs/cli/trusted-folders/): with folder trust on
(``security.folderTrust.enabled``, default true), a headless run in an untrusted folder
exits 55, and ``--skip-trust`` runs it with the folder's settings — its hooks — off.
Trust comes from ``GEMINI_CLI_TRUST_WORKSPACE=true`` (``false``, or
``GEMINI_RESTRICTED_MODE=true``, distrusts), else from the trusted-folders file
(``GEMINI_CLI_TRUSTED_FOLDERS_PATH``, else ``~/.gemini/trustedFolders.json``): a JSON object
of path → ``TRUST_FOLDER`` | ``TRUST_PARENT`` (the path's parent) | ``DO_NOT_TRUST``, the
longest rule containing the folder (real paths) deciding.

:func:`arrange` (``loopkit init --agent gemini``) adds the folder as ``TRUST_FOLDER``, as
Gemini CLI's own trust dialog writes it; :func:`check` (``doctor``) decides as Gemini CLI
does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from loopkit import atomicfile, readfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def folders_file(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    given = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    if given:
        return Path(given)
    home = Path(env.get("HOME") or Path.home())
    if env.get("SANDBOX") == "sandbox-exec":
        return home / ".cache" / ".gemini" / "trustedFolders.json"
    return home / ".gemini" / "trustedFolders.json"


def _rules(path: Path) -> dict[str, str]:
    try:
        text = readfile.read_text(path)
    except FileNotFoundError:
        return {}
    data = readfile.json_document(_strip_comments(text))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return {k: v for k, v in data.items() if isinstance(k, str) and v in LEVELS}


def _strip_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments, as Gemini CLI reads the file."""
    out, i, quoted = [], 0, False
    while i < len(text):
        c = text[i]
        if quoted:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1 : i + 2])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _real(path: str) -> str:
    return os.path.realpath(path) if os.path.exists(path) else os.path.normpath(path)


def _inside(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _enabled(env: Mapping[str, str]) -> bool:
    """``security.folderTrust.enabled`` of the user's settings (default true)."""
    home = Path(env.get("HOME") or Path.home())
    try:
        settings = readfile.json_document(_strip_comments(
            readfile.read_text(home / ".gemini" / "settings.json")))  # fmt: skip
    except (OSError, ValueError):
        return True
    trust = (
        (settings.get("security") or {}).get("folderTrust") if isinstance(settings, dict) else None
    )
    return not (isinstance(trust, dict) and trust.get("enabled") is False)


def trusted(root: Path, env: Mapping[str, str] | None = None) -> tuple[bool | None, str]:
    """Whether Gemini CLI trusts ``root`` (None: no rule says: untrusted, asked
    interactively), and why."""
    env = os.environ if env is None else env
    if (
        env.get("GEMINI_RESTRICTED_MODE") == "true"
        or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false"
    ):
        return (
            False,
            "the environment distrusts every folder "
            "(GEMINI_RESTRICTED_MODE / GEMINI_CLI_TRUST_WORKSPACE)",
        )
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True, "GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder"
    if not _enabled(env):
        return True, "folder trust is off (security.folderTrust.enabled = false)"
    path = folders_file(env)
    rules = _rules(path)
    location = _real(str(root))
    best: tuple[int, str] | None = None
    for rule, level in rules.items():
        effective = os.path.dirname(rule) if level == "TRUST_PARENT" else rule
        if _inside(_real(effective), location) and (best is None or len(rule) > best[0]):
            best = (len(rule), level)
    if best is None:
        return None, f"no rule of {path} names {root} or a folder above it"
    if best[1] == "DO_NOT_TRUST":
        return False, f"{path} says DO_NOT_TRUST for {root}"
    return True, f"{path} trusts {root} ({best[1]})"


def arrange(root: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Trust ``root`` in the trusted-folders file (``TRUST_FOLDER``, its real path); what was
    done (empty: it was trusted already)."""
    env = os.environ if env is None else env
    known, _ = trusted(root, env)
    if known:
        return []
    path = folders_file(env)
    try:
        text = readfile.read_text(path)
        data: Any = readfile.json_document(_strip_comments(text))
    except FileNotFoundError:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object; fix it, then run this again")
    folder = _real(str(root))
    data[folder] = "TRUST_FOLDER"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomicfile.write_text(path, json.dumps(data, indent=2) + "\n", mode=0o600)
    return [f"{path}: trusted {folder} (TRUST_FOLDER): Gemini CLI runs its hooks only there"]


def check(root: Path, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether Gemini CLI will run loopkit's hooks in ``root``, and why."""
    try:
        known, why = trusted(root, env)
    except (OSError, ValueError) as exc:
        return False, f"cannot read Gemini CLI's trusted folders ({exc}): it refuses to start"
    if known:
        return True, f"Gemini CLI trusts this folder: {why}"
    return False, (
        f"Gemini CLI does not trust {root} ({why}): a headless run exits 55, and "
        "`--skip-trust` runs it with the hooks off; run `loopkit init --agent gemini` (it "
        "adds the folder to Gemini CLI's trusted folders) or trust it in `gemini`"
    )
