"""A full disk: a clear "no space left" line, the question kept, the block raised once
there is room again. The workspace is a tiny tmpfs in a private mount namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import LOOPKIT, clean_env

SCRIPT = r"""
ws="$1"; free="$2"
mount -t tmpfs -o size=256k tmpfs "$ws" || exit 99
printf '[escalation]\nchannel = "none"\n' > "$ws/loopkit.toml"
mkdir -p "$ws/.loopkit/locks" "$ws/requests"
dd if=/dev/zero of="$ws/.filler" bs=4k 2>/dev/null
truncate -s "-$free" "$ws/.filler"
"$LK" -C "$ws" escalate -q "Which flow?" -c ctx -a tried --choice "A — a"
echo "escalate=$?"
ls "$ws/requests" | sed 's/^/record=/'
test -e "$ws/BLOCKED.md" && echo blocked-before=yes
rm "$ws/.filler"
"$LK" -C "$ws" status > /dev/null; echo "status=$?"
test -e "$ws/BLOCKED.md" && echo blocked-after=yes
"$LK" -C "$ws" check > /dev/null; echo "check=$?"
"""


def full_disk(tmp_path: Path, free: int) -> tuple[str, str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("LOUD SKIP: needs root and unshare to mount a tiny tmpfs for a full disk")
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", SCRIPT, "sh", str(ws), str(free)],
        env=clean_env(LK=str(LOOPKIT)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 99, done.stderr
    return done.stdout, done.stderr


def test_no_room_at_all_is_one_clear_line(tmp_path: Path) -> None:
    out, err = full_disk(tmp_path, 0)
    assert "escalate=1" in out and "record=" not in out
    [line] = [line for line in err.splitlines() if line.startswith("loopkit: error")]
    assert "no space left on the disk holding" in line and "free some space" in line
    assert "Traceback" not in err


def test_room_for_the_request_only_keeps_it_and_raises_the_block_later(tmp_path: Path) -> None:
    out, err = full_disk(tmp_path, 4096)
    assert "escalate=1" in out and "record=" in out and "blocked-before" not in out
    assert "no space left on the disk holding" in err and "BLOCKED.md" in err
    # Room again: the next start finishes the escalation; the loop is blocked on it.
    assert "blocked-after=yes" in out and "check=2" in out
    assert "BLOCKED.md written now" in err
