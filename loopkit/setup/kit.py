"""``loopkit init --agent claude|codex|gemini``: the integration kit (SPEC section 18).

Each step is shown and skipped when its result is there already, so a second run changes
nothing:

1. ``[loop]`` lines: a working ``agent`` (and for Claude Code ``resume``), and with a
   ``task_file`` a ``done`` that holds once no task is left (each ticked or skipped:
   ``loopkit tasks --done``). Into an existing ``loopkit.toml`` a missing key goes in as one
   line under ``[loop]``; the rest of the file is kept byte for byte.
2. The agent's hooks (``loopkit hook install <agent>``).
3. A short "when and how to escalate" section in the agent's instructions file
   (``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``).

(``.gitignore`` is every ``init``'s: :func:`loopkit.setup.scaffold.ignore`.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib

from loopkit.config import CONFIG_NAME
from loopkit.datarecord import record
from loopkit.errors import ConfigError, WorkspaceError
from loopkit.hooks import geminitrust
from loopkit.hooks.agentconfig import install as install_agent
from loopkit.hooks.codextrust import trust as trust_codex
from loopkit.hooks.install import install, settings_path
from loopkit.setup.scaffold import DONE, Step
from loopkit.setup.scaffold import read_text as _read
from loopkit.setup.scaffold import write_text as _write
from loopkit.supervisor.claudestream import speaks_stream_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from loopkit.config import Command, LoopConfig


@record(frozen=True, slots=True)
class Kit:
    name: str
    notes: str  # the file the agent reads its instructions from
    program: str  # how the agent is started headless, "{prompt}" where the prompt goes
    resume: str | None = None
    prompt_key: bool = False  # the prompt goes in [loop] prompt (the agent reads stdin)


# Claude Code as its SDK runs it (SPEC section 23): loopkit writes the prompt on stdin and
# answers Claude's own questions and permission dialogs; bypassPermissions lets a headless
# turn write and commit, and loopkit's PreToolUse hook still holds every gated call first.
_CLAUDE = (
    "--input-format stream-json --output-format stream-json --verbose "
    "--permission-prompt-tool stdio --permission-mode bypassPermissions"
)
KITS = {
    "claude": Kit("Claude Code", "CLAUDE.md", f"claude -p {_CLAUDE}",
                  f"claude -p --resume {{session_id}} {_CLAUDE}", prompt_key=True),
    # Codex 0.147 dropped `exec --full-auto`; `--sandbox workspace-write` is what it meant.
    # That sandbox keeps .git read-only (no commit); `--add-dir .git` lets the agent commit.
    # `--json` and Gemini's `-o stream-json`: their events, which loopkit reads as the turn
    # runs (SPEC §24) and shows as text.
    "codex": Kit("Codex", "AGENTS.md",
                 "codex exec --json --sandbox workspace-write --add-dir .git {prompt}"),
    "gemini": Kit("Gemini CLI", "GEMINI.md",
                  "gemini --approval-mode yolo --output-format stream-json -p {prompt}"),
}  # fmt: skip
HEADING = "## When and how to escalate (loopkit)"


def prompt(kit: Kit, task_file: str | None) -> str:
    work = (
        f"Do the first unticked task in {task_file}: make the checks pass, tick it, commit."
        if task_file
        else "Continue the work in this repository: make the checks pass, commit."
    )
    return f"{work} When you are stuck, escalate as {kit.notes} says; never guess."


def agent_line(kit: Kit, task_file: str | None) -> str:
    if kit.prompt_key:
        return kit.program
    return kit.program.format(prompt=shlex.quote(prompt(kit, task_file)))


def loop_keys(kit: Kit, task_file: str | None) -> dict[str, str]:
    keys = {"agent": agent_line(kit, task_file)}
    if kit.resume:
        keys["resume"] = kit.resume
    if kit.prompt_key:
        keys["prompt"] = prompt(kit, task_file)
    if task_file:
        keys["task_file"] = task_file
        keys["done"] = DONE
    return keys


def section(kit: Kit) -> str:
    return f"""
{HEADING}

This repository runs in loopkit's loop. When you are stuck, stop and ask one human one
question; never guess. Escalate when one of these holds, and only then:

- the task admits two implementations and the choice changes what users see;
- a credential, variable or config file is missing and nothing sanctioned creates it;
- the next step is destructive or irreversible: dropping data, a force push, deleting
  user data, spending money, mail to real people;
- the checks failed three times in a row on the same task;
- a service the task needs is down and there is no offline path.

How (loopkit exits 2, the loop waits for the answer, then resumes you with it):

    loopkit escalate -q "One question?" -c "what you were doing, which file, why now" \\
      -a "what you tried and why it fell short" --choice "A — its consequence" --choice "B — …"
    loopkit ask -s "what blocks you" -p "the rule that applies" -q "One question?" --block

`loopkit ask` without `--block` exits 0 when no human is needed. With loopkit's MCP server
(`loopkit mcp --print-config`) the tools `escalate` and `request_human_input` do the same.
A gated command (force push, `rm -rf`, …) is held by loopkit's hook until a human approves
it: end your turn; do not work around it.

