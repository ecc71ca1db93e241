"""The plain-TOML reader answers exactly as tomllib does, or leaves the text to tomllib."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.config import plaintoml
from loopkit.setup.scaffold import init

KEY = st.text("abcdefghijklmnopqrstuvwxyzABC_-019", min_size=1, max_size=8)
TOKEN = st.sampled_from([
    "true", "false", "0", "-0", "+0", "1", "-17", "+3", "012", "1_000", "1.5", "1e3", "inf",
    "nan", "0x1f", "1979-05-27", '""', "''", "'''x'''", '"""x"""', '"a b"', "'c:\\\\x'",
    '"\\u00e9"', '"\\U0001F600"', '"\\ud800"', '"\\e"', '"\\x41"', '"tab\\there"', '"q\\"q"',
    '"back\\\\"', "[]", "[ ]", "[1,]", "[,]", "[1 2]", '["a", "b"]', "[[1]]", "[1, [2]]",
    "{a = 1}", "x", "", " ", "#", "# c", "=", ",", "]", "[", '"', "'", "\t", "é",
])  # fmt: skip
LINE = st.one_of(
    st.builds(
        lambda k, v, c: f"{k} = {v}{c}", KEY, TOKEN, st.sampled_from(["", " # note", "#x", " x"])
    ),
    st.builds(lambda k, vs: f"{k} = [{', '.join(vs)}]", KEY, st.lists(TOKEN, max_size=4)),
    st.builds(lambda k: f"[{k}]", KEY),
    st.builds(lambda k: f"[[{k}]]", KEY),
    st.sampled_from(
        [
            "",
            "# comment",
            "  \t",
            "[ loop ]",
            "[[t]]",
            "[[t]] # c",
            "[[ t ]]",
            "[[t] ]",
            "[a.b]",
            "a.b = 1",
            '"quoted" = 1',
            "k=1",
            "k =1 ",
            "\ufeffk = 1",
            "k = 1\r",
            "k = [",
            "]",
            'k = "x\x01"',
            "# \x7f",
        ]
    ),
)


def _tomllib(text: str) -> dict[str, object] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


@settings(max_examples=3000)
@given(st.lists(LINE, max_size=8))
def test_whatever_it_reads_equals_tomllib(lines: list[str]) -> None:
    text = "\n".join(lines)
    mine = plaintoml.loads(text)
    if mine is not None:
        assert mine == _tomllib(text), text
        assert [type(v) for v in mine.values()] == [type(v) for v in _tomllib(text).values()]


@settings(max_examples=1000)
@given(st.text(max_size=60))
def test_any_text_is_read_as_tomllib_reads_it_or_left_to_it(text: str) -> None:
    mine = plaintoml.loads(text)
    assert mine is None or mine == _tomllib(text), text


def test_the_config_init_writes_is_plain(tmp_path: Path) -> None:
    """The file every user has is read without tomllib — or the point is lost."""
    agents = ("claude -p 'do the \"next\" task'", "codex exec --full-auto", "true", None)
    for n, agent in enumerate(agents):
        root = tmp_path / str(n)
        root.mkdir()
        init(root, agent=agent, verify="pytest -q", channel="telegram", force=False,
             task_file="TASKS.md")  # fmt: skip
        text = (root / "loopkit.toml").read_text()
        assert plaintoml.loads(text) == tomllib.loads(text), text


def test_what_is_not_plain_is_left_to_tomllib() -> None:
    for text in ('a = """x\ny"""', "a = [\n 1,\n]", "a = 1.5", "[a.b]", "a = {b = 1}",
                 "a = 1\na = 2", "a = 1\n[a]", "k = 1\r\n", "a = 1979-05-27"):  # fmt: skip
        assert plaintoml.loads(text) is None, text


def test_reading_the_config_imports_no_tomllib(ws: Path) -> None:
    init(ws, agent="true", verify=None, channel="none", force=True)
    probe = (
        "import sys, pathlib; from loopkit.config import load; load(pathlib.Path(sys.argv[1])); "
        "print('tomllib' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(ws)], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


PLAIN = st.one_of(
    st.booleans().map(lambda b: "true" if b else "false"),
    st.integers(-(10**20), 10**20).map(str),
    st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=12).map(
        lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    ),
    st.text(
        st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="'"), max_size=12
    ).map(lambda s: f"'{s}'"),
)
TABLE = st.dictionaries(KEY, st.one_of(PLAIN, st.lists(PLAIN, max_size=4).map(
    lambda vs: "[" + ", ".join(vs) + "]")), max_size=5)  # fmt: skip


@settings(max_examples=1000)
@given(TABLE, st.dictionaries(KEY, TABLE, max_size=4))
def test_plain_documents_are_read_without_tomllib(
    top: dict[str, str], tables: dict[str, dict[str, str]]
) -> None:
    lines = [f"{k} = {v}" for k, v in top.items() if k not in tables]
    for name, body in tables.items():
        lines += [f"[{name}]  # a table", *(f"{k}={v} # why" for k, v in body.items()), ""]
    text = "\n".join(lines)
    mine = plaintoml.loads(text)
    assert mine is not None, text
    assert mine == tomllib.loads(text)


def test_arrays_nested_thousands_deep_are_left_to_tomllib() -> None:
    assert plaintoml.loads("a = " + "[" * 5000 + "]" * 5000) is None


def test_an_integer_too_long_to_convert_is_a_config_error(ws: Path) -> None:
    from loopkit.config import load
    from loopkit.errors import ConfigError

    (ws / "loopkit.toml").write_text("[loop]\nmax_verify_failures = " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"loopkit\.toml"):
        load(ws)
