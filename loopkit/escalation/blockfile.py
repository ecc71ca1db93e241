"""``BLOCKED.md``: rendering it from the template, creating it once, reading it back.

The file is the loop's exit contract: it exists ⇒ the loop is blocked. It is created with
:func:`loopkit.atomicfile.create_text`, so an existing one is never overwritten and two
escalations racing cannot both write it. A workspace template override that fails to
render never stops a block: the packaged template is used and the problem is reported.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from loopkit import atomicfile, readfile
from loopkit.datarecord import record, replace
from loopkit.errors import BadInput, WorkspaceError
from loopkit.escalation import marker
from loopkit.message import LETTERS, clean, fold
from loopkit.redact import mask_shapes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from loopkit.requests.record import Request
    from loopkit.workspace import Workspace

MAX_CONTEXT_LINES = 6

if TYPE_CHECKING:
    BlockState = Literal["absent", "file", "other"]


@record(frozen=True, slots=True)
class Choice:
    label: str
    consequence: str = ""
    value: str = ""
    aliases: tuple[str, ...] = ()  # other words for it ("stop" for Abort), kept on the record


_DASHES = re.compile(r"\s+(?:—|–|--|-)\s+")


def shown(text: str) -> str:
    """A text an agent or a command wrote, as a question carries it: safe to write
    (:func:`~loopkit.message.clean`), its secrets masked (:func:`~loopkit.redact.mask_shapes`)."""
    return mask_shapes(clean(text))


def parse_choice(text: str) -> Choice:
    """``"Label — consequence"`` (em dash; ``--``, ``-`` and en dash with spaces also work)."""
    parts = _DASHES.split(text.strip(), maxsplit=1)
    label = parts[0].strip()
    if not label:
        raise BadInput(f'choice {text!r} has no label; write it as "Label — consequence"')
    consequence = parts[1].strip() if len(parts) > 1 else ""
    return Choice(label=label, consequence=consequence, value=slug(label))


def slug(label: str) -> str:
    value = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
    return value or label


@record(frozen=True, slots=True)
class Escalation:
    question: str
    context: str
    attempted: list[str]
    choices: list[Choice]
    trigger: str = "agent"
    request_id: str | None = None
    raised_by: str | None = None  # "supervisor" for the loop's own blocks
    task: str | None = None
    iteration: int | None = None
    summary: dict[str, str] | None = None  # short lines 3 and 4 of the message

    @classmethod
    def of_texts(
        cls,
        question: str,
        context: str,
        attempted: list[str] | tuple[str, ...],
        choices: list[str] | tuple[str, ...],
        trigger: str = "agent",
    ) -> Escalation:
        """From what an agent gives (``"Label — consequence"`` choices), as typed."""
        return cls(
            question, context, list(attempted), [parse_choice(c) for c in choices], trigger=trigger
        )

    def cleaned(self) -> Escalation:
        """The same escalation with every text safe to write (see :func:`loopkit.message.clean`)
        and safe to show: a secret of a known shape in it — an agent's ``api_key=sk-ant-…`` —
        masked before it reaches the request, ``BLOCKED.md`` or a message (:func:`shown`)."""
        return replace(
            self,
            question=shown(self.question),
            context=shown(self.context),
            attempted=[shown(a) for a in self.attempted],
            choices=[
                Choice(
                    shown(c.label),
                    shown(c.consequence),
                    clean(c.value),
                    tuple(clean(a) for a in c.aliases),
                )
                for c in self.choices
            ],
            trigger=clean(self.trigger),
        )

    def validate(self) -> None:
        if not self.question.strip():
            raise BadInput('the question is empty; pass --question "…?"')
        if not 1 <= len(self.choices) <= 3:
            raise BadInput(
                f'{len(self.choices)} choices given; give 1 to 3 (--choice "Label — consequence")'
            )
        labels = [c.label.lower() for c in self.choices]
        if len(set(labels)) != len(labels):
            raise BadInput("two choices have the same label; give each choice its own label")


def packaged_template() -> str:
    # beside this module (loopkit is installed as files; importlib.resources costs ~6 ms)
    return (Path(__file__).parent / "templates" / "BLOCKED.md.j2").read_text("utf-8")


def _safe_line(line: str) -> str:
    """Keep user text from opening a section of its own (``## Choices:`` in a log line)."""
    line = line.rstrip()
    return "\\" + line if line.lstrip().startswith("#") else line


def _indented(line: str) -> str:
    """One line of evidence: its indentation kept (a code block), the rest folded."""
    body = line.lstrip(" ")
    return " " * (len(line) - len(body)) + fold(_safe_line(body), 300)


def context_lines(context: str, extra: list[str]) -> list[str]:
    """At most MAX_CONTEXT_LINES in all, ``extra`` (trigger, commit, …) included."""
    room = max(1, MAX_CONTEXT_LINES - len(extra))
    lines = [_safe_line(x) for x in context.strip().splitlines() if x.strip()]
    if len(lines) > room:
        cut = len(lines) - (room - 1)
        kept = lines[: room - 1]
        lines = [*kept, f"(… {cut} more lines in the request record)"]
    return [fold(x, 300) for x in lines] + extra[: MAX_CONTEXT_LINES - len(lines)]


def template_vars(
    *,
    request_id: str,
    question: str,
    context: str,
    attempted: list[str],
    choices: list[Choice],
    meta: list[str],
    answer_hint: str,
    repo: str,
    trigger: str,
    at: str,
    evidence: list[str] | None = None,
) -> dict[str, Any]:
    """``evidence``: the agent's last output and the diff since the task started, shown
    after the Context's own lines (SPEC §22; not counted in its 3–6)."""
    return {
        "evidence_lines": [_indented(x) for x in evidence or []],
        "request_id": request_id,
        "question": fold(question, 1000),
        "context_lines": context_lines(context, meta),
        "attempted": [fold(_safe_line(a), 500) for a in attempted if a.strip()],
        "choices": [
            {"letter": LETTERS[i], "label": fold(c.label, 200), "consequence": fold(c.consequence)}
            for i, c in enumerate(choices)
        ],
        "answer_hint": answer_hint,
        "repo": repo,
        "trigger": trigger,
        "at": at,
    }


def _render_source(source: str, variables: dict[str, Any]) -> str:
    import jinja2  # deferred: ~30 ms, and only escalations need it

    env = jinja2.Environment(
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    return _tidy(env.from_string(source).render(**variables))


def _template_problem(path: Path, exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"{path}: cannot read: {exc.strerror}"
    if isinstance(exc, UnicodeDecodeError):
        return f"{path}: not UTF-8 text"
    import jinja2  # the template was read, so rendering failed: jinja2 is loaded already

    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"{path}:{exc.lineno}: template syntax error: {exc.message}"
    return f"{path}: template failed to render: {exc}"


def render(workspace: Workspace, variables: dict[str, Any]) -> tuple[str, str | None]:
    """Render BLOCKED.md; returns the text and, if the override was unusable, why."""
    override = workspace.template_override
    problem: str | None = None
    if override.exists():
        try:
            source = readfile.read_text(override)
            if source == packaged_template():  # as `loopkit init` copied it: no jinja2 needed
                return render_packaged(variables), None
            text = _render_source(source, variables)
            missing = _missing_marker(override, text, variables)
            if missing is None:
                return text, None
            problem = missing + "; used the packaged template instead"
        except Exception as exc:  # any failure of the user's template falls back
            problem = _template_problem(override, exc) + "; used the packaged template instead"
    return render_packaged(variables), problem


def _missing_marker(path: Path, text: str, variables: dict[str, Any]) -> str | None:
    """Without its marker a BLOCKED.md names no request: nothing could answer it."""
    if marker.request_id_in(text) == variables.get("request_id"):  # as request_id_of reads it
        return None
    return (
        f"{path}: the rendered file lacks the marker "
        "`<!-- loopkit request: {{ request_id }} -->` in its first 4096 characters; add that "
        "line near the top"
    )


def render_packaged(variables: dict[str, Any]) -> str:
    """The packaged template's text, written out in Python: what jinja2 renders from
    ``BLOCKED.md.j2`` (a property test holds the two equal), without importing jinja2 —
    ~20 ms of every ``escalate`` (SPEC §20)."""
    lines = ["# Blocked", f"<!-- loopkit request: {variables['request_id']} -->", ""]
    lines += ["## Question:", str(variables["question"]), "", "## Context:"]
    lines += [str(line) for line in variables["context_lines"]]
    if variables.get("evidence_lines"):  # SPEC §22: after the Context's own lines
        lines += ["", *(str(line) for line in variables["evidence_lines"])]
    lines += ["", "## Attempted:"]
    lines += [f"- {item}" for item in variables["attempted"]] or ["- nothing yet"]
    lines += ["", "## Choices:"]
    for choice in variables["choices"]:
        consequence = f" — {choice['consequence']}" if choice["consequence"] else ""
        lines.append(f"- {choice['letter']}) {choice['label']}{consequence}")
    if variables["answer_hint"]:
        lines += ["", str(variables["answer_hint"])]
    return _tidy("\n".join(lines) + "\n")


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def check_override(workspace: Workspace, variables: dict[str, Any]) -> str | None:
    """The override template's problem, if there is one (for ``loopkit doctor``)."""
    override = workspace.template_override
    if not override.exists():
        return None
    try:
        text = _render_source(readfile.read_text(override), variables)
    except Exception as exc:
        return _template_problem(override, exc)
    return _missing_marker(override, text, variables)


def state(path: Path) -> BlockState:
    """``file`` (a regular file, never reached through a symbolic link: a link's target is
    not read, not sent — SPEC section 17), ``other`` (a link, a folder, a FIFO …: something
    in the way), or ``absent``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "other"
    return "file" if stat.S_ISREG(mode) else "other"


def what(path: Path) -> str:
    """What is at ``path``, in words: ``a symbolic link``, ``a FIFO``, ``a folder`` …"""
    try:
        mode = os.lstat(path).st_mode
        return "a symbolic link" if stat.S_ISLNK(mode) else readfile.kind_of(mode)
    except OSError:
        return "something other than a file"


CLAIM_LIMIT = 1024 * 1024  # of an agent's BLOCKED.md kept when its marker is rewritten


def claim(path: Path, request_id: str) -> None:
    """Make the BLOCKED.md at ``path`` name ``request_id``: its marker put first, the rest
    of the file kept below it (cut at :data:`CLAIM_LIMIT`). For an agent's file whose own
    marker names no block (SPEC section 28), so that every surface finds its request by
    the marker, as for any other block."""
    raw = readfile.read_bytes(path, CLAIM_LIMIT + 1, follow_links=False)
    body = raw[:CLAIM_LIMIT].decode("utf-8", "replace")
    if len(raw) > CLAIM_LIMIT:
        body += "\n[… the rest cut]\n"
    atomicfile.write_text(path, f"<!-- loopkit request: {request_id} -->\n{body}")


def move_aside(path: Path, folder: Path) -> Path:
    """Move what is at ``path`` (a link, a FIFO, a folder: never opened, never followed)
    into ``folder``/in-the-way/, under a name of its own; returns where it went."""
    import time

    aside = folder / "in-the-way"
    aside.mkdir(parents=True, exist_ok=True)
    target = aside / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}"
    os.rename(path, target)
    return target


def not_a_file(path: Path) -> BadInput:
    return BadInput(
        f"{path} is {what(path)}, not a regular file; remove it (rm -r {path.name}) so "
        "loopkit can tell blocked from unblocked"
    )


def in_the_way(path: Path, request_id: str) -> BadInput:
    """Something other than a file holds BLOCKED.md's place; the question is saved."""
    return BadInput(
        f"{path} is {what(path)}, not a file, so the block could not be written; the question is "
        f"saved as requests/{request_id}.json — remove it (rm -r {path.name}) and the next "
        "`loopkit run`, `status` or `escalate` raises the block"
    )


def create(path: Path, text: str) -> bool:
    """Create BLOCKED.md unless it exists; False means another block holds it."""
    try:
        return atomicfile.create_text(path, text)
    except OSError as exc:
        raise WorkspaceError(atomicfile.failure(exc, path)) from None


def read_head(path: Path, lines: int = marker.HEAD_LINES) -> str:
    return marker.read_head(str(path), lines)


def shown_head(path: Path) -> str:
    """BLOCKED.md's head as a terminal may print it (:func:`marker.shown_head`)."""
    return marker.shown_head(str(path))


def request_id_of(path: Path) -> str | None:
    """The request id in BLOCKED.md's marker comment, if the file has one."""
    return marker.request_id_of(str(path))


def is_block_of(path: Path, record: Request) -> bool:
    """Whether BLOCKED.md at ``path`` is ``record``'s block: its marker names the request, or
    it is the agent's hand-written file the request adopted (never a human's own)."""
    if state(path) != "file":
        return False
    marked = request_id_of(path)
    return marked == record.request_id or (marked is None and record.block == "adopted")


def remove_block(path: Path, record: Request) -> bool:
    """Remove BLOCKED.md when it is ``record``'s block (:func:`is_block_of`). True if removed."""
    if is_block_of(path, record):
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True
    return False