Do not: make up an answer ("I'll assume X"); try a fourth time after three failed checks;
commit a placeholder credential, disable the feature or leave the auth as a TODO; ask what
the repository already answers (read this file, the task and the last commits first); edit
or delete BLOCKED.md, or answer your own question — only a human answers.
"""


ROOT_NOTE = (
    "you are root: Claude Code refuses --permission-mode bypassPermissions as root unless "
    "IS_SANDBOX=1 (exactly 1) is set. On a machine that is a sandbox of its own (a "
    "container, a VM), `export IS_SANDBOX=1` where you run `loopkit run`; otherwise run the "
    "loop as a user without root"
)


def agent_problems(loop: LoopConfig, env: Mapping[str, str] | None = None) -> list[str]:
    """What keeps the ``[loop]`` lines from running the agent unattended with its hooks on
    (``doctor``): an agent that reads its prompt on stdin with no ``[loop] prompt``;
    ``bypassPermissions`` as a root Claude Code refuses; Gemini CLI's ``--skip-trust``,
    which turns its hooks off."""
    found = []
    for name, command in (("agent", loop.agent), ("resume", loop.resume)):
        words = _words(command)
        if words and os.path.basename(words[0]) == "gemini" and "--skip-trust" in words:
            found.append(
                f"[loop] {name}: gemini --skip-trust runs with the folder's hooks off (no "
                "gated call is asked); drop it and trust the folder (`loopkit init --agent "
                "gemini` does)"
            )
    for name, command in (("agent", loop.agent), ("resume", loop.resume)):
        if speaks_stream_json(command) and not loop.prompt and name == "agent":
            found.append(
                "[loop] agent reads its prompt on stdin (--input-format stream-json) and "
                "[loop] prompt is not set; set it to what the agent is asked each turn"
            )
        words = _words(command)
        skips = "bypassPermissions" in words or "--dangerously-skip-permissions" in words
        if words and os.path.basename(words[0]) == "claude" and skips:
            note = root_note(env)
            if note:
                found.append(f"[loop] {name}: {note}")
                break
    return found


def _words(command: Command | None) -> list[str]:
    if command is None:
        return []
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    return list(command)


def root_note(env: Mapping[str, str] | None = None, *, uid: int | None = None) -> str | None:
    """What a root user must do for the Claude kit's permission mode, or None. Claude Code
    2.1 refuses it as root unless ``IS_SANDBOX`` is exactly ``1`` (or it runs in its own
    bubblewrap sandbox)."""
    env = os.environ if env is None else env
    uid = os.geteuid() if uid is None else uid
    if uid == 0 and env.get("IS_SANDBOX") != "1" and not env.get("CLAUDE_CODE_BUBBLEWRAP"):
        return ROOT_NOTE
    return None


def add_loop_keys(path: Path, keys: dict[str, str]) -> list[Step]:
    """Each of ``keys`` missing from ``[loop]`` as one line right under the table's header
    (a ``[loop]`` table appended when there is none)."""
    text = _read(path)
    try:
        loop = tomllib.loads(text).get("loop", {})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}; fix it, then run this again") from None
    steps = [Step(False, f"{path.name}: [loop] {k} (set)") for k in keys if k in loop]
    missing = {k: v for k, v in keys.items() if k not in loop}
    if not missing:
        return steps
    lines = "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in missing.items())
    header = re.search(r"(?m)^[ \t]*\[[ \t]*loop[ \t]*\][ \t]*(#.*)?\n", text)
    if header:
        fresh = text[: header.end()] + lines + text[header.end() :]
    else:
        fresh = text + ("\n" if text and not text.endswith("\n") else "") + "\n[loop]\n" + lines
    expected = tomllib.loads(text)
    expected["loop"] = {**loop, **missing}
    if tomllib.loads(fresh) != expected:
        raise ConfigError(
            f"{path}: cannot add {', '.join(missing)} to [loop] safely; add it yourself"
        )
    _write(path, fresh)
    return steps + [Step(True, f"{path.name}: [loop] {k} = {v}") for k, v in missing.items()]


def add_section(root: Path, kit: Kit) -> Step:
    path = root / kit.notes
    text = _read(path)
    if HEADING in text:
        return Step(False, f"{kit.notes}: {HEADING[3:]}")
    body = section(kit)
    _write(path, text + ("" if text.endswith("\n") else "\n") + body if text else body.lstrip())
    return Step(True, f"{kit.notes}: {HEADING[3:]}")


def hooks(root: Path, agent: str) -> list[Step]:
    if agent == "claude":
        path = settings_path(root, False)
        changed = [f"{path.relative_to(root)}: {line}" for line in install(path)]
    else:
        changed = [line.replace(f"{root}/", "") for line in install_agent(agent, root)]
        if agent == "codex":
            trusted = trust_codex(root)
            notes = [t for t in trusted if t.startswith("not trusted")]
            changed += [t for t in trusted if t not in notes]
            steps = _steps(changed, agent) + [Step(False, n, note=True) for n in notes]
            return steps
        if agent == "gemini":
            try:
                changed += geminitrust.arrange(root)
            except (OSError, ValueError) as exc:
                raise WorkspaceError(f"cannot trust this folder in Gemini CLI: {exc}") from None
    return _steps(changed, agent)


def _steps(changed: list[str], agent: str) -> list[Step]:
    if not changed:
        return [Step(False, f"{KITS[agent].name}'s hooks")]
    return [Step(not line.split(": ", 1)[-1].startswith("kept"), line) for line in changed]


def setup(root: Path, agent: str, *, task_file: str | None) -> list[Step]:
    """Every step of the kit for ``agent`` in ``root``, in order; what each did."""
    kit = KITS[agent]
    current = _loop_of(root / CONFIG_NAME)
    task_file = task_file or current.get("task_file")
    steps = add_loop_keys(root / CONFIG_NAME, loop_keys(kit, task_file))
    steps += hooks(root, agent)
    steps.append(add_section(root, kit))
    note = root_note() if agent == "claude" else None
    if note:
        steps.append(Step(False, note, note=True))
    return steps


def _loop_of(path: Path) -> dict[str, str]:
    try:
        loop = tomllib.loads(_read(path)).get("loop", {})
    except tomllib.TOMLDecodeError:
        return {}
    return {k: v for k, v in loop.items() if isinstance(v, str)} if isinstance(loop, dict) else {}
