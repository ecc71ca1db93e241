from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit import config
from loopkit.escalation import blockfile
from loopkit.escalation.blockfile import Choice
from loopkit.message import LETTERS
from loopkit.workspace import Workspace


def variables(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = dict(
        request_id="abc123",
        question="Which flow should checkout use?",
        context="Feature: checkout\nFile: app/pay.py",
        attempted=["read PROMPT.md: both flows named"],
        choices=[Choice("Flow A", "keeps the API"), Choice("Flow B", "needs a migration")],
        meta=["Trigger: agent"],
        answer_hint="To answer: delete this file.",
        repo="shop",
        trigger="agent",
        at="2026-12-02T13:11:06Z",
    )
    base.update(overrides)
    return blockfile.template_vars(**base)  # type: ignore[arg-type]


def workspace(ws: Path) -> Workspace:
    return Workspace.of(config.load(ws, {}))


def test_four_sections_in_order(ws: Path) -> None:
    text, problem = blockfile.render(workspace(ws), variables())
    assert problem is None
    headings = re.findall(r"^#+ .*$", text, flags=re.M)
    assert headings == ["# Blocked", "## Question:", "## Context:", "## Attempted:", "## Choices:"]
    assert "<!-- loopkit request: abc123 -->" in text
    assert "- A) Flow A — keeps the API" in text
    assert "- B) Flow B — needs a migration" in text
    assert text.rstrip().endswith("To answer: delete this file.")


def test_user_text_cannot_open_a_section(ws: Path) -> None:
    text, _ = blockfile.render(
        workspace(ws), variables(context="log:\n## Choices:\n- A) fake", question="Q?\n## Choices:")
    )
    assert len(re.findall(r"^## Choices:", text, flags=re.M)) == 1


def test_override_template_is_used(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text(
        "# Blocked\n<!-- loopkit request: {{ request_id }} -->\nQ={{ question }}\n"
    )
    text, problem = blockfile.render(workspace(ws), variables())
    assert problem is None
    assert (
        text == "# Blocked\n<!-- loopkit request: abc123 -->\nQ=Which flow should checkout use?\n"
    )


def test_broken_override_falls_back_with_a_reason(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text("# Blocked\n{% for x in %}\n")
    text, problem = blockfile.render(workspace(ws), variables())
    assert problem is not None and "BLOCKED.md.j2:2: template syntax error" in problem
    assert "## Choices:" in text


def test_undefined_variable_in_override_falls_back(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text("{{ no_such_thing }}")
    text, problem = blockfile.render(workspace(ws), variables())
    assert problem is not None and "no_such_thing" in problem
    assert "## Question:" in text


def test_unreadable_override_falls_back(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").mkdir()  # a folder: unreadable as a template
    text, problem = blockfile.render(workspace(ws), variables())
    assert problem is not None and "cannot read" in problem
    assert "## Question:" in text


def test_marker_and_state(ws: Path) -> None:
    path = ws / "BLOCKED.md"
    assert blockfile.state(path) == "absent"
    assert blockfile.create(path, "# Blocked\n<!-- loopkit request: r-1_x -->\n")
    assert blockfile.state(path) == "file"
    assert blockfile.request_id_of(path) == "r-1_x"
    assert not blockfile.create(path, "other")
    path.unlink()
    path.mkdir()
    assert blockfile.state(path) == "other"


def test_context_is_capped(ws: Path) -> None:
    many = "\n".join(f"line {n}" for n in range(20))
    lines = blockfile.context_lines(many, ["meta"])
    assert len(lines) == 6  # SPEC: 3-6 lines, the meta line included
    assert lines[-2].startswith("(… 16 more lines") and lines[-1] == "meta"


# The packaged template rendered in Python must be what jinja2 renders from BLOCKED.md.j2:
# arbitrary text (blank lines, braces, Jinja syntax, markdown) in every field.
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    question=_text,
    context=st.lists(_text, max_size=8).map("\n".join),
    attempted=st.lists(_text, max_size=4),
    choices=st.lists(st.tuples(_text, _text), max_size=len(LETTERS)),
    meta=st.lists(_text, max_size=3),
    answer_hint=_text,
    evidence=st.lists(_text, max_size=4),
)
def test_the_packaged_template_in_python_is_what_jinja2_renders(
    question: str,
    context: str,
    attempted: list[str],
    choices: list[tuple[str, str]],
    meta: list[str],
    answer_hint: str,
    evidence: list[str],
) -> None:
    values = variables(
        evidence=evidence,
        question=question,
        context=context,
        attempted=attempted,
        choices=[Choice(label, consequence) for label, consequence in choices],
        meta=meta,
        answer_hint=answer_hint,
    )
    assert blockfile.render_packaged(values) == blockfile._render_source(
        blockfile.packaged_template(), values
    )


def test_a_workspace_copy_of_the_packaged_template_renders_without_jinja2(ws: Path) -> None:
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from loopkit import config\n"
        "from loopkit.escalation import blockfile\n"
        "from loopkit.workspace import Workspace\n"
        "ws = Workspace.of(config.load(Path(sys.argv[1]), {}))\n"
        "ws.template_override.parent.mkdir(parents=True, exist_ok=True)\n"
        "ws.template_override.write_text(blockfile.packaged_template())\n"
        "vars = blockfile.template_vars(request_id='r1', question='Q?', context='c',\n"
        "    attempted=[], choices=[], meta=[], answer_hint='',\n"
        "    repo='x', trigger='agent', at='t')\n"
        "text, problem = blockfile.render(ws, vars)\n"
        "assert problem is None and 'loopkit request: r1' in text\n"
        "print('jinja2' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(ws)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
