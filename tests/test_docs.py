"""The documentation cannot drift from the code.

- ``docs/cli.md`` and ``docs/configuration.md`` are what ``docs/generate.py`` makes of the
  click commands and the config schema now;
- every relative link in ``README.md`` and ``docs/*.md`` names a file that exists;
- every Sphinx-style reference in a docstring of ``loopkit/`` (``:mod:``, ``:func:``,
  ``:class:``, ``:meth:``, ``:data:``, ``:attr:``) names an object that exists.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "loopkit"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "loopkit_docs_generate", ROOT / "docs" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --- generated pages --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cli.md", "configuration.md"])
def test_generated_page_is_current(name: str) -> None:
    pages = _generator().pages()
    assert name in pages
    on_disk = (ROOT / "docs" / name).read_text(encoding="utf-8")
    assert on_disk == pages[name], f"docs/{name} is stale: run `python docs/generate.py`"


def test_the_command_table_is_current() -> None:
    """The fast path's table, the group's list and the hooks' words are the click
    declarations as they are now (SPEC §27: each command declared once)."""
    made = _generator().modules()["loopkit/cli/commandtable.py"]()
    on_disk = (PACKAGE / "cli" / "commandtable.py").read_text(encoding="utf-8")
    assert on_disk == made, "loopkit/cli/commandtable.py is stale: run `python docs/generate.py`"


def test_an_option_declared_on_a_click_command_is_the_fast_paths_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import click

    from loopkit.cli.answer import reply

    before = _generator().command_table_module()
    loud = click.Option(["--loud"], is_flag=True)
    monkeypatch.setattr(reply, "params", [*reply.params, loud])
    after = _generator().command_table_module()
    assert after != before and '("flag", ("--loud",), "loud", False, None, None)' in after


def test_the_generator_is_deterministic() -> None:
    generator = _generator()
    assert generator.pages() == generator.pages()


def test_check_names_a_stale_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generator = _generator()
    for name, text in generator.pages().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert generator.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "cli.md").write_text("stale\n", encoding="utf-8")
    assert generator.main(["--check", "--out", str(tmp_path)]) == 1
    assert "cli.md" in capsys.readouterr().err


def test_cli_page_names_every_command_and_exit_code() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("loopkit run", "loopkit requests wait", "loopkit fleet status", "loopkit mcp"):
        assert f"## `{command}`" in text, command
    for code in ("| 2 |", "| 64 |", "| 78 |"):
        assert code in text


def test_configuration_page_names_every_key() -> None:
    from loopkit.config import _SCHEMA

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for table, keys in _SCHEMA.items():
        assert f"## `[{table}]`" in text
        for key in keys:
            assert f"| `{key}` |" in text, f"[{table}] {key}"


def test_every_channel_is_documented_where_channels_are_listed() -> None:
    """SPEC §26: channels.md's table and the `channel` key's meaning name every channel of
    the registry (apprise too), and configuration.md every variable a channel reads."""
    from loopkit.channels import CHANNELS

    channels = (ROOT / "docs" / "channels.md").read_text(encoding="utf-8")
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    [row] = [line for line in configuration.splitlines() if line.startswith("| `channel` |")]
    for name in CHANNELS:
        assert f"| `{name}` |" in channels, name
        assert f"`{name}`" in row, name
    settings = (PACKAGE / "config" / "__init__.py").read_text(encoding="utf-8")
    read = set(re.findall(r"LOOPKIT_HITL_[A-Z_]+", settings))
    assert read and all(f"`{name}`" in configuration for name in read), read


def test_the_header_init_writes_names_the_configuration_reference() -> None:
    from loopkit.setup.scaffold import HEADER

    assert "docs/configuration.md" in HEADER and "README" not in HEADER


# --- links ------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _relative_links(path: Path) -> Iterator[tuple[int, str]]:
    in_code = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL, mailto:
            yield number, target


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a markdown file."""
    found = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_relative_links_name_files_that_exist() -> None:
    broken = []
    for path in _documents():
        for number, target in _relative_links(path):
            name, _, anchor = target.partition("#")
            linked = path.parent / name if name else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}:{number}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}:{number}: {target}: no such heading")
    assert broken == []


