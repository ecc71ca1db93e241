"""Which tool calls wait for a human: ``[gate] rules`` and ``[gate] protect``.

Standard library only, and only ``re``, ``fnmatch`` and ``os.path`` at that: this module is
imported for every tool call Claude Code makes.

- ``rules``: regular expressions searched in a Bash command (case-insensitive), or
  ``tool:<glob>`` for a tool by name (``tool:mcp__*__delete_*``). Set, they replace the
  defaults; ``extend_defaults`` keeps them and adds.
- ``protect``: path globs for Write / Edit / MultiEdit / NotebookEdit. A glob without a
  ``/`` matches a file's name (``.env*``); with one, its path relative to the session's folder
  (``**/migrations/**``).
"""

from __future__ import annotations

import fnmatch
import os.path
import re

# Each rule says what it stops, in the order the SPEC lists them.
DEFAULT_RULES = (
    r"\brm\s+(?:-\w*(?:rf|fr)\w*|-\w*r\w*\s+-\w*f\w*|-\w*f\w*\s+-\w*r\w*"
    r"|--recursive\s+--force|--force\s+--recursive)",  # rm -rf, rm -fr, rm -r -f
    r"\bgit\s+push\b[^;&|]*\s(?:--force(?:-with-lease)?\b|-f\b|\+\S)",  # git push --force / -f
    r"\bgit\s+reset\s+(?:\S+\s+)*--hard\b",  # git reset --hard
    r"\bgit\s+clean\s+(?:\S+\s+)*-\w*f",  # git clean -f, -fd, -xdf
    r"\bdrop\s+(?:table|database|schema)\b",  # DROP TABLE | DATABASE | SCHEMA
    r"\btruncate\s+(?!-)",  # TRUNCATE [TABLE] t (not coreutils' truncate -s)
    r"\bterraform\s+(?:\S+\s+)*destroy\b",  # terraform destroy
    r"\bkubectl\s+(?:\S+\s+)*delete\b",  # kubectl delete
    r"\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b",  # curl … | sh
)
DEFAULT_PROTECT = (".env*", "*.pem", "*.key", "**/migrations/**")
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}  # fmt: skip


class Rules:
    """The compiled rules of one workspace; ``problems``: why its ``[gate]`` table was not
    usable (the defaults apply, and a matched call is denied saying so)."""

    __slots__ = ("commands", "problems", "protect", "tools")

    def __init__(
        self,
        commands: tuple[re.Pattern[str], ...],
        tools: tuple[str, ...] = (),
        protect: tuple[str, ...] = DEFAULT_PROTECT,
        problems: tuple[str, ...] = (),
    ) -> None:
        self.commands = commands
        self.tools = tools
        self.protect = protect
        self.problems = problems

    @classmethod
    def build(
        cls,
        rules: list[str] | None = None,
        protect: list[str] | None = None,
        extend: bool = False,
        problems: tuple[str, ...] = (),
    ) -> Rules:
        patterns = list(DEFAULT_RULES) if rules is None or extend else []
        patterns += list(rules or [])
        commands = [p for p in patterns if not p.startswith("tool:")]
        tools = tuple(p[5:] for p in patterns if p.startswith("tool:"))
        compiled = tuple(re.compile(p, re.IGNORECASE) for p in commands)
        chosen = DEFAULT_PROTECT if protect is None else tuple(protect)
        return cls(compiled, tools, chosen, problems)


def _protected(path: str, cwd: str, globs: tuple[str, ...]) -> str | None:
    name = os.path.basename(path)
    full = os.path.normpath(os.path.join(cwd, path))
    relative = os.path.relpath(full, cwd) if cwd else path
    for glob in globs:
        if "/" not in glob:
            if fnmatch.fnmatchcase(name, glob):
                return glob
            continue
        pattern = glob.replace("**/", "*/").replace("/**", "/*")
        for candidate in ("/" + relative.lstrip("/"), "/" + full.lstrip("/")):
            if fnmatch.fnmatchcase(candidate, "*/" + pattern.lstrip("*/")):
                return glob
    return None


def match(rules: Rules, tool_name: str, tool_input: object, cwd: str) -> str | None:
    """The rule the call meets (shown to the human), or None: the call goes ahead."""
    for glob in rules.tools:
        if fnmatch.fnmatchcase(tool_name, glob):
            return f"tool:{glob}"
    if not isinstance(tool_input, dict):
        return None
    if tool_name == "Bash":
        command = tool_input.get("command")
        if isinstance(command, str):
            for pattern in rules.commands:
                if pattern.search(command):
                    return pattern.pattern
        return None
    key = FILE_TOOLS.get(tool_name)
    path = tool_input.get(key) if key else None
    if isinstance(path, str) and path:
        found = _protected(path, cwd, rules.protect)
        return f"protect:{found}" if found else None
    return None
