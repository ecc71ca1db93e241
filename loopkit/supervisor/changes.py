"""Which lines of a change reach new ground (SPEC §25), and which are only noise.

A task's cumulative change — from the tree it began with to the tree now — is a list of
hunks per file: the lines it removes (by their number in the base) and the lines it adds
(at a place in the base). :func:`file_keys` turns one file's hunks into *keys*, the places
the change reaches; an iteration breaks new ground when the keys it ends with hold one no
earlier iteration of the task held (:mod:`loopkit.supervisor.reach`). So:

- a base line removed or rewritten is its key (``-``, the file, its number): rewriting the
  same lines however differently reaches nothing new, nor does flipping them back;
- lines added at one place are keyed by their count there (``+``, the file, the place, the
  n-th): adding more reaches new ground, rewriting the ones added before does not;
- a new file is reached once (``file``) — unless it holds no letter (a counter, a pid, a
  stamp) —, a deleted one once (``gone``), a binary or an over-large one once
  (``binary``);
- and these reach nothing: blank lines and comments (by the file's kind: ``#``, ``//``,
  ``--``, ``;``, ``%``, ``<!--``), lines with no letter left once numbers are masked (a
  bare ``}``, a number), a line rewritten so that only its numbers, timestamps, hashes or
  trailing comment changed (a counter, a version, a date, a ``# TODO``), or moved within
  its file — paired with the removed line it replaces, anywhere in the file —, and an
  added line that repeats, numbers aside, one added earlier in the same file (a heartbeat
  appended each turn).

Pure: it is handed the hunks; :mod:`loopkit.supervisor.reach` reads them from git or from
the files.
"""

from __future__ import annotations

import re
from collections import Counter

from loopkit.datarecord import field, record
from loopkit.supervisor.normalise import normalise

_HASH = ("#",)
_SLASH = ("//", "/*", "*/", "* ", "*")
_FAMILIES: dict[str, tuple[str, ...]] = {
    "hash": _HASH,
    "slash": _SLASH,
    "dash": ("--",),
    "semicolon": (";",),
    "percent": ("%",),
    "markup": ("<!--", "-->"),
    "slash_hash": (*_SLASH, "#"),
}
_BY_EXTENSION = {
    **dict.fromkeys(
        [
            "py",
            "pyi",
            "pyx",
            "sh",
            "bash",
            "zsh",
            "fish",
            "rb",
            "pl",
            "pm",
            "r",
            "yaml",
            "yml",
            "toml",
            "ini",
            "cfg",
            "conf",
            "mk",
            "cmake",
            "nix",
            "tf",
            "tfvars",
            "ps1",
            "jl",
            "ex",
            "exs",
            "properties",
            "env",
            "gitignore",
            "dockerignore",
            "editorconfig",
            "coffee",
        ],
        "hash",
    ),
    **dict.fromkeys(
        [
            "c",
            "h",
            "cc",
            "cpp",
            "cxx",
            "hpp",
            "hh",
            "cs",
            "java",
            "kt",
            "kts",
            "scala",
            "go",
            "rs",
            "swift",
            "js",
            "jsx",
            "ts",
            "tsx",
            "mjs",
            "cjs",
            "dart",
            "groovy",
            "gradle",
            "proto",
            "css",
            "scss",
            "less",
            "sass",
            "json5",
            "jsonc",
            "zig",
            "sol",
            "v",
            "fs",
            "fsx",
        ],
        "slash",
    ),
    **dict.fromkeys(["sql", "lua", "hs", "elm", "ada", "adb", "ads"], "dash"),
    **dict.fromkeys(["el", "clj", "cljs", "lisp", "scm", "rkt", "asm", "s"], "semicolon"),
    **dict.fromkeys(["tex", "sty", "cls", "erl", "hrl", "m"], "percent"),
    **dict.fromkeys(["html", "htm", "xml", "svg", "vue", "md", "markdown", "rst"], "markup"),
    "php": "slash_hash",
}
_BY_NAME = {"makefile": "hash", "dockerfile": "hash", "gemfile": "hash", "rakefile": "hash",
            "justfile": "hash", "procfile": "hash"}  # fmt: skip
