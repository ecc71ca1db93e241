"""Channel ``dial`` with real subprocesses: small ``sys.executable`` scripts in ``tmp_path``."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import channels
from loopkit.channels import Outcome
from loopkit.channels.dial import DIAL_TIMEOUT, DialChannel
from loopkit.config import ChannelSettings
from loopkit.message import Message, fold
from loopkit.redact import dial_secrets

from helpers import wait_until

# Copies stdin to argv[1] and the three LOOPKIT_* variables plus argv to argv[1].env.json.
RECORDER = """
import json, os, sys
data = sys.stdin.buffer.read()
with open(sys.argv[1], "wb") as f:
    f.write(data)
keys = ("LOOPKIT_REQUEST_ID", "LOOPKIT_REPO", "LOOPKIT_QUESTION")
info = {"env": {k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:], "cwd": os.getcwd()}
with open(sys.argv[1] + ".env.json", "w", encoding="utf-8") as f:
    json.dump(info, f)
"""

# Spawns a grandchild, writes "<own pid> <grandchild pid>" to argv[1], then hangs. With
# argv[2] == "escape" the grandchild leaves the process group (and keeps our pipes open).
HANGER = """
import os, subprocess, sys, time
escape = len(sys.argv) > 2 and sys.argv[2] == "escape"
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=escape
)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(tmp, sys.argv[1])
time.sleep(300)
"""


def _message(**overrides: object) -> Message:
    values: dict[str, object] = {
        "request_id": "r-20261202-0001",
        "repo": "shop",
        "at": "2026-12-02T13:11:06Z",
        "question": "Which payment flow?",
        "context": "Feature: checkout\nFile: pay.py",
        "attempted": ("read PROMPT.md",),
        "choices": ("Flow A", "Flow B"),
    }
    values.update(overrides)
    return Message(**values)  # type: ignore[arg-type]


def _script(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def _cmd(*words: object) -> str:
    return shlex.join([sys.executable, *(str(w) for w in words)])


def _dial(cmd: str, **options: float) -> DialChannel:
    return DialChannel(ChannelSettings(dial_cmd=cmd), **options)


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs: no such process, or only a zombie left of it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.fixture
def strays() -> Iterator[list[int]]:
    """Pids a test's scripts spawned; any still running at the end is killed (by pid)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


# --- the message goes to stdin, the three variables to the environment -------------------------


def test_message_arrives_on_stdin_exactly_and_variables_are_set(tmp_path: Path) -> None:
    out = tmp_path / "stdin.txt"
    message = _message(question="Which DB\nshould I use? — Ünïcode ✓", repo="my repo")
    outcome = _dial(_cmd(_script(tmp_path, "rec.py", RECORDER), out)).send(message)
    assert outcome == Outcome(ok=True, status=0)
    assert out.read_bytes() == (message.text + "\n").encode("utf-8")  # newline-terminated
    info = json.loads(Path(f"{out}.env.json").read_text(encoding="utf-8"))
    assert info["env"] == {
        "LOOPKIT_REQUEST_ID": "r-20261202-0001",
        "LOOPKIT_REPO": "my repo",
        "LOOPKIT_QUESTION": "Which DB should I use? — Ünïcode ✓",
    }
    assert info["env"]["LOOPKIT_QUESTION"] == fold(message.question)


def test_command_is_split_like_a_shell_but_run_without_one(tmp_path: Path) -> None:
    folder = tmp_path / "dir with space"
    folder.mkdir()
    script = _script(folder, "rec.py", RECORDER)
    out = tmp_path / "stdin.txt"
    # Shell syntax after the quoted words must reach the script as plain arguments.
    cmd = f"{_cmd(script, out)} > {tmp_path / 'redirected'} ; touch {tmp_path / 'PWNED_CMD'}"
    assert _dial(cmd).send(_message()).ok is True
    info = json.loads(Path(f"{out}.env.json").read_text(encoding="utf-8"))
    assert info["argv"] == [
        str(out),
        ">",
        str(tmp_path / "redirected"),
        ";",
        "touch",
        str(tmp_path / "PWNED_CMD"),
    ]
    assert not (tmp_path / "redirected").exists()
    assert not (tmp_path / "PWNED_CMD").exists()


