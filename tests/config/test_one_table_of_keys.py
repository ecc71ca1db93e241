"""Every key of loopkit.toml is declared once (SPEC §27): the loader, the docs and ``init`` read
the same table."""

from __future__ import annotations

from pathlib import Path

from loopkit import config as config_mod
from loopkit.config import _SCHEMA
from loopkit.config.keys import KEYS
from loopkit.setup.scaffold import config_data, init


def test_the_loader_reads_the_table_of_keys() -> None:
    assert {t: set(keys) for t, keys in _SCHEMA.items()} == {
        t: set(keys) for t, keys in KEYS.items()
    }
    for table, keys in KEYS.items():
        for name, key in keys.items():
            assert _SCHEMA[table][name] is key.parse
            assert key.meaning.strip(), (table, name)


def test_init_writes_each_key_under_its_meaning_and_the_file_loads(tmp_path: Path) -> None:
    init(tmp_path, agent="./agent.sh", verify="pytest -q", channel="none", force=False)
    text = (tmp_path / "loopkit.toml").read_text()
    lines = text.splitlines()
    written = config_data("./agent.sh", "pytest -q", "none")
    for table, values in written.items():
        for key in values:
            at = next(i for i, line in enumerate(lines) if line.startswith(f"{key} = "))
            first = KEYS[table][key].meaning.split(". ", 1)[0].rstrip(".")
            above = " ".join(line[2:] for line in lines[at - 3 : at] if line.startswith("# "))
            assert first.split()[0] in above, (table, key)
    loaded = config_mod.load(tmp_path)
    assert loaded.loop.max_verify_failures == 3
