"""The import graph of ``loopkit/`` has no cycle between its parts and follows the README's
layers (SPEC section 15).

A *part* is a package directly under ``loopkit/`` or a top-level module. Every import counts:
module-level, function-level and ``TYPE_CHECKING`` alike — a cycle hidden behind a
function-local import is still a cycle. The layer order is read from the README's "Where
things live", so the document and the code cannot drift apart.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "loopkit"


def part_of(module: str) -> str | None:
    """``loopkit.requests.store`` → ``requests``; ``loopkit.clock`` → ``clock``."""
    names = module.split(".")
    if names[0] != "loopkit" or len(names) < 2:
        return None
    head = names[1]
    if (PACKAGE / head).is_dir() or (PACKAGE / f"{head}.py").is_file():
        return head
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str | None = None) -> list[tuple[str, int]]:
    """Every ``loopkit`` module ``path`` imports, with the line: ``from a import b`` names
    both ``a`` and ``a.b`` (b may be a submodule)."""
    module = module or module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            found.append((source, node.lineno))
            found += [(f"{source}.{alias.name}", node.lineno) for alias in node.names]
    return [(name, line) for name, line in found if name.startswith("loopkit")]


def graph() -> dict[str, dict[str, str]]:
    """part → {imported part: "file:line" of the first such import}."""
    edges: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue  # the package itself: its version, nothing else
        here = part_of(module_name(path))
        assert here is not None, path
        for name, line in imports_of(path):
            there = part_of(name)
            if there is not None and there != here:
                edges[here].setdefault(there, f"{path.relative_to(ROOT)}:{line}")
    return edges


def layers() -> dict[str, int]:
    """The README's "Where things live": ``N. `a` `b` — …`` lines, lowest layer first."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for line in section.splitlines():
        match = re.match(r"^(\d+)\. (.*)$", line)
        if match:
            names = re.findall(r"`([\w/]+?)/?`", match.group(2).split(" — ")[0])
            for name in names:
                found[name] = int(match.group(1))
    return found


def test_the_readme_names_every_part_once() -> None:
    order = layers()
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    parts |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert parts - set(order) == set(), "parts the README's layers do not name"
    assert set(order) - parts == set(), "the README's layers name parts that do not exist"


def test_no_import_goes_up_a_layer() -> None:
    order = layers()
    upward = [
        f"{where}: {here} (layer {order[here]}) imports {there} (layer {order[there]})"
        for here, targets in graph().items()
        for there, where in targets.items()
        if here in order and there in order and order[there] > order[here]
    ]
    assert upward == []


def test_no_cycle_between_parts() -> None:
    edges = graph()
    cycles: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, {})):
            if state.get(target) == 1:
                loop = [*stack[stack.index(target) :], target]
                cycles.append(
                    " → ".join(loop)
                    + "  ("
                    + ", ".join(edges[a][b] for a, b in itertools.pairwise(loop))
                    + ")"
                )
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == []


def test_the_checker_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from loopkit import clock\n"
        "from . import values\n"
        "if TYPE_CHECKING:\n"
        "    from loopkit.workspace import Workspace\n"
        "def f():\n"
        "    from loopkit.fleet.pg import PgHub\n"
        "    import loopkit.requests.store\n"
    )
    names = {name for name, _ in imports_of(source, "loopkit.config.m")}
    assert {
        "loopkit.clock",
        "loopkit.config.values",
        "loopkit.workspace.Workspace",
        "loopkit.fleet.pg.PgHub",
        "loopkit.requests.store",
    } <= names


ENTRY = ("cli", "commands")  # with main.py and __main__.py: the entry layer
MOST_DEFERRED = 20  # SPEC §27: laziness at the boundary, not as a style


def deferred_imports() -> list[str]:
    """Each import of a loopkit module inside a function, below the entry layer."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ENTRY or rel.name in ("main.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                if any(name == "loopkit" or name.startswith("loopkit.") for name in names):
                    found.append(f"{rel}:{node.lineno}")
    return found


def test_loopkits_own_modules_are_imported_at_module_level_below_the_entry_layer() -> None:
    """A function-level import of one of loopkit's modules marks a boundary a path crosses
    only sometimes (the gate's screen and its matched path, an optional library's module);
    docs/architecture.md names them. More than a few is start-up applied as a style."""
    found = deferred_imports()
    assert len(found) <= MOST_DEFERRED, "\n".join(found)