def test_shell_syntax_in_the_message_is_never_executed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_cwd = Path.cwd()
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    out = tmp_path / "stdin.txt"
    message = _message(
        request_id="r-$(touch PWNED_ID)",
        repo="shop; touch PWNED_REPO",
        question="Run $(touch PWNED) now?",
        context="then `touch PWNED2` and ${IFS}$(touch PWNED3)",
        attempted=("'; touch PWNED4; '", '"$(touch PWNED5)"'),
        choices=("`touch PWNED6`", "| touch PWNED7"),
    )
    outcome = _dial(_cmd(_script(tmp_path, "rec.py", RECORDER), out)).send(message)
    assert outcome.ok is True
    assert out.read_bytes() == (message.text + "\n").encode("utf-8")  # newline-terminated
    text = out.read_text(encoding="utf-8")
    assert "$(touch PWNED)" in text and "`touch PWNED2`" in text
    info = json.loads(Path(f"{out}.env.json").read_text(encoding="utf-8"))
    assert info["cwd"] == str(work)
    assert info["env"]["LOOPKIT_QUESTION"] == "Run $(touch PWNED) now?"
    assert info["env"]["LOOPKIT_REQUEST_ID"] == "r-$(touch PWNED_ID)"
    assert info["env"]["LOOPKIT_REPO"] == "shop; touch PWNED_REPO"
    for folder in (tmp_path, work, start_cwd):
        assert list(folder.rglob("PWNED*")) == [], folder


def test_nul_in_the_message_is_delivered_not_raised(tmp_path: Path) -> None:
    out = tmp_path / "stdin.txt"
    message = _message(question="odd\x00byte", repo="sh\x00op")
    outcome = _dial(_cmd(_script(tmp_path, "rec.py", RECORDER), out)).send(message)
    assert outcome == Outcome(ok=True, status=0)
    assert out.read_bytes() == (message.text + "\n").encode("utf-8")  # newline-terminated
    info = json.loads(Path(f"{out}.env.json").read_text(encoding="utf-8"))
    assert "\x00" not in info["env"]["LOOPKIT_QUESTION"]
    assert "odd" in info["env"]["LOOPKIT_QUESTION"] and "byte" in info["env"]["LOOPKIT_QUESTION"]


def test_command_that_ignores_stdin_still_succeeds(tmp_path: Path) -> None:
    script = _script(tmp_path, "quiet.py", "import sys\nsys.exit(0)\n")
    long = _message(context="x" * 5000, attempted=tuple("y" * 300 for _ in range(50)))
    assert _dial(_cmd(script)).send(long) == Outcome(ok=True, status=0)


# --- failures ----------------------------------------------------------------------------------


def test_non_zero_exit_reports_code_and_last_stderr_line(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "fail.py",
        """
        import sys
        sys.stdin.read()
        print("progress on stdout", flush=True)
        sys.stderr.write("first line\\nsecond line\\n  gateway said: quota exceeded  \\n")
        sys.exit(3)
        """,
    )
    outcome = _dial(_cmd(script)).send(_message())
    assert outcome.ok is False
    assert outcome.status == 3
    assert outcome.error == "dial command exited 3: gateway said: quota exceeded"


def test_non_zero_exit_without_stderr(tmp_path: Path) -> None:
    script = _script(tmp_path, "fail.py", "import sys\nsys.exit(7)\n")
    outcome = _dial(_cmd(script)).send(_message())
    assert outcome == Outcome(ok=False, status=7, error="dial command exited 7")


def test_command_line_echoed_on_stderr_is_masked(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "echo.py",
        """
        import shlex, sys
        sys.stderr.write("could not run " + shlex.join([sys.executable, *sys.argv]) + "\\n")
        sys.exit(1)
        """,
    )
    cmd = _cmd(script, "--api-key", "sk-SECRET-1234")
    outcome = _dial(cmd).send(_message())
    assert outcome.ok is False and outcome.status == 1
    assert outcome.error is not None
    assert cmd not in outcome.error
    assert "sk-SECRET-1234" not in outcome.error
    assert outcome.error.startswith("dial command exited 1: could not run ")


