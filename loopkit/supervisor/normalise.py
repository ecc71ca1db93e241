"""Output with what changes from run to run masked, and its fingerprint (SPEC section 19).

Two runs failing the same way print the same thing but for the noise: when it ran
(timestamps, epoch seconds), how long it took (durations), where things sat in memory (hex
addresses), the temporary folder and the random numbers in its names, process ids, random
ports, test-order seeds, the counts in a summary line (``12 passed``: a test added elsewhere
moves them), and the line and column a message points at (an edit above it moves them).
:func:`normalise` masks exactly those and keeps what says *which* error it is — file names,
test names, messages. A masked value becomes a ``<tag>`` the text itself
cannot spell differently, so masking never merges two errors that differ in a name or a
word (``tests/supervisor/test_normalise.py`` holds it with generated errors).
"""

from __future__ import annotations

import hashlib
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# (pattern, replacement) in order: the wider shapes first, so a timestamp is not read as a
# duration plus line numbers.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    # 2026-12-03T20:53:51.123Z, 2026-12-03 20:53:51,123 +0000
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
            r"(?:Z|\s?[+-]\d{2}:?\d{2}|\s?UTC)?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>"),
    # Thu Dec  3 20:53:51 UTC 2026 (date(1), syslog)
    (
        re.compile(
            r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)?,?\s?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|"
            r"Oct|Nov|Dec)\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(?:\s+[A-Z]{3,4})?(?:\s+\d{4})?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    # Epoch seconds (2017-2033, a fraction allowed) and milliseconds: 1796421449.46
    (re.compile(r"(?<![\w.])1[5-9]\d{8}(?:\d{3}|\.\d+)?(?![\w.])"), "<epoch>"),
    # A port on the loopback, an address or a URL's host; "port 53552"
    (
        re.compile(
            r"((?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]*\]|(?<=://)[\w.-]+)):\d{2,5}\b"
        ),
        r"\1:<port>",
    ),
    (re.compile(r"\b([Pp]ort)([\s=:#]+)\d{2,5}\b"), r"\1\2<port>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
    ),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,64}\b"), "<hex>"),
    # Durations: 0.12s, 1.5 seconds, 340ms, 2m 3s, finished in 0.00s
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h)\b"
            r"(?:\s\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds?))?"
        ),
        "<duration>",
    ),
    # pids: pid 4242, pid=4242, [4242], process 4242
    (re.compile(r"\b(pid|PID|process|Process|worker|gw)[\s=:#]*\d+\b"), r"\1 <pid>"),
    (re.compile(r"(?<=\w)\[\d{2,7}\](?=:)"), "[<pid>]"),
    (re.compile(r"(seed|Seed|SEED)([\s=:(]+)\d+\b"), r"\1\2<seed>"),
    # Counts in a summary: "12 passed", "3 errors", "57 items", "40 source files", "4 total"
    (
        re.compile(
            r"\b\d+(?=\s+(?:(?:previous|source|test)\s+)?(?:passed|failed|failures?|errors?|"
            r"warnings?|skipped|deselected|xfailed|xpassed|selected|rerun|items?|tests?|"
            r"problems?|files?|modules?|suites?|snapshots?|checks?|total|pending|todo)\b)"
        ),
        "<n>",
    ),
    # Line and column: file.py:12, file.py:12:5, file.ts(12,5), line 12, col 5, 12 | gutter
    (re.compile(r"(\.[A-Za-z0-9]{1,6})(?::\d+){1,2}\b"), r"\1:<line>"),
    (re.compile(r"(\.[A-Za-z0-9]{1,6})\(\d+,\s?\d+\)"), r"\1(<line>)"),
    (re.compile(r"\b([Ll]ine|[Ll]ines|[Cc]ol|[Cc]olumn|[Ll]n)(\s+)\d+(?:-\d+)?\b"), r"\1\2<line>"),
    (re.compile(r"^(\s*)\d+(\s+\|)", re.M), r"\1<line>\2"),
    (re.compile(r"(?<=:)\d+:\d+(?=:\s)"), "<line>"),
)


_TEMP = re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)((?:/[^\s/:'\"()\[\],]+)*)")
_MKDTEMP = re.compile(r"^tmp[A-Za-z0-9_]{6,8}$")  # tempfile.mkdtemp()'s names


def _temp_path(match: re.Match[str]) -> str:
    """A temporary path: the root and its random folders masked (``tmpab3k9x``, the numbers
    in ``pytest-41/test_x0``); the folders' names and the file's own name kept, but for a
    random name (``tmpab3k9xq1``) and a run of three digits or more in it
    (``pytest-97882``: a folder's number, never a file's own)."""
    *folders, last = match.group(1).split("/") if match.group(1) else ["", ""]
    kept = ["<tmp>" if _MKDTEMP.match(f) else re.sub(r"\d+", "<n>", f) for f in folders[1:]]
    last = "<tmp>" if _MKDTEMP.match(last) else re.sub(r"\d{3,}", "<n>", last)
    return "/".join(["<tmp>", *kept, last]) if match.group(1) else "<tmp>"


def normalise(text: str) -> str:
    """``text`` with colour codes dropped, run-to-run noise masked and blank runs squeezed."""
    # Every "<" the text holds is doubled first, so a mask's "<tag>" is one it cannot spell.
    text = _ANSI.sub("", text.replace("\r\n", "\n")).replace("<", "<<")
    text = _TEMP.sub(_temp_path, text)
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def fingerprint(text: str) -> str:
    """A short id of ``text``'s normalised form: equal for the same error, run after run."""
    return hashlib.sha256(normalise(text).encode()).hexdigest()[:16]
