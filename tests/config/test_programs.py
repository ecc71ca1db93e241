"""``missing_program``: a command's missing program named at start, and never a program
the shell would run called missing — held against a real ``/bin/sh`` running each command."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit.config.programs import missing_program

TOOL = "lk-tool-7f3"  # on the test's PATH
GONE = "lk-gone-7f3"  # on no PATH: the typo


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A workspace (an executable ./agent.sh, a ./noexec.sh, sub/inner.sh) and an environment
    whose PATH has a folder with TOOL before the system's."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    tools = tmp_path / "bin"
    tools.mkdir()
    for path in (ws / "agent.sh", ws / "sub" / "inner.sh", tools / TOOL):
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    (ws / "noexec.sh").write_text("#!/bin/sh\nexit 0\n")
    if shutil.which("time") is None:  # dash has no `time` of its own: GNU time's part
        (tools / "time").write_text('#!/bin/sh\n[ "$1" = -p ] && shift\nexec "$@"\n')
        (tools / "time").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("BASH_ENV", "ENV", "CDPATH")}
    env["PATH"] = f"{tools}:{os.environ.get('PATH', os.defpath)}"
    return ws, env


def shell_missed(command: str, ws: Path, env: dict[str, str]) -> set[str]:
    """The programs ``/bin/sh -c command`` really failed to find or run, from what it said."""
    done = subprocess.run(["/bin/sh", "-c", command], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=20, check=False)  # fmt: skip
    said = done.stdout + done.stderr  # 2>&1 | tee: the complaint may come on stdout
    names = {GONE, TOOL, "./agent.sh", "./nope.sh", "./noexec.sh", "./inner.sh", "source"}
    failure = r"not found|No such file or directory|Permission denied|cannot run"
    return {
        name
        for name in names
        for line in said.splitlines()
        if name in line and re.search(failure, line)
    }


# The shell syntax doctor used to call "not found" (`!`, `if`, `(`, …), everyday prefixes, and
# the typo behind each: what is reported, or None.
TABLE: list[tuple[str, str | None]] = [
    (f"{TOOL} -p 'Read PROMPT.md'", None),
    (f"{GONE} -p 'Read PROMPT.md'", GONE),
    (f'{GONE} -p "$(cat PROMPT.md)"', GONE),
    ("! grep -q x /dev/null", None),
    (f"! {GONE}", GONE),
    (f"if true; then {TOOL}; fi", None),
    (f"if true; then {GONE}; fi", None),  # a branch: not followed
    (f"if {GONE}; then :; fi", GONE),  # the condition always runs
    ("( cd sub && ./inner.sh )", None),
    ("( cd sub && ./agent.sh )", "./agent.sh"),  # not in sub/
    (f"{{ {TOOL}; {GONE}; }}", GONE),
    (f"VAR=x {TOOL}", None),
    (f'FOO="a b" {GONE}', GONE),
    (f"exec {TOOL}", None),
    (f"exec {GONE}", GONE),
    (f"cd sub && {TOOL}", None),
    (f"cd sub && {GONE}", GONE),
    (f"cd nowhere && {GONE}", None),  # cd fails: it never runs
    (f"time {GONE}", GONE),
    (f"time -p {TOOL}", None),
    (f"nice {GONE}", GONE),
    (f"nice -n 5 {TOOL}", None),
    (f"env A=1 {TOOL}", None),
    (f"env A=1 {GONE}", GONE),
    (f"command -v {GONE}", None),  # asks, runs nothing
    (f"command {GONE}", GONE),
    (f"sh -c '{GONE} --go'", GONE),
    (f"sh -c 'if true; then {GONE}; fi'", None),
    (":", None),
    (f"[ -d sub ] && {GONE}", None),  # test's outcome is not followed
    (f"[ -d sub ]; {GONE}", GONE),
    (f'export PATH="$PATH:/opt/x"; {GONE}', None),  # a PATH not known: not followed
    (f"PATH=/nowhere {TOOL}", TOOL),
    (f". ./env.sh; {GONE}", None),
    ("cd sub", None),
    ("echo hi; true", None),
    (f"echo hi; {GONE}", GONE),
    (f"{TOOL} | {GONE}", GONE),
    (f"false && {GONE}", None),
    (f"true && {GONE}", GONE),
    (f"{TOOL} || {GONE}", None),
    ("./agent.sh", None),
    ("./nope.sh", "./nope.sh"),
    ("./noexec.sh", "./noexec.sh"),
    (f"set -e; cd sub; {GONE}", GONE),
    (f"set -e; {TOOL}; {GONE}", None),  # runs only if the tool succeeds: not followed
    (f">/dev/null {GONE}", GONE),
    (f"{TOOL} 2>/dev/null", None),
    (f"{GONE} 2>&1 | tee /dev/null", GONE),
    (f"timeout 5 {GONE}", GONE),
    (f"for i in 1; do {GONE}; done", None),
    (f"f() {{ {GONE}; }}; f", None),
    (f"exit 0; {GONE}", None),
    (f"{GONE}; if", None),  # a syntax error: sh runs nothing
    (f"cat <<EOF\nx\nEOF\n{GONE}", None),  # a here-document: not followed
    (f"$AGENT; {GONE}", None),  # an expansion: not followed
    (f"  # a comment\n{GONE}", GONE),
    ("source ./x.sh", "source" if Path("/bin/sh").resolve().name == "dash" else None),
]


@pytest.mark.parametrize(("command", "expected"), TABLE)
def test_the_program_a_command_misses(
    command: str, expected: str | None, place: tuple[Path, dict[str, str]]
) -> None:
    ws, env = place
    found = missing_program(command, cwd=ws, env=env)
    assert (found.program if found else None) == expected
    if found is not None:  # never wrong: the shell fails to run it too
        assert found.program in shell_missed(command, ws, env)


PREFIXES = ["{}", "! {}", "VAR=x {}", "exec {}", "time {}", "nice {}", "nice -n 5 {}",
            "env A=1 {}", "command {}", "command -v {}", "( {} )", "{{ {}; }}", "if {}; then :; fi",
            "if true; then {}; fi", "while false; do {}; done", "cd sub && {}", "cd nowhere && {}",
            "true && {}", "false && {}", ": || {}", "{} || :", ": ; {}", "echo x | {}", "{} | cat",
            "sh -c '{}'", "timeout 5 {}", ">/dev/null {}", "{} >/dev/null", "set -e; false; {}",
            "exit 0; {}", "case x in x) {};; esac", "nohup {}"]  # fmt: skip
PROGRAMS = [TOOL, GONE, "./agent.sh", "./nope.sh", "./noexec.sh", ":", "echo hi"]
# Forms whose program runs whenever the shell gets to it and which are followed: for these
# the check finds exactly what the shell misses.
UNFOLLOWED = {"if true; then {}; fi", "while false; do {}; done", ": || {}",
              "set -e; false; {}", "case x in x) {};; esac"}  # fmt: skip


def test_never_missing_for_what_runs_and_exact_where_it_follows(
    place: tuple[Path, dict[str, str]],
) -> None:
    ws, env = place
    for prefix in PREFIXES:
        for program in PROGRAMS:
            command = prefix.format(program)
            found = missing_program(command, cwd=ws, env=env)
            missed = shell_missed(command, ws, env)
            if found is not None:
                assert found.program in missed, command
            if prefix not in UNFOLLOWED:
                assert (found.program if found else None) == next(iter(missed), None), command


def test_an_argv_command_is_looked_up_as_execvp_does(place: tuple[Path, dict[str, str]]) -> None:
    ws, env = place
    assert missing_program((TOOL, "--go"), cwd=ws, env=env) is None
    assert missing_program(("./agent.sh",), cwd=ws, env=env) is None
    gone = missing_program((GONE, "--go"), cwd=ws, env=env)
    assert gone is not None and gone.program == GONE and gone.why == "is not found on PATH"
    inner = missing_program(("sh", "-c", f"{GONE} x"), cwd=ws, env=env)
    assert inner is not None and inner.program == GONE
    # No shell: a builtin's name is a program execvp looks for, and does not find.
    assert missing_program((":",), cwd=ws, env=env) is not None


def test_what_it_says_names_the_fix(place: tuple[Path, dict[str, str]]) -> None:
    ws, env = place
    gone = missing_program(GONE, cwd=ws, env=env)
    assert gone is not None and gone.text() == f"'{GONE}' is not found on PATH"
    assert gone.fix == "install it, or fix the command"
    noexec = missing_program("./noexec.sh", cwd=ws, env=env)
    assert noexec is not None and noexec.text() == "'./noexec.sh' is not executable"
    assert noexec.fix.startswith("chmod +x ./noexec.sh")
    nope = missing_program("./nope.sh", cwd=ws, env=env)
    assert nope is not None and nope.text() == f"'./nope.sh' is not found (no such file in {ws})"


UNREACHABLE_PROBE = """
import json, sys
from pathlib import Path
from loopkit.config.programs import missing_program
env = {"PATH": sys.argv[1]}
found = [missing_program(command, cwd=Path(sys.argv[2]), env=env)
         for command in (("sh",), ("lk-gone-7f3",), "sh -c true && true",
                         (sys.argv[2] + "/locked/agent.sh",))]