def test_hanging_command_is_killed_with_its_whole_process_group(
    tmp_path: Path, strays: list[int]
) -> None:
    pids = tmp_path / "pids"
    channel = _dial(_cmd(_script(tmp_path, "hang.py", HANGER), pids), timeout=1)
    started = time.monotonic()
    outcome = channel.send(_message())
    elapsed = time.monotonic() - started
    assert pids.exists(), "the script did not start in time to record its pids"
    own, grandchild = (int(word) for word in pids.read_text().split())
    strays.extend([own, grandchild])
    assert outcome.ok is False
    assert outcome.status == "timeout"
    assert outcome.error == "dial command killed after 1 s"
    assert 1.0 <= elapsed < 4.0
    wait_until(lambda: _gone(own), timeout=5, what="the dial command to be gone")
    wait_until(lambda: _gone(grandchild), timeout=5, what="its grandchild to be gone")


def test_grandchild_that_left_the_group_does_not_hold_send_forever(
    tmp_path: Path, strays: list[int]
) -> None:
    pids = tmp_path / "pids"
    channel = _dial(_cmd(_script(tmp_path, "hang.py", HANGER), pids, "escape"), timeout=0.5)
    started = time.monotonic()
    outcome = channel.send(_message())
    elapsed = time.monotonic() - started
    assert pids.exists(), "the script did not start in time to record its pids"
    own, escaped = (int(word) for word in pids.read_text().split())
    strays.extend([own, escaped])
    assert outcome.ok is False
    assert outcome.status == "timeout"
    assert elapsed < 5.0  # the timeout, plus the bounded wait for the pipes
    wait_until(lambda: _gone(own), timeout=5, what="the dial command to be gone")


@pytest.mark.parametrize(
    "cmd",
    [
        "/nonexistent/loopkit-dial-9f3 --token tok-SECRET-5678",
        "loopkit-no-such-command-9f3 --token tok-SECRET-5678",
    ],
)
def test_command_not_found_is_a_failure_without_the_command(cmd: str) -> None:
    outcome = _dial(cmd).send(_message())
    assert outcome.ok is False
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "could not start" in outcome.error
    assert cmd not in outcome.error
    assert "loopkit-dial-9f3" not in outcome.error
    assert "loopkit-no-such-command-9f3" not in outcome.error
    assert "tok-SECRET-5678" not in outcome.error


def test_command_that_is_not_executable_is_a_failure(tmp_path: Path) -> None:
    script = _script(tmp_path, "plain.txt", "not a program\n")
    script.chmod(0o644)
    if os.access(script, os.X_OK):  # pragma: no cover - only where root ignores modes
        pytest.skip("this user can execute any file")
    outcome = _dial(shlex.quote(str(script))).send(_message())
    assert outcome.ok is False and outcome.status == "error"
    assert outcome.error is not None and str(script) not in outcome.error


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        (None, "is not set"),
        ("", "is not set"),
        ("   ", "is empty"),
        ('notify "unterminated', "cannot be split"),
    ],
)
def test_unusable_command_fails_without_running_anything(cmd: str | None, expected: str) -> None:
    channel = _dial(cmd)  # type: ignore[arg-type]
    outcome = channel.send(_message())
    assert outcome.ok is False and outcome.status == "error"
    assert outcome.error is not None and expected in outcome.error
    assert "unterminated" not in outcome.error
    [problem] = channel.problems()
    assert expected in problem


def test_usable_command_has_no_problems() -> None:
    assert _dial(f"{sys.executable} -c pass --to ops").problems() == []
    assert _dial("true --to ops").problems() == []  # looked up on PATH, as execvp does