def test_there_are_links_to_check() -> None:
    assert any(True for _ in _relative_links(ROOT / "README.md"))


# --- docstring references ---------------------------------------------------------------

ROLE = re.compile(r":(mod|func|class|meth|data|attr):`~?([^`]+)`")


def _docstrings(path: Path) -> Iterator[tuple[str, int, str | None, str]]:
    """(module, line, enclosing class, docstring) for every docstring in ``path``."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def visit(node: ast.AST, cls: str | None) -> Iterator[tuple[str, int, str | None, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(child, clean=False)
                inner = child.name if isinstance(child, ast.ClassDef) else cls
                if doc:
                    yield module, child.lineno, inner, doc
                yield from visit(child, inner if cls is None else f"{cls}.{inner}")
            else:
                yield from visit(child, cls)

    doc = ast.get_docstring(tree, clean=False)
    if doc:
        yield module, 1, None, doc
    yield from visit(tree, None)


def _type_checking_names(module: ModuleType) -> dict[str, str | None]:
    """What ``module`` binds only under ``if TYPE_CHECKING:``: each name → the dotted name it
    imports, or None for a class or alias defined there."""
    found: dict[str, str | None] = {}
    tree = ast.parse(Path(str(module.__file__)).read_text())
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for inner in node.body:
            if isinstance(inner, ast.ImportFrom) and inner.module:
                for alias in inner.names:
                    found[alias.asname or alias.name] = f"{inner.module}.{alias.name}"
            elif isinstance(inner, ast.ClassDef):
                found[inner.name] = None
            elif isinstance(inner, ast.Assign):
                found.update((t.id, None) for t in inner.targets if isinstance(t, ast.Name))
    return found


def _lookup(dotted: str) -> bool:
    """Import the longest module prefix of ``dotted``, then getattr down the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for index, name in enumerate(parts[cut:], start=cut):
            try:
                obj = getattr(obj, name)
            except AttributeError:
                if isinstance(obj, ModuleType) and name in _type_checking_names(obj):
                    # Bound for the type checker only (as Sphinx sees with TYPE_CHECKING on):
                    # an import is followed; a class defined there is taken as it is.
                    source = _type_checking_names(obj)[name]
                    return source is None or _lookup(".".join([source, *parts[index + 1 :]]))
                # A dataclass field with slots, or an instance attribute set in __init__,
                # is not an attribute of the class: look for the annotation.
                annotations = getattr(obj, "__annotations__", {})
                if name not in annotations and name not in getattr(obj, "__slots__", ()):
                    return False
                obj = None
        return True
    return False


def _resolves(target: str, module: str, cls: str | None) -> bool:
    """As Sphinx would look: absolute, then in the current class, then in the module."""
    target = target.split("<")[-1].rstrip(">").strip().removesuffix("()")
    candidates = [target]
    if cls is not None:
        candidates.append(f"{module}.{cls}.{target}")
    candidates.append(f"{module}.{target}")
    return any(_lookup(candidate) for candidate in candidates)


def test_docstring_references_resolve() -> None:
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for module, line, cls, doc in _docstrings(path):
            for role, target in ROLE.findall(doc):
                if not _resolves(target, module, cls):
                    broken.append(f"{path.relative_to(ROOT)}:{line}: :{role}:`{target}`")
    assert broken == []


def test_the_reference_check_can_fail() -> None:
    assert _resolves("loopkit.requests.replies", "loopkit", None)
    assert not _resolves("loopkit.parse.parse_reply", "loopkit", None)
    assert not _resolves("RequestStore.no_such_method", "loopkit.requests.store", None)


def test_a_name_bound_for_the_type_checker_only_resolves_through_its_import() -> None:
    assert _resolves("Clock", "loopkit.clock", None)  # a Protocol defined under TYPE_CHECKING
    assert _resolves("RequestStore.resolve", "loopkit.answering.service", None)
    assert not _resolves("RequestStore.no_such_method", "loopkit.answering.service", None)