_TRAILING = {
    "hash": re.compile(r"\s+#.*$"),
    "slash": re.compile(r"\s+(?://|/\*).*$"),
    "slash_hash": re.compile(r"\s+(?://|/\*|#).*$"),
    "dash": re.compile(r"\s+--.*$"),
    "semicolon": re.compile(r"\s+;.*$"),
    "percent": re.compile(r"(?<!\\)%.*$"),
    "markup": re.compile(r"\s*<!--.*?(-->|$)"),
}
_DIGITS = re.compile(r"\d+")
_SHORT_ID = re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{6,}\b")  # a1b2c3d4
_LETTER = re.compile(r"[^\W\d_]")
_TAG = re.compile(r"<\w+>")  # a mask's tag (<time>, <hex>): no letter of the line's own


def family(path: str) -> str | None:
    """The comment syntax of ``path``'s kind of file (None: none known)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    _, dot, extension = name.rpartition(".")
    return _BY_EXTENSION.get(extension) if dot else None


def is_comment(line: str, kind: str | None) -> bool:
    stripped = line.strip()
    return bool(kind) and stripped.startswith(_FAMILIES[kind or ""])


def skeleton(line: str, kind: str | None) -> str:
    """``line`` as far as new ground goes: its trailing comment dropped, run-to-run noise
    (times, hashes, addresses, short hex ids) masked, every number a ``#``, spaces squeezed."""
    text = line.strip()
    if kind:
        text = _TRAILING[kind].sub("", text)
    text = _DIGITS.sub("#", _SHORT_ID.sub("#", normalise(text)))
    return " ".join(text.split())


def trivial(line: str, kind: str | None) -> bool:
    """A line that reaches nothing by itself: blank, a comment, or no letter once masked."""
    if not line.strip() or is_comment(line, kind):
        return True
    return _LETTER.search(_TAG.sub("", skeleton(line, kind))) is None


@record(slots=True)
class Hunk:
    """One place a file changed: the base lines removed (number, text), the lines added,
    and where in the base (the number of the line it follows, or the first it removes)."""

    at: int
    removed: list[tuple[int, str]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)


@record(slots=True)
class FileChange:
    path: str
    hunks: list[Hunk] = field(default_factory=list)
    new: bool = False  # not in the base
    gone: bool = False  # in the base, not now
    binary: bool = False  # binary or too large to read: reached as a whole


def file_keys(change: FileChange) -> tuple[set[str], int]:
    """The places ``change`` reaches (keys), and how many changed lines reached nothing."""
    path, kind = change.path, family(change.path)
    keys: set[str] = set()
    noise = 0
    if change.binary:
        return {f"binary\0{path}"}, 0
    if change.gone:
        keys.add(f"gone\0{path}")
    if change.new and any(_LETTER.search(line) for hunk in change.hunks for line in hunk.added):
        keys.add(f"file\0{path}")  # a new file of only numbers (a counter, a pid) is none
    # A line removed in one place and added, skeleton for skeleton, anywhere in the file —
    # rewritten so that only a counter, a date, a version or a trailing comment changed, or
    # moved (the same import block reordered) — reaches nothing, on either side.
    hunks = [
        (
            hunk,
            [(n, skeleton(text, kind)) for n, text in hunk.removed if not trivial(text, kind)],
            [skeleton(text, kind) for text in hunk.added if not trivial(text, kind)],
        )
        for hunk in change.hunks
    ]
    for hunk, removed, added in hunks:
        noise += len(hunk.removed) - len(removed) + len(hunk.added) - len(added)
    pool = Counter(shape for _, removed, _ in hunks for _, shape in removed)
    kept: list[list[str]] = []
    for _, _, added in hunks:
        unpaired: list[str] = []
        for shape in added:
            if pool[shape] > 0:
                pool[shape] -= 1
                noise += 2
            else:
                unpaired.append(shape)
        kept.append(unpaired)
    added_before: set[str] = set()  # the skeletons of lines this file's change adds
    for (hunk, removed, _), fresh_added in zip(hunks, kept, strict=True):
        left = 0
        for n, shape in removed:
            if pool[shape] > 0:
                pool[shape] -= 1
                left += 1
                keys.add(f"-\0{path}\0{n}")
        fresh = 0
        for shape in fresh_added:
            if shape in added_before:
                noise += 1  # the same line again, numbers aside: a heartbeat, a log line
                continue
            added_before.add(shape)
            fresh += 1
        for nth in range(1, fresh - left + 1):
            keys.add(f"+\0{path}\0{hunk.at}\0{nth}")
    return keys, noise
