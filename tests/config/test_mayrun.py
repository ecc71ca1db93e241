"""``may_be_missing``: every program a command line may run that is not there — after ``&&``,
``||``, ``;``, ``|``, in an ``if``, a loop, a ``case``, a subshell, ``sh -c`` — and never a
word that is no program (an argument, ``for``'s words, a ``case`` pattern, a function, a
name the line checks for first), held as a property over generated command lines and
checked against the real ``/bin/sh``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.config.mayrun import may_be_missing, syntax_error

HERE = ["true", "false", "echo hi", "ls", "cat /dev/null", "test -n x", ":"]  # all there

names = st.from_regex(r"\Alkgone[a-z]{3,8}\Z")


@st.composite
def segments(draw: st.DrawFn, gone: str) -> tuple[str, set[str]]:
    """One piece of a command line using the missing program ``gone``, and the missing
    programs it may run."""
    present = draw(st.sampled_from(HERE))
    shape = draw(st.integers(0, 15))
    return {
        0: (f"{gone} -q", {gone}),
        1: (f"A=1 {gone} 2>/dev/null", {gone}),
        2: (f"env A=1 nice {gone}", {gone}),
        3: (f"if {present}; then {gone}; else {present}; fi", {gone}),
        4: (f"while false; do {gone} x; done", {gone}),
        5: (f"( {gone} )", {gone}),
        6: (f"{{ {gone}; }}", {gone}),
        7: (f"( ! {gone} )", {gone}),
        8: (f"sh -c '{present} && {gone}'", {gone}),
        9: (f"echo {gone}", set()),  # an argument
        10: (f"for f in {gone}; do {present}; done", set()),  # for's words
        11: (f"case x in {gone}) {present};; esac", set()),  # a pattern
        12: (f"command -v {gone} >/dev/null && {gone}", set()),  # guarded from there on
        13: (f"{gone}_f() {{ {present}; }}; {gone}_f", set()),  # a function
        14: (present, set()),
        15: (f"{present} | {gone}", {gone}),
    }[shape]


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, set[str]]:
    gone = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    parts = [draw(segments(name)) for name in gone]
    joins = draw(st.lists(st.sampled_from([" && ", " || ", "; ", " | ", "\n"]),
                          min_size=len(parts) - 1, max_size=len(parts) - 1))  # fmt: skip
    line = parts[0][0] + "".join(j + p for j, (p, _) in zip(joins, parts[1:], strict=True))
    return line, set().union(*(m for _, m in parts))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_every_program_that_may_run_is_named_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory, drawn: tuple[str, set[str]]
) -> None:
    line, expected = drawn
    ws = tmp_path_factory.getbasetemp()
    assert syntax_error(line, cwd=ws) is None, line  # what is generated is sound sh
    found = {one.missing.program for one in may_be_missing(line, cwd=ws)}
    assert found == expected, line


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("./verify.sh && pytets-lk -q", "after `&&`"),
        ("true || pytets-lk", "after `||`"),
        ("ls | pytets-lk", "in a pipeline"),
        ("true; pytets-lk", "after `;`"),
        ("if true; then pytets-lk; fi", "in an `if`"),
        ("pytets-lk", "first"),
    ],
)
def test_where_it_runs_is_said(tmp_path: Path, line: str, where: str) -> None:
    (tmp_path / "verify.sh").write_text("#!/bin/sh\n")
    (tmp_path / "verify.sh").chmod(0o755)
    [one] = may_be_missing(line, cwd=tmp_path)
    assert (one.missing.program, one.where) == ("pytets-lk", where)


def test_what_the_shell_would_find_is_never_named(tmp_path: Path) -> None:
    """Builtins, keywords, programs on PATH, a function, a path that is there: the real
    shell runs each; none is named."""
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    line = ("set -e; cd . && ./run.sh && export A=1 && read -r x </dev/null || umask 022; "
            "f() { :; }; f && [ -d . ] && printf x | wc -c && exit 0")  # fmt: skip
    assert may_be_missing(line, cwd=tmp_path) == []
    done = subprocess.run(["/bin/sh", "-c", line], cwd=tmp_path, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert "not found" not in done.stderr


@pytest.mark.parametrize(
    "line",
    [
        "PATH=./bin:$PATH lkgonetool",  # its own PATH
        "export PATH=./bin; lkgonetool",
        ". ./env.sh && lkgonetool",  # may define it
        "eval lkgonetool",
        "lkgonetool <<EOF\nx\nEOF",  # a here-document
        "cd sub && ./lkgone.sh",  # relative to where the cd went
        "$TOOL --go",  # an expansion
        "echo 'open",  # an open quote
    ],
)
def test_what_cannot_be_known_without_running_it_is_not_named(tmp_path: Path, line: str) -> None:
    assert may_be_missing(line, cwd=tmp_path) == []


def test_a_line_the_shell_cannot_read_is_a_syntax_error(tmp_path: Path) -> None:
    said = syntax_error("if true; then echo; fi fi", cwd=tmp_path)
    assert said is not None and "syntax error" in said.lower() and "sh:" not in said
    assert syntax_error(("not", "a", "shell", "string"), cwd=tmp_path) is None
    assert syntax_error("true && echo ok", cwd=tmp_path) is None


def test_an_argv_runs_one_program_and_is_left_to_missing_program(tmp_path: Path) -> None:
    assert may_be_missing(("lkgonetool", "&&", "lkgonetoo"), cwd=tmp_path) == []


def test_the_path_is_the_environment_given(tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "lkhere").write_text("#!/bin/sh\n")
    (tools / "lkhere").chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    assert may_be_missing("true && lkhere", cwd=tmp_path, env=env) == []
    assert [m.missing.program for m in may_be_missing("true && lkhere", cwd=tmp_path)] == ["lkhere"]


def test_a_name_is_guarded_only_after_the_line_asks_for_it(tmp_path: Path) -> None:
    line = "true && lkgonex --fix; command -v lkgonex >/dev/null && lkgonex"
    assert [(m.missing.program, m.where) for m in may_be_missing(line, cwd=tmp_path)] == [
        ("lkgonex", "after `&&`")
    ]