def test_a_dial_program_that_is_not_there_is_a_problem_that_shows_no_secret() -> None:
    [problem] = _dial("page-me-lk --token sk_live_0123456789abcdefXYZ --to ops").problems()
    assert problem.startswith("LOOPKIT_HITL_DIAL_CMD runs 'page-me-lk', which is not found on")
    assert "sk_live" not in problem
    [gone] = _dial("./no-such-pager.sh --to ops").problems()
    assert "'./no-such-pager.sh', which is not found (no such file in" in gone
    [whole] = _dial("./no-such-pager.sh").problems()  # the whole line: a secret, not shown
    assert "runs '***', which is not found" in whole


# --- the timeout -------------------------------------------------------------------------------


def test_default_timeout_is_30_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert DIAL_TIMEOUT == 30.0
    settings = ChannelSettings(dial_cmd=_cmd(_script(tmp_path, "ok.py", "import sys\n")))
    channel = DialChannel(settings)
    assert channel.timeout == 30.0
    # Made through the registry with the HTTP budget, dial keeps its own 30 s.
    assert channels.create("dial", settings, budget=10.0).timeout == 30.0  # type: ignore[attr-defined]

    seen: list[float | None] = []
    communicate = subprocess.Popen.communicate

    def spy(self: subprocess.Popen[bytes], *args: object, **kwargs: object) -> object:
        seen.append(kwargs.get("timeout"))  # type: ignore[arg-type]
        return communicate(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "communicate", spy)
    assert channel.send(_message()).ok is True
    assert seen == [30.0]


@pytest.mark.parametrize(
    ("command", "secret", "kept"),
    [
        (
            'curl -sf -H "Title: loopkit" --data-binary @- https://ntfy.sh/my-secret-topic',
            ["https://ntfy.sh/my-secret-topic", "my-secret-topic"],
            ["curl", "Title", "loopkit", "--data-binary"],
        ),
        (
            'curl -u ops:hunter22 -H "Authorization: Bearer abcDEF123456789xyz" '
            '-H "X-API-Key:abcdef123456" https://api.example.com/v1/sms?key=zzz123',
            ["hunter22", "abcDEF123456789xyz", "abcdef123456", "zzz123"],
            ["ops", "Authorization", "curl", "api.example.com", "v1", "sms"],
        ),
        (
            'wget --header="Authorization: Bearer XYZ12345" --user=ops:pw1234 --auth-type basic '
            "https://gateway.invalid/requests https://x.invalid/loopkit/message "
            "https://h.invalid/v1/notifications",
            ["XYZ12345", "pw1234", "https://gateway.invalid/requests"],
            ["requests", "loopkit", "message", "notifications", "basic", "wget"],
        ),
        (
            "send --token s3cr3tvalue --api-key=KEY-1234 API_KEY=abc12345 "
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc --author loopkit --user loopkit --key-id loopkit "
            "--to +15551234567",
            ["s3cr3tvalue", "KEY-1234", "abc12345", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"],
            ["loopkit", "send", "--author", "+15551234567"],
        ),
        (
            "sh -c '/usr/local/bin/gw --token s3cr3tvalue' ; curl -H 'Cookie: session=abc123def' "
            "--pw hunter22x -d 'chat_id=42&token=abcd1234' https://bob:sekrit99@host.invalid/x",
            ["s3cr3tvalue", "abc123def", "hunter22x", "abcd1234", "sekrit99"],
            ["sh", "/usr/local/bin/gw", "chat_id", "bob"],
        ),
        ("python3 -u /usr/local/bin/page-me", [], ["python3", "/usr/local/bin/page-me"]),
    ],
)
def test_the_dial_command_s_secret_arguments_are_secrets(
    command: str, secret: list[str], kept: list[str]
) -> None:
    found = ChannelSettings(dial_cmd=command).secrets()
    assert command in found  # the whole line, always
    for word in secret:
        assert word in found
    for word in kept:
        assert word not in found  # masking common words would garble every log line


def test_a_token_in_the_user_part_is_a_dial_secret() -> None:
    stripe = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    assert stripe in dial_secrets(f"curl -u {stripe}: https://x")
    assert "Ab&cdefghijk" in dial_secrets("x --token=Ab&cdefghijk")