print(json.dumps([None if m is None else m.text() for m in found]))
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder any user can reach (pytest's own are its user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="lk-shared-"))
    folder.chmod(0o755)
    yield folder
    for path in folder.rglob("*"):
        path.chmod(0o755)
    shutil.rmtree(folder)


def test_a_path_folder_that_cannot_be_read_is_passed_over_as_the_shell_does(
    place: tuple[Path, dict[str, str]], shared: Path
) -> None:
    """SPEC §28: a PATH entry that cannot be searched (mode 000, as another user sees it) or
    whose names are too long to look up crashed ``run`` and ``doctor``: it is passed over,
    as execvp passes it over; a program behind it "cannot be reached"."""
    _, env = place
    locked = shared / "locked"
    locked.mkdir()
    (locked / "agent.sh").write_text("#!/bin/sh\nexit 0\n")
    (locked / "agent.sh").chmod(0o755)
    locked.chmod(0)
    path = f"{locked}:/{'x' * 5000}:/usr/local/bin:/usr/bin:/bin"
    # As root every folder can be read: the probe runs as nobody then (setpriv, util-linux).
    root = os.geteuid() == 0
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if root else []
    done = subprocess.run(
        [*drop, sys.executable, "-c", UNREACHABLE_PROBE, path, str(shared)],
        capture_output=True, text=True, env={**env, "PYTHONPATH": loopkit_root()}, timeout=60,
        cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found, gone, shell, behind = json.loads(done.stdout)
    assert found is None and shell is None  # found further on PATH
    assert gone == "'lk-gone-7f3' is not found on PATH"
    assert behind is not None and "cannot be reached (Permission denied)" in behind


def loopkit_root() -> str:
    import loopkit

    return str(Path(loopkit.__file__).resolve().parents[1])
