"""A gated call whose approval cannot be asked, or recorded as used, is denied; and whatever
breaks inside the hook exits 2, never 1 (SPEC section 17, "Never fail open").

Claude Code's hooks reference makes any exit but 0 and 2 a non-blocking error: the call runs
(``claudecode.py`` plays Claude Code to that contract). So each case is judged as Claude
Code would judge it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import claudecode

from helpers import LOOPKIT, clean_env, loopkit, read_only_prefix, write_config

HOOK = [str(LOOPKIT), "hook", "claude", "pretooluse"]
PUSH = "git push --force origin main"


def event(ws: Path, command: str = PUSH, **extra: object) -> dict[str, object]:
    return {
        "session_id": "s",
        "cwd": str(ws),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_01",
        **extra,
    }


def as_claude_code(ws: Path, prefix: list[str], call: dict[str, object]) -> tuple[str, str]:
    command = shlex.join([*prefix, *HOOK])
    return claudecode.run_hook(command, call, cwd=ws, env=clean_env())


def disk_full(ws: Path) -> list[str]:
    """A prefix that runs the command with no room to write in the workspace's ``.loopkit``
    and ``requests``: as root, each is a tmpfs holding what it held, then filled to the
    last block, in a private mount namespace (ENOSPC); else a file-size limit of 0 (EFBIG:
    CPython ignores SIGXFSZ, so a write fails rather than kills)."""
    if os.geteuid() != 0:
        return ["sh", "-c", 'ulimit -f 0 && exec "$@"', "sh"]
    fill = (
        'for d in "$0/.loopkit" "$0/requests"; do mkdir -p "$d" && t=$(mktemp -d) && '
        'cp -a "$d/." "$t" && mount -t tmpfs -o size=64k tmpfs "$d" && cp -a "$t/." "$d" && '
        '{ dd if=/dev/zero of="$d/.fill" bs=1k count=128 2>/dev/null; true; } || exit 99; '
        'done; exec "$@"'
    )
    return ["unshare", "-m", "sh", "-c", fill, str(ws)]


def approve_the_call(ws: Path) -> str:
    assert as_claude_code(ws, [], event(ws))[0] == "deny"  # asked: the request stands
    [request] = sorted((ws / "requests").glob("*.json"))
    reply = loopkit("-C", str(ws), "reply", "--request-id", request.stem, "--reply", "approve")
    assert reply.returncode == 0, reply.stderr
    return request.stem


def test_no_room_to_ask_denies_the_call(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')
    verdict, reason = as_claude_code(ws, disk_full(ws), event(ws))
    assert verdict == "deny" and "the call is denied" in reason, reason
    assert any(word in reason.lower() for word in ("no space left", "file too large")), reason


def test_an_approval_whose_use_cannot_be_recorded_is_not_given(ws: Path) -> None:
    """Allowed without its use recorded, the approval would allow the call again and again."""
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')
    approved = approve_the_call(ws)
    for prefix, why in ((disk_full(ws), (f"{approved}.json",)),
                        (read_only_prefix(ws), ("read-only", "permission denied"))):  # fmt: skip
        verdict, reason = as_claude_code(ws, prefix, event(ws))
        assert verdict == "deny" and any(word in reason.lower() for word in why), reason
    ws.chmod(0o755)
    assert as_claude_code(ws, [], event(ws))[0] == "allow"  # once, with room again
    assert as_claude_code(ws, [], event(ws))[0] == "deny"


def test_a_broken_workspace_denies_the_call(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')
    (ws / ".loopkit").write_text("a file where the folder goes")
    assert as_claude_code(ws, [], event(ws))[0] == "deny"
    (ws / ".loopkit").unlink()
    (ws / "BLOCKED.md").mkdir()
    verdict, reason = as_claude_code(ws, [], event(ws))
    assert verdict == "deny" and "BLOCKED.md" in reason, reason
    (ws / "BLOCKED.md").rmdir()
    os.mkfifo(ws / "loopkit.toml.new")
    os.replace(ws / "loopkit.toml.new", ws / "loopkit.toml")  # a FIFO: unreadable config
    verdict, reason = as_claude_code(ws, [], event(ws))
    assert verdict == "deny" and "FIFO" in reason, reason


def test_whatever_breaks_in_the_hook_exits_2_never_1(ws: Path, tmp_path: Path) -> None:
    """Before: a traceback, exit 1 — Claude Code ran the call."""
    # No stdin at all.
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *HOOK], cwd=ws, capture_output=True, env=clean_env()
    )
    assert done.returncode == 2 and b"the call is denied" in done.stderr, done.stderr
    # A call without a cwd, from a folder that is gone.
    gone = tmp_path / "gone"
    gone.mkdir()
    call = {k: v for k, v in event(ws, "rm -rf /").items() if k != "cwd"}
    script = 'cd "$0" && rmdir "$0" && exec "$@"'
    verdict, reason = as_claude_code(ws, ["sh", "-c", script, str(gone)], call)
    assert verdict == "deny" and "Traceback" not in reason, reason
    # A bug past the reading of the call: the rules raise.
    boom = (
        "import sys\nimport loopkit.hooks.pretooluse as hook\n"
        "import loopkit.hooks.gatecall as matched\n"
        "def broken(*args, **kwargs):\n    raise RuntimeError('a bug')\n"
        "matched.match = broken\nsys.exit(hook.main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", boom],
        input=json.dumps(event(ws, "rm -rf /")).encode(),
        cwd=ws,
        capture_output=True,
        env=clean_env(),
    )
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [line] = done.stderr.decode().splitlines()
    assert "RuntimeError: a bug" in line and "the call is denied" in line


def test_a_call_in_a_folder_that_is_gone_is_denied_and_writes_nothing(tmp_path: Path) -> None:
    """Claude Code sends the session's folder; one deleted meanwhile is no workspace to ask
    in: the call is denied, and no folder is made to hold a request there."""
    gone = tmp_path / "gone" / "repo"
    done = subprocess.run(
        HOOK, input=json.dumps(event(gone)), capture_output=True, text=True, cwd=tmp_path,
        env=clean_env(), timeout=60,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    if done.returncode == 0:
        decision = json.loads(done.stdout)["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
    assert not (tmp_path / "gone").exists()
